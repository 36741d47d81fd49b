package runner

import (
	"fmt"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/traffic"
	"github.com/rlbench/rlbench/scenarios"
)

// Names of the checks the harness adds to the checker's.
const (
	CheckLoadDelivered   = "load-delivered"
	CheckHistoryComplete = "history-complete"
	CheckMaxLatency      = "max-latency"
	CheckOverhead        = "latency-overhead"
	CheckProbe           = "retry-after-probe"
	CheckFaultInjected   = "fault-injected"
)

// FaultChecks report, per scheduled fault, whether it was injected and
// healed: a drill whose fault never happened proves nothing.
func FaultChecks(sc *scenarios.Scenario, windows []runrecord.FaultWindow) []checker.Result {
	var out []checker.Result
	for i, w := range windows {
		r := checker.Result{Name: CheckFaultInjected, Scope: fmt.Sprintf("%s #%d", w.Kind, i+1), Unit: "faults", Bound: 1, Observed: 1, Verdict: checker.Pass}
		switch {
		case w.Err != "":
			r.Verdict, r.Observed = checker.Fail, 0
			r.Explanation = "the fault could not be injected or healed: " + w.Err
		case w.FromNs == 0:
			r.Verdict, r.Observed = checker.Fail, 0
			r.Explanation = fmt.Sprintf("the fault was never injected: the traffic ended before %v", sc.Faults[i].At)
		case w.ToNs == 0:
			r.Verdict = checker.Fail
			r.Explanation = "the fault was injected but never healed before the run ended"
		default:
			r.Explanation = fmt.Sprintf("injected at %v, healed at %v", time.Duration(w.FromNs).Round(time.Millisecond), time.Duration(w.ToNs).Round(time.Millisecond))
		}
		out = append(out, r)
	}
	return out
}

// HarnessChecks are the checks on what the generator measured rather than
// on the history: load delivered, a complete history, latency bounds and
// the Retry-After probe. Latency figures of a run whose generator fell
// behind its schedule are not reported as passing: their checks say
// unknown, since a stalled generator hides latency.
func HarnessChecks(sc *scenarios.Scenario, st *traffic.Stats) []checker.Result {
	var out []checker.Result
	delivered := st.Delivered()
	loadOK := delivered >= sc.Checks.LoadDelivered
	out = append(out, verdict(checker.Result{
		Name: CheckLoadDelivered, Observed: delivered, Bound: sc.Checks.LoadDelivered, Unit: "fraction of planned requests sent on time",
		Explanation: fmt.Sprintf("the generator sent %.1f%% of the open-model requests within %v of their schedule", 100*delivered, st.LagTolerance),
	}, loadOK))
	out = append(out, burstSpreadResults(phaseRecords(st))...)
	out = append(out, verdict(checker.Result{
		Name: CheckHistoryComplete, Observed: float64(st.Dropped), Bound: 0, Unit: "results dropped",
		Explanation: "every result reached the history (a consumer too slow for the generator drops results, and the checks would miss them)",
	}, st.Dropped == 0))

	routes := st.Routes()
	if sc.Checks.MaxLatency > 0 {
		var worst time.Duration
		for _, l := range routes {
			_, w := l.Quantile(1)
			worst = max(worst, w)
		}
		out = append(out, latencyVerdict(checker.Result{
			Name: CheckMaxLatency, Observed: worst.Seconds() * 1000, Bound: sc.Checks.MaxLatency.Seconds() * 1000, Unit: "ms",
			Explanation: "the slowest request, measured from its intended send time (coordinated omission corrected)",
		}, worst <= sc.Checks.MaxLatency, loadOK))
	}
	if ov := sc.Checks.Overhead; ov != nil {
		out = append(out, overhead(ov, routes, loadOK)...)
	}
	for _, ph := range st.Phases {
		if ph.Kind != scenarios.RetryAfterProbe {
			continue
		}
		r := checker.Result{Name: CheckProbe, Scope: ph.Name, Unit: "retries admitted", Bound: 1}
		switch {
		case !ph.ProbeRejected:
			r.Verdict, r.Explanation = checker.Unknown, "the probe was never rejected, so Retry-After was never tested: raise its requests"
		case !ph.ProbeRetried:
			r.Verdict, r.Explanation = checker.Fail, "the 429 carried no usable Retry-After, so a client cannot know when to come back"
		case ph.ProbeAdmitted:
			r.Verdict, r.Observed = checker.Pass, 1
			r.Explanation = fmt.Sprintf("a client that waited exactly Retry-After (%v) was admitted", ph.ProbeWait)
		default:
			r.Verdict = checker.Fail
			r.Explanation = fmt.Sprintf("a client that waited exactly Retry-After (%v) was rejected again: the header sends clients back too early", ph.ProbeWait)
		}
		out = append(out, r)
	}
	return out
}

func verdict(r checker.Result, ok bool) checker.Result {
	r.Verdict = checker.Fail
	if ok {
		r.Verdict = checker.Pass
	}
	return r
}

func latencyVerdict(r checker.Result, ok, loadOK bool) checker.Result {
	r = verdict(r, ok)
	if !loadOK {
		r.Verdict = checker.Unknown
		r.Explanation += "; invalid: the generator fell behind its schedule"
	}
	return r
}

// overhead compares the limited route with its baseline at p50, p99 and
// p99.9, from the intended send times.
func overhead(ov *scenarios.Overhead, routes map[string]*traffic.Latency, loadOK bool) []checker.Result {
	limited, baseline := routes[ov.Route], routes[ov.Baseline]
	if limited == nil || baseline == nil {
		return []checker.Result{{Name: CheckOverhead, Verdict: checker.Unknown, Unit: "ms",
			Explanation: fmt.Sprintf("no traffic reached %s or its baseline %s: add both to a phase's routes", ov.Route, ov.Baseline)}}
	}
	var out []checker.Result
	for _, q := range []struct {
		name  string
		p     float64
		bound time.Duration
	}{{"p50", 0.5, ov.P50}, {"p99", 0.99, ov.P99}, {"p99.9", 0.999, ov.P999}} {
		if q.bound <= 0 {
			continue
		}
		_, l := limited.Quantile(q.p)
		_, b := baseline.Quantile(q.p)
		diff := l - b
		out = append(out, latencyVerdict(checker.Result{
			Name: CheckOverhead, Scope: q.name, Observed: diff.Seconds() * 1000, Bound: q.bound.Seconds() * 1000, Unit: "ms",
			Explanation: fmt.Sprintf("%s latency %v on %s against %v on %s", q.name, l, ov.Route, b, ov.Baseline),
		}, diff <= q.bound, loadOK))
	}
	return out
}
