package checker

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// interval is a stretch of a run, from its start.
type interval struct{ from, to time.Duration }

func (s interval) holds(t time.Duration) bool { return t >= s.from && t <= s.to }

// stallRun is a drill of a GCRA 5/1s, burst 5 limiter shared by instances
// a and b under 20 req/s for one key from 0 to 4.5 s: outside the store's
// trouble it decides as the shared GCRA does (charging the shared state);
// in a declared fault or a stall it decides by its failure mode without
// charging it: fail-open admits, fail-closed answers 503 with a
// Retry-After, a fallback admits the first two of each instance's requests
// (its share of the burst) and rejects the rest. extra, when set, admits
// its requests on top, charged to nothing: an over-admission.
func stallRun(mode runrecord.FailureMode, fault interval, stalls []interval, extra []time.Duration) *hist {
	const period = 200 * time.Millisecond // 5/1s
	const tau = 4 * period                // burst 5
	var h hist
	var tat time.Duration
	local := map[string]int{}
	for i, at := 0, time.Duration(0); at < 4500*time.Millisecond; i, at = i+1, at+50*time.Millisecond {
		in := []string{"a", "b"}[i%2]
		down := fault.holds(at)
		for _, s := range stalls {
			down = down || s.holds(at)
		}
		if !down {
			local = map[string]int{}
			t := max(tat, at)
			if t-at <= tau {
				tat = t + period
				h.add("k", at, at+2*time.Millisecond, history.Admitted, inst(in))
			} else {
				h.add("k", at, at+2*time.Millisecond, history.Rejected, inst(in), retryAfter(int((t-tau-at+time.Second-1)/time.Second)))
			}
			continue
		}
		end := at + 51*time.Millisecond // the store timeout, and a little
		switch mode {
		case runrecord.FailOpen:
			h.add("k", at, end, history.Admitted, inst(in))
		case runrecord.FailClosed:
			h.add("k", at, end, history.Error, inst(in), status(503), retryAfter(1))
		case runrecord.FailFallback:
			if local[in]++; local[in] <= 2 {
				h.add("k", at, end, history.Admitted, inst(in))
			} else {
				h.add("k", at, end, history.Rejected, inst(in), retryAfter(1))
			}
		}
	}
	for _, at := range extra {
		h.add("k", at, at+time.Millisecond, history.Admitted, inst("a"))
	}
	return &h
}

// stallDrill is the drill of a stallRun: the declared fault, then the
// observed stalls.
func stallDrill(mode runrecord.FailureMode, fault interval, stalls []interval) *runrecord.Drill {
	d := &runrecord.Drill{
		Mode: mode, Instances: 2, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 300 * time.Millisecond,
		Windows: []runrecord.FaultWindow{{Kind: "redis_pause", FromNs: int64(fault.from), ToNs: int64(fault.to), Unavailable: true}},
	}
	for _, s := range stalls {
		d.Windows = append(d.Windows, runrecord.FaultWindow{Kind: runrecord.KindStoreStall, FromNs: int64(s.from), ToNs: int64(s.to), Unavailable: true, Observed: true})
	}
	return d
}

