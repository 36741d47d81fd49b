//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// exitOf runs the binary with args and returns its exit code and standard
// output; standard error (progress, messages) goes to the test log when
// the code is unexpected.
func exitOf(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CI=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("rlbench %v: %v", args, err)
	return 0, "", ""
}

// tables keeps the verdict tables and their totals line from the output of
// `rlbench run` or `rlbench check DIR`: the lines between a CHECK header
// and the blank line after the totals.
func tables(out string) string {
	var keep []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "CHECK "):
			in = true
		case in && strings.Contains(line, " records, ") && strings.Contains(line, "Verdict: "):
			keep = append(keep, line)
			in = false
			continue
		}
		if in {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func readSummaryFile(t *testing.T, path string) *checker.Summary {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := checker.ReadSummary(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameVerdicts asserts that the re-check's summary holds the run's
// verdicts check by check: name, scope, verdict, observed value and bound.
func sameVerdicts(t *testing.T, run, recheck *checker.Summary) {
	t.Helper()
	if got, want := len(recheck.Scenarios), len(run.Scenarios); got != want {
		t.Fatalf("re-check has %d scenarios, the run %d", got, want)
	}
	for i, sc := range run.Scenarios {
		got := recheck.Scenarios[i]
		if got.Name != sc.Name || got.Verdict != sc.Verdict {
			t.Errorf("scenario %d: re-check %s %s, run %s %s", i, got.Name, got.Verdict, sc.Name, sc.Verdict)
		}
		for _, d := range checker.CompareResults(got.Checks, sc.Checks) {
			t.Errorf("%s: %s", sc.Name, d)
		}
	}
	if recheck.Verdict != run.Verdict {
		t.Errorf("re-check verdict %s, run %s", recheck.Verdict, run.Verdict)
	}
}

// TestKeyTTLFromRunRecord: the key-ttl check of the mutation suite comes
// out of the run record, so `rlbench check DIR` reproduces it: a pass for
// the reference limiter, a failure for the variant that leaves keys
// without a TTL.
func TestKeyTTLFromRunRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario end to end")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v", redistest.ErrNotInstalled)
		}
		t.Skip(redistest.ErrNotInstalled)
	}
	bin := buildRlbench(t)
	dir := t.TempDir()

	t.Run("key-ttl", func(t *testing.T) {
		out := filepath.Join(dir, "mutation")
		code, mutOut, mutErr := exitOf(t, bin, "mutate", "--out", out, "no-ttl")
		if code != exitOK && code != exitCheckFailed {
			t.Fatalf("rlbench mutate no-ttl exited %d:\n%s\n%s", code, mutOut, mutErr)
		}
		for _, tc := range []struct {
			run  string
			want checker.Verdict
		}{{"reference", checker.Pass}, {"faulty", checker.Fail}} {
			runDir := filepath.Join(out, "no-ttl", tc.run)
			recheck := filepath.Join(dir, "no-ttl-"+tc.run+".json")
			if code, checkOut, checkErr := exitOf(t, bin, "check", "--summary", recheck, runDir); code != exitOK && code != exitCheckFailed && code != exitHarnessError {
				t.Fatalf("rlbench check %s exited %d:\n%s\n%s", runDir, code, checkOut, checkErr)
			}
			run := readSummaryFile(t, filepath.Join(runDir, "summary.json"))
			sameVerdicts(t, run, readSummaryFile(t, recheck))
			found := false
			for _, r := range run.Scenarios[0].Checks {
				if r.Name == checker.CheckKeyTTL {
					found = true
					if r.Verdict != tc.want {
						t.Errorf("%s run: key-ttl %s (%s), want %s", tc.run, r.Verdict, r.Explanation, tc.want)
					}
				}
			}
			if !found {
				t.Errorf("%s run: no key-ttl check in %s", tc.run, filepath.Join(runDir, "summary.json"))
			}
		}
	})
	if left := leftovers(bin); len(left) > 0 {
		t.Fatalf("processes left running: %v", left)
	}
}
