package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

var updateCheck = flag.Bool("update-check", false, "rewrite testdata/check from the generators in check_test.go")

// checkStart is the recorded start of the testdata histories.
var checkStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// writeHistory writes a GCRA 5/s burst-5 history of one key: admitted
// requests at t=0, then rejections with an honest Retry-After.
func writeHistory(t *testing.T, path string, admitted int) {
	t.Helper()
	h := history.NewHeader(checkStart)
	h.Scenario = "cli"
	h.Policies = []history.RoutePolicy{{Route: "", Limits: []string{"gcra:5/1s,burst=5"}}}
	w, err := history.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		r := &history.Record{Key: "alice", Instance: fmt.Sprint("api-", i%2), Route: "/v1/items", Cost: 1,
			IntendedNs: int64(i) * 1000, SentNs: int64(i) * 1000, ReceivedNs: int64(i)*1000 + 2_000_000, Status: 200}
		if i >= admitted {
			r.Status, r.Outcome, r.Headers = 429, history.Rejected, map[string]string{"retry-after": "1"}
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeVegeta writes vegeta JSON results with vegeta's own encoder: one
// URL (the key), admitted requests at t=0, then 429s.
func writeVegeta(t *testing.T, path string, admitted int) {
	t.Helper()
	var buf bytes.Buffer
	enc := vegeta.NewJSONEncoder(&buf)
	for i := range 8 {
		r := vegeta.Result{Seq: uint64(i), Code: 200, Timestamp: checkStart.Add(time.Duration(i) * time.Microsecond),
			Latency: 2 * time.Millisecond, Method: "GET", URL: "http://localhost:8080/v1/items?key=alice",
			Headers: http.Header{"X-Instance": {fmt.Sprint("api-", i%2)}}}
		if i >= admitted {
			r.Code = 429
			r.Headers.Set("Retry-After", "1")
		}
		if err := enc(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckTestdata(t *testing.T) {
	if !*updateCheck {
		t.Skip("run with -update-check to rewrite testdata/check")
	}
	dir := filepath.Join("testdata", "check")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeHistory(t, filepath.Join(dir, "pass.jsonl.gz"), 5)
	writeHistory(t, filepath.Join(dir, "fail.jsonl.gz"), 6)
	writeVegeta(t, filepath.Join(dir, "vegeta-pass.json"), 5)
	writeVegeta(t, filepath.Join(dir, "vegeta-fail.json"), 7)
	bad := `{"format":"rlbench-history","version":2,"start":"2026-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "bad-version.jsonl"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckCommand(t *testing.T) {
	dir := filepath.Join("testdata", "check")
	summary := filepath.Join(t.TempDir(), "summary.json")
	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"header policy passes", []string{filepath.Join(dir, "pass.jsonl.gz")}, exitOK, "Verdict: PASS"},
		{"flag policy passes", []string{"--policy", "gcra:5/1s,burst=5", "--summary", summary, filepath.Join(dir, "pass.jsonl.gz")}, exitOK, "budget"},
		{"over budget", []string{filepath.Join(dir, "fail.jsonl.gz")}, exitCheckFailed, "FAIL"},
		{"looser policy", []string{"--policy", "gcra:6/1s,burst=6", filepath.Join(dir, "fail.jsonl.gz")}, exitOK, "Verdict: PASS"},
		{"flags after the history", []string{filepath.Join(dir, "fail.jsonl.gz"), "--policy", "gcra:6/1s,burst=6"}, exitOK, "Verdict: PASS"},
		{"vegeta passes", []string{"--format", "vegeta", "--instance-header", "X-Instance", "--policy", "gcra:5/1s,burst=5", filepath.Join(dir, "vegeta-pass.json")}, exitOK, "Verdict: PASS"},
		{"vegeta over budget", []string{"--format", "vegeta", "--policy", "gcra:5/1s,burst=5", filepath.Join(dir, "vegeta-fail.json")}, exitCheckFailed, "7 units admitted"},
		{"other route unmatched", []string{"--policy", "gcra:5/1s,burst=5", "--route", "/v2/*", filepath.Join(dir, "fail.jsonl.gz")}, exitInvalid, ""},
		{"matching route", []string{"--policy", "gcra:5/1s,burst=5", "--route", "/v2/*", "--route", "/v1/*", filepath.Join(dir, "fail.jsonl.gz")}, exitCheckFailed, "FAIL"},
		{"route without policy", []string{"--route", "/v1/*", filepath.Join(dir, "fail.jsonl.gz")}, exitInvalid, ""},
		{"bad version", []string{"--policy", "gcra:5/1s", filepath.Join(dir, "bad-version.jsonl")}, exitInvalid, ""},
		{"missing file", []string{"--policy", "gcra:5/1s", filepath.Join(dir, "nope.jsonl")}, exitInvalid, ""},
		{"bad policy", []string{"--policy", "gcra:5/0s", filepath.Join(dir, "pass.jsonl.gz")}, exitInvalid, ""},
		{"no history", []string{"--policy", "gcra:5/1s"}, exitInvalid, ""},
		{"vegeta without policy", []string{"--format", "vegeta", filepath.Join(dir, "vegeta-pass.json")}, exitInvalid, ""},
		{"bad format", []string{"--format", "csv", "--policy", "gcra:5/1s", filepath.Join(dir, "pass.jsonl.gz")}, exitInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			prev := commands["check"]
			commands["check"] = func() command { return &checkCommand{stdout: &out} }
			defer func() { commands["check"] = prev }()
			code := run(context.Background(), append([]string{"check"}, tt.args...), &errOut)
			if code != tt.code {
				t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tt.contains) {
				t.Errorf("stdout does not contain %q:\n%s", tt.contains, out.String())
			}
		})
	}
	f, err := os.Open(summary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := checker.ReadSummary(f)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Verdict, checker.Pass; got != want {
		t.Errorf("summary verdict = %s, want %s", got, want)
	}
	if got, want := s.Scenarios[0].Name, "pass.jsonl.gz"; got != want {
		t.Errorf("scenario = %q, want %q", got, want)
	}
	raw, _ := json.Marshal(s.Scenarios[0].Checks[0])
	for _, field := range []string{`"name":"budget"`, `"verdict":"pass"`, `"observed":`, `"bound":`, `"unit":"units"`} {
		if !strings.Contains(string(raw), field) {
			t.Errorf("summary check %s lacks %s", raw, field)
		}
	}
}

// writeRunDir lays out a run directory as `rlbench run --out` does: the
// history of scenario "cli" (admitted requests as writeHistory writes them)
// and run.json, plus, when failed is set, a scenario that could not run.
func writeRunDir(t *testing.T, dir string, admitted int, failed bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "cli"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeHistory(t, filepath.Join(dir, "cli", "history.jsonl.gz"), admitted)
	rec := &runrecord.RunRecord{Schema: runrecord.Schema, Scenarios: []runrecord.ScenarioRecord{{
		Name: "cli", History: filepath.Join("cli", "history.jsonl.gz"),
		Checks: &runrecord.CheckSettings{LoadDelivered: 0.98, LagTolerance: 50 * time.Millisecond, MaxLatency: time.Second},
		Phases: []runrecord.PhaseRecord{{Kind: runrecord.PhaseConstant, Planned: 8}},
	}}}
	if failed {
		rec.Scenarios = append(rec.Scenarios, runrecord.ScenarioRecord{Name: "broken", Error: "scenario broken: no redis-server"})
	}
	var buf bytes.Buffer
	if err := rec.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckRunDir: `rlbench check DIR` re-checks every scenario of a run
// directory from its histories and run.json, and says whether its verdicts
// agree with the summary.json the run wrote.
func TestCheckRunDir(t *testing.T) {
	runCheck := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		prev := commands["check"]
		commands["check"] = func() command { return &checkCommand{stdout: &out} }
		defer func() { commands["check"] = prev }()
		code := run(context.Background(), append([]string{"check"}, args...), &errOut)
		return code, out.String(), errOut.String()
	}
	dir := t.TempDir()
	passing := filepath.Join(dir, "passing")
	writeRunDir(t, passing, 5, false)

	// The first re-check writes the summary the run would have written.
	code, out, errOut := runCheck(t, "--summary", filepath.Join(passing, "summary.json"), passing)
	if code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"[cli] re-checked from cli/history.jsonl.gz and run.json", "load-delivered", "max-latency", "history-complete", "Verdict: pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ = runCheck(t, passing); !strings.Contains(out, "Every check agrees with ") {
		t.Errorf("a re-check of an unchanged run does not agree with its summary.json:\n%s", out)
	}
	// A history re-checked alone takes its scenario's record.
	if code, out, _ = runCheck(t, filepath.Join(passing, "cli", "history.jsonl.gz")); code != exitOK || !strings.Contains(out, "with its scenario's record") || !strings.Contains(out, "max-latency") {
		t.Errorf("history in a run directory: exit %d, want 0, with the record's checks:\n%s", code, out)
	}

	// The history changed since the summary was written: the re-check
	// fails, and says where it departs from the summary.
	writeHistory(t, filepath.Join(passing, "cli", "history.jsonl.gz"), 6)
	code, out, _ = runCheck(t, passing)
	if code != exitCheckFailed || !strings.Contains(out, "checks differ from ") || !strings.Contains(out, "cli: budget") {
		t.Errorf("changed history: exit %d, want %d, naming the budget as differing:\n%s", code, exitCheckFailed, out)
	}

	broken := filepath.Join(dir, "broken")
	writeRunDir(t, broken, 5, true)
	if code, out, errOut = runCheck(t, broken); code != exitInvalid || !strings.Contains(out, "[broken] could not run: scenario broken: no redis-server") || !strings.Contains(errOut, "1 of 2 scenarios could not run") {
		t.Errorf("a scenario that could not run: exit %d, want %d:\n%s\n%s", code, exitInvalid, out, errOut)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"history flags", []string{"--policy", "gcra:5/1s", passing}, "--policy: a run directory is re-checked as it was run"},
		{"no run.json", []string{t.TempDir()}, "has no run.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCheck(t, tc.args...)
			if code != exitInvalid || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d, with %q:\n%s", code, exitInvalid, tc.want, errOut)
			}
		})
	}
}
