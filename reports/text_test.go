package reports

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
)

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{10, "10"},
		{-3, "-3"},
		{1e6, "1000000"},
		{0.5, "0.5"},
		{1.23456, "1.23456"},
		{1.2345678, "1.23457"},
		{0.26699999999999996, "0.267"},
		{35.68000000000001, "35.68"},
		{2.9999999999999996, "3"},
		{9.9999996, "10"},
		{-0.1 - 0.2, "-0.3"},
		{10.000833333, "10.0008"},
		{123456.7, "123457"},
		{0.000123456789, "0.000123457"},
		{0.00001, "1e-05"},
		{2.5e15, "2.5e+15"},
		{math.Inf(1), "+Inf"},
		{math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		if got := FormatNumber(tt.in); got != tt.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestWriteText: the verdict table prints observed values and bounds through
// FormatNumber, upper-case verdicts (ERROR for the harness's), units in the
// singular after 1, and the totals line with the status.
func TestWriteText(t *testing.T) {
	rep := &checker.Report{Counts: checker.Counts{Records: 12, Keys: 2, Admitted: 10, Rejected: 1, Unknown: 1, TransportErrors: 1}, Results: []checker.Result{
		{Name: "budget", Scope: "all routes: 10 req/s (burst 10)", Verdict: checker.Pass, Observed: 10, Bound: 10.000833333, Unit: "units", Explanation: "tightest"},
		{Name: "load-delivered", Verdict: checker.Fail, Observed: 0.26699999999999996, Bound: 0.9, Unit: "rate", Explanation: "behind"},
		{Name: "max-latency", Class: checker.ClassHarness, Verdict: checker.Unknown, Observed: 35.68000000000001, Bound: 500, Unit: "ms"},
		{Name: "history-complete", Verdict: checker.Fail, Observed: 1, Bound: 0, Unit: "results dropped"},
	}}
	var buf bytes.Buffer
	if err := WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	for i, want := range [][]string{
		{"CHECK", "SCOPE", "VERDICT", "OBSERVED", "BOUND", "UNIT", "EXPLANATION"},
		{"budget", "all", "routes:", "10", "req/s", "(burst", "10)", "PASS", "10", "10.0008", "units", "tightest"},
		{"load-delivered", "ERROR", "0.267", "0.9", "rate", "behind"},
		{"max-latency", "ERROR", "35.68", "500", "ms"},
		{"history-complete", "ERROR", "1", "0", "result", "dropped"},
	} {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("line %d = %q, want the fields %q", i, lines[i], want)
		}
	}
	// Columns are aligned: OBSERVED starts at the same offset in every row.
	col := strings.Index(lines[0], "OBSERVED")
	if got := strings.Index(lines[2], "0.267"); got != col {
		t.Errorf("observed value at column %d, want %d:\n%s", got, col, buf.String())
	}
	want := "12 records, 2 keys: 10 admitted, 1 rejected, 1 unknown (1 transport error), 0 unmatched by the policy. Verdict: ERROR\n" + HarnessErrorNote + "\n"
	if !strings.HasSuffix(buf.String(), want) {
		t.Errorf("totals: got\n%s\nwant the suffix %q", buf.String(), want)
	}

	// A limiter failure takes precedence: FAIL, and no harness note.
	rep.Results = append(rep.Results, checker.Result{Name: "budget", Scope: "b", Verdict: checker.Fail, Observed: 11, Bound: 10, Unit: "units"})
	buf.Reset()
	if err := WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(buf.String(), "Verdict: FAIL\n") {
		t.Errorf("with a limiter failure: got\n%s\nwant it to end in Verdict: FAIL", buf.String())
	}
}

