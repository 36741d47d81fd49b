package reports

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// TestWriteRun: a run directory written by WriteRun reads back file by file
// to what was written, and the report rendered from it is there.
func TestWriteRun(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := checker.NewSummary(start)
	s.Add("quickstart", []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Fail, Observed: 11, Bound: 10, Unit: "units", Explanation: "over"}})
	rec := &runrecord.RunRecord{Schema: runrecord.Schema, Meta: runrecord.NewMeta("v1.2.3", "abc", start),
		Scenarios: []runrecord.ScenarioRecord{{Name: "quickstart", Start: start, History: "quickstart/history.jsonl.gz"}}}
	if err := WriteRun(dir, s, rec); err != nil {
		t.Fatal(err)
	}
	if !s.Generated.After(start) {
		t.Errorf("Generated = %v, want the time of writing", s.Generated)
	}
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := run.Summary.Verdict, checker.Fail; got != want {
		t.Errorf("summary.json verdict = %s, want %s", got, want)
	}
	if got, want := run.Record.Meta.Version, "v1.2.3"; got != want {
		t.Errorf("run.json version = %q, want %q", got, want)
	}
	data, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var junit junitSuites
	if err := xml.Unmarshal(data, &junit); err != nil {
		t.Fatal(err)
	}
	if got, want := junit.Failures, 1; got != want {
		t.Errorf("junit.xml failures = %d, want %d", got, want)
	}
	page, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || !bytes.Contains(page, []byte("quickstart")) {
		t.Errorf("report.html is not the run's report: %.100q", page)
	}

	if err := WriteRun(filepath.Join(dir, "missing"), s, rec); err == nil || !strings.Contains(err.Error(), "write summary") {
		t.Errorf("WriteRun into a missing directory: error %v, want a summary write error", err)
	}
}

// TestAppendMarkdown: the step summary is appended to, never replaced.
func TestAppendMarkdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "step-summary.md")
	if err := os.WriteFile(path, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := checker.NewSummary(time.Now())
	s.Add("quickstart", []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Pass, Observed: 0.26699999999999996, Bound: 10, Unit: "units"}})
	if err := AppendMarkdown(path, s); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"earlier step\n## rlbench: ✅ pass", "| budget | ✅ pass | 0.267 | 10 | units |"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("step summary lacks %q:\n%s", want, data)
		}
	}
	if err := AppendMarkdown(filepath.Join(path, "not-a-dir", "x.md"), s); err == nil {
		t.Error("AppendMarkdown under a file: no error")
	}
}

// TestRelPath: what lies within a run directory or beside it is recorded
// relative to it; what lies further away, as it is.
func TestRelPath(t *testing.T) {
	for _, tt := range []struct{ dir, path, want string }{
		{"/results/report", "/results/report/shards/shard-0", "shards/shard-0"},
		{"/results/report", "/results/shard-0", "../shard-0"},
		{"/results/report", "/results", "/results"},
		{"/results/report", "/elsewhere/shard-0", "/elsewhere/shard-0"},
		{"/a/results/report", "/a/shard-0", "/a/shard-0"},
		{"/results/report", "/results/..shard-0", "../..shard-0"},
		{"/results/report", "/results/report", "."},
	} {
		if got := RelPath(tt.dir, tt.path); got != filepath.FromSlash(tt.want) {
			t.Errorf("RelPath(%q, %q) = %q, want %q", tt.dir, tt.path, got, tt.want)
		}
	}
}
