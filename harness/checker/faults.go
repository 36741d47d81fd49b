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

// applyFaults prepares a dataset for the ordinary checks and collects the
// fault checks' parts, one per window of f, into parts. end is the latest
// received time of the whole history, where a fault never healed ends.
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
//
// A store stall the harness observed (FaultWindow.Observed) excuses the
// requests it overlaps, and those of its recovery, just as a declared
// fault does, but is not a fault check's window: not every request sent
// in it met the stall, so neither the failure mode nor the fault latency
// is held to it. The requests the declared faults excuse, and those the
// stalls alone excuse, are counted into st.
//
// It returns the number of requests the fault checks judge: those sent
// during a declared fault other than a bare clock step.
func applyFaults(d *dataset, p Policy, f *runrecord.Drill, end int64, parts []faultPart, st *stallPart) (judged int) {
	if f == nil || len(f.Windows) == 0 {
		return 0
	}
	for wi, w := range f.Windows {
		if w.Observed {
			continue
		}
		to := w.ToNs
		if to == 0 {
			to = end
		}
		if !steppedOnly(w) { // a clock step leaves the store answering
			faultLatency(d, f, w, to, &parts[wi])
		}
		if w.Unavailable && f.Mode != "" {
			failureMode(d, p, f, w, to, &parts[wi])
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
		declared, stalled, inFault := false, false, false
		for wi, w := range f.Windows {
			to := w.ToNs
			if to == 0 {
				to = end
			}
			if !d.affects(q, w) || q.recv < w.FromNs || q.sent > to+tails[wi] {
				continue
			}
			if w.Observed {
				stalled = true
			} else {
				declared = true
				inFault = inFault || (q.sent >= w.FromNs && q.sent <= to && !steppedOnly(w))
			}
			if q.status == 0 && !w.Observed && q.sent <= to && noAnswerExpected(f, w) {
				q.unanswerable = true
			}
			q.faulted, q.outcome = true, history.Error
			q.retryAfter, q.rlLimit, q.rlRemain, q.rlReset, q.style = raNone, -1, -1, -1, 0
			if q.sent <= to {
				q.recv = max(q.recv, to)
			}
		}
		if declared {
			st.declared++
		}
		if inFault {
			judged++
		}
		if stalled && !declared {
			st.excused++
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
				// Renamed keys follow every key of the history, in order of
				// first appearance, as a pass over the whole history names
				// them.
				d.rank = append(d.rank, renamedRank|uint64(d.seqOf(int32(i))))
				renamed[k] = id
			}
			q.key = id
		}
		q.sent -= early[i]
		q.recv += late[i]
	}
	return judged
}

// faultResults are the fault checks' results over the whole history, from
// the parts pt collected: per window, the latency bound (but for a bare
// clock step) and the failure mode (for a store that was unavailable).
func faultResults(p Policy, f *runrecord.Drill, pt *partial) []Result {
	if f == nil || len(f.Windows) == 0 {
		return nil
	}
	var out []Result
	for wi, w := range f.Windows {
		if w.Observed {
			continue
		}
		scope := fmt.Sprintf("%s #%d", w.Kind, wi+1)
		if !steppedOnly(w) {
			out = append(out, pt.faults[wi].latencyResult(f, scope))
		}
		if w.Unavailable && f.Mode != "" {
			out = append(out, pt.faults[wi].modeResult(f, scope))
		}
	}
	return out
}

// noAnswerExpected reports whether fault w of drill f may leave the
// requests it concerns with no one to answer them, so that a transport
// error there is the fault's doing and no failure of the target: a fault
// on one instance (FaultWindow.Instance) takes that instance down while it
// acts (a kill, or the restart that steps its clock), and a target that
// declares no failure mode promised nothing while its store was
// unavailable. Every declared failure mode answers (fail-open admits,
// fail-closed answers 503, a fallback decides from its local share), so
// under one a request to a live instance left without an answer is never
// expected; nor after the heal.
func noAnswerExpected(f *runrecord.Drill, w runrecord.FaultWindow) bool {
	return w.Instance != "" || w.Unavailable && f.Mode == ""
}

// faultLatency collects the latency of every request sent during the
// fault, and the requests left without an answer that the fault does not
// explain (noAnswerExpected): those were not answered within any bound,
// however soon their connection failed.
func faultLatency(d *dataset, f *runrecord.Drill, w runrecord.FaultWindow, to int64, fp *faultPart) {
	worst := int32(-1)
	expected := noAnswerExpected(f, w)
	for i := range d.reqs {
		q := &d.reqs[i]
		if !d.affects(q, w) || q.sent < w.FromNs || q.sent > to {
			continue
		}
		fp.sent++
		if q.status == 0 && !expected {
			fp.unanswered.add(d.example(int32(i)))
			continue
		}
		fp.timed++
		if q.status == 0 {
			fp.unanswerable++
		}
		if worst < 0 || q.recv-q.sent > d.reqs[worst].recv-d.reqs[worst].sent {
			worst = int32(i)
		}
	}
	if worst >= 0 {
		fp.slowest, fp.took = d.example(worst), d.reqs[worst].recv-d.reqs[worst].sent
	}
}

