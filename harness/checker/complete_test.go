package checker

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// completeHistory writes n admitted requests, 100 ms apart, through
// history.Writer (gzip) and returns the file's bytes; with interrupt set
// the history ends as an interrupted run's does.
func completeHistory(t *testing.T, n int, interrupt string) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := history.Header{Scenario: "sc", Start: time.Unix(1_700_000_000, 0).UTC(),
		Policies: []history.RoutePolicy{{Route: "/a", Limits: []string{"gcra:1000/1s,burst=1000"}}}}
	w, err := history.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		at := int64(i) * int64(100*time.Millisecond)
		r := history.Record{Key: "k", Route: "/a", Phase: "steady", IntendedNs: at, SentNs: at, ReceivedNs: at + int64(time.Millisecond), Status: 200, Outcome: history.Admitted}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if interrupt != "" {
		if err := w.Interrupt(interrupt); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gunzipped is a gzip history's text.
func gunzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// TestHistoryComplete: history-complete holds the history read to what
// run.json records (every phase's sent requests, less those dropped) and
// to a clean end; a history cut short, whether cleanly re-written with
// fewer records, cut mid-line, cut within its gzip stream or ended by an
// interrupt, fails it (the harness's: ERROR), naming both counts and the
// file; and a bare history (no run record) that ended early gets a failed
// history-complete too.
func TestHistoryComplete(t *testing.T) {
	const file = "run/sc/history.jsonl.gz"
	full := completeHistory(t, 10, "")
	tests := []struct {
		name         string
		history      []byte
		sent         int // run.json: Σ phases' sent
		dropped      int
		bare         bool // no run record
		verdict      Verdict
		observed     float64
		explanations []string // each in the explanation
	}{
		{name: "complete", history: full, sent: 10, verdict: Pass,
			explanations: []string{"every result reached the history: 10 records, as many as run.json records sent"}},
		{name: "re-written with 4 of 10 records", history: completeHistory(t, 4, ""), sent: 10, verdict: Fail, observed: 6,
			explanations: []string{file + " holds 4 of the 10 results run.json records (10 requests sent, 0 dropped): 6 missing"}},
		{name: "dropped before the history", history: completeHistory(t, 8, ""), sent: 10, dropped: 2, verdict: Fail, observed: 2,
			explanations: []string{"2 results dropped before the history"}},
		{name: "dropped and cut short", history: completeHistory(t, 5, ""), sent: 10, dropped: 2, verdict: Fail, observed: 5,
			explanations: []string{"2 results dropped", "holds 5 of the 8 results run.json records (10 requests sent, 2 dropped): 3 missing"}},
		{name: "more records than sent", history: full, sent: 8, verdict: Fail, observed: 2,
			explanations: []string{file + " holds 10 records, 2 more than the 8 requests sent run.json records"}},
		{name: "cut mid-line", history: func() []byte { text := gunzipped(t, full); return text[:len(text)-20] }(), sent: 10, verdict: Fail, observed: 1,
			explanations: []string{"the last line holds part of a record", "holds 9 of the 10 results"}},
		{name: "gzip stream cut", history: full[:len(full)-8], sent: 10, verdict: Fail, observed: 0,
			explanations: []string{"the gzip stream ends early", "the requests after it are missing"}},
		{name: "interrupted", history: completeHistory(t, 10, "signal: interrupt"), sent: 10, verdict: Fail, observed: 0,
			explanations: []string{"the run was interrupted (signal: interrupt)"}},
		{name: "bare, cut mid-line", history: func() []byte { text := gunzipped(t, full); return text[:len(text)-20] }(), bare: true, verdict: Fail,
			explanations: []string{"the last line holds part of a record", "only a run record says"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := history.NewReader(bytes.NewReader(tc.history), file)
			if err != nil {
				t.Fatal(err)
			}
			var rec *runrecord.ScenarioRecord
			if !tc.bare {
				rec = &runrecord.ScenarioRecord{Name: "sc", Dropped: tc.dropped,
					Phases: []runrecord.PhaseRecord{{Name: "steady", Kind: runrecord.PhaseConstant, Planned: 10, Sent: tc.sent}}}
			}
			rep, err := CheckRun(src, rec, Policy{})
			if err != nil {
				t.Fatalf("CheckRun: %v", err)
			}
			got := resultIn(t, rep, CheckHistoryComplete, "")
			if got.Verdict != tc.verdict || got.Observed != tc.observed || got.Class != ClassHarness {
				t.Errorf("history-complete = %s %s observed %v, want %s %s observed %v (%s)", got.Class, got.Verdict, got.Observed, ClassHarness, tc.verdict, tc.observed, got.Explanation)
			}
			for _, want := range tc.explanations {
				if !strings.Contains(got.Explanation, want) {
					t.Errorf("explanation %q lacks %q", got.Explanation, want)
				}
			}
			wantStatus := StatusPass
			if tc.verdict != Pass {
				wantStatus = StatusError
			}
			if got := rep.Status(); got != wantStatus {
				t.Errorf("Status() = %s, want %s", got, wantStatus)
			}
		})
	}
}

// TestBareHistoryCompleteOnlyWhenCut: a bare history that ended cleanly
// has no history-complete row (nothing says how many it should hold).
func TestBareHistoryCompleteOnlyWhenCut(t *testing.T) {
	src, err := history.NewReader(bytes.NewReader(completeHistory(t, 10, "")), "h.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := CheckRun(src, nil, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if hasResult(rep, CheckHistoryComplete) {
		t.Errorf("a bare history that ended cleanly got a history-complete result: %+v", rep.Results)
	}
	if got, want := rep.Status(), StatusPass; got != want {
		t.Errorf("Status() = %s, want %s", got, want)
	}
}

// TestShardHistoryComplete: each shard's history is held to its own
// run.json: a shard whose record says more requests were sent than its
// history holds, and one whose gzip stream was cut, each fail their own
// history-complete row, naming the shard's file; the shard left whole
// passes.
func TestShardHistoryComplete(t *testing.T) {
	recs := steadyTraffic() // 20 requests per shard
	dirs := shardedRun(t, t.TempDir(), []string{"gcra:1000/1s,burst=1000"}, recs, skewed, func(i int) int { return i % 3 },
		func(s int, h *history.Header, rec *runrecord.ScenarioRecord) {
			if s == 1 {
				rec.Phases[0].Sent += 3
			}
		})
	cut := filepath.Join(dirs[2], "sharded", "history.jsonl.gz")
	b, err := os.ReadFile(cut)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, b[:len(b)-8], 0o644); err != nil { // gzip's CRC and size
		t.Fatal(err)
	}
	rep, err := checkShardDirs(t, dirs, ShardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scope    string
		verdict  Verdict
		observed float64
		why      string
	}{
		{"shard 0/3", Pass, 0, "every result reached the history: 20 records"},
		{"shard 1/3", Fail, 3, filepath.Join(dirs[1], "sharded", "history.jsonl.gz") + " holds 20 of the 23 results run.json records"},
		{"shard 2/3", Fail, 0, cut + ":22: history truncated: the gzip stream ends early"},
	} {
		got := resultIn(t, rep.Report, CheckHistoryComplete, tc.scope)
		if got.Verdict != tc.verdict || got.Observed != tc.observed || !strings.Contains(got.Explanation, tc.why) {
			t.Errorf("%s: history-complete %s observed %v %q,\nwant %s observed %v with %q", tc.scope, got.Verdict, got.Observed, got.Explanation, tc.verdict, tc.observed, tc.why)
		}
	}
	if got, want := rep.Report.Status(), StatusError; got != want {
		t.Errorf("Status() = %s, want %s", got, want)
	}
}
