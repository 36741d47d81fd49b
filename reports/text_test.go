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
// FormatNumber, upper-case verdicts, and the totals line with the verdict.
func TestWriteText(t *testing.T) {
	rep := &checker.Report{Records: 12, Keys: 2, Admitted: 10, Rejected: 1, Unknown: 1, TransportErrors: 1, Results: []checker.Result{
		{Name: "budget", Scope: "all routes: 10 req/s (burst 10)", Verdict: checker.Pass, Observed: 10, Bound: 10.000833333, Unit: "units", Explanation: "tightest"},
		{Name: "load-delivered", Verdict: checker.Fail, Observed: 0.26699999999999996, Bound: 0.9, Unit: "rate", Explanation: "behind"},
		{Name: "max-latency", Verdict: checker.Pass, Observed: 35.68000000000001, Bound: 500, Unit: "ms"},
	}}
	var buf bytes.Buffer
	if err := WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	for i, want := range [][]string{
		{"CHECK", "SCOPE", "VERDICT", "OBSERVED", "BOUND", "UNIT", "EXPLANATION"},
		{"budget", "all", "routes:", "10", "req/s", "(burst", "10)", "PASS", "10", "10.0008", "units", "tightest"},
		{"load-delivered", "FAIL", "0.267", "0.9", "rate", "behind"},
		{"max-latency", "PASS", "35.68", "500", "ms"},
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
	if want := "12 records, 2 keys: 10 admitted, 1 rejected, 1 unknown (1 transport errors), 0 unmatched by the policy. Verdict: FAIL\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("totals line: got\n%s\nwant the suffix %q", buf.String(), want)
	}
}

// TestWriteTextNotes: the report's notes follow the totals line, one a line.
func TestWriteTextNotes(t *testing.T) {
	rep := &checker.Report{Records: 1, Keys: 1, Admitted: 1, Results: []checker.Result{{Name: "budget", Verdict: checker.Pass, Unit: "units"}},
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