// TestObservedStalls: a store that stalled beyond the store timeout
// outside the declared fault left the failure mode to decide, as the
// scenario declares; without the stall recorded the budget check takes
// those decisions for the shared limiter's and fails or cannot tell. With
// it the budget passes with the stall excused and not with the store
// taken as healthy, so it is unknown, the harness's: the run cannot tell a
// failure mode's admission from an over-admission there. An over-admission
// outside every stall still fails; a long stall, or many short ones, is
// unknown for the same reason as one: their fail-open admissions break the
// bound with the store taken as healthy, whatever share of the run they
// excuse.
func TestObservedStalls(t *testing.T) {
	fault := interval{3 * time.Second, 3500 * time.Millisecond}
	one := []interval{{time.Second, 1150 * time.Millisecond}}
	many := []interval{}
	for at := 100 * time.Millisecond; at < 4000*time.Millisecond; at += 400 * time.Millisecond {
		many = append(many, interval{at, at + 20*time.Millisecond})
	}
	tests := []struct {
		name   string
		mode   runrecord.FailureMode
		stalls []interval
		extra  []time.Duration
		// budget without the stalls recorded, and with them
		without, with Verdict
		// withClass is the class of the budget result with the stalls.
		withClass Class
	}{
		{name: "fail-open admits in a stall", mode: runrecord.FailOpen, stalls: one, without: Fail, with: Unknown, withClass: ClassHarness},
		{name: "fail-closed answers 503 in a stall", mode: runrecord.FailClosed, stalls: one, without: Unknown, with: Unknown, withClass: ClassHarness},
		{name: "fallback admits a share in a stall", mode: runrecord.FailFallback, stalls: one, without: Fail, with: Unknown, withClass: ClassHarness},
		{
			name: "over-admission outside the stall", mode: runrecord.FailOpen, stalls: one,
			extra:   []time.Duration{2 * time.Second, 2010 * time.Millisecond, 2020 * time.Millisecond, 2030 * time.Millisecond, 2040 * time.Millisecond, 2050 * time.Millisecond},
			without: Fail, with: Fail, withClass: ClassLimiter,
		},
		{
			name: "a stall over a fifth of the run", mode: runrecord.FailOpen, stalls: []interval{{500 * time.Millisecond, 1500 * time.Millisecond}},
			without: Fail, with: Unknown, withClass: ClassHarness,
		},
		{
			name: "short stalls whose recoveries cover over half", mode: runrecord.FailOpen, stalls: many,
			without: Fail, with: Unknown, withClass: ClassHarness,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := stallRun(tc.mode, fault, tc.stalls, tc.extra)
			rep := h.checkFaults(t, "gcra:5/1s,burst=5", stallDrill(tc.mode, fault, nil))
			if got := result(t, rep, CheckBudget); got.Verdict != tc.without {
				t.Errorf("without the stalls: budget = %s (%s), want %s", got.Verdict, got.Explanation, tc.without)
			}
			rep = h.checkFaults(t, "gcra:5/1s,burst=5", stallDrill(tc.mode, fault, tc.stalls))
			got := result(t, rep, CheckBudget)
			if got.Verdict != tc.with {
				t.Errorf("with the stalls: budget = %s (%s), want %s", got.Verdict, got.Explanation, tc.with)
			}
			if got.Class != tc.withClass {
				t.Errorf("with the stalls: budget class = %s, want %s", got.Class, tc.withClass)
			}
			if fr := result(t, rep, CheckFalseRejections); fr.Verdict == Fail {
				t.Errorf("with the stalls: false-rejections = %s (%s)", fr.Verdict, fr.Explanation)
			}
			// The declared fault alone is held to the failure mode and the
			// latency bound; the stalls to neither.
			var fm, fl int
			for _, r := range rep.Results {
				switch r.Name {
				case CheckFailureMode:
					fm++
					if r.Verdict != Pass {
						t.Errorf("%s %s = %s (%s), want pass", r.Name, r.Scope, r.Verdict, r.Explanation)
					}
				case CheckFaultLatency:
					fl++
				}
				if strings.Contains(r.Scope, runrecord.KindStoreStall) {
					t.Errorf("a result scoped to a stall: %s %s", r.Name, r.Scope)
				}
			}
			if fm != 1 || fl != 1 {
				t.Errorf("%d failure-mode and %d fault-latency results, want 1 and 1", fm, fl)
			}
			note := strings.Join(rep.Notes, "\n")
			if want := "the store stalled beyond the store timeout 50ms " + Count(len(tc.stalls), "times"); !strings.Contains(note, want) {
				t.Errorf("notes %q lack %q", note, want)
			}
			if want := "rerun on a quieter machine"; tc.withClass == ClassHarness && !strings.Contains(note, want) {
				t.Errorf("notes %q lack %q", note, want)
			}
		})
	}
}

