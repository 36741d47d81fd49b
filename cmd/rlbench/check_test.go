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
