package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
)

// Bounds on what the store stalls the harness observed may excuse before
// the budget and false-rejection verdicts stop resting on enough of the
// run. A stall excuses the requests it overlaps and those of the recovery
// after it, as a declared fault does; a host so loaded that its store
// stalls for more than this leaves too little of the run judged by the
// shared budget, and a stall's excuse could hide a real fault. The shares
// are of the requests the declared faults leave judged (the run's requests
// less those a declared fault or its recovery excuses): a scenario that
// declares a long fault has that much less left for a stall to excuse.
const (
	// MaxStalledShare is the largest fraction of the requests the declared
	// faults leave judged that the observed stalls themselves may overlap.
	MaxStalledShare = 0.10
	// MaxStallExcusedShare is the largest fraction of the requests the
	// declared faults leave judged that the observed stalls may excuse
	// together with their recoveries: a short stall brings the scenario's
	// whole recovery bound (2 s in the shipped drills, a quarter of their
	// runs), and beyond half the stalls would excuse more than they leave
	// judged.
	MaxStallExcusedShare = 0.5
	// MinJudgedCapacities is how many times a limit's capacity (Limit.Capacity:
	// the burst of a bucket, the limit per window) the units of its rules'
	// requests left judged after every excusal must reach when an observed
	// stall excused any request. With no more judged than the capacity no
	// over-admission could show at all, since any interval allows it; twice
	// it is the least that lets the limiter be seen to hold at the capacity
	// and refuse past it. A run without observed stalls is not held to it:
	// its declared faults and traffic are the scenario's to choose.
	MinJudgedCapacities = 2
)

// stallPart counts the requests the declared faults excused with their
// recoveries (declared), and those observed store stalls excused and no
// declared fault did: excused with their recoveries, overlapped those the
// stalls themselves overlapped.
type stallPart struct {
	declared, excused, overlapped int
}

// guarded is where, in a report's results, the results the stall guard may
// make unknown sit: budget[k] is the budget result of the k-th limit use,
// rules[ri] the false-rejection result of rule ri.
type guarded struct {
	budget, rules []int
}

// stallNotes says what the observed store stalls of p.Faults excused (out
// of the requests the declared faults left judged) and guards the budget
// and false-rejection results of results, at the indexes at, from resting
// on too little of the run: when the stalls excused more than
// MaxStalledShare or MaxStallExcusedShare of what the declared faults left
// judged, every such result that passed becomes unknown, the harness's (the
// run could not make a valid test); and when they excused any request,
// each such result that passed with fewer units left judged under its
// limit (its rule's limits) than MinJudgedCapacities times the capacity
// does too. A failure stays one: it was proven on requests no fault or
// stall excused. Nil when p.Faults has no observed stall.
func stallNotes(results []Result, at guarded, p Policy, uses []limitUse, pt *partial) []string {
	f, st := p.Faults, pt.stalls
	if f == nil {
		return nil
	}
	var spans []string
	var total int64
	for _, w := range f.Windows {
		if !w.Observed {
			continue
		}
		spans = append(spans, fmt.Sprintf("%s–%s s", seconds(w.FromNs), seconds(w.ToNs)))
		total += w.ToNs - w.FromNs
	}
	if len(spans) == 0 {
		return nil
	}
	base := pt.counts.Records - st.declared
	notes := []string{fmt.Sprintf("the store stalled beyond the store timeout %v %s (total %s ms, %s of the %d the declared faults left judged excused) outside the declared faults: at %s; the budget and false-rejection checks leave the requests they overlapped or the recovery %v after them aside, as they do a fault's, and no failure-mode or fault-latency check is held to them",
		f.Timeout, Count(len(spans), "times"), wholeMs(total), Count(st.excused, "requests"), base, strings.Join(spans, ", "), f.Recovery)}
	if st.excused == 0 || base <= 0 {
		return notes
	}
	unknown := func(r *Result, why string) bool {
		if r.Verdict != Pass {
			return false
		}
		r.Verdict, r.Class = Unknown, ClassHarness
		r.Explanation = why + " (" + r.Explanation + ")"
		return true
	}
	overShare := float64(st.overlapped) > MaxStalledShare*float64(base)
	overExcused := float64(st.excused) > MaxStallExcusedShare*float64(base)
	if overShare || overExcused {
		why := fmt.Sprintf("the store stalled for %s ms over %s, overlapping %s of the %d the declared faults left judged (%.1f%%, at most %g%%) and excusing %s with their recoveries (%.1f%%, at most %g%%): too little of the run was judged by the shared budget; rerun on a quieter machine",
			wholeMs(total), Count(len(spans), "stalls"),
			Count(st.overlapped, "requests"), base, 100*float64(st.overlapped)/float64(base), 100*MaxStalledShare,
			Count(st.excused, "requests"), 100*float64(st.excused)/float64(base), 100*MaxStallExcusedShare)
		for _, i := range at.budget {
			unknown(&results[i], why)
		}
		for _, i := range at.rules {
			unknown(&results[i], why)
		}
		notes = append(notes, why)
	}
	thin := func(judged int64, lim Limit) string {
		return fmt.Sprintf("after the declared faults and the store stalls %s were left judged under %s, fewer than %d times its capacity %d: too few to show an over-admission; rerun on a quieter machine",
			Count(int(judged), "units"), lim, MinJudgedCapacities, lim.Capacity())
	}
	for k, u := range uses {
		var judged int64
		for _, ri := range u.rules {
			judged += pt.rules[ri].judged
		}
		if judged < MinJudgedCapacities*u.lim.Capacity() {
			if why := thin(judged, u.lim); unknown(&results[at.budget[k]], why) {
				notes = append(notes, why)
			}
		}
	}
	for ri, rule := range p.Rules {
		judged := pt.rules[ri].judged
		for _, l := range rule.Limits {
			if judged < MinJudgedCapacities*l.Capacity() {
				if why := thin(judged, l); unknown(&results[at.rules[ri]], why) && !slices.Contains(notes, why) {
					notes = append(notes, why)
				}
				break
			}
		}
	}
	return notes
}