// TestStallFalseRejection: a fail-closed limiter's request that timed out
// in a stall was charged when the store caught up, and that late charge
// alone explains a rejection after it. Recorded as a stall, the request may
// have been charged then; unrecorded, the rejection looks false.
func TestStallFalseRejection(t *testing.T) {
	var h hist
	h.add("k", 0, time.Millisecond, history.Admitted)
	h.add("k", time.Millisecond, 2*time.Millisecond, history.Admitted)
	h.add("k", time.Second, 1051*time.Millisecond, history.Error, status(503), retryAfter(1)) // timed out in the stall
	for i, out := range []history.Outcome{history.Admitted, history.Admitted, history.Rejected} {
		at := 3*time.Second + time.Duration(i+1)*time.Millisecond
		h.add("k", at, at+time.Millisecond, out, retryAfter(1))
	}
	// Another key's requests, after the fault, make the stall a small part
	// of the run.
	for i := range 20 {
		at := 7*time.Second + time.Duration(i)*1100*time.Millisecond
		h.add("z", at, at+time.Millisecond, history.Admitted)
	}
	f := &runrecord.Drill{
		Mode: runrecord.FailClosed, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 10 * time.Millisecond,
		Windows: []runrecord.FaultWindow{{Kind: "redis_kill", FromNs: int64(5 * time.Second), ToNs: int64(6 * time.Second), Unavailable: true}},
	}
	for _, tc := range []struct {
		name  string
		stall *interval
		want  Verdict
	}{
		{"unrecorded", nil, Fail},
		// The late charge explains the rejection with the stall excused,
		// and nothing does with the store taken as healthy: the run cannot
		// tell which it was.
		{"stall to 3 s", &interval{990 * time.Millisecond, 3 * time.Second}, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := *f
			d.Windows = append([]runrecord.FaultWindow(nil), f.Windows...)
			if s := tc.stall; s != nil {
				d.Windows = append(d.Windows, runrecord.FaultWindow{Kind: runrecord.KindStoreStall, FromNs: int64(s.from), ToNs: int64(s.to), Unavailable: true, Observed: true})
			}
			rep := h.checkFaults(t, "gcra:1/1s,burst=3", &d)
			if got := result(t, rep, CheckFalseRejections); got.Verdict != tc.want {
				t.Errorf("false-rejections = %s (%s), want %s", got.Verdict, got.Explanation, tc.want)
			}
		})
	}
}

// maskRun is the shape of a drill whose stalls once masked a failure: a
// GCRA limiter holding 10/s with burst 10 (τ 0.9 s), claimed as 9/s with
// burst 10, under 30 req/s for one key over 18 s (540 requests); in the
// declared fault and in the stalls it admits without charging (fail-open).
// The declared fault, 4 s to 10 s with its 2 s recovery, excuses 240 of
// them. extra admits its requests on top, charged to nothing.
func maskRun(stalls []interval, extra []time.Duration) (*hist, *runrecord.Drill) {
	const period, tau = 100 * time.Millisecond, 900 * time.Millisecond
	fault := interval{4 * time.Second, 10 * time.Second}
	var h hist
	var tat time.Duration
	for at := time.Duration(0); at < 18*time.Second; at += time.Second / 30 {
		down := fault.holds(at)
		for _, s := range stalls {
			down = down || s.holds(at)
		}
		switch t := max(tat, at); {
		case down:
			h.add("k", at, at+51*time.Millisecond, history.Admitted)
		case t-at <= tau:
			tat = t + period
			h.add("k", at, at+2*time.Millisecond, history.Admitted)
		default:
			h.add("k", at, at+2*time.Millisecond, history.Rejected, retryAfter(1))
		}
	}
	for _, at := range extra {
		h.add("k", at, at+time.Millisecond, history.Admitted)
	}
	d := &runrecord.Drill{
		Mode: runrecord.FailOpen, Instances: 2, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 2 * time.Second,
		Windows: []runrecord.FaultWindow{{Kind: "redis_kill", FromNs: int64(fault.from), ToNs: int64(fault.to), Unavailable: true}},
	}
	for _, s := range stalls {
		d.Windows = append(d.Windows, runrecord.FaultWindow{Kind: runrecord.KindStoreStall, FromNs: int64(s.from), ToNs: int64(s.to), Unavailable: true, Observed: true})
	}
	return &h, d
}

