package checker

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// nginxLike is a history NGINX limit_req could write: GCRA 10/s burst 6
// (rate=10r/s burst=5 nodelay) on a clock read in whole milliseconds. Six
// requests at 0.5 ms, which the limiter reads as 0 ms, then one 50 ms after
// every emission time (150 ms, 250 ms, ..., 1650 ms) and the last at
// 1700.2 ms, which the limiter reads as 1700 ms, exactly when its 23rd
// unit conforms: the limiter admits all 23. On the harness's clock they
// lie within 1.6998 s, where a 1 µs clock allows 6 + 10·1.699801 = 22.998
// units: short by less than a millisecond worth of rate, as the
// peer-nginx-nodelay finding was (23 units within 1.699739158 s, allowing
// 22.997). A 1 ms clock allows 23.008.
func nginxLike() *hist {
	var h hist
	for range 6 {
		h.add("k", ms(0.5), ms(0.6), adm)
	}
	for j := 1; j <= 16; j++ {
		at := time.Duration(j)*100*time.Millisecond + 50*time.Millisecond
		h.add("k", at, at+ms(0.1), adm)
	}
	h.add("k", ms(1700.2), ms(1700.3), adm)
	return &h
}

func TestClockResolutionFromHeader(t *testing.T) {
	rule := Rule{Limits: []Limit{mustLimit(t, "gcra:10/1s,burst=6")}}
	for _, tt := range []struct {
		name       string
		header     time.Duration // the header's clock_resolution_ns; 0 leaves it out
		resolution time.Duration // Policy.Resolution (a flag)
		want       Verdict
	}{
		{"default 1µs", 0, 0, Fail},
		{"header 1µs", time.Microsecond, 0, Fail},
		{"header 1ms", time.Millisecond, 0, Pass},
		{"flag 1ms over a 1µs header", time.Microsecond, time.Millisecond, Pass},
		{"flag 1µs over a 1ms header", time.Millisecond, time.Microsecond, Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := nginxLike().source()
			src.h.ClockResolutionNs = int64(tt.header)
			rep, err := Check(src, Policy{Rules: []Rule{rule}, Resolution: tt.resolution})
			if err != nil {
				t.Fatal(err)
			}
			got := result(t, rep, CheckBudget)
			if got.Verdict != tt.want || got.Observed != 23 {
				t.Fatalf("budget = %s, observed %v (%s); want %s, observed 23", got.Verdict, got.Observed, got.Explanation, tt.want)
			}
			if tt.want == Fail && !(got.Bound > 22.99 && got.Bound < 23) {
				t.Errorf("bound = %v, want just under 23", got.Bound)
			}
		})
	}
}

