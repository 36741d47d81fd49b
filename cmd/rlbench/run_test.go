//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// rlbenchRun runs the built binary and returns its exit code and output.
func rlbenchRun(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CI=true") // plain progress lines
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	}
	t.Fatalf("rlbench %v: %v\n%s", args, err, out.String())
	return 0, ""
}

// leftovers lists the processes still running the binary or redis-server
// whose parent is gone or is this test: a run must leave nothing behind.
func leftovers(t *testing.T, bin string) []string {
	t.Helper()
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if args[0] == bin {
			found = append(found, strings.Join(args, " "))
		}
	}
	return found
}

// TestRunContract runs the command line contract of `rlbench run` end to
// end on real processes: every shipped scenario passes (exit 0) and writes
// its outputs; a bound tightened below what the limiter allows fails with
// exit 1 and names the check; a malformed scenario exits 2 naming the line;
// nothing is left running afterwards.
func TestRunContract(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every shipped scenario end to end (about two minutes)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v", redistest.ErrNotInstalled)
		}
		t.Skip(redistest.ErrNotInstalled)
	}
	bin := buildRlbench(t)
	dir := t.TempDir()

	t.Run("shipped scenarios pass", func(t *testing.T) {
		out := filepath.Join(dir, "shipped")
		code, output := rlbenchRun(t, bin, "run", "--out", out, "--redis-provider", "process", "../../scenarios/")
		if code != 0 {
			t.Fatalf("rlbench run scenarios/ exited %d, want 0:\n%s", code, output)
		}
		for _, f := range []string{"summary.json", "run.json", "junit.xml", "report.html", "quickstart/history.jsonl.gz"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("missing output %s: %v", f, err)
			}
		}
		data, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := checker.ReadSummary(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if s.Verdict != checker.Pass || len(s.Scenarios) < 16 {
			t.Fatalf("summary: verdict %s over %d scenarios, want pass over every shipped one", s.Verdict, len(s.Scenarios))
		}
		// A saved history re-checks alone to the same verdict, a drill's too
		// (its fault windows come from run.json beside it).
		for _, name := range []string{"quickstart", "drill-redis-kill-closed", "drill-redis-pause"} {
			if code, output := rlbenchRun(t, bin, "check", filepath.Join(out, name, "history.jsonl.gz")); code != 0 {
				t.Errorf("rlbench check %s exited %d, want 0:\n%s", name, code, output)
			}
		}
	})

	t.Run("tightened bound fails with exit 1", func(t *testing.T) {
		// Claim a budget of 9 per minute where the instances enforce 10.
		code, output := rlbenchRun(t, bin, "run", "--out", filepath.Join(dir, "tightened"), "--claim", "/api/items=gcra:9/1m,burst=9", "concurrency")
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", code, output)
		}
		if !strings.Contains(output, "budget") || !strings.Contains(output, "FAIL") {
			t.Fatalf("the output does not name the failed budget check:\n%s", output)
		}
		var summary struct {
			Scenarios []struct {
				Checks []checker.Result `json:"checks"`
			} `json:"scenarios"`
		}
		data, _ := os.ReadFile(filepath.Join(dir, "tightened", "summary.json"))
		if err := json.Unmarshal(data, &summary); err != nil {
			t.Fatal(err)
		}
		failed := false
		for _, r := range summary.Scenarios[0].Checks {
			failed = failed || (r.Name == checker.CheckBudget && r.Verdict == checker.Fail && r.Observed == 10 && r.Bound < 9.1)
		}
		if !failed {
			t.Fatalf("summary.json has no failed budget check observing 10 against about 9: %s", data)
		}
	})

	t.Run("malformed scenario exits 2 naming the line", func(t *testing.T) {
		path := filepath.Join(dir, "malformed.yaml")
		bad := "name: bad\ndescription: a misspelled key\ntarget:\n  instances: 1\n  routes:\n    - {path: /a, policies: [\"gcra:1/1s,burst=1\"]}\ntrafic:\n  - {kind: idle, duration: 1s}\n"
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		code, output := rlbenchRun(t, bin, "run", "--out", filepath.Join(dir, "malformed"), path)
		if code != 2 {
			t.Fatalf("exit %d, want 2:\n%s", code, output)
		}
		if want := "malformed.yaml:7: trafic: unknown key \"trafic\"; did you mean \"traffic\"?"; !strings.Contains(output, want) {
			t.Fatalf("output lacks %q:\n%s", want, output)
		}
	})

	if left := leftovers(t, bin); len(left) > 0 {
		t.Fatalf("processes left running: %v", left)
	}
}
