//go:build unix

package mutation

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/sampleapi/faulty"
	"github.com/rlbench/rlbench/scenarios"
	mutationscenarios "github.com/rlbench/rlbench/scenarios/mutation"
	"github.com/rlbench/rlbench/scenarios/peers"
)

// TestMutantsCoverEveryVariant: the suite runs every faulty variant, each
// with a scenario, and names a check.
func TestMutantsCoverEveryVariant(t *testing.T) {
	var names []string
	for _, m := range Mutants() {
		names = append(names, m.Variant)
		if m.Check == "" {
			t.Errorf("%s names no check", m.Variant)
		}
		if _, err := mutationscenarios.Scenario(m.Variant); err != nil {
			t.Errorf("%s: %v", m.Variant, err)
		}
		if got, ok := Lookup(m.Variant); !ok || got != m {
			t.Errorf("Lookup(%q) = %+v, %v, want %+v", m.Variant, got, ok, m)
		}
	}
	if !slices.Equal(names, faulty.Names()) {
		t.Fatalf("mutants = %v, want faulty.Names() = %v", names, faulty.Names())
	}
	if _, ok := Lookup("atomic"); ok {
		t.Error(`Lookup("atomic") found a variant`)
	}
}

var (
	pass       = []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Pass}}
	failBudget = []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Fail}, {Name: checker.CheckRetryAfter, Verdict: checker.Pass}}
	failOther  = []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Pass}, {Name: checker.CheckRetryAfter, Verdict: checker.Fail}}
	unknown    = []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Unknown}}
)

func TestRowVerdicts(t *testing.T) {
	m := Mutant{Variant: "v", Check: checker.CheckBudget}
	for _, tc := range []struct {
		name            string
		r               Row
		refPass, caught bool
	}{
		{"caught", Row{Mutant: m, Reference: pass, Variant: failBudget}, true, true},
		{"another check failed", Row{Mutant: m, Reference: pass, Variant: failOther}, true, false},
		{"unknown is not caught", Row{Mutant: m, Reference: pass, Variant: unknown}, true, false},
		{"reference failed", Row{Mutant: m, Reference: failBudget, Variant: failBudget}, false, true},
		{"variant could not run", Row{Mutant: m, Reference: pass, Variant: failBudget, VariantErr: errors.New("boom")}, true, false},
		{"reference could not run", Row{Mutant: m, ReferenceErr: errors.New("boom"), Variant: failBudget}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.ReferencePassed(); got != tc.refPass {
				t.Errorf("ReferencePassed = %v, want %v", got, tc.refPass)
			}
			if got := tc.r.Caught(); got != tc.caught {
				t.Errorf("Caught = %v, want %v", got, tc.caught)
			}
		})
	}
	if got, want := strings.Join(failed(append(failOther, unknown...)), ","), "retry-after,budget"; got != want {
		t.Errorf("failed = %s, want %s", got, want)
	}
}

// TestScoreText: the table, the score and the verdict line of a suite.
func TestScoreText(t *testing.T) {
	budget := Mutant{Variant: faulty.NonAtomic, Check: checker.CheckBudget}
	retry := Mutant{Variant: faulty.RetryAfterShort, Check: checker.CheckRetryAfter}
	tests := []struct {
		name                          string
		rows                          []*Row
		caught, refFailed, incomplete int
		passed                        bool
		want                          []string
	}{
		{
			name:   "every variant caught",
			rows:   []*Row{{Mutant: budget, Reference: pass, Variant: failBudget}, {Mutant: retry, Reference: pass, Variant: failOther}},
			caught: 2, passed: true,
			want: []string{
				"non-atomic mutation/non-atomic budget pass FAIL yes budget",
				"Mutation score: 2/2 variants caught by their intended check; 0 reference runs failed.",
				"Verdict: pass: every variant caught by its check, every reference run passed.",
			},
		},
		{
			name:   "one missed, one reference failure",
			rows:   []*Row{{Mutant: budget, Reference: failOther, Variant: failBudget}, {Mutant: retry, Reference: pass, Variant: pass}},
			caught: 1, refFailed: 1,
			want: []string{
				"retry-after-short mutation/retry-after-short retry-after pass pass NO none",
				"reference run of non-atomic failed: retry-after",
				"Mutation score: 1/2 variants caught by their intended check; 1 reference runs failed.",
				"Verdict: fail: 1 of 2 variants not caught, 1 reference runs failed.",
			},
		},
		{
			name:       "a run that could not complete",
			rows:       []*Row{{Mutant: budget, Reference: pass, VariantErr: errors.New("no redis-server")}},
			incomplete: 1,
			want: []string{
				"non-atomic mutation/non-atomic budget pass error NO could not run",
				"1 runs could not complete.",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Score{Rows: tt.rows, Out: "out"}
			if got := s.Caught(); got != tt.caught {
				t.Errorf("Caught = %d, want %d", got, tt.caught)
			}
			if got := s.ReferenceFailures(); got != tt.refFailed {
				t.Errorf("ReferenceFailures = %d, want %d", got, tt.refFailed)
			}
			if got := s.Incomplete(); got != tt.incomplete {
				t.Errorf("Incomplete = %d, want %d", got, tt.incomplete)
			}
			if got := s.Passed(); got != tt.passed {
				t.Errorf("Passed = %v, want %v", got, tt.passed)
			}
			var buf bytes.Buffer
			if err := s.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			text := squeeze(buf.String())
			for _, want := range tt.want {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, buf.String())
				}
			}
			if strings.Contains(text, "Verdict:") && tt.incomplete > 0 {
				t.Errorf("a verdict despite incomplete runs:\n%s", buf.String())
			}
		})
	}
}

