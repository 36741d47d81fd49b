package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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

// badVersionHistory is a history header of a format version rlbench does
// not read.
const badVersionHistory = `{"format":"rlbench-history","version":2,"start":"2026-01-02T03:04:05Z"}` + "\n"

// gcraAllowance is what the testdata's policy, GCRA 5/s burst 5, allows in
// an interval of length d widened by the checker's default clock
// resolution of 1 µs: 5 + 5/s·(d + 1 µs), in units.
func gcraAllowance(d time.Duration) float64 { return 5 + 5*(d+time.Microsecond).Seconds() }

// checkTestdata is every file under testdata/check: the generator that
// writes it and what `rlbench check` says of it. The tightest interval runs
// from the first request's send to the last admitted one's receipt, 2 ms
// after it was sent: request i is sent at i µs.
var checkTestdata = []struct {
	file  string
	write func(t *testing.T, path string)
	flags []string // before the file
	code  int
	// verdict is summary.json's overall verdict and the budget check's,
	// which observed the units in its tightest interval against bound;
	// empty when the file is refused (exit 2, no summary).
	verdict         checker.Verdict
	observed, bound float64
}{
	{"pass.jsonl.gz", func(t *testing.T, p string) { writeHistory(t, p, 5) }, nil,
		exitOK, checker.Pass, 5, gcraAllowance(4*time.Microsecond + 2*time.Millisecond)},
	{"fail.jsonl.gz", func(t *testing.T, p string) { writeHistory(t, p, 6) }, nil,
		exitCheckFailed, checker.Fail, 6, gcraAllowance(5*time.Microsecond + 2*time.Millisecond)},
	{"vegeta-pass.json", func(t *testing.T, p string) { writeVegeta(t, p, 5) },
		[]string{"--format", "vegeta", "--instance-header", "X-Instance", "--policy", "gcra:5/1s,burst=5"},
		exitOK, checker.Pass, 5, gcraAllowance(4*time.Microsecond + 2*time.Millisecond)},
	{"vegeta-fail.json", func(t *testing.T, p string) { writeVegeta(t, p, 7) },
		[]string{"--format", "vegeta", "--policy", "gcra:5/1s,burst=5"},
		exitCheckFailed, checker.Fail, 7, gcraAllowance(6*time.Microsecond + 2*time.Millisecond)},
	{"bad-version.jsonl", func(t *testing.T, p string) { writeFile(t, p, badVersionHistory) },
		[]string{"--policy", "gcra:5/1s"},
		exitInvalid, "", 0, 0},
}

// TestCheckTestdata holds every file under testdata/check to its generator
// (run with -update-check to rewrite them) and to the exit code and
// verdicts `rlbench check` gives it.
func TestCheckTestdata(t *testing.T) {
	dir := filepath.Join("testdata", "check")
	for _, tc := range checkTestdata {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			fresh := filepath.Join(t.TempDir(), tc.file)
			tc.write(t, fresh)
			if *updateCheck {
				raw, err := os.ReadFile(fresh)
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, path, string(raw))
			}
			if got, want := readFile(t, path), readFile(t, fresh); !sameJSONLines(got, want) {
				t.Fatalf("%s differs from what its generator writes; rerun with -update-check\n got: %s\nwant: %s", path, got, want)
			}

			summary := filepath.Join(t.TempDir(), "summary.json")
			var out, errOut bytes.Buffer
			prev := commands["check"]
			commands["check"] = func() command { return &checkCommand{stdout: &out} }
			defer func() { commands["check"] = prev }()
			args := append(append([]string{"check", "--summary", summary}, tc.flags...), path)
			if got := run(context.Background(), args, &errOut); got != tc.code {
				t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.code, out.String(), errOut.String())
			}
			if tc.verdict == "" {
				if _, err := os.Stat(summary); err == nil {
					t.Errorf("a refused history left a summary")
				}
				return
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
			if got, want := s.Verdict, tc.verdict; got != want {
				t.Errorf("summary verdict = %s, want %s", got, want)
			}
			if got, want := len(s.Scenarios), 1; got != want {
				t.Fatalf("%d scenarios in the summary, want %d", got, want)
			}
			var budget *checker.Result
			for i, r := range s.Scenarios[0].Checks {
				if r.Name == checker.CheckBudget {
					budget = &s.Scenarios[0].Checks[i]
				}
			}
			if budget == nil {
				t.Fatalf("no %s check in the summary: %+v", checker.CheckBudget, s.Scenarios[0].Checks)
			}
			if budget.Verdict != tc.verdict || budget.Observed != tc.observed || math.Abs(budget.Bound-tc.bound) > 1e-6 {
				t.Errorf("budget check = %s, observed %v, bound %v; want %s, observed %v, bound %v",
					budget.Verdict, budget.Observed, budget.Bound, tc.verdict, tc.observed, tc.bound)
			}
		})
	}
}

