//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
)

// TestRunPlansClaimProOnFreeExits1: the plans scenario holds each key to
// its own group's plan; claiming the pro plan for the free keys (which the
// instances hold to the free plan) fails the run with exit 1 on the free
// keys' false rejections, and on nothing of the pro keys.
func TestRunPlansClaimProOnFreeExits1(t *testing.T) {
	needRunPrerequisites(t)
	bin := buildRlbench(t)
	dir := filepath.Join(t.TempDir(), "out")
	code, output := rlbenchRun(t, bin, "run", "--out", dir, "--claim", "free=gcra:600/1m,burst=100", "plans")
	noLeftovers(t, bin)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, output)
	}
	var summary struct {
		Scenarios []struct {
			Checks []checker.Result `json:"checks"`
		} `json:"scenarios"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &summary); err != nil || len(summary.Scenarios) != 1 {
		t.Fatalf("summary.json: %v\n%s", err, data)
	}
	var freeFailed bool
	for _, r := range summary.Scenarios[0].Checks {
		switch {
		case r.Name == checker.CheckFalseRejections && strings.Contains(r.Scope, "keys free-*"):
			freeFailed = r.Verdict == checker.Fail && r.Observed > 0
		case strings.Contains(r.Scope, "keys pro-*") && r.Verdict != checker.Pass:
			t.Errorf("pro's %s: %s (%s); the claim is of the free keys", r.Name, r.Verdict, r.Explanation)
		}
	}
	if !freeFailed {
		t.Fatalf("no failed false-rejections check of the free keys held to the pro plan:\n%s", output)
	}
}

// TestRunPlanClaimOfUnknownGroupExits2: a claim names a group that no
// scenario of the run has.
func TestRunPlanClaimOfUnknownGroupExits2(t *testing.T) {
	var out strings.Builder
	c := &runCommand{stdout: &out, stderr: &out}
	err := c.Run(t.Context(), []string{"--claim", "gold=gcra:1/1s,burst=1", "plans"})
	if err == nil || !strings.Contains(err.Error(), "no scenario of this run has an identity group gold") {
		t.Fatalf("error = %v, want one naming the unknown group", err)
	}
}
