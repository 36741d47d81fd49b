package checker

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// Names of the checks on the run itself, which CheckRun adds to the
// history's checks.
const (
	CheckLoadDelivered   = "load-delivered"
	CheckHistoryComplete = "history-complete"
	CheckMaxLatency      = "max-latency"
	CheckOverhead        = "latency-overhead"
	CheckOverheadRatio   = "latency-overhead-ratio"
	CheckProbe           = "retry-after-probe"
	CheckFaultInjected   = "fault-injected"
	CheckKeyTTL          = "key-ttl"
)

// timings collects, while Check reads a history, the per-request times the
// checks on the run itself need: sends on time per phase, the slowest
// request, and the latencies of the routes an overhead bound compares.
// Latencies run from the intended send time (intended_ns), so that a
// generator that fell behind cannot hide a slow target (coordinated
// omission).
type timings struct {
	lagTolerance int64
	onTime       map[string]int // by phase name
	records      int
	// file names the history read; cut is its Truncated error once read
	// (nil: it ended cleanly).
	file      string
	cut       error
	worst     int64 // largest received − intended, ns
	worstID   uint64
	worstKey  string
	worstFrom int64
	latencies map[string]map[string][]int64 // by route and phase, only the overhead's routes
	// probePhases are the names of the Retry-After probe phases (unless
	// another kind of phase shares the name); probeKeys the keys their
	// requests carried.
	probePhases map[string]bool
	probeKeys   map[string]struct{}
	ids         idTally
	// gap is history-complete's short form when it did not pass ("" when
	// it did), once results has run.
	gap string
}

func newTimings(rec *runrecord.ScenarioRecord) *timings {
	t := &timings{onTime: map[string]int{}, worst: math.MinInt64, probePhases: map[string]bool{}, probeKeys: map[string]struct{}{}}
	for i := range rec.Phases {
		ph := &rec.Phases[i]
		probe, seen := t.probePhases[ph.Name]
		t.probePhases[ph.Name] = ph.Kind == runrecord.PhaseRetryAfterProbe && (probe || !seen)
	}
	if c := rec.Checks; c != nil {
		t.lagTolerance = int64(c.LagTolerance)
		if ov := c.Overhead; ov != nil {
			t.latencies = map[string]map[string][]int64{ov.Route: {}, ov.Baseline: {}}
			if ov.Versus != "" {
				t.latencies[ov.Versus] = map[string][]int64{}
			}
		}
	}
	return t
}

func (t *timings) add(r *history.Record) {
	t.records++
	t.ids.add(r.ID)
	if r.SentNs-r.IntendedNs <= t.lagTolerance {
		t.onTime[r.Phase]++
	}
	lat := r.ReceivedNs - r.IntendedNs
	if lat > t.worst {
		t.worst, t.worstID, t.worstKey, t.worstFrom = lat, r.ID, r.Key, r.IntendedNs
	}
	if byPhase, ok := t.latencies[r.Route]; ok {
		byPhase[r.Phase] = append(byPhase[r.Phase], lat)
	}
	if t.probePhases[r.Phase] {
		t.probeKeys[r.Key] = struct{}{}
	}
}