// TestStallsMaskNoFailure: stalls that excuse most of what a long declared
// fault leaves judged do not mask the too-tight claim: the budget, which
// fails with the store taken as healthy, is unknown, never a pass; a
// failure proven on requests no fault or stall excused stays one; and a
// check that passes under both hypotheses passes, however much the stalls
// excused: false-rejections here, and the budget of a claim no request
// comes near (burst 200), which judges every request with the store
// healthy.
func TestStallsMaskNoFailure(t *testing.T) {
	three := []interval{ // 0.3 s each; with their recoveries 210 requests
		{300 * time.Millisecond, 600 * time.Millisecond},
		{12300 * time.Millisecond, 12600 * time.Millisecond},
		{15 * time.Second, 15300 * time.Millisecond},
	}
	tests := []struct {
		name   string
		spec   string
		stalls []interval
		extra  []time.Duration
		// budget and false-rejections with the stalls recorded
		budget, falseRej Verdict
		// note is a note's text the report must hold.
		note string
	}{
		{
			name: "stalls excuse most of what the fault left", spec: "gcra:9/1s,burst=10", stalls: three,
			budget: Unknown, falseRej: Pass, note: "210 requests of the 300 the declared faults left judged excused",
		},
		{
			name: "over-admission in the judged part", spec: "gcra:9/1s,burst=10", stalls: three,
			extra:  burst(17500*time.Millisecond, 11),
			budget: Fail, falseRej: Pass, note: "210 requests of the 311 the declared faults left judged excused",
		},
		{
			name: "one stall, a capacity beyond half the judged part", spec: "gcra:10/1s,burst=200", stalls: three[:1],
			// The limiter's rejections are false under a claimed burst of
			// 200, proven on judged requests: that failure stays. No
			// request comes near the claimed budget under either
			// hypothesis: a pass.
			budget: Pass, falseRej: Fail, note: "70 requests of the 300 the declared faults left judged excused",
		},
		{
			// Enough judged, but the stall's fail-open admissions break the
			// bound with the store taken as healthy: unknown, not pass.
			name: "one stall, enough judged", spec: "gcra:10/1s,burst=10", stalls: three[:1],
			budget: Unknown, falseRej: Pass, note: "70 requests of the 300 the declared faults left judged excused",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, d := maskRun(tc.stalls, tc.extra)
			rep := h.checkFaults(t, tc.spec, d)
			if got := result(t, rep, CheckBudget); got.Verdict != tc.budget {
				t.Errorf("budget = %s (%s), want %s", got.Verdict, got.Explanation, tc.budget)
			} else if got.Verdict == Unknown && got.Class != ClassHarness {
				t.Errorf("budget class = %s, want %s", got.Class, ClassHarness)
			}
			if got := result(t, rep, CheckFalseRejections); got.Verdict != tc.falseRej {
				t.Errorf("false-rejections = %s (%s), want %s", got.Verdict, got.Explanation, tc.falseRej)
			}
			if note := strings.Join(rep.Notes, "\n"); !strings.Contains(note, tc.note) {
				t.Errorf("notes %q lack %q", note, tc.note)
			}
		})
	}
	// Without the stalls recorded the claim fails, as it should: the
	// limiter admits more than 9/s allows after the fault's recovery.
	h, d := maskRun(nil, nil)
	if got := result(t, h.checkFaults(t, "gcra:9/1s,burst=10", d), CheckBudget); got.Verdict != Fail {
		t.Errorf("without stalls: budget = %s (%s), want fail", got.Verdict, got.Explanation)
	}
}

// tightRun is the shape of a drill whose single early stall once hid the
// only stretch where a too-tight claim shows: a GCRA limiter holding 10/s
// with burst 10 (τ 0.9 s) under 30 req/s for one key to 5 s, then 5 req/s
// to 18 s; a declared fault from 3 s to 5 s with a 2 s recovery leaves
// 0–3 s and 7–18 s judged (145 requests). In the declared fault and in
// the stalls it admits without charging (fail-open); in the slow stalls
// the store answered late and the shared limiter decided as ever. Every
// stall and slow stall is an observed window of the drill.
func tightRun(stalls, slow []interval) (*hist, *runrecord.Drill) {
	const period, tau = 100 * time.Millisecond, 900 * time.Millisecond
	fault := interval{3 * time.Second, 5 * time.Second}
	var h hist
	var tat time.Duration
	in := func(at time.Duration, ss []interval) bool {
		for _, s := range ss {
			if s.holds(at) {
				return true
			}
		}
		return false
	}
	for at := time.Duration(0); at < 18*time.Second; {
		late := time.Duration(0)
		if in(at, slow) {
			late = 51 * time.Millisecond
		}
		switch t := max(tat, at); {
		case fault.holds(at) || in(at, stalls):
			h.add("k", at, at+51*time.Millisecond, history.Admitted)
		case t-at <= tau:
			tat = t + period
			h.add("k", at, at+2*time.Millisecond+late, history.Admitted)
		default:
			h.add("k", at, at+2*time.Millisecond+late, history.Rejected, retryAfter(1))
		}
		if at < 5*time.Second {
			at += time.Second / 30
		} else {
			at += 200 * time.Millisecond
		}
	}
	d := &runrecord.Drill{
		Mode: runrecord.FailOpen, Instances: 2, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 2 * time.Second,
		Windows: []runrecord.FaultWindow{{Kind: "redis_kill", FromNs: int64(fault.from), ToNs: int64(fault.to), Unavailable: true}},
	}
	for _, s := range append(slices.Clone(stalls), slow...) {
		d.Windows = append(d.Windows, runrecord.FaultWindow{Kind: runrecord.KindStoreStall, FromNs: int64(s.from), ToNs: int64(s.to), Unavailable: true, Observed: true})
	}
	return &h, d
}