func TestCountsLine(t *testing.T) {
	tests := []struct {
		name string
		c    checker.Counts
		want string
	}{
		{"probe key named", checker.Counts{Records: 1230, Keys: 8, ProbeKeys: 1, Admitted: 1100, Rejected: 130},
			"1230 records, 8 keys + the probe's key: 1100 admitted, 130 rejected, 0 unknown (0 transport errors), 0 unmatched by the policy"},
		{"faults and singulars", checker.Counts{Records: 1, Keys: 1, Admitted: 1, TransportErrors: 1, Faulted: 1, FaultJudged: 1},
			"1 record, 1 key: 1 admitted, 0 rejected, 0 unknown (1 transport error), 1 excused around faults (1 judged by the fault checks, 0 in recovery or in flight at the start), 0 unmatched by the policy"},
		{"fault and recovery", checker.Counts{Records: 1230, Keys: 8, ProbeKeys: 1, Admitted: 1100, Rejected: 130, Faulted: 241, FaultJudged: 121},
			"1230 records, 8 keys + the probe's key: 1100 admitted, 130 rejected, 0 unknown (0 transport errors), 241 excused around faults (121 judged by the fault checks, 120 in recovery or in flight at the start), 0 unmatched by the policy"},
		{"fault and observed stalls", checker.Counts{Records: 1230, Keys: 8, Admitted: 1230, Faulted: 271, FaultJudged: 121, StallExcused: 30},
			"1230 records, 8 keys: 1230 admitted, 0 rejected, 0 unknown (0 transport errors), 271 excused around faults and observed store stalls (121 judged by the fault checks, 120 in recovery or in flight at the start, 30 in observed store stalls), 0 unmatched by the policy"},
		{"observed stalls alone", checker.Counts{Records: 100, Keys: 1, Admitted: 100, Faulted: 12, StallExcused: 12},
			"100 records, 1 key: 100 admitted, 0 rejected, 0 unknown (0 transport errors), 12 excused around observed store stalls, judged by no check, 0 unmatched by the policy"},
		{"an older summary, without the split", checker.Counts{Records: 10, Keys: 2, Admitted: 10, Faulted: 4},
			"10 records, 2 keys: 10 admitted, 0 rejected, 0 unknown (0 transport errors), 4 excused around faults, 0 unmatched by the policy"},
		{"several probes' keys", checker.Counts{Records: 5, Keys: 2, ProbeKeys: 2, Admitted: 5},
			"5 records, 2 keys + the probes' 2 keys: 5 admitted, 0 rejected, 0 unknown (0 transport errors), 0 unmatched by the policy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CountsLine(tc.c); got != tc.want {
				t.Errorf("CountsLine =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestTotalsLine(t *testing.T) {
	tests := []struct {
		t    checker.Totals
		want string
	}{
		{checker.Totals{Scenarios: 12, Passed: 9, Skipped: 3}, "12 scenarios: 9 passed, 3 skipped"},
		{checker.Totals{Scenarios: 1, Errors: 1}, "1 scenario: 1 harness error"},
		{checker.Totals{Scenarios: 5, Passed: 1, Failed: 1, Unknown: 1, Errors: 1, Skipped: 1}, "5 scenarios: 1 passed, 1 failed, 1 unknown, 1 harness error, 1 skipped"},
		{checker.Totals{}, "0 scenarios"},
	}
	for _, tc := range tests {
		if got := TotalsLine(tc.t); got != tc.want {
			t.Errorf("TotalsLine(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

// TestWriteTextNotes: the report's notes follow the totals line, one a line.
func TestWriteTextNotes(t *testing.T) {
	rep := &checker.Report{Counts: checker.Counts{Records: 1, Keys: 1, Admitted: 1}, Results: []checker.Result{{Name: "budget", Verdict: checker.Pass, Unit: "units"}},
		Notes: []string{"checks.headers is false: retry-after, ratelimit-fields and header-style were not run", "clock offset unknown: window checks use offset-free bounds"}}
	var buf bytes.Buffer
	if err := WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	want := "Verdict: PASS\nNote: checks.headers is false: retry-after, ratelimit-fields and header-style were not run.\nNote: clock offset unknown: window checks use offset-free bounds.\n"
	if !strings.HasSuffix(buf.String(), want) {
		t.Errorf("got\n%s\nwant the suffix %q", buf.String(), want)
	}
}

// ErrorNote names the harness's ERROR rows, or the skips --fail-on-skip made
// fail the run when there are none; nothing for any other status.
func TestErrorNote(t *testing.T) {
	tests := []struct {
		name string
		s    checker.Summary
		want string
	}{
		{"pass", checker.Summary{Status: checker.StatusPass}, ""},
		{"fail", checker.Summary{Status: checker.StatusFail, SkipsFail: true, Totals: checker.Totals{Skipped: 1}}, ""},
		{"harness rows", checker.Summary{Status: checker.StatusError, Totals: checker.Totals{Errors: 1}}, HarnessErrorNote},
		{"skips alone", checker.Summary{Status: checker.StatusError, SkipsFail: true, Totals: checker.Totals{Skipped: 1}}, "ERROR: 1 scenario skipped, and --fail-on-skip makes a skip fail the run; no limiter check failed."},
		{"skips and harness rows", checker.Summary{Status: checker.StatusError, SkipsFail: true, Totals: checker.Totals{Skipped: 2, Errors: 1}}, HarnessErrorNote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorNote(&tt.s); got != tt.want {
				t.Errorf("ErrorNote = %q, want %q", got, tt.want)
			}
		})
	}
}
