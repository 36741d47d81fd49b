//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// worstVerdicts returns, for the summary of the run in dir, each check of
// the limiter's worst verdict by name over its scopes. The harness's own
// checks (load-delivered, latency) judge the machine, which a busy one
// fails with or without shards.
func worstVerdicts(t *testing.T, dir string) map[string]checker.Verdict {
	t.Helper()
	s := readSummaryFile(t, filepath.Join(dir, "summary.json"))
	rank := map[checker.Verdict]int{checker.Pass: 0, checker.Fail: 2}
	out := map[string]checker.Verdict{}
	for _, sc := range s.Scenarios {
		for _, c := range sc.Checks {
			if c.Whose() == checker.ClassHarness {
				continue
			}
			if prev, ok := out[c.Name]; !ok || rank[c.Verdict] > rank[prev] {
				out[c.Name] = c.Verdict
			}
		}
	}
	return out
}

// TestRunLocalShardsSameVerdicts: a shipped shardable scenario run as
// three local shards whose clocks are skewed 0, +300ms and -2s gives the
// verdicts of its unsharded run, check of the limiter by check, for the promise it keeps
// and for a stricter one it breaks (--claim), and leaves no process behind.
func TestRunLocalShardsSameVerdicts(t *testing.T) {
	needRunPrerequisites(t)
	bin := buildRlbench(t)
	dir := t.TempDir()
	tests := []struct {
		name  string
		extra []string
		code  int
	}{
		{"reference", nil, 0},
		{"stricter claim", []string{"--claim", "/api/items=gcra:5/1s,burst=5"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			us := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+"-unsharded")
			ls := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+"-local")
			code, output := rlbenchRun(t, bin, append([]string{"run", "--binary", bin, "--out", us, "quickstart"}, tt.extra...)...)
			if code != tt.code && code != 3 { // 3: a busy machine's harness error
				t.Fatalf("unsharded run: exit %d, want %d\n%s", code, tt.code, output)
			}
			code, output = rlbenchRun(t, bin, append([]string{"run", "--binary", bin, "--out", ls, "--local-shards", "3", "--local-shard-skews", "0,300ms,-2s", "quickstart"}, tt.extra...)...)
			if code != tt.code && code != 3 {
				t.Fatalf("--local-shards 3: exit %d, want %d\n%s", code, tt.code, output)
			}
			noLeftovers(t, bin)
			want, got := worstVerdicts(t, us), worstVerdicts(t, ls)
			for name, v := range want {
				if got[name] != v {
					t.Errorf("check %s: %s over 3 local shards, %s unsharded", name, got[name], v)
				}
			}
			f, err := os.Open(filepath.Join(ls, "run.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rec, err := runrecord.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			if sc := rec.Scenarios[0]; len(sc.Shards) != 3 || sc.History != filepath.Join("quickstart", "history.jsonl.gz") {
				t.Errorf("run.json: %d shards, history %q; want 3 shards and the merged quickstart/history.jsonl.gz", len(sc.Shards), sc.History)
			}
		})
	}
}

// TestRunLocalShardsClockMisreport: a clock offset one shard misreports by
// more than its uncertainty moves boundary-burst's requests across the
// fixed window's edge and fails its budget falsely; the same misreport
// within the uncertainty it records (a floor above it) cannot. Boundary
// burst's one identity is shard 0's, so its clock places every request.
func TestRunLocalShardsClockMisreport(t *testing.T) {
	needRunPrerequisites(t)
	bin := buildRlbench(t)
	dir := t.TempDir()
	tests := []struct {
		name  string
		args  []string
		fixed checker.Verdict
	}{
		{"beyond the uncertainty", []string{"--local-shard-misreports", "150ms"}, checker.Fail},
		{"within the uncertainty", []string{"--local-shard-misreports", "150ms", "--local-shard-uncertainty-floors", "200ms"}, checker.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			_, output := rlbenchRun(t, bin, append([]string{"run", "--binary", bin, "--out", out, "--local-shards", "2", "boundary-burst"}, tt.args...)...)
			noLeftovers(t, bin)
			s := readSummaryFile(t, filepath.Join(out, "summary.json"))
			found := false
			for _, c := range s.Scenarios[0].Checks {
				if c.Name == checker.CheckBudget && strings.Contains(c.Scope, "fixed window") {
					found = true
					if c.Verdict != tt.fixed {
						t.Errorf("budget %s: %s, want %s\n%s", c.Scope, c.Verdict, tt.fixed, output)
					}
				}
			}
			if !found {
				t.Fatalf("no budget check of the fixed window:\n%s", output)
			}
		})
	}
}