// results are the checks on the run itself, in this order: load delivered,
// each burst's achieved spread (load-delivered too), a complete history,
// the latency bound, the overhead bounds, the Retry-After probes, whether
// each fault happened, the keys left without a TTL, and the connections
// Redis saw. Those that need a bound the record lacks (a record written
// before CheckSettings) are left out.
func (t *timings) results(rec *runrecord.ScenarioRecord) []Result {
	var out []Result
	loadOK := true
	if c := rec.Checks; c != nil {
		delivered, want := t.delivered(rec.Phases)
		loadOK = delivered >= c.LoadDelivered
		why := fmt.Sprintf("the generator sent %.1f%% of the open-model requests within %v of their schedule", 100*delivered, c.LagTolerance)
		switch {
		case want > 0:
		case rec.Shard != nil && planned(rec.Phases) == 0:
			why = "no request planned for this shard"
		case rec.Shard != nil:
			why = "no request of an open-model phase planned for this shard"
		default:
			why = "no request of an open-model phase planned"
		}
		out = append(out, verdictOf(Result{
			Name: CheckLoadDelivered, Class: ClassHarness, Observed: delivered, Bound: c.LoadDelivered, Unit: "fraction of planned requests sent on time",
			Explanation: why,
		}, loadOK))
	}
	out = append(out, burstSpreadResults(rec.Phases, rec.Shard != nil)...)
	complete, gap := historyComplete(rec, t.records, t.cut, t.file, &t.ids)
	t.gap = gap
	out = append(out, complete)
	if c := rec.Checks; c != nil && c.MaxLatency > 0 && t.records > 0 { // Check refuses an empty history
		worst := time.Duration(t.worst).Round(time.Microsecond)
		res := latencyVerdict(Result{
			Name: CheckMaxLatency, Observed: millis(worst), Bound: millis(c.MaxLatency), Unit: "ms",
			Explanation: fmt.Sprintf("the slowest request, measured from its intended send time (coordinated omission corrected): request %d", t.worstID),
			Proof:       &Proof{Key: t.worstKey, FromNs: t.worstFrom, ToNs: t.worstFrom + t.worst, RequestIDs: []uint64{t.worstID}},
		}, worst <= c.MaxLatency, loadOK)
		out = append(out, res)
	}
	if c := rec.Checks; c != nil && c.Overhead != nil {
		out = append(out, t.overhead(c.Overhead, loadOK)...)
	}
	for i := range rec.Phases {
		if ph := &rec.Phases[i]; ph.Kind == runrecord.PhaseRetryAfterProbe && !anotherShards(rec, ph) {
			out = append(out, probe(ph))
		}
	}
	out = append(out, faultsInjected(rec.Faults)...)
	if rec.KeyScan != nil {
		out = append(out, keyTTL(rec.KeyScan))
	}
	if rec.Connections != nil {
		out = append(out, connections(rec.Connections))
	}
	return out
}

// historyComplete judges whether the history read holds every result of
// the run rec records, once: the phases sent Σ PhaseRecord.Sent requests,
// one result each, of which rec.Dropped never reached the history; the
// history (file) must hold the rest, read of them, each request id once
// (ids), and end cleanly (cut nil; else the reader's Truncated error: cut
// off mid-line or mid-stream, or ended by an interrupt). A history that
// lacks results can prove nothing of the requests it lacks, so any
// shortfall fails; so do more records than were sent (the history of
// another run, or a changed file) and a request id held twice. Observed
// counts the results not in the history (sent − read, or the dropped ones
// when rec records no phase); with more records than sent, the excess;
// with neither, the records of a duplicated id. gap is the failure in
// short, for the checks it leaves unproven (unproven); "" on a pass.
//
// run.json records how many requests were sent but not the range of ids
// they were given (the generator numbers withheld and unsent requests
// too), so an id is held only to being unique.
func historyComplete(rec *runrecord.ScenarioRecord, read int, cut error, file string, ids *idTally) (res Result, gap string) {
	res = Result{Name: CheckHistoryComplete, Class: ClassHarness, Bound: 0, Unit: "results not in the history", Verdict: Pass,
		Observed:    float64(rec.Dropped),
		Explanation: fmt.Sprintf("every result reached the history: %s", Count(read, "records")),
	}
	sent := 0
	for i := range rec.Phases {
		sent += rec.Phases[i].Sent
	}
	var why, short []string
	if rec.Dropped > 0 {
		why = append(why, fmt.Sprintf("%s dropped before the history (a consumer too slow for the generator): the checks miss them", Count(rec.Dropped, "results")))
		short = append(short, fmt.Sprintf("%d dropped", rec.Dropped))
	}
	if len(rec.Phases) > 0 {
		res.Observed = float64(max(sent-read, rec.Dropped))
		res.Explanation = fmt.Sprintf("every result reached the history: %s, as many as run.json records sent, each request id once", Count(read, "records"))
		switch want := sent - rec.Dropped; {
		case read < want:
			why = append(why, fmt.Sprintf("%s holds %d of the %d results run.json records (%s sent, %d dropped): %d missing, cut short or changed after the run; the checks cannot judge the requests it lacks",
				file, read, want, Count(sent, "requests"), rec.Dropped, want-read))
			short = append(short, fmt.Sprintf("%d of %d results", read, want))
		case read > sent:
			res.Observed = float64(read - sent)
			why = append(why, fmt.Sprintf("%s holds %s, %d more than the %s run.json records: the history of another run, or a changed file", file, Count(read, "records"), read-sent, Count(sent, "requests sent")))
			short = append(short, fmt.Sprintf("%d records of %d sent", read, sent))
		}
	}
	if cut != nil {
		why = append(why, fmt.Sprintf("%v: the requests after it are missing, and the checks cannot judge them", cut))
		short = append(short, "it ends early")
	}
	if w := ids.why(file); w != "" {
		why = append(why, w)
		short = append(short, fmt.Sprintf("%s of a duplicated id", Count(ids.dups, "records")))
		if res.Observed == 0 {
			res.Observed = float64(ids.dups)
		}
	}
	if len(why) > 0 {
		res.Verdict, res.Explanation = Fail, strings.Join(why, "; ")
	}
	return res, strings.Join(short, ", ")
}

