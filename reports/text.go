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
// totals ending in the verdict. Numbers are FormatNumber's. The only errors
// are w's.
func WriteText(w io.Writer, rep *checker.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSCOPE\tVERDICT\tOBSERVED\tBOUND\tUNIT\tEXPLANATION")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Scope, strings.ToUpper(string(r.Verdict)),
			FormatNumber(r.Observed), FormatNumber(r.Bound), r.Unit, r.Explanation)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\n%d records, %d keys: %d admitted, %d rejected, %d unknown (%d transport errors), %d unmatched by the policy. Verdict: %s\n",
		rep.Records, rep.Keys, rep.Admitted, rep.Rejected, rep.Unknown, rep.TransportErrors, rep.Unmatched, strings.ToUpper(string(rep.Verdict()))); err != nil {
		return err
	}
	for _, n := range rep.Notes {
		if _, err := fmt.Fprintf(w, "Note: %s.\n", n); err != nil {
			return err
		}
	}
	return nil
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
