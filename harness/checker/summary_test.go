package checker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSummary(t *testing.T) {
	tests := []struct {
		name     string
		verdicts [][]Verdict // per scenario, per check
		want     Verdict
	}{
		{"all pass", [][]Verdict{{Pass, Pass}, {Pass}}, Pass},
		{"one unknown", [][]Verdict{{Pass, Unknown}, {Pass}}, Unknown},
		{"a failure wins", [][]Verdict{{Unknown}, {Pass, Fail}}, Fail},
		{"no scenarios", nil, Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSummary(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			for i, vs := range tt.verdicts {
				var results []Result
				for _, v := range vs {
					results = append(results, Result{Name: CheckBudget, Verdict: v, Observed: 5, Bound: 5.5, Unit: "units"})
				}
				s.Add(strings.Repeat("s", i+1), results)
			}
			if got := s.Verdict; got != tt.want {
				t.Fatalf("Verdict = %s, want %s", got, tt.want)
			}
			var buf bytes.Buffer
			if err := s.Write(&buf); err != nil {
				t.Fatal(err)
			}
			back, err := ReadSummary(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := back.Verdict, tt.want; got != want {
				t.Errorf("read back Verdict = %s, want %s", got, want)
			}
			if got, want := len(back.Scenarios), len(tt.verdicts); got != want {
				t.Errorf("read back %d scenarios, want %d", got, want)
			}
		})
	}
	if _, err := ReadSummary(strings.NewReader(`{"schema":"rlbench-summary/v0"}`)); err == nil {
		t.Error("ReadSummary accepted schema v0")
	}
}

// FailSkips turns a run with skipped scenarios into the harness's error,
// and only such a run; the limiters' verdict stays, and the status survives
// a write and a read.
func TestFailSkips(t *testing.T) {
	pass := []Result{{Name: CheckBudget, Verdict: Pass}}
	fail := []Result{{Name: CheckBudget, Verdict: Fail}}
	tests := []struct {
		name        string
		ran         []Result
		skipped     int
		wantStatus  Status
		wantVerdict Verdict
		wantFlag    bool
	}{
		{"no skip", pass, 0, StatusPass, Pass, false},
		{"a skip beside a pass", pass, 1, StatusError, Pass, true},
		{"only skips", nil, 3, StatusError, Pass, true},
		{"a skip beside a failure", fail, 2, StatusFail, Fail, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSummary(time.Unix(0, 0))
			if tt.ran != nil {
				s.Add("quickstart", tt.ran)
			}
			for i := range tt.skipped {
				s.AddSkipped(fmt.Sprintf("peer-%d", i), "not installed")
			}
			s.FailSkips()
			var buf bytes.Buffer
			if err := s.Write(&buf); err != nil {
				t.Fatal(err)
			}
			got, err := ReadSummary(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.wantStatus || got.Verdict != tt.wantVerdict || got.SkipsFail != tt.wantFlag {
				t.Errorf("status %s, verdict %s, skips_fail %v; want %s, %s, %v", got.Status, got.Verdict, got.SkipsFail, tt.wantStatus, tt.wantVerdict, tt.wantFlag)
			}
		})
	}
}