// truncatedResult is history-complete for a history checked without its
// run record (file): nil when it ended cleanly (cut nil) and held each
// request id once, else a failure quoting the reader's Truncated error,
// since the history cannot prove anything of the requests after its end,
// and naming the first duplicated id; with gap, its short form.
func truncatedResult(cut error, file string, ids *idTally) (*Result, string) {
	var why, short []string
	if cut != nil {
		why = append(why, fmt.Sprintf("%v: the requests after it are missing (how many, only a run record says), and the checks cannot judge them", cut))
		short = append(short, "it ends early")
	}
	if w := ids.why(file); w != "" {
		why = append(why, w)
		short = append(short, fmt.Sprintf("%s of a duplicated id", Count(ids.dups, "records")))
	}
	if len(why) == 0 {
		return nil, ""
	}
	return &Result{Name: CheckHistoryComplete, Class: ClassHarness, Verdict: Fail, Bound: 0, Unit: "results not in the history",
		Observed: float64(ids.dups), Explanation: strings.Join(why, "; ")}, strings.Join(short, ", ")
}

// delivered is the load delivered over the open-model phases (constant and
// ramp): requests sent within the lag tolerance of their schedule, counted
// from the history, over the requests planned less those withheld on a
// Retry-After, from the record, and that number of requests planned: 1 and
// 0 when no open-model phase planned a request. A phase
// whose name an open-model phase shares with another kind of phase is
// counted from the record, since its history records cannot be told apart.
func (t *timings) delivered(phases []runrecord.PhaseRecord) (float64, int) {
	type kinds struct{ open, other bool }
	byName := map[string]kinds{}
	for i := range phases {
		k := byName[phases[i].Name]
		if phases[i].OpenModel() {
			k.open = true
		} else {
			k.other = true
		}
		byName[phases[i].Name] = k
	}
	var onTime, want int
	for name, k := range byName {
		if k.open && !k.other {
			onTime += t.onTime[name]
		}
	}
	for i := range phases {
		p := &phases[i]
		if !p.OpenModel() {
			continue
		}
		want += p.Planned - p.Withheld
		if byName[p.Name].other {
			onTime += p.OnTime
		}
	}
	if want <= 0 {
		return 1, 0
	}
	return float64(onTime) / float64(want), want
}