// TestNon429Outcomes: a 4xx other than 429 proves no admission. Recorded as
// admitted (a history written before the classification) or as an error,
// it is of unknown outcome for the budget and the false rejections, and
// the status check, first in the table, names the cause.
func TestNon429Outcomes(t *testing.T) {
	const spec = "gcra:5/1s,burst=5"
	for _, recorded := range []history.Outcome{history.Admitted, history.Error} {
		t.Run("all 401 recorded "+recorded.String(), func(t *testing.T) {
			var h hist
			for i := range 40 {
				h.add("k", ms(float64(10*i)), ms(float64(10*i+1)), recorded, status(401))
			}
			rep := h.check(t, spec)
			if got, want := rep.Results[0].Name, CheckStatus; got != want {
				t.Fatalf("first result = %s, want %s", got, want)
			}
			st := rep.Results[0]
			if want := "401 Unauthorized on all 40 requests: the traffic never reached the limiter — check the identity header"; st.Verdict != Fail || !strings.HasPrefix(st.Explanation, want) {
				t.Errorf("status = %s %q, want fail starting %q", st.Verdict, st.Explanation, want)
			}
			if rep.Admitted != 0 || rep.Unknown != 40 {
				t.Errorf("admitted %d, unknown %d; want 0 and 40", rep.Admitted, rep.Unknown)
			}
			if got := result(t, rep, CheckBudget); got.Verdict != Unknown {
				t.Errorf("budget = %s (%s), want unknown: no 401 is a proven admission", got.Verdict, got.Explanation)
			}
			if got := result(t, rep, CheckFalseRejections); got.Verdict != Pass {
				t.Errorf("false-rejections = %s, want pass", got.Verdict)
			}
		})
	}
	t.Run("mixed 200, 401 and 429", func(t *testing.T) {
		// Five admissions in a burst, ten 401s and five honest 429s
		// between them: the budget holds for what was proven admitted.
		var h hist
		for i := range 20 {
			s := ms(float64(i) / 10)
			switch {
			case i%4 == 1 || i%4 == 2:
				h.add("k", s, s+ms(1), adm, status(401))
			case i < 10:
				h.add("k", s, s+ms(1), adm)
			default:
				h.add("k", s, s+ms(1), rej, retryAfter(1))
			}
		}
		rep := h.check(t, spec)
		if rep.Admitted != 5 || rep.Rejected != 5 || rep.Unknown != 10 {
			t.Fatalf("admitted %d, rejected %d, unknown %d; want 5, 5, 10", rep.Admitted, rep.Rejected, rep.Unknown)
		}
		if got := result(t, rep, CheckBudget); got.Verdict != Unknown || got.Observed != 15 {
			t.Errorf("budget = %s, observed %v; want unknown, 15 if the 401s were admitted", got.Verdict, got.Observed)
		}
		if got := result(t, rep, CheckFalseRejections); got.Verdict != Pass {
			t.Errorf("false-rejections = %s (%s), want pass", got.Verdict, got.Explanation)
		}
		st := result(t, rep, CheckStatus)
		if want := "401 Unauthorized on 10 of 20 requests (first: request 2): these requests may never have reached the limiter"; st.Verdict != Fail || st.Observed != 10 || !strings.HasPrefix(st.Explanation, want) {
			t.Errorf("status = %s, observed %v, %q; want fail, 10, starting %q", st.Verdict, st.Observed, st.Explanation, want)
		}
	})
	t.Run("404s", func(t *testing.T) {
		var h hist
		for i := range 12 {
			h.add("k", ms(float64(i)), ms(float64(i)+1), history.Error, status(404))
		}
		h.add("k", ms(20), ms(21), unk, status(502))
		rep := h.check(t, spec)
		st := rep.Results[0]
		want := "404 Not Found on 12 of 13 requests (first: request 1): these requests may never have reached the limiter — check the routes' paths and methods; unexpected 502 Bad Gateway on 1 of 13 requests (first: request 13)"
		if st.Name != CheckStatus || st.Verdict != Fail || st.Observed != 13 || !strings.HasPrefix(st.Explanation, want) {
			t.Errorf("first result = %s %s, observed %v, %q; want status fail, 13, starting %q", st.Name, st.Verdict, st.Observed, st.Explanation, want)
		}
		if got := result(t, rep, CheckBudget); got.Verdict == Fail {
			t.Errorf("budget = fail (%s), want no proof from 404s", got.Explanation)
		}
	})
}

// overBudget is GCRA 5/s burst 5 with excess extra units admitted at once.
func overBudget(excess int) *hist {
	var h hist
	for range 5 + excess {
		h.add("k", 0, ms(1), adm)
	}
	return &h
}

