package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
)

// stallPart counts the requests the declared faults excused with their
// recoveries (declared), and those observed store stalls excused with
// their recoveries and no declared fault did (excused).
type stallPart struct {
	declared, excused int
}

// stallNotes says what the observed store stalls of p.Faults excused, out
// of the requests the declared faults left judged. It is information
// only: the verdicts of a run with observed stalls rest on both
// hypotheses (twoHypotheses), and no share of the run a stall excuses
// changes them. Nil when p.Faults has no observed stall.
func stallNotes(p Policy, pt *partial) []string {
	f, st := p.Faults, pt.stalls
	if f == nil {
		return nil
	}
	spans, total := stallSpans(f)
	if len(spans) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the store stalled beyond the store timeout %v %s (total %s ms, %s of the %d the declared faults left judged excused) outside the declared faults: at %s; the budget and false-rejection checks leave the requests they overlapped or the recovery %v after them aside, as they do a fault's, and no failure-mode or fault-latency check is held to them",
		f.Timeout, Count(len(spans), "times"), wholeMs(total), Count(st.excused, "requests"), pt.counts.Records-st.declared, strings.Join(spans, ", "), f.Recovery)}
}

// stallSpans lists f's observed store stalls as "a–b s", and their total
// length, ns.
func stallSpans(f *runrecord.Drill) (spans []string, total int64) {
	for _, w := range f.Windows {
		if w.Observed {
			spans = append(spans, fmt.Sprintf("%s–%s s", seconds(w.FromNs), seconds(w.ToNs)))
			total += w.ToNs - w.FromNs
		}
	}
	return spans, total
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
	spans, _ := stallSpans(f)
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
