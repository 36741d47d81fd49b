package checker

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// Fault check names.
const (
	CheckFaultLatency = "fault-latency"
	CheckFailureMode  = "failure-mode"
)

// affects reports whether w concerns q at all (an instance fault concerns
// only that instance's requests).
func (d *dataset) affects(q *request, w runrecord.FaultWindow) bool {
	return w.Instance == "" || d.insts[q.inst] == w.Instance
}

// applyFaults prepares a dataset for the ordinary checks and returns the
// fault checks' results.
//
// A request from a fault's start to the end of its recovery was decided by
// the failure mode (a fail-open admission, a fallback's local rejection),
// or by a store that may have run its charge late (a paused Redis runs the
// scripts queued while it was stopped when it resumes): it is marked
// faulted, with no outcome or rate-limit headers left to judge. The budget
// ignores it; the other checks count it as possibly charged but never as
// surely charged, so it can explain a later rejection but never make one
// look false; and when it overlapped the fault itself, its decision
// interval is stretched to the fault's end. Requests after a fault that
// restarted the store empty are checked as a fresh key ("KEY@restart-N").
func applyFaults(d *dataset, p Policy, f *runrecord.Drill) []Result {
	if f == nil || len(f.Windows) == 0 {
		return nil
	}
	var end int64
	for i := range d.reqs {
		end = max(end, d.reqs[i].recv)
	}
	var out []Result
	for wi, w := range f.Windows {
		to := w.ToNs
		if to == 0 {
			to = end
		}
		scope := fmt.Sprintf("%s #%d", w.Kind, wi+1)
		if !steppedOnly(w) { // a clock step leaves the store answering
			out = append(out, faultLatency(d, f, w, to, scope))
		}
		if w.Unavailable && f.Mode != "" {
			out = append(out, failureMode(d, p, f, w, to, scope))
		}
	}
	// Only now, with the fault checks done on the recorded outcomes, hide the
	// faults from the ordinary checks. The clock steps' widening is found
	// first, on the recorded outcomes too, and applied last.
	early, late := stepWidening(d, p, f)
	tails := make([]int64, len(f.Windows))
	for wi, w := range f.Windows {
		tails[wi] = faultTail(p, f, w)
	}
	var restarts []int64
	for _, w := range f.Windows {
		if w.LosesState && w.ToNs > 0 {
			restarts = append(restarts, w.ToNs)
		}
	}
	slices.Sort(restarts)
	renamed := map[[2]uint32]uint32{} // (key, segment) → new key id
	for i := range d.reqs {
		q := &d.reqs[i]
		for wi, w := range f.Windows {
			to := w.ToNs
			if to == 0 {
				to = end
			}
			if !d.affects(q, w) || q.recv < w.FromNs || q.sent > to+tails[wi] {
				continue
			}
			q.faulted, q.outcome = true, history.Error
			q.retryAfter, q.rlLimit, q.rlRemain, q.rlReset, q.style = raNone, -1, -1, -1, 0
			if q.sent <= to {
				q.recv = max(q.recv, to)
			}
		}
		seg := 0
		for seg < len(restarts) && q.sent >= restarts[seg] {
			seg++
		}
		if seg > 0 {
			k := [2]uint32{q.key, uint32(seg)}
			id, ok := renamed[k]
			if !ok {
				id = uint32(len(d.keys))
				d.keys = append(d.keys, fmt.Sprintf("%s@restart-%d", d.keys[q.key], seg))
				renamed[k] = id
			}
			q.key = id
		}
		q.sent -= early[i]
		q.recv += late[i]
	}
	return out
}

// faultLatency bounds the latency of every request sent during the fault.
func faultLatency(d *dataset, f *runrecord.Drill, w runrecord.FaultWindow, to int64, scope string) Result {
	bound := f.Timeout + f.Slack
	res := Result{Name: CheckFaultLatency, Scope: scope, Unit: "ms", Bound: millis(bound), Verdict: Pass}
	worst, n := int32(-1), 0
	for i := range d.reqs {
		q := &d.reqs[i]
		if !d.affects(q, w) || q.sent < w.FromNs || q.sent > to {
			continue
		}
		n++
		if worst < 0 || q.recv-q.sent > d.reqs[worst].recv-d.reqs[worst].sent {
			worst = int32(i)
		}
	}
	if worst < 0 {
		res.Verdict = Unknown
		res.Explanation = "no request was sent during the fault: lengthen it or the traffic"
		return res
	}
	q := &d.reqs[worst]
	took := time.Duration(q.recv - q.sent)
	res.Observed = millis(took)
	res.Proof = &Proof{Key: d.keys[q.key], FromNs: q.sent, ToNs: q.recv, RequestIDs: []uint64{q.id}}
	if took > bound {
		res.Verdict = Fail
		res.Explanation = fmt.Sprintf("request %d took %v during the fault, beyond the store timeout %v plus slack %v: a request hung on the failing store", q.id, took, f.Timeout, f.Slack)
	} else {
		res.Explanation = fmt.Sprintf("%s sent during the fault, each answered within %v (store timeout %v plus slack %v)", Count(n, "requests"), took, f.Timeout, f.Slack)
	}
	return res
}