func TestMaxExcess(t *testing.T) {
	rule := Rule{Limits: []Limit{mustLimit(t, "gcra:5/1s,burst=5")}}
	for _, tt := range []struct {
		excess    int
		maxExcess int64
		want      Verdict
	}{
		{1, 0, Fail},
		{1, 1, Pass},
		{2, 1, Fail},
		{2, 2, Pass},
	} {
		rep, err := Check(overBudget(tt.excess).source(), Policy{Rules: []Rule{rule}, MaxExcess: tt.maxExcess})
		if err != nil {
			t.Fatal(err)
		}
		got := result(t, rep, CheckBudget)
		allowance := 5 + 5*(time.Millisecond+time.Microsecond).Seconds()
		if got.Verdict != tt.want || got.Observed != float64(5+tt.excess) || math.Abs(got.Bound-(allowance+float64(tt.maxExcess))) > 1e-9 {
			t.Errorf("excess %d, max_excess %d: budget %s, observed %v, bound %v (%s); want %s, %d, %v",
				tt.excess, tt.maxExcess, got.Verdict, got.Observed, got.Bound, got.Explanation, tt.want, 5+tt.excess, allowance+float64(tt.maxExcess))
		}
		if tt.maxExcess > 0 && !strings.Contains(got.Explanation, "max_excess") {
			t.Errorf("explanation %q does not name max_excess", got.Explanation)
		}
	}
	// An excess within max_excess that the requests of unknown outcome
	// push beyond it is unknown.
	h := overBudget(1)
	h.add("k", 0, ms(1), unk)
	rep, err := Check(h.source(), Policy{Rules: []Rule{rule}, MaxExcess: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := result(t, rep, CheckBudget); got.Verdict != Unknown {
		t.Errorf("with an unknown outcome beyond max_excess: budget %s, want unknown", got.Verdict)
	}
}

// falselyRejected is 100 requests of GCRA 100/s burst 100, all within
// budget, of which the last n were rejected.
func falselyRejected(n int) *hist {
	var h hist
	for i := range 100 {
		s := ms(float64(i) / 10)
		if i >= 100-n {
			h.add("k", s, s+ms(0.05), rej, retryAfter(1))
		} else {
			h.add("k", s, s+ms(0.05), adm)
		}
	}
	return &h
}

func TestMaxFalseRejectionRate(t *testing.T) {
	rule := Rule{Limits: []Limit{mustLimit(t, "gcra:100/1s,burst=100")}}
	for _, tt := range []struct {
		rejected int
		rate     float64
		want     Verdict
		bound    float64
	}{
		{1, 0, Fail, 0},
		{1, 0.01, Pass, 1},
		{1, 0.009, Fail, 0},
		{2, 0.01, Fail, 1},
		{3, 0.03, Pass, 3}, // 0.03·100 is 2.9999999999999996 in floating point
	} {
		rep, err := Check(falselyRejected(tt.rejected).source(), Policy{Rules: []Rule{rule}, MaxFalseRejectionRate: tt.rate})
		if err != nil {
			t.Fatal(err)
		}
		got := result(t, rep, CheckFalseRejections)
		if got.Verdict != tt.want || got.Observed != float64(tt.rejected) || got.Bound != tt.bound {
			t.Errorf("%d false of 100, max_rate %v: %s, observed %v, bound %v (%s); want %s, %d, %v",
				tt.rejected, tt.rate, got.Verdict, got.Observed, got.Bound, got.Explanation, tt.want, tt.rejected, tt.bound)
		}
	}
	if _, err := Check(falselyRejected(1).source(), Policy{Rules: []Rule{rule}, MaxFalseRejectionRate: 1.5}); err == nil {
		t.Error("max false-rejection rate 1.5: no error, want ErrInvalidPolicy")
	}
}

// lyingRetryAfter is GCRA 1/s burst 1 with a rejection whose Retry-After is 0.
func lyingRetryAfter() *hist {
	var h hist
	h.add("k", 0, ms(1), adm)
	h.add("k", ms(2), ms(3), rej, retryAfter(0))
	return &h
}

func TestSkipHeaderChecks(t *testing.T) {
	rule := Rule{Limits: []Limit{mustLimit(t, "gcra:1/1s,burst=1")}}
	rep, err := Check(lyingRetryAfter().source(), Policy{Rules: []Rule{rule}})
	if err != nil {
		t.Fatal(err)
	}
	if got := result(t, rep, CheckRetryAfter); got.Verdict != Fail || rep.Verdict() != Fail {
		t.Fatalf("headers checked: retry-after %s, verdict %s; want fail, fail", got.Verdict, rep.Verdict())
	}
	rep, err = Check(lyingRetryAfter().source(), Policy{Rules: []Rule{rule}, SkipHeaderChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Name == CheckRetryAfter || r.Name == CheckRateLimitFields || r.Name == CheckHeaderStyle {
			t.Errorf("headers not checked, yet %s ran", r.Name)
		}
	}
	if rep.Verdict() != Pass {
		t.Errorf("verdict = %s, want pass", rep.Verdict())
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "checks.headers is false") {
		t.Errorf("notes = %q, want one saying checks.headers is false", rep.Notes)
	}
}

// TestCheckRunAppliesRecordedChecks: the scenario's max_excess, max_rate
// and headers settings, recorded in run.json, decide `rlbench check
// RUN_DIR`'s verdicts exactly as Policy's fields do; a record without them
// (an older run.json) checks strictly and runs the header checks.
func TestCheckRunAppliesRecordedChecks(t *testing.T) {
	yes, no, rate := true, false, 0.01
	for _, tt := range []struct {
		name   string
		h      *hist
		spec   string
		checks *runrecord.CheckSettings
		check  string
		want   Verdict
	}{
		{"max_excess absent", overBudget(1), "gcra:5/1s,burst=5", &runrecord.CheckSettings{}, CheckBudget, Fail},
		{"max_excess 1", overBudget(1), "gcra:5/1s,burst=5", &runrecord.CheckSettings{MaxExcess: 1}, CheckBudget, Pass},
		{"max_rate absent", falselyRejected(1), "gcra:100/1s,burst=100", nil, CheckFalseRejections, Fail},
		{"max_rate 0.01", falselyRejected(1), "gcra:100/1s,burst=100", &runrecord.CheckSettings{FalseRejectionsMaxRate: &rate}, CheckFalseRejections, Pass},
		{"headers absent", lyingRetryAfter(), "gcra:1/1s,burst=1", &runrecord.CheckSettings{}, CheckRetryAfter, Fail},
		{"headers true", lyingRetryAfter(), "gcra:1/1s,burst=1", &runrecord.CheckSettings{Headers: &yes}, CheckRetryAfter, Fail},
		{"headers false", lyingRetryAfter(), "gcra:1/1s,burst=1", &runrecord.CheckSettings{Headers: &no}, CheckRetryAfter, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.h.source()
			src.h.Policies = []history.RoutePolicy{{Limits: []string{tt.spec}}}
			rep, err := CheckRun(src, &runrecord.ScenarioRecord{Checks: tt.checks, Redis: runrecord.RedisInfo{Provider: "process"}}, Policy{})
			if err != nil {
				t.Fatal(err)
			}
			var got Verdict
			for _, r := range rep.Results {
				if r.Name == tt.check {
					got = r.Verdict
				}
			}
			if got != tt.want {
				t.Errorf("%s = %q, want %q", tt.check, got, tt.want)
			}
		})
	}
}

// TestCheckRunClockKnown: a run record whose clock offset nothing measured
// leaves it unknown, so that window checks use the offset-free bounds and
// the report says so; a measured one places the windows.
func TestCheckRunClockKnown(t *testing.T) {
	for _, tt := range []struct {
		name    string
		rec     runrecord.ScenarioRecord
		aligned bool
	}{
		{"unknown", runrecord.ScenarioRecord{ClockSource: runrecord.ClockUnknown}, false},
		{"older record, no Redis", runrecord.ScenarioRecord{}, false},
		{"older record, Redis", runrecord.ScenarioRecord{Redis: runrecord.RedisInfo{Provider: "process"}}, true},
		{"http date", runrecord.ScenarioRecord{ClockSource: history.ClockHTTPDate, ClockOffset: 700 * time.Millisecond, ClockUncertainty: 5 * time.Millisecond}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.noClock = true // the header as the runner writes it for an unknown offset
			h.add("k", ms(100), ms(101), adm)
			src := h.source()
			src.h.Policies = []history.RoutePolicy{{Limits: []string{"fixed_window:5/5s"}}}
			rep, err := CheckRun(src, &tt.rec, Policy{})
			if err != nil {
				t.Fatal(err)
			}
			budget := result(t, rep, CheckBudget)
			if got := !strings.Contains(budget.Scope, "alignment unknown"); got != tt.aligned {
				t.Errorf("budget scope %q: aligned %v, want %v", budget.Scope, got, tt.aligned)
			}
			note := strings.Join(rep.Notes, " ")
			if got := strings.HasPrefix(note, "clock offset unknown: window checks use offset-free bounds"); got == tt.aligned {
				t.Errorf("notes %q: unknown-offset note %v, want %v", rep.Notes, got, !tt.aligned)
			}
		})
	}
}
