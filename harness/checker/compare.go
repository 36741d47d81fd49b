package checker

import (
	"fmt"
	"strconv"
)

// CompareResults lists how the verdict table got differs from want in what
// a verdict is: each check's name, scope, verdict, observed value and bound
// (explanations and proofs are prose and evidence, not compared). Rows are
// matched by name and scope, in order among rows that share both; a table
// whose rows all agree but come in another order differs too. It is empty
// when the tables agree: a re-check of a saved run (`rlbench check DIR`)
// against the summary.json the run wrote, say.
func CompareResults(got, want []Result) []string {
	type id struct {
		name, scope string
		n           int // occurrence among rows of this name and scope
	}
	ids := func(rs []Result) []id {
		seen := map[[2]string]int{}
		out := make([]id, len(rs))
		for i, r := range rs {
			k := [2]string{r.Name, r.Scope}
			out[i] = id{r.Name, r.Scope, seen[k]}
			seen[k]++
		}
		return out
	}
	gotIDs, wantIDs := ids(got), ids(want)
	gotAt := map[id]int{}
	for i, k := range gotIDs {
		gotAt[k] = i
	}
	var diffs []string
	matched := map[id]bool{}
	for j, k := range wantIDs {
		i, ok := gotAt[k]
		switch {
		case !ok:
			diffs = append(diffs, "missing: "+row(want[j]))
		case got[i].Verdict != want[j].Verdict || got[i].Observed != want[j].Observed || got[i].Bound != want[j].Bound:
			diffs = append(diffs, fmt.Sprintf("%s, want %s", row(got[i]), row(want[j])))
		}
		matched[k] = ok
	}
	for i, k := range gotIDs {
		if !matched[k] {
			diffs = append(diffs, "extra: "+row(got[i]))
		}
	}
	if len(diffs) == 0 {
		for i := range gotIDs {
			if gotIDs[i] != wantIDs[i] {
				diffs = append(diffs, fmt.Sprintf("the checks come in another order: row %d is %s, want %s", i+1, row(got[i]), row(want[i])))
				break
			}
		}
	}
	return diffs
}

// row is a result's compared fields on one line.
func row(r Result) string {
	name := r.Name
	if r.Scope != "" {
		name += " (" + r.Scope + ")"
	}
	return fmt.Sprintf("%s %s, observed %s, bound %s", name, r.Verdict,
		strconv.FormatFloat(r.Observed, 'g', -1, 64), strconv.FormatFloat(r.Bound, 'g', -1, 64))
}
