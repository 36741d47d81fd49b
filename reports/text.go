package reports

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rlbench/rlbench/harness/checker"
)

// WriteText writes rep's verdicts as the plain-text table `rlbench run` and
// `rlbench check` print, one row per result (check, scope, verdict, observed,
// bound, unit, explanation) in columns aligned with spaces, then a line of
// totals (CountsLine) ending in the status, and, when only the harness
// failed, a line saying so. The VERDICT column is VerdictLabel's. Numbers
// are FormatNumber's. The only errors are w's.
func WriteText(w io.Writer, rep *checker.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSCOPE\tVERDICT\tOBSERVED\tBOUND\tUNIT\tEXPLANATION")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Scope, VerdictLabel(r),
			FormatNumber(r.Observed), FormatNumber(r.Bound), checker.UnitFor(r.Observed, r.Unit), r.Explanation)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	status := rep.Status()
	if _, err := fmt.Fprintf(w, "\n%s. Verdict: %s\n", CountsLine(rep.Counts), strings.ToUpper(string(status))); err != nil {
		return err
	}
	for _, n := range rep.Notes {
		if _, err := fmt.Fprintf(w, "Note: %s.\n", n); err != nil {
			return err
		}
	}
	if status == checker.StatusError {
		_, err := fmt.Fprintln(w, HarnessErrorNote)
		return err
	}
	return nil
}

// HarnessErrorNote is what every output says of a run whose status is
// error.
const HarnessErrorNote = "ERROR: the harness could not make a valid test (the ERROR rows); no limiter check failed."

// ErrorNote is the line that explains a run whose status is error: the
// harness's ERROR rows, or skipped scenarios that fail the run
// (Summary.SkipsFail) when no check is the harness's error. It is empty for
// any other status.
func ErrorNote(s *checker.Summary) string {
	switch {
	case s.Status != checker.StatusError:
		return ""
	case s.SkipsFail && s.Totals.Errors == 0:
		return fmt.Sprintf("ERROR: %s skipped, and --fail-on-skip makes a skip fail the run; no limiter check failed.", checker.Count(s.Totals.Skipped, "scenarios"))
	}
	return HarnessErrorNote
}

// VerdictLabel is a result's verdict as the verdict tables print it: PASS,
// FAIL or UNKNOWN for the limiter's checks, ERROR for a check of the
// harness that did not pass (checker.StatusError).
func VerdictLabel(r checker.Result) string {
	if r.Status() == checker.StatusError {
		return "ERROR"
	}
	return strings.ToUpper(string(r.Verdict))
}

// CountsLine is a history's counts in one line, as the verdict table, the
// report and the step summary print them: "1230 records, 8 keys + the
// probe's key: 1100 admitted, 130 rejected, 0 unknown (0 transport
// errors), 0 unmatched by the policy", with "; 241 excused around faults
// (121 judged by the fault checks, 120 in recovery or in flight at the
// start)" before the unmatched when there were faults, and ", 30 in
// observed store stalls" in the parentheses when the harness saw the store
// stall. Counts of older summaries, which lack the split, give only the
// total excused.
func CountsLine(c checker.Counts) string {
	faulted := ""
	if c.Faulted > 0 {
		faulted = ", " + excusedPhrase(c)
	}
	return fmt.Sprintf("%s, %s: %d admitted, %d rejected, %d unknown (%s)%s, %d unmatched by the policy",
		checker.Count(c.Records, "records"), KeysPhrase(c.Keys, c.ProbeKeys), c.Admitted, c.Rejected, c.Unknown, checker.Count(c.TransportErrors, "transport errors"), faulted, c.Unmatched)
}

// excusedPhrase says how many requests c's faults and store stalls
// excused, and what judged them (checker.Counts.Faulted).
func excusedPhrase(c checker.Counts) string {
	declared := c.Faulted - c.StallExcused
	around := "around faults"
	switch {
	case c.StallExcused == 0:
	case declared == 0:
		around = "around observed store stalls"
	default:
		around = "around faults and observed store stalls"
	}
	s := fmt.Sprintf("%d excused %s", c.Faulted, around)
	if c.FaultJudged == 0 && c.StallExcused == 0 {
		return s
	}
	var parts []string
	if declared > 0 {
		parts = append(parts, fmt.Sprintf("%d judged by the fault checks", c.FaultJudged),
			fmt.Sprintf("%d in recovery or in flight at the start", c.FaultRecovery()))
	}
	if c.StallExcused > 0 && declared > 0 {
		parts = append(parts, fmt.Sprintf("%d in observed store stalls", c.StallExcused))
	}
	if len(parts) == 0 {
		return s + ", judged by no check"
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

// KeysPhrase counts keys, the traffic's, and probe, the Retry-After
// probes' own, as every output names them (checker.Counts.Keys): "8 keys
// + the probe's key", "2 keys + the probes' 2 keys", "1 key".
func KeysPhrase(keys, probe int) string {
	s := checker.Count(keys, "keys")
	switch probe {
	case 0:
	case 1:
		s += " + the probe's key"
	default:
		s += " + the probes' " + checker.Count(probe, "keys")
	}
	return s
}

// FormatNumber prints v as every verdict table shows an observed value or a
// bound (text, Markdown, HTML, JUnit): a whole number without a fraction,
// any other with at most six significant digits and no trailing zeros, so
// that float noise never shows (0.26699999999999996 prints 0.267,
// 35.68000000000001 prints 35.68). Exponent notation is kept for magnitudes
// below 0.0001 and from 1e15 up; NaN and infinities print as strconv does.
func FormatNumber(v float64) string {
	const digits = 6
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0" // and not "-0"
	case math.IsNaN(v), math.IsInf(v, 0), a >= 1e15, a < 1e-4:
		return strconv.FormatFloat(v, 'g', digits, 64)
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	// Decimals left after the integer digits, for six significant digits.
	decimals := max(0, digits-1-int(math.Floor(math.Log10(a))))
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// TotalsLine counts a run's scenarios by status, as the last line of
// `rlbench run`, the report and the step summary print them: "12
// scenarios: 9 passed, 3 skipped", naming only the statuses that occur,
// in the order passed, failed, unknown, harness errors, skipped.
func TotalsLine(t checker.Totals) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{t.Passed, "passed"}, {t.Failed, "failed"}, {t.Unknown, "unknown"}, {t.Errors, "harness errors"}, {t.Skipped, "skipped"}} {
		if p.n > 0 {
			parts = append(parts, checker.Count(p.n, p.what))
		}
	}
	line := checker.Count(t.Scenarios, "scenarios")
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	return line
}