// TestStallTwoHypotheses: with observed stalls the budget and
// false-rejection checks hold under both hypotheses, the stalls excused
// and the store taken as healthy. A single early stall whose excusal hides
// the only stretch where a too-tight claim shows makes the budget unknown,
// never a pass; stalls in which
// the limiter decided as ever change nothing; a violation outside the
// stall fails; and fail-open admissions in a stall, with no other
// violation, are unknown (the harness's) rather than a failure.
func TestStallTwoHypotheses(t *testing.T) {
	early := []interval{{410 * time.Millisecond, 610 * time.Millisecond}}
	late := []interval{{12 * time.Second, 12200 * time.Millisecond}}
	tests := []struct {
		name          string
		spec          string
		stalls, slow  []interval
		unrecorded    Verdict // the budget without the stalls in the drill
		budget, false Verdict
		class         Class // the budget's
		// note is a note's text the report must hold, or "" for none on
		// the two hypotheses.
		note string
	}{
		{
			name: "an early stall hides the only violation", spec: "gcra:9/1s,burst=10", stalls: early,
			unrecorded: Fail, budget: Unknown, false: Pass, class: ClassHarness,
			note: "with the store taken as healthy through the stalls at 0.41–0.61 s, budget 9 req/s (burst 10, gcra)",
		},
		{
			name: "slow stalls change nothing", spec: "gcra:10/1s,burst=10", slow: early,
			unrecorded: Pass, budget: Pass, false: Pass, class: ClassLimiter,
		},
		{
			name: "a violation outside the stall", spec: "gcra:9/1s,burst=10", stalls: late,
			unrecorded: Fail, budget: Fail, false: Pass, class: ClassLimiter,
		},
		{
			name: "fail-open admissions in a stall, nothing else", spec: "gcra:10/1s,burst=10", stalls: early,
			unrecorded: Fail, budget: Unknown, false: Pass, class: ClassHarness,
			note: "did not pass: a violation there shows only among requests a stall may excuse",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, d := tightRun(tc.stalls, tc.slow)
			bare := *d
			bare.Windows = d.Windows[:1]
			if got := result(t, h.checkFaults(t, tc.spec, &bare), CheckBudget); got.Verdict != tc.unrecorded {
				t.Errorf("without the stalls: budget = %s (%s), want %s", got.Verdict, got.Explanation, tc.unrecorded)
			}
			rep := h.checkFaults(t, tc.spec, d)
			got := result(t, rep, CheckBudget)
			if got.Verdict != tc.budget || got.Class != tc.class {
				t.Errorf("budget = %s, %s (%s), want %s, %s", got.Verdict, got.Class, got.Explanation, tc.budget, tc.class)
			}
			if got.Verdict == Unknown && !strings.Contains(got.Explanation, "a violation shows only among requests an observed store stall may excuse (with the store taken as healthy, fail: key \"k\"") {
				t.Errorf("budget explanation %q lacks the healthy store's finding", got.Explanation)
			}
			if fr := result(t, rep, CheckFalseRejections); fr.Verdict != tc.false {
				t.Errorf("false-rejections = %s (%s), want %s", fr.Verdict, fr.Explanation, tc.false)
			}
			note := strings.Join(rep.Notes, "\n")
			if tc.note != "" && !strings.Contains(note, tc.note) {
				t.Errorf("notes %q lack %q", note, tc.note)
			}
			if on := strings.Contains(note, "with the store taken as healthy"); on != (tc.note != "") {
				t.Errorf("notes %q: a note on the two hypotheses is %v, want %v", note, on, tc.note != "")
			}
		})
	}
}

