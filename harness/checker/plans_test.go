package checker

import (
	"testing"

	"github.com/rlbench/rlbench/harness/history"
)

// TestRulesByKeyPattern: rules that name keys by prefix (one plan's keys,
// as the history header's policies record them) judge each key by its
// own plan: twelve requests at once are within pro's burst and beyond
// free's, and a rejection free's plan explains is a false one under pro's.
func TestRulesByKeyPattern(t *testing.T) {
	var h hist
	for range 12 {
		h.add("free-3f9a1c07-0000", 0, ms(1), adm)
		h.add("pro-3f9a1c07-0000", 0, ms(1), adm)
	}
	h.add("pro-3f9a1c07-0001", ms(2), ms(3), rej, retryAfter(1))
	src := h.source()
	src.h.Policies = []history.RoutePolicy{
		{Key: "free-*", Limits: []string{"gcra:60/1m,burst=10"}},
		{Key: "pro-*", Limits: []string{"gcra:600/1m,burst=100"}},
		{Limits: []string{"gcra:120/1m,burst=20"}},
	}
	rep, err := Check(src, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	var budgets, falses []Result
	for _, r := range rep.Results {
		switch r.Name {
		case CheckBudget:
			budgets = append(budgets, r)
		case CheckFalseRejections:
			falses = append(falses, r)
		}
	}
	if len(budgets) != 3 || len(falses) != 3 {
		t.Fatalf("%d budget and %d false-rejection results, want 3 of each (one a plan)", len(budgets), len(falses))
	}
	if got := budgets[0]; got.Verdict != Fail || got.Observed != 12 || got.Proof == nil || got.Proof.Key != "free-3f9a1c07-0000" {
		t.Errorf("free's budget: %s, observed %v (%s); want a failure of the free key with 12", got.Verdict, got.Observed, got.Explanation)
	}
	if got := budgets[1]; got.Verdict != Pass {
		t.Errorf("pro's budget: %s (%s); want pass", got.Verdict, got.Explanation)
	}
	if got := falses[1]; got.Verdict != Fail || got.Observed != 1 {
		t.Errorf("pro's false rejections: %s, observed %v (%s); want the pro key's rejection", got.Verdict, got.Observed, got.Explanation)
	}
	if rep.Unmatched != 0 {
		t.Errorf("%d records unmatched, want 0", rep.Unmatched)
	}
}