// failureMode checks that the requests sent and answered wholly within the
// fault got the declared behaviour.
func failureMode(d *dataset, p Policy, f *runrecord.Drill, w runrecord.FaultWindow, to int64, scope string) Result {
	res := Result{Name: CheckFailureMode, Scope: scope + " " + string(f.Mode), Unit: "requests", Verdict: Pass}
	var inside, bad []int32
	// Only while the fault was surely in effect: a request answered as the
	// injection or the heal was under way may have met the healthy store.
	from, until := w.InEffect()
	if until == 0 {
		until = to
	}
	for i := range d.reqs {
		if q := &d.reqs[i]; d.affects(q, w) && q.sent >= from && q.recv <= until {
			inside = append(inside, int32(i))
		}
	}
	var want string
	switch f.Mode {
	case runrecord.FailOpen:
		want = "admitted (fail-open)"
		for _, i := range inside {
			if q := &d.reqs[i]; q.outcome != history.Admitted {
				bad = append(bad, i)
			}
		}
	case runrecord.FailClosed:
		want = "503 with a Retry-After (fail-closed)"
		for _, i := range inside {
			if q := &d.reqs[i]; q.status != http.StatusServiceUnavailable || q.retryAfter < 1 {
				bad = append(bad, i)
			}
		}
	case runrecord.FailFallback:
		want = fmt.Sprintf("within each instance's 1/%d share of the budget (fallback)", max(f.Instances, 1))
		bad = fallbackExcess(d, p, f, inside, to-w.FromNs)
	}
	res.Bound = 0
	res.Observed = float64(len(bad))
	if len(inside) == 0 {
		res.Verdict = Unknown
		res.Explanation = "no request was sent and answered within the fault: lengthen it or raise the rate"
		return res
	}
	if len(bad) > 0 {
		res.Verdict = Fail
		res.Proof = proofOf(d, bad)
		q := &d.reqs[bad[0]]
		res.Explanation = fmt.Sprintf("%d of %s within the fault not %s; first: request %d, status %d", len(bad), Count(len(inside), "requests"), want, q.id, q.status)
		return res
	}
	res.Explanation = fmt.Sprintf("%s within the fault, each %s", Count(len(inside), "requests"), want)
	return res
}

// fallbackExcess returns the admissions beyond an instance's local share:
// per key, instance and limit, the units admitted during the fault may not
// exceed what the share admits over the fault's length from a full budget
// (model.fallbackBound).
func fallbackExcess(d *dataset, p Policy, f *runrecord.Drill, inside []int32, length int64) []int32 {
	type slot struct {
		key, inst uint32
		lim       Limit
	}
	used := map[slot]int64{}
	bounds := map[Limit]float64{}
	for _, rule := range p.Rules {
		for _, l := range rule.Limits {
			bounds[l] = modelFor(l, true).fallbackBound(f.Instances, length)
		}
	}
	var bad []int32
	for _, i := range inside {
		q := &d.reqs[i]
		if q.status >= 500 || q.status == 0 {
			bad = append(bad, i) // a fallback answers; it never errs
			continue
		}
		if q.outcome != history.Admitted {
			continue
		}
		for _, rule := range p.Rules {
			if !match(rule.Route, d.routes[q.route]) || !match(rule.Key, d.keys[q.key]) {
				continue
			}
			for _, l := range rule.Limits {
				s := slot{q.key, q.inst, l}
				used[s] += q.cost
				if float64(used[s]) > bounds[l] {
					bad = append(bad, i)
				}
			}
			break
		}
	}
	return bad
}

func proofOf(d *dataset, idx []int32) *Proof {
	q := &d.reqs[idx[0]]
	p := &Proof{Key: d.keys[q.key], FromNs: q.sent, ToNs: q.recv}
	for _, i := range idx[:min(len(idx), maxExamples)] {
		p.RequestIDs = append(p.RequestIDs, d.reqs[i].id)
	}
	return p
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
