package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
)

// TestWriteMarkdown: the step summary counts the scenarios by status,
// marks a harness error apart from a failure, prints each scenario's counts
// and lists each skipped scenario with its reason.
func TestWriteMarkdown(t *testing.T) {
	s := checker.NewSummary(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s.AddReport("quickstart", &checker.Report{Counts: checker.Counts{Records: 10, Keys: 8, ProbeKeys: 1, Admitted: 10},
		Results: []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Pass, Observed: 1, Bound: 10, Unit: "units"}}})
	s.Add("busy", []checker.Result{
		{Name: checker.CheckBudget, Verdict: checker.Pass, Observed: 5, Bound: 10, Unit: "units"},
		{Name: checker.CheckLoadDelivered, Verdict: checker.Fail, Observed: 0.83, Bound: 0.95, Unit: "fraction"},
	})
	s.AddSkipped("peer-nginx-delay", "nginx is not installed: apt-get install nginx")
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, s); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"## rlbench: ⚠️ ERROR (harness)\n\n3 scenarios: 1 passed, 1 harness error, 1 skipped.\n\n" + HarnessErrorNote,
		"### quickstart: ✅ pass\n\n10 records, 8 keys + the probe's key: 10 admitted,",
		"| budget | ✅ pass | 1 | 10 | unit |",
		"### busy: ⚠️ ERROR (harness)",
		"| load-delivered | ⚠️ ERROR (harness) | 0.83 | 0.95 | fraction |\n| budget | ✅ pass |",
		"### peer-nginx-delay: ⏭️ skipped\n\nnginx is not installed: apt-get install nginx\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("step summary lacks %q:\n%s", want, got)
		}
	}
}