// latencyResult bounds the latency of every request sent during the fault.
func (fp *faultPart) latencyResult(f *runrecord.Drill, scope string) Result {
	bound := f.Timeout + f.Slack
	res := Result{Name: CheckFaultLatency, Scope: scope, Unit: "ms", Bound: millis(bound), Verdict: Pass}
	if fp.sent == 0 {
		res.Verdict = Unknown
		res.Explanation = "no request was sent during the fault: lengthen it or the traffic"
		return res
	}
	if n := fp.unanswered.n; n > 0 {
		// A dropped connection is no answer, however soon it failed.
		q := fp.unanswered.first[0]
		res.Verdict, res.Observed, res.Proof = Fail, float64(n), examplesProof(fp.unanswered.first)
		res.Unit = "requests without an answer"
		res.Bound = 0
		res.Explanation = fmt.Sprintf("%d of %s sent during the fault got no answer (first: request %d, its connection failed after %v), so none of them was answered within the store timeout %v plus slack %v; no declared failure mode leaves a request unanswered",
			n, Count(fp.sent, "requests"), q.id, time.Duration(q.to-q.from), f.Timeout, f.Slack)
		return res
	}
	q := fp.slowest
	took := time.Duration(fp.took)
	res.Observed = millis(took)
	res.Proof = &Proof{Key: q.key, FromNs: q.from, ToNs: q.to, RequestIDs: []uint64{q.id}}
	switch {
	case took > bound:
		res.Verdict = Fail
		res.Explanation = fmt.Sprintf("request %d took %v during the fault, beyond the store timeout %v plus slack %v: a request hung on the failing store", q.id, took, f.Timeout, f.Slack)
	case fp.unanswerable == fp.sent:
		res.Explanation = fmt.Sprintf("%s sent during the fault, none answered, as the fault means (no one was left to answer them); each failed within %v (store timeout %v plus slack %v): none hung", Count(fp.sent, "requests"), took, f.Timeout, f.Slack)
	case fp.unanswerable > 0:
		res.Explanation = fmt.Sprintf("%s sent during the fault, each answered, or failed as the fault means (%d with no one left to answer them), within %v (store timeout %v plus slack %v)", Count(fp.sent, "requests"), fp.unanswerable, took, f.Timeout, f.Slack)
	default:
		res.Explanation = fmt.Sprintf("%s sent during the fault, each answered within %v (store timeout %v plus slack %v)", Count(fp.sent, "requests"), took, f.Timeout, f.Slack)
	}
	return res
}

// failureMode collects the requests sent and answered wholly within the
// fault, and those of them that did not get the declared behaviour.
func failureMode(d *dataset, p Policy, f *runrecord.Drill, w runrecord.FaultWindow, to int64, fp *faultPart) {
	var inside []int32
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
	fp.inside += len(inside)
	switch f.Mode {
	case runrecord.FailOpen:
		for _, i := range inside {
			if q := &d.reqs[i]; q.outcome != history.Admitted {
				fp.bad.add(d.example(i))
			}
		}
	case runrecord.FailClosed:
		for _, i := range inside {
			if q := &d.reqs[i]; q.status != http.StatusServiceUnavailable || q.retryAfter < 1 {
				fp.bad.add(d.example(i))
			}
		}
	case runrecord.FailFallback:
		for _, i := range fallbackExcess(d, p, f, inside, to-w.FromNs) {
			fp.bad.add(d.example(i))
		}
	}
}

// modeResult checks that the requests sent and answered wholly within the
// fault got the declared behaviour.
func (fp *faultPart) modeResult(f *runrecord.Drill, scope string) Result {
	res := Result{Name: CheckFailureMode, Scope: scope + " " + string(f.Mode), Unit: "requests", Verdict: Pass}
	var want string
	switch f.Mode {
	case runrecord.FailOpen:
		want = "admitted (fail-open)"
	case runrecord.FailClosed:
		want = "503 with a Retry-After (fail-closed)"
	case runrecord.FailFallback:
		want = fmt.Sprintf("within each instance's 1/%d share of the budget (fallback)", max(f.Instances, 1))
	}
	res.Bound = 0
	res.Observed = float64(fp.bad.n)
	if fp.inside == 0 {
		res.Verdict = Unknown
		res.Explanation = "no request was sent and answered within the fault: lengthen it or raise the rate"
		return res
	}
	if fp.bad.n > 0 {
		res.Verdict = Fail
		res.Proof = examplesProof(fp.bad.first)
		q := fp.bad.first[0]
		res.Explanation = fmt.Sprintf("%d of %s within the fault not %s; first: request %d, status %d", fp.bad.n, Count(fp.inside, "requests"), want, q.id, q.status)
		return res
	}
	res.Explanation = fmt.Sprintf("%s within the fault, each %s", Count(fp.inside, "requests"), want)
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

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
