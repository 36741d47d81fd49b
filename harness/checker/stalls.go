package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
)

// Bounds on what the store stalls the harness observed may excuse before
// the budget and false-rejection verdicts stop resting on enough of the
// run. A stall excuses the requests it overlaps and those of the recovery
// after it, as a declared fault does; a host so loaded that its store
// stalls for more than this leaves too little of the run judged by the
// shared budget, and a stall's excuse could hide a real fault.
const (
	// MaxStalledShare is the largest fraction of a run's requests the
	// observed stalls themselves may overlap.
	MaxStalledShare = 0.10
	// MaxStallExcusedShare is the largest fraction of a run's requests the
	// observed stalls may excuse together with their recoveries: a short
	// stall brings the scenario's whole recovery bound (2 s in the shipped
	// drills, a quarter of their runs), and beyond half of the run the
	// stalls would excuse more than they leave judged.
	MaxStallExcusedShare = 0.5
)

// stallPart counts the requests observed store stalls excused and no
// declared fault did: excused with their recoveries, overlapped those the
// stalls themselves overlapped.
type stallPart struct {
	excused, overlapped int
}

// stallNotes says what the observed store stalls of f excused (st, out of
// records requests), and when they excused more than MaxStalledShare or
// MaxStallExcusedShare of the run makes every budget and false-rejection
// result of results that passed unknown, the harness's: the run could not
// make a valid test. Nil when f has no observed stall.
func stallNotes(results []Result, f *runrecord.Drill, st stallPart, records int) []string {
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
	notes := []string{fmt.Sprintf("the store stalled beyond the store timeout %v %s (total %s ms, %s excused) outside the declared faults: at %s; the budget and false-rejection checks leave the requests they overlapped or the recovery %v after them aside, as they do a fault's, and no failure-mode or fault-latency check is held to them",
		f.Timeout, Count(len(spans), "times"), wholeMs(total), Count(st.excused, "requests"), strings.Join(spans, ", "), f.Recovery)}
	if records == 0 {
		return notes
	}
	overShare := float64(st.overlapped) > MaxStalledShare*float64(records)
	overExcused := float64(st.excused) > MaxStallExcusedShare*float64(records)
	if !overShare && !overExcused {
		return notes
	}
	why := fmt.Sprintf("the store stalled for %s ms over %s, overlapping %s of %d (%.1f%%, at most %g%%) and excusing %s with their recoveries (%.1f%%, at most %.1f%%): too little of the run was judged by the shared budget; rerun on a quieter machine",
		wholeMs(total), Count(len(spans), "stalls"),
		Count(st.overlapped, "requests"), records, 100*float64(st.overlapped)/float64(records), 100*MaxStalledShare,
		Count(st.excused, "requests"), 100*float64(st.excused)/float64(records), 100*MaxStallExcusedShare)
	for i := range results {
		r := &results[i]
		if (r.Name == CheckBudget || r.Name == CheckFalseRejections) && r.Verdict == Pass {
			r.Verdict, r.Class = Unknown, ClassHarness
			r.Explanation = why + " (" + r.Explanation + ")"
		}
	}
	return append(notes, why)
}

// wholeMs formats ns as milliseconds to the tenth, without a trailing ".0".
func wholeMs(ns int64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", millis(time.Duration(ns))), ".0")
}

// seconds formats t, in ns since the start, as seconds to the hundredth.
func seconds(ns int64) string { return fmt.Sprintf("%.2f", float64(ns)/1e9) }