// planned counts the requests phases planned, less those withheld.
func planned(phases []runrecord.PhaseRecord) int {
	n := 0
	for i := range phases {
		n += phases[i].Planned - phases[i].Withheld
	}
	return n
}

// overhead compares the limited route with its baseline at p50, p99 and
// p99.9 of the latency from the intended send time, the baseline's
// requests taken from the phases the route had traffic in. A percentile's
// overhead fails its bound only when the bound lies below the difference's
// 99 % confidence interval (overheadInterval): a busy machine's tail
// latency, which the two routes' few slowest requests sample unevenly, is
// not a limiter's overhead. And, with a
// Versus route, the route's overhead with Versus's at each percentile
// that has a ratio bound.
func (t *timings) overhead(ov *runrecord.OverheadBounds, loadOK bool) []Result {
	limited, baseline := t.against(ov.Route, ov.Baseline)
	if len(limited) == 0 || len(baseline) == 0 {
		return []Result{{Name: CheckOverhead, Verdict: Unknown, Unit: "ms",
			Explanation: fmt.Sprintf("no traffic reached %s or its baseline %s in the same phases: add both to a phase's routes", ov.Route, ov.Baseline)}}
	}
	var out []Result
	for _, q := range overheadQuantiles {
		bound := q.bound(ov)
		if bound <= 0 {
			continue
		}
		l, b := quantile(limited, q.p), quantile(baseline, q.p)
		diff := l - b
		proven, within, interval := overheadInterval(limited, baseline, q.p, bound)
		explain := fmt.Sprintf("%s latency %v on %s against %v on %s; %s", q.name, l, ov.Route, b, ov.Baseline, interval)
		switch {
		case diff > bound && !proven:
			explain += fmt.Sprintf(": above the bound, but not beyond what sampling noise of %d and %d requests explains; more requests narrow the interval", len(limited), len(baseline))
		case !proven && !within:
			explain += fmt.Sprintf(": within the bound as measured, not proven so: the interval reaches above it with %d and %d requests", len(limited), len(baseline))
		}
		out = append(out, latencyVerdict(Result{
			Name: CheckOverhead, Scope: q.name, Observed: millis(diff), Bound: millis(bound), Unit: "ms",
			Explanation: explain,
		}, !proven, loadOK))
	}
	if ov.Versus != "" {
		out = append(out, t.overheadRatio(ov, limited, baseline, loadOK)...)
	}
	return out
}

// overheadInterval bounds the difference of the q-quantiles of the
// latencies of the limited route and its baseline (both sorted, in ns)
// with overheadConfidence: from the lower confidence bound of the limited
// route's quantile less the upper one of the baseline's, to the upper less
// the lower (quantileRanks; each side holds with at least
// 1 − (1 − overheadConfidence)/2, so the interval with at least
// overheadConfidence − (1 − overheadConfidence)). proven reports whether the
// interval lies wholly above bound and within whether wholly at or below
// it; text describes the interval, an unbounded side as such.
func overheadInterval(limited, baseline []int64, q float64, bound time.Duration) (proven, within bool, text string) {
	loL, hiL := quantileRanks(len(limited), q, overheadConfidence)
	loB, hiB := quantileRanks(len(baseline), q, overheadConfidence)
	low, lowOK := rankDiff(limited, loL, baseline, hiB)
	high, highOK := rankDiff(limited, hiL, baseline, loB)
	side := func(v time.Duration, ok bool, unbounded string) string {
		if !ok {
			return unbounded
		}
		return v.String()
	}
	text = fmt.Sprintf("%.0f %% interval of the difference [%s, %s]", overheadConfidence*100,
		side(low, lowOK, "−∞"), side(high, highOK, "+∞"))
	if !lowOK {
		text += fmt.Sprintf(" (too few requests to bound the %v-quantile from both sides)", q)
	}
	return lowOK && low > bound, highOK && high <= bound, text
}

