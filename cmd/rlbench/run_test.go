//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// needRunPrerequisites skips t in -short mode, and when redis-server is
// missing outside CI (in CI it fails t): the run tests drive `rlbench run`
// end to end on real processes.
func needRunPrerequisites(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs rlbench end to end on real processes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v", redistest.ErrNotInstalled)
		}
		t.Skip(redistest.ErrNotInstalled)
	}
}

// noLeftovers fails t if a process of bin still runs after an `rlbench run`
// returned: a run must leave nothing behind.
func noLeftovers(t *testing.T, bin string) {
	t.Helper()
	if left := leftovers(bin); len(left) > 0 {
		t.Fatalf("processes left running: %v", left)
	}
}

// TestRunShippedScenariosPass: `rlbench run scenarios/` passes every
// shipped scenario with exit 0, writes summary.json (a pass over every
// scenario), run.json, junit.xml, report.html and each history, and leaves
// no process behind. A busy test host may keep the harness from making a
// scenario's test valid (exit 3: a burst released too slowly, a generator
// behind its schedule), which judges no limiter: such a scenario is run
// again alone, up to three times, as rlbench mutate does, and must then
// pass.
func TestRunShippedScenariosPass(t *testing.T) {
	out, code, output := runShipped(t)
	if len(shipped.left) > 0 {
		t.Errorf("processes left running: %v", shipped.left)
	}
	var passedAlone map[string]bool
	if code == exitHarnessError {
		passedAlone = rerunHarnessErrors(t, readSummaryFile(t, filepath.Join(out, "summary.json")))
	} else if code != 0 {
		t.Fatalf("rlbench run scenarios/ exited %d, want 0:\n%s\n%s", code, output, shipped.stderr)
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
	if len(s.Scenarios) < 16 {
		t.Fatalf("summary: %d scenarios, want every shipped one", len(s.Scenarios))
	}
	// A scenario the harness could not make valid counts as passed once a
	// run of it alone passed.
	for _, sc := range s.Scenarios {
		if sc.Status != checker.StatusPass && !(sc.Status == checker.StatusError && passedAlone[sc.Name]) {
			t.Errorf("summary: %s is %s, want pass", sc.Name, sc.Status)
		}
	}
}

// rerunHarnessErrors runs each scenario of s whose status is error (the
// harness's: no limiter check failed) again alone, up to three times, and
// fails t unless each then passes with exit 0; it returns the names of
// those that did.
func rerunHarnessErrors(t *testing.T, s *checker.Summary) map[string]bool {
	t.Helper()
	bin := buildRlbench(t)
	passedAlone := map[string]bool{}
	for _, sc := range s.Scenarios {
		if sc.Status != checker.StatusError {
			continue
		}
		var last string
		passed := false
		for attempt := 1; attempt <= 3 && !passed; attempt++ {
			code, output, stderr := exitOf(t, bin, "run", "--out", t.TempDir(), "--redis-provider", "process", "../../scenarios/"+sc.Name+".yaml")
			passed, last = code == exitOK, fmt.Sprintf("exit %d:\n%s\n%s", code, output, stderr)
			t.Logf("%s: the harness could not make its test valid; run again alone (attempt %d): exit %d", sc.Name, attempt, code)
		}
		if !passed {
			t.Errorf("%s: no valid passing run in three more attempts; the last: %s", sc.Name, last)
		}
		passedAlone[sc.Name] = passed
	}
	return passedAlone
}

// TestCheckRechecksSavedRun: `rlbench check DIR` on the output of the run
// of every shipped scenario exits as the run did, prints the run's verdict
// tables and computes its verdicts check by check (latency, overhead, load
// and fault checks included: both go through checker.CheckScenario); and
// a drill's history re-checked alone, with the run.json beside it, gets
// its scenario's verdicts. A busy machine may fail a run's load-delivered
// check (the harness's error, exit 3): the re-check must then fail it too.
func TestCheckRechecksSavedRun(t *testing.T) {
	out, runCode, runOut := runShipped(t)
	bin := buildRlbench(t)
	if runCode != exitOK && runCode != exitCheckFailed && runCode != exitHarnessError {
		t.Fatalf("rlbench run scenarios/ exited %d:\n%s\n%s", runCode, runOut, shipped.stderr)
	}
	dir := t.TempDir()
	recheck := filepath.Join(dir, "recheck.json")
	code, checkOut, checkErr := exitOf(t, bin, "check", "--summary", recheck, out)
	if code != runCode {
		t.Errorf("rlbench check DIR exited %d, the run %d:\n%s\n%s", code, runCode, checkOut, checkErr)
	}
	if got, want := tables(checkOut), tables(runOut); got != want || want == "" {
		t.Errorf("verdict tables differ.\nre-check:\n%s\nrun:\n%s", got, want)
	}
	if !strings.Contains(checkOut, "Every check agrees with ") {
		t.Errorf("the re-check does not say it agrees with summary.json:\n%s", checkOut)
	}
	run := readSummaryFile(t, filepath.Join(out, "summary.json"))
	sameVerdicts(t, run, readSummaryFile(t, recheck))
	names := map[string]bool{}
	for _, sc := range run.Scenarios {
		for _, r := range sc.Checks {
			names[r.Name] = true
		}
	}
	for _, name := range []string{checker.CheckBudget, checker.CheckFalseRejections, checker.CheckRetryAfter, checker.CheckLoadDelivered,
		checker.CheckMaxLatency, checker.CheckOverhead, checker.CheckProbe, checker.CheckFaultLatency, checker.CheckFailureMode,
		checker.CheckFaultInjected} {
		if !names[name] {
			t.Errorf("no shipped scenario has a %s check: the comparison does not cover it", name)
		}
	}
	for _, name := range []string{"quickstart", "drill-redis-kill-closed", "drill-redis-pause"} {
		history := filepath.Join(out, name, "history.jsonl.gz")
		one := filepath.Join(dir, name+".json")
		code, oneOut, oneErr := exitOf(t, bin, "check", "--summary", one, history)
		if code != exitOK && code != exitCheckFailed && code != exitHarnessError {
			t.Fatalf("rlbench check %s exited %d:\n%s\n%s", history, code, oneOut, oneErr)
		}
		for _, sc := range run.Scenarios {
			if sc.Name == name {
				for _, d := range checker.CompareResults(readSummaryFile(t, one).Scenarios[0].Checks, sc.Checks) {
					t.Errorf("%s alone: %s", name, d)
				}
			}
		}
	}
}

// TestRunTightenedClaimExits1: a claimed bound tighter than what the
// limiter enforces fails the run with exit 1, and the output and
// summary.json name the failed budget check with its observed value.
func TestRunTightenedClaimExits1(t *testing.T) {
	needRunPrerequisites(t)
	bin := buildRlbench(t)
	dir := filepath.Join(t.TempDir(), "out")
	// An earlier run into the same --out left quickstart's directory, and
	// one of concurrency's, which this run writes again.
	for _, name := range []string{"quickstart", "concurrency"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "history.jsonl.gz"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Claim a budget of 9 per minute where the instances enforce 10.
	code, output := rlbenchRun(t, bin, "run", "--out", dir, "--claim", "/api/items=gcra:9/1m,burst=9", "concurrency")
	noLeftovers(t, bin)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, output)
	}
	if want := "also holds 1 scenario directory from an earlier run (quickstart)"; !strings.Contains(output, want) {
		t.Errorf("the output lacks %q:\n%s", want, output)
	}
	if _, err := os.Stat(filepath.Join(dir, "quickstart", "history.jsonl.gz")); err != nil {
		t.Errorf("the earlier run's history is gone: %v", err)
	}
	if !strings.Contains(output, "budget") || !strings.Contains(output, "FAIL") {
		t.Fatalf("the output does not name the failed budget check:\n%s", output)
	}
	var summary struct {
		Scenarios []struct {
			Checks []checker.Result `json:"checks"`
		} `json:"scenarios"`
		StaleDirs []string `json:"stale_dirs"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &summary); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(summary.StaleDirs, " "); got != "quickstart" {
		t.Errorf("summary.json stale_dirs = %q, want %q", got, "quickstart")
	}
	if len(summary.Scenarios) != 1 {
		t.Fatalf("summary.json holds %d scenarios, want 1: %s", len(summary.Scenarios), data)
	}
	failed := false
	for _, r := range summary.Scenarios[0].Checks {
		failed = failed || (r.Name == checker.CheckBudget && r.Verdict == checker.Fail && r.Observed == 10 && r.Bound < 9.1)
	}
	if !failed {
		t.Fatalf("summary.json has no failed budget check observing 10 against about 9: %s", data)
	}
}

// TestRunMalformedScenarioExits2: a scenario with a misspelled key is
// refused with exit 2, naming the file, the line and the nearest valid key.
func TestRunMalformedScenarioExits2(t *testing.T) {
	needRunPrerequisites(t)
	bin := buildRlbench(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "malformed.yaml")
	bad := "name: bad\ndescription: a misspelled key\ntarget:\n  instances: 1\n  routes:\n    - {path: /a, policies: [\"gcra:1/1s,burst=1\"]}\ntrafic:\n  - {kind: idle, duration: 1s}\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, output := rlbenchRun(t, bin, "run", "--out", filepath.Join(dir, "out"), path)
	noLeftovers(t, bin)
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, output)
	}
	if want := "malformed.yaml:7: trafic: unknown key \"trafic\"; did you mean \"traffic\"?"; !strings.Contains(output, want) {
		t.Fatalf("output lacks %q:\n%s", want, output)
	}
}

// The warning about an earlier run's scenario directories is one line that
// names at most five.
func TestStaleWarning(t *testing.T) {
	tests := []struct {
		stale []string
		want  string
	}{
		{[]string{"quickstart"}, "out also holds 1 scenario directory from an earlier run (quickstart), "},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, "out also holds 7 scenario directories from an earlier run (a, b, c, d, e and 2 more), "},
	}
	for _, tt := range tests {
		got := staleWarning("out", tt.stale)
		if !strings.Contains(got, tt.want) || strings.Contains(got, "\n") {
			t.Errorf("staleWarning(%v) = %q, want one line with %q", tt.stale, got, tt.want)
		}
	}
}