// healthyPolicy is p with the store taken as healthy throughout: its
// drill without the observed store stalls, the declared faults kept. ok
// is false when p's drill has no observed stall.
func healthyPolicy(p Policy) (hp Policy, ok bool) {
	f := p.Faults
	if f == nil || !slices.ContainsFunc(f.Windows, func(w runrecord.FaultWindow) bool { return w.Observed }) {
		return p, false
	}
	healthy := *f
	healthy.Windows = slices.DeleteFunc(slices.Clone(f.Windows), func(w runrecord.FaultWindow) bool { return w.Observed })
	p.Faults = &healthy
	return p, true
}

// twoHypotheses holds the limiter checks' results (the budget with its
// queue-delay and boundary-burst-ratio results, false-rejections,
// retry-after, ratelimit-fields, header-style) to both hypotheses on the
// store stalls the harness observed outside the declared faults of f:
// results, judged with the stalls excused as faults, and asHealthy, the
// same checks in the same order judged with every request as if the store
// had been healthy (healthyPolicy). The stall excusal may hide a violation
// as well as a fail-open decision, and no share of the run it excuses
// makes a pass sound; both hypotheses together do:
//
//   - a failure with the stalls excused stays one: it was proven on
//     requests no fault or stall excused;
//   - a pass under both is a pass: the stalls changed nothing;
//   - a pass with the stalls excused and none as if the store were
//     healthy becomes unknown, the harness's: the violation shows only
//     among requests a stall may excuse, and the run could not tell the
//     limiter's fault from the store's;
//   - an unknown stays unknown.
//
// It returns a note naming the checks it made unknown, nil when none.
func twoHypotheses(results, asHealthy []Result, f *runrecord.Drill) []string {
	var spans []string
	for _, w := range f.Windows {
		if w.Observed {
			spans = append(spans, fmt.Sprintf("%s–%s s", seconds(w.FromNs), seconds(w.ToNs)))
		}
	}
	var changed []string
	for i := range results {
		r, h := &results[i], asHealthy[i]
		if r.Verdict != Pass || h.Verdict == Pass {
			continue
		}
		if name := strings.TrimSpace(r.Name + " " + r.Scope); !slices.Contains(changed, name) {
			changed = append(changed, name)
		}
		r.Verdict, r.Class = Unknown, ClassHarness
		r.Explanation = fmt.Sprintf("a violation shows only among requests an observed store stall may excuse (with the store taken as healthy, %s: %s): the store stalled at %s outside the declared faults; rerun on a quieter machine (%s)",
			h.Verdict, h.Explanation, strings.Join(spans, ", "), r.Explanation)
		if h.Verdict == Fail { // the evidence is the healthy store's finding
			r.Observed, r.Bound, r.Proof = h.Observed, h.Bound, h.Proof
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("with the store taken as healthy through the stalls at %s, %s did not pass: a violation there shows only among requests a stall may excuse, so those checks are unknown, the harness's; rerun on a quieter machine",
		strings.Join(spans, ", "), strings.Join(changed, ", "))}
}

// clone is a copy of d that applyFaults and the checks may change without
// changing d.
func (d *dataset) clone() *dataset {
	c := *d
	c.reqs = slices.Clone(d.reqs)
	c.keys = slices.Clone(d.keys)
	c.rank = slices.Clone(d.rank)
	c.seq = slices.Clone(d.seq)
	return &c
}

// wholeMs formats ns as milliseconds to the tenth, without a trailing ".0".
func wholeMs(ns int64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", millis(time.Duration(ns))), ".0")
}

// seconds formats t, in ns since the start, as seconds to the hundredth.
func seconds(ns int64) string { return fmt.Sprintf("%.2f", float64(ns)/1e9) }