// rankDiff is the rank-a value of x less the rank-b value of y, to the
// microsecond, and whether both ranks lie within their samples.
func rankDiff(x []int64, a int, y []int64, b int) (time.Duration, bool) {
	xv, okX := rankValue(x, a)
	yv, okY := rankValue(y, b)
	return time.Duration(xv - yv).Round(time.Microsecond), okX && okY
}

// overheadQuantiles are the percentiles the overhead bounds name, each
// with its bound and its ratio bound.
var overheadQuantiles = []struct {
	name  string
	p     float64
	bound func(*runrecord.OverheadBounds) time.Duration
	ratio func(*runrecord.OverheadBounds) float64
}{
	{"p50", 0.5, func(o *runrecord.OverheadBounds) time.Duration { return o.P50 }, func(o *runrecord.OverheadBounds) float64 { return o.RatioP50 }},
	{"p99", 0.99, func(o *runrecord.OverheadBounds) time.Duration { return o.P99 }, func(o *runrecord.OverheadBounds) float64 { return o.RatioP99 }},
	{"p99.9", 0.999, func(o *runrecord.OverheadBounds) time.Duration { return o.P999 }, func(o *runrecord.OverheadBounds) float64 { return o.RatioP999 }},
}

// overheadRatio bounds the route's overhead over its baseline as a
// multiple of ov.Versus's over its own, at each percentile with a ratio
// bound. limited and baseline are the route's and its baseline's sorted
// latencies.
func (t *timings) overheadRatio(ov *runrecord.OverheadBounds, limited, baseline []int64, loadOK bool) []Result {
	versus, versusBase := t.against(ov.Versus, ov.Baseline)
	if len(versus) == 0 || len(versusBase) == 0 {
		return []Result{{Name: CheckOverheadRatio, Verdict: Unknown, Unit: "× the overhead of " + ov.Versus,
			Explanation: fmt.Sprintf("no traffic reached %s or its baseline %s in the same phases: add both to a phase's routes", ov.Versus, ov.Baseline)}}
	}
	var out []Result
	for _, q := range overheadQuantiles {
		bound := q.ratio(ov)
		if bound <= 0 {
			continue
		}
		mine := quantile(limited, q.p) - quantile(baseline, q.p)
		theirs := quantile(versus, q.p) - quantile(versusBase, q.p)
		r := Result{Name: CheckOverheadRatio, Scope: q.name, Bound: bound, Unit: "× the overhead of " + ov.Versus}
		explain := fmt.Sprintf("%s overhead %v on %s against %v on %s, each over %s in its own phases", q.name, mine, ov.Route, theirs, ov.Versus, ov.Baseline)
		if theirs <= 0 {
			r.Verdict, r.Explanation = Unknown, explain+fmt.Sprintf(": %s adds no measurable latency, so no ratio can be taken", ov.Versus)
			out = append(out, r)
			continue
		}
		ratio := float64(mine) / float64(theirs)
		r.Observed, r.Explanation = math.Round(ratio*1000)/1000, explain
		out = append(out, latencyVerdict(r, ratio <= bound, loadOK))
	}
	return out
}

// against returns the sorted latencies of route, and of baseline in the
// phases route had traffic in.
func (t *timings) against(route, baseline string) (limited, base []int64) {
	for phase, lats := range t.latencies[route] {
		limited = append(limited, lats...)
		base = append(base, t.latencies[baseline][phase]...)
	}
	slices.Sort(limited)
	slices.Sort(base)
	return limited, base
}

// quantile is the value of rank round(q·n) (at least 1) of sorted, to the
// microsecond: the rank HDR histograms report.
func quantile(sorted []int64, q float64) time.Duration {
	rank := max(int(q*float64(len(sorted))+0.5), 1)
	return time.Duration(sorted[min(rank, len(sorted))-1]).Round(time.Microsecond)
}

// anotherShards reports whether rec, a shard of a sharded run, left the
// probe phase ph to another shard (a Retry-After probe runs on shard 0):
// the phase planned no request in it and has no outcome, so it has no
// verdict here.
func anotherShards(rec *runrecord.ScenarioRecord, ph *runrecord.PhaseRecord) bool {
	return rec.Shard != nil && ph.Planned == 0 && ph.Probe == nil
}