// TestFalseAlarmsText: the tally table and the total.
func TestFalseAlarmsText(t *testing.T) {
	fa := &FalseAlarms{Rounds: 3, Out: "out", Tallies: []Tally{
		{Scenario: "quickstart"},
		{Scenario: "overhead", Failures: 2, Checks: []string{"max-latency"}},
		{Scenario: "concurrency", Invalid: 1, Checks: []string{"load-delivered (harness)"}},
		{Scenario: "peer-express", Known: 3},
		{Scenario: "peer-nginx-nodelay", Skipped: 3, Why: "nginx is not installed"},
	}}
	if got, want := fa.Total(), 2; got != want {
		t.Fatalf("Total = %d, want %d", got, want)
	}
	if got, want := fa.Skipped(), 3; got != want {
		t.Fatalf("Skipped = %d, want %d", got, want)
	}
	if got, want := fa.Invalids(), 1; got != want {
		t.Fatalf("Invalids = %d, want %d", got, want)
	}
	var buf bytes.Buffer
	if err := fa.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := squeeze(buf.String())
	for _, want := range []string{
		"SCENARIO RUNS SKIPPED KNOWN FINDINGS HARNESS ERRORS FALSE FAILURES FAILED CHECKS",
		"quickstart 3 0 0 0 0 -",
		"overhead 3 0 0 0 2 max-latency",
		"concurrency 3 0 0 1 0 load-delivered (harness)",
		"peer-express 3 0 3 0 0 -",
		"peer-nginx-nodelay 0 3 0 0 0 -",
		"peer-nginx-nodelay skipped: nginx is not installed",
		"False failures: 2 in 12 reference runs (5 scenarios × 3, 3 skipped, 1 the harness's error after 3 attempts). Runs in out.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

// squeeze turns the runs of spaces a tabwriter pads with into one space.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// TestHarnessError: a run is made again only when the harness, not the
// limiter, is what failed.
func TestHarnessError(t *testing.T) {
	res := func(name string, v checker.Verdict) checker.Result {
		return checker.Result{Name: name, Verdict: v, Class: checker.ClassOf(name)}
	}
	tests := []struct {
		name    string
		results []checker.Result
		want    bool
	}{
		{"all pass", []checker.Result{res(checker.CheckBudget, checker.Pass), res(checker.CheckLoadDelivered, checker.Pass)}, false},
		{"generator behind", []checker.Result{res(checker.CheckBudget, checker.Pass), res(checker.CheckLoadDelivered, checker.Fail)}, true},
		{"fault not injected", []checker.Result{res(checker.CheckFaultInjected, checker.Fail)}, true},
		{"limiter failed too", []checker.Result{res(checker.CheckBudget, checker.Fail), res(checker.CheckLoadDelivered, checker.Fail)}, false},
		{"limiter failed alone", []checker.Result{res(checker.CheckRetryAfter, checker.Fail)}, false},
		{"limiter unknown, generator behind", []checker.Result{res(checker.CheckBudget, checker.Unknown), res(checker.CheckLoadDelivered, checker.Fail)}, true},
		{"known finding, burst spread", []checker.Result{res(checker.CheckRetryAfter, checker.Fail), res(checker.CheckLoadDelivered, checker.Fail)}, true},
		{"known finding alone", []checker.Result{res(checker.CheckRetryAfter, checker.Fail)}, false},
		{"known finding and a new one, burst spread", []checker.Result{res(checker.CheckRetryAfter, checker.Fail), res(checker.CheckBudget, checker.Fail), res(checker.CheckLoadDelivered, checker.Fail)}, false},
	}
	known := []string{checker.CheckRetryAfter}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := harnessError(tt.results, known); got != tt.want {
				t.Fatalf("harnessError = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReferenceScenarios: the reference runs cover the shipped scenarios
// and, after them, every peer scenario.
func TestReferenceScenarios(t *testing.T) {
	all, err := referenceScenarios()
	if err != nil {
		t.Fatal(err)
	}
	infos, err := scenarios.List()
	if err != nil {
		t.Fatal(err)
	}
	more, err := peers.All()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(all), len(infos)+len(more); got != want || len(more) == 0 {
		t.Fatalf("%d scenarios, want %d shipped and %d peer ones", got, len(infos), len(more))
	}
	for i, sc := range all[len(infos):] {
		if sc.Target.Peer == "" || sc.Name != more[i].Name {
			t.Errorf("scenario %d after the shipped ones is %s (peer %q), want peer scenario %s", len(infos)+i, sc.Name, sc.Target.Peer, more[i].Name)
		}
	}
}

// TestFindingsNameCheckedScenarios: every known finding is of a peer
// scenario, and names checks the checker has of the limiter: its
// decisions, and under a fault whether it answers at all (status,
// fault-latency), never a check of the harness.
func TestFindingsNameCheckedScenarios(t *testing.T) {
	all, err := peers.All()
	if err != nil {
		t.Fatal(err)
	}
	checks := []string{checker.CheckBudget, checker.CheckBurstRatio, checker.CheckFalseRejections, checker.CheckRetryAfter, checker.CheckRateLimitFields, checker.CheckHeaderStyle, checker.CheckFailureMode, checker.CheckStatus, checker.CheckFaultLatency}
	for name, names := range peers.Findings {
		if !slices.ContainsFunc(all, func(sc *scenarios.Scenario) bool { return sc.Name == name }) {
			t.Errorf("findings of %s, which is no peer scenario", name)
		}
		for _, n := range names {
			if !slices.Contains(checks, n) {
				t.Errorf("%s: finding %q is not a check of the limiter", name, n)
			}
		}
	}
}