// TestShortStallExcusingMost is the shape of a drill-redis-slow run: a
// fail-closed GCRA 10/1s, burst 10 limiter under 60 req/s from four keys
// over 8 s, a declared fault from 3 s to 5 s with its 2 s recovery, and a
// 98.8 ms stall the probe saw at 0.53 s, through which the instances' own
// calls were answered in time and the shared limiter decided as ever, a
// little late. The stall with its recovery
// excuses 126 of the 240 requests the declared fault leaves judged
// (52.5 %); no check finds a violation under either hypothesis, so each
// passes: the share a stall excuses makes no verdict unknown.
func TestShortStallExcusingMost(t *testing.T) {
	const period, tau = 100 * time.Millisecond, 900 * time.Millisecond
	fault := interval{3 * time.Second, 5 * time.Second}
	stall := interval{530 * time.Millisecond, 628800 * time.Microsecond}
	var h hist
	tat := map[string]time.Duration{}
	for i, at := 0, time.Duration(0); at < 8*time.Second; i, at = i+1, at+time.Second/60 {
		key, in := fmt.Sprintf("k%d", i%4), inst(fmt.Sprintf("i%d", i%3))
		if fault.holds(at) {
			h.add(key, at, at+51*time.Millisecond, history.Error, in, status(503), retryAfter(1))
			continue
		}
		took := 2 * time.Millisecond
		if stall.holds(at) {
			took = 40 * time.Millisecond
		}
		if t := max(tat[key], at); t-at <= tau {
			tat[key] = t + period
			h.add(key, at, at+took, history.Admitted, in)
		} else {
			h.add(key, at, at+took, history.Rejected, in, retryAfter(int((t-tau-at+time.Second-1)/time.Second)))
		}
	}
	d := &runrecord.Drill{
		Mode: runrecord.FailClosed, Instances: 3, Timeout: 50 * time.Millisecond, Slack: 250 * time.Millisecond, Recovery: 2 * time.Second,
		Windows: []runrecord.FaultWindow{
			{Kind: "redis_latency", FromNs: int64(fault.from), ToNs: int64(fault.to), Unavailable: true},
			{Kind: runrecord.KindStoreStall, FromNs: int64(stall.from), ToNs: int64(stall.to), Unavailable: true, Observed: true},
		},
	}
	rep := h.checkFaults(t, "gcra:10/1s,burst=10", d)
	for _, r := range rep.Results {
		if r.Verdict != Pass {
			t.Errorf("%s %s = %s, %s (%s), want pass", r.Name, r.Scope, r.Verdict, r.Class, r.Explanation)
		}
	}
	note := strings.Join(rep.Notes, "\n")
	if want := "the store stalled beyond the store timeout 50ms 1 time (total 98.8 ms, 126 requests of the 240 the declared faults left judged excused)"; !strings.Contains(note, want) {
		t.Errorf("notes %q lack %q", note, want)
	}
	if strings.Contains(note, "rerun on a quieter machine") {
		t.Errorf("notes %q: a run that passes under both hypotheses needs no rerun", note)
	}
}

// burst is n instants 1 ms apart from at.
func burst(at time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = at + time.Duration(i)*time.Millisecond
	}
	return out
}

// TestStallNoteInSummary: the note on the observed stalls, with the
// requests they excused, reaches summary.json beside the unknown verdict
// it explains, so a gate reading the summary sees it too.
func TestStallNoteInSummary(t *testing.T) {
	h, d := maskRun([]interval{
		{300 * time.Millisecond, 600 * time.Millisecond},
		{12300 * time.Millisecond, 12600 * time.Millisecond},
		{15 * time.Second, 15300 * time.Millisecond},
	}, nil)
	s := NewSummary(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s.AddReport("drill-redis-kill-open", h.checkFaults(t, "gcra:9/1s,burst=10", d))
	var buf bytes.Buffer
	if err := s.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := back.Status, StatusError; got != want {
		t.Errorf("Status = %s, want %s", got, want)
	}
	notes := strings.Join(back.Scenarios[0].Notes, "\n")
	for _, want := range []string{
		"the store stalled beyond the store timeout 50ms 3 times (total 900 ms, 210 requests of the 300 the declared faults left judged excused)",
		"rerun on a quieter machine",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("summary.json's notes %q lack %q", notes, want)
		}
	}
}