// sameJSONLines reports whether a and b hold the same JSON values line by
// line, whatever the order of their objects' keys (vegeta's encoder writes
// a result's headers in map order).
func sameJSONLines(a, b []byte) bool {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		var va, vb any
		if len(la[i]) == 0 && len(lb[i]) == 0 {
			continue
		}
		if json.Unmarshal(la[i], &va) != nil || json.Unmarshal(lb[i], &vb) != nil || !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

// readFile returns the content of path, uncompressed when it is gzip.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, ".gz") {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return plain
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
	// The status check comes first; the budget follows it.
	if got, want := s.Scenarios[0].Checks[0].Name, checker.CheckStatus; got != want {
		t.Errorf("first check = %s, want %s", got, want)
	}
	raw, _ := json.Marshal(s.Scenarios[0].Checks[1])
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
		Phases: []runrecord.PhaseRecord{{Kind: runrecord.PhaseConstant, Planned: 8, Sent: 8}},
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
	if code != exitCheckFailed || !regexp.MustCompile(`\n(1 check differs|\d+ checks differ) from `).MatchString(out) || !strings.Contains(out, "cli: budget") {
		t.Errorf("changed history: exit %d, want %d, naming the budget as differing:\n%s", code, exitCheckFailed, out)
	}

	broken := filepath.Join(dir, "broken")
	writeRunDir(t, broken, 5, true)
	if code, out, errOut = runCheck(t, broken); code != exitHarnessError || !strings.Contains(out, "[broken] could not run: scenario broken: no redis-server") || !strings.Contains(errOut, "1 of 2 scenarios could not run") {
		t.Errorf("a scenario that could not run: exit %d, want %d (the harness's error):\n%s\n%s", code, exitHarnessError, out, errOut)
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

// cutHistory rewrites the gzip history at path keeping its header and its
// first keep records, as a clean gzip file (nothing in it says it was
// cut), and returns its text cut within the record after them (as a
// history a crash left), uncompressed.
func cutHistory(t *testing.T, path string, keep int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(text, []byte("\n"))
	kept := bytes.Join(lines[:1+keep], nil)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(kept); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	next := lines[1+keep]
	return append(kept, next[:len(next)/2]...)
}

// TestCheckTruncatedHistory: a history that lost records after the run
// never passes history-complete: re-checked in its run directory, the
// shortfall against run.json's sent requests is the harness's error
// (exit 3) naming both counts and the file, and the re-check says it
// departs from summary.json; checked alone, a history cut mid-line fails
// history-complete and keeps its note.
func TestCheckTruncatedHistory(t *testing.T) {
	runCheck := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		prev := commands["check"]
		commands["check"] = func() command { return &checkCommand{stdout: &out} }
		defer func() { commands["check"] = prev }()
		code := run(context.Background(), append([]string{"check"}, args...), &errOut)
		return code, out.String(), errOut.String()
	}
	dir := filepath.Join(t.TempDir(), "run")
	writeRunDir(t, dir, 5, false)
	if code, out, errOut := runCheck(t, "--summary", filepath.Join(dir, "summary.json"), dir); code != exitOK {
		t.Fatalf("the run before its history was cut: exit %d, want 0:\n%s\n%s", code, out, errOut)
	}
	path := filepath.Join(dir, "cli", "history.jsonl.gz")
	partial := cutHistory(t, path, 3)
	bare := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(bare, partial, 0o644); err != nil {
		t.Fatal(err)
	}
	shortfall := path + " holds 3 of the 8 results run.json records (8 requests sent, 0 dropped): 5 missing"
	tests := []struct {
		name    string
		arg     string
		want    []string
		notWant []string
	}{
		{"run directory", dir, []string{"history-complete", "ERROR", shortfall, "7 checks differ from " + filepath.Join(dir, "summary.json"), "history-complete fail, observed 5, bound 0, want history-complete pass, observed 0",
			// The checks that must see every request are the harness's unknown, not the limiter's pass.
			"false-rejections (all routes: 5 req/s (burst 5, gcra)) unknown", "budget (5 req/s (burst 5, gcra)) unknown", "the history is incomplete (3 of 8 results)"},
			[]string{"Every check agrees"}},
		{"history in its run directory", path, []string{"with its scenario's record", "history-complete", shortfall}, nil},
		{"bare history cut mid-line", bare, []string{"history-complete", "ERROR", "the last line holds part of a record", "Note: " + bare + ":5"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCheck(t, tc.arg)
			if code != exitHarnessError {
				t.Errorf("exit %d, want %d (the harness's error):\n%s\n%s", code, exitHarnessError, out, errOut)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range tc.notWant {
				if strings.Contains(out, bad) {
					t.Errorf("output says %q:\n%s", bad, out)
				}
			}
		})
	}
}

// writeNginxLike writes a history of 23 admissions of GCRA 10/s burst 6
// within 1.6998 s, which a limiter on a millisecond clock admits (as NGINX
// did in the peer-nginx-nodelay finding) and a 1 µs clock cannot explain;
// resolution is the header's clock_resolution_ns (0: not recorded).
func writeNginxLike(t *testing.T, path string, resolution time.Duration) {
	t.Helper()
	h := history.NewHeader(checkStart)
	h.Scenario = "nginx-like"
	h.Policies = []history.RoutePolicy{{Limits: []string{"gcra:10/1s,burst=6"}}}
	h.ClockResolutionNs = int64(resolution)
	w, err := history.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	add := func(s, e time.Duration) {
		if err := w.Write(&history.Record{Key: "k", Cost: 1, IntendedNs: int64(s), SentNs: int64(s), ReceivedNs: int64(e), Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	for range 6 {
		add(500*time.Microsecond, 600*time.Microsecond)
	}
	for j := 1; j <= 16; j++ {
		at := time.Duration(j)*100*time.Millisecond + 50*time.Millisecond
		add(at, at+100*time.Microsecond)
	}
	add(1700200*time.Microsecond, 1700300*time.Microsecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckResolution: --resolution, else the history header's clock
// resolution, else 1 µs, decides whether a millisecond limiter's
// admissions fit the budget.
func TestCheckResolution(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		header time.Duration
		flags  []string
		code   int
	}{
		{"1µs by default", 0, nil, exitCheckFailed},
		{"--resolution 1ms", 0, []string{"--resolution", "1ms"}, exitOK},
		{"header 1ms", time.Millisecond, nil, exitOK},
		{"--resolution 1µs over a 1ms header", time.Millisecond, []string{"--resolution", "1us"}, exitCheckFailed},
		{"negative", 0, []string{"--resolution", "-1ms"}, exitInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl.gz")
			writeNginxLike(t, path, tc.header)
			var out, errOut bytes.Buffer
			prev := commands["check"]
			commands["check"] = func() command { return &checkCommand{stdout: &out} }
			defer func() { commands["check"] = prev }()
			if got := run(context.Background(), append(append([]string{"check"}, tc.flags...), path), &errOut); got != tc.code {
				t.Errorf("exit %d, want %d:\n%s\n%s", got, tc.code, out.String(), errOut.String())
			}
		})
	}
}

// TestCheckRunDirScenarioChecks: the scenario's max_excess, max_rate and
// headers settings recorded in run.json decide the re-check of a run
// directory as they decided the run.
func TestCheckRunDirScenarioChecks(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name     string
		admitted int
		checks   func(*runrecord.CheckSettings)
		code     int
		absent   string // a check the re-check must leave out
	}{
		{"one unit over, strict", 6, func(*runrecord.CheckSettings) {}, exitCheckFailed, ""},
		{"one unit over, max_excess 1", 6, func(c *runrecord.CheckSettings) { c.MaxExcess = 1 }, exitOK, ""},
		{"headers false", 5, func(c *runrecord.CheckSettings) { c.Headers = &no }, exitOK, checker.CheckRetryAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeRunDir(t, dir, tc.admitted, false)
			path := filepath.Join(dir, "run.json")
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := runrecord.Read(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			tc.checks(rec.Scenarios[0].Checks)
			if err := rec.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			prev := commands["check"]
			commands["check"] = func() command { return &checkCommand{stdout: &out} }
			defer func() { commands["check"] = prev }()
			if got := run(context.Background(), []string{"check", dir}, &errOut); got != tc.code {
				t.Errorf("exit %d, want %d:\n%s\n%s", got, tc.code, out.String(), errOut.String())
			}
			if tc.absent != "" && (strings.Contains(out.String(), "\n"+tc.absent+" ") || !strings.Contains(out.String(), "checks.headers is false")) {
				t.Errorf("%s ran, or no note says why not:\n%s", tc.absent, out.String())
			}
		})
	}
}
