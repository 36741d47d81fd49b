package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/rlbench/rlbench/harness/checker"
)

// WriteMarkdown writes a short Markdown summary of s for CI job pages (such
// as $GITHUB_STEP_SUMMARY): the overall verdict, then a table per scenario
// with every check, failures first.
func WriteMarkdown(w io.Writer, s *checker.Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## rlbench: %s\n\n", verdictMark(s.Verdict))
	for _, sc := range s.Scenarios {
		fmt.Fprintf(&b, "### %s: %s\n\n| check | verdict | observed | bound | unit |\n|---|---|---:|---:|---|\n", sc.Name, verdictMark(sc.Verdict))
		for _, pass := range []bool{false, true} {
			for _, r := range sc.Checks {
				if (r.Verdict == checker.Pass) != pass {
					continue
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", escapeCell(CheckLabel(r)), verdictMark(r.Verdict), FormatNumber(r.Observed), FormatNumber(r.Bound), escapeCell(r.Unit))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func verdictMark(v checker.Verdict) string {
	switch v {
	case checker.Pass:
		return "✅ pass"
	case checker.Fail:
		return "❌ FAIL"
	}
	return "❔ unknown"
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
