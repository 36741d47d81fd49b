package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/rlbench/rlbench/harness/checker"
)

// WriteMarkdown writes a short Markdown summary of s for CI job pages (such
// as $GITHUB_STEP_SUMMARY): the run's status and the scenarios by status
// (TotalsLine), then a table per scenario with every check, failures and
// harness errors first, then each skipped scenario with its reason.
func WriteMarkdown(w io.Writer, s *checker.Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## rlbench: %s\n\n%s.\n\n", statusMark(s.Status), TotalsLine(s.Totals))
	if s.Status == checker.StatusError {
		b.WriteString(HarnessErrorNote + "\n\n")
	}
	for _, sc := range s.Scenarios {
		fmt.Fprintf(&b, "### %s: %s\n\n", sc.Name, statusMark(sc.Status))
		if sc.Counts != nil {
			fmt.Fprintf(&b, "%s.\n\n", CountsLine(*sc.Counts))
		}
		b.WriteString("| check | verdict | observed | bound | unit |\n|---|---|---:|---:|---|\n")
		for _, pass := range []bool{false, true} {
			for _, r := range sc.Checks {
				if (r.Verdict == checker.Pass) != pass {
					continue
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", escapeCell(CheckLabel(r)), statusMark(r.Status()), FormatNumber(r.Observed), FormatNumber(r.Bound), escapeCell(checker.UnitFor(r.Observed, r.Unit)))
			}
		}
		b.WriteString("\n")
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(&b, "### %s: %s\n\n%s\n\n", sk.Name, statusMark(checker.StatusSkipped), sk.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func statusMark(s checker.Status) string {
	switch s {
	case checker.StatusPass:
		return "✅ pass"
	case checker.StatusFail:
		return "❌ FAIL"
	case checker.StatusError:
		return "⚠️ ERROR (harness)"
	case checker.StatusSkipped:
		return "⏭️ skipped"
	}
	return "❔ unknown"
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