// probe judges a Retry-After probe: a client that waited exactly the
// Retry-After of its 429 must be admitted on its retry.
func probe(ph *runrecord.PhaseRecord) Result {
	var pr runrecord.ProbeRecord
	if ph.Probe != nil {
		pr = *ph.Probe
	}
	r := Result{Name: CheckProbe, Scope: ph.Name, Unit: "retries admitted", Bound: 1}
	switch {
	case !pr.Rejected:
		r.Verdict, r.Explanation = Unknown, "the probe was never rejected, so Retry-After was never tested: raise its requests"
	case !pr.Retried:
		r.Verdict, r.Explanation = Fail, "the 429 carried no usable Retry-After, so a client cannot know when to come back"
	case pr.Admitted:
		r.Verdict, r.Observed = Pass, 1
		r.Explanation = fmt.Sprintf("a client that waited exactly Retry-After (%v) was admitted", pr.Wait)
	default:
		r.Verdict = Fail
		r.Explanation = fmt.Sprintf("a client that waited exactly Retry-After (%v) was rejected again: the header sends clients back too early", pr.Wait)
	}
	return r
}

// faultsInjected reports, per scheduled fault, whether it was injected and
// healed: a drill whose fault never happened proves nothing.
func faultsInjected(windows []runrecord.FaultWindow) []Result {
	var out []Result
	for i, w := range windows {
		r := Result{Name: CheckFaultInjected, Class: ClassHarness, Scope: fmt.Sprintf("%s #%d", w.Kind, i+1), Unit: "faults", Bound: 1, Observed: 1, Verdict: Pass}
		switch {
		case w.Err != "":
			r.Verdict, r.Observed = Fail, 0
			r.Explanation = "the fault could not be injected or healed: " + w.Err
		case w.FromNs == 0:
			r.Verdict, r.Observed = Fail, 0
			r.Explanation = fmt.Sprintf("the fault was never injected: the traffic ended before %v", w.At)
		case w.ToNs == 0:
			r.Verdict = Fail
			r.Explanation = "the fault was injected but never healed before the run ended"
		default:
			r.Explanation = fmt.Sprintf("injected at %v, healed at %v", time.Duration(w.FromNs).Round(time.Millisecond), time.Duration(w.ToNs).Round(time.Millisecond))
		}
		out = append(out, r)
	}
	return out
}

// keyTTL fails when the scan found keys without a TTL (DESIGN.md: every key
// written has a TTL in the same atomic step).
func keyTTL(s *runrecord.KeyScan) Result {
	res := Result{Name: CheckKeyTTL, Verdict: Pass, Observed: float64(s.WithoutTTL), Bound: 0, Unit: "keys",
		Explanation: "every key left in Redis after the run has a TTL"}
	if s.WithoutTTL > 0 {
		res.Verdict = Fail
		example := "(none recorded)"
		if len(s.Examples) > 0 {
			example = s.Examples[0]
		}
		res.Explanation = fmt.Sprintf("%s left in Redis without a TTL, such as %s: they never expire", Count(s.WithoutTTL, "keys"), example)
	}
	return res
}

func verdictOf(r Result, ok bool) Result {
	r.Verdict = Fail
	if ok {
		r.Verdict = Pass
	}
	return r
}

// latencyVerdict is verdictOf, except that a latency figure of a run whose
// generator fell behind its schedule is unknown, and the harness's: a
// stalled generator hides latency, so the figure says nothing of the
// limiter.
func latencyVerdict(r Result, ok, loadOK bool) Result {
	r = verdictOf(r, ok)
	if !loadOK {
		r.Verdict, r.Class = Unknown, ClassHarness
		r.Explanation += "; invalid: the generator fell behind its schedule"
	}
	return r
}
