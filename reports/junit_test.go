package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
)

func TestWriteJUnit(t *testing.T) {
	s := &checker.Summary{Schema: checker.SummarySchema, Scenarios: []checker.ScenarioSummary{
		{Name: "concurrency", Checks: []checker.Result{
			{Name: "budget", Scope: "gcra-10per1m-b10", Verdict: checker.Fail, Observed: 12, Bound: 10, Unit: "units", Explanation: "12 admitted where 10 fit",
				Proof: &checker.Proof{Key: "key-0000", FromNs: 10, ToNs: 5_000_000, RequestIDs: []uint64{3, 4}, Instances: []checker.InstanceShare{{Instance: "i1", Requests: 2, Cost: 2}}}},
			{Name: "status", Verdict: checker.Pass, Observed: 0, Bound: 0, Unit: "responses", Explanation: "no 5xx"},
			{Name: "false-rejections", Verdict: checker.Unknown, Observed: 0.5, Bound: 0, Unit: "rate", Explanation: "timeouts decide it"},
		}},
	}}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, buf.String())
	}
	if got.Tests != 3 || got.Failures != 2 {
		t.Fatalf("tests=%d failures=%d, want 3 and 2 (an unknown verdict fails the gate)", got.Tests, got.Failures)
	}
	c := got.Suites[0].Cases[0]
	if c.Name != "budget [gcra-10per1m-b10]" || c.Failure == nil || c.Failure.Type != "fail" {
		t.Fatalf("first case = %+v", c)
	}
	for _, want := range []string{"observed 12 units, bound 10 units", "key key-0000", "instance i1: 2 requests"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("junit.xml lacks %q:\n%s", want, buf.String())
		}
	}
	if got.Suites[0].Cases[1].Failure != nil {
		t.Fatal("a passing check has a failure element")
	}
}

// TestWriteJUnitHarnessAndSkips: a harness check that did not pass is an
// <error>, a limiter's failure a <failure>, a skipped scenario a
// <skipped message>, each counted on its suite and the whole; "1 unit".
func TestWriteJUnitHarnessAndSkips(t *testing.T) {
	s := checker.NewSummary(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s.Add("busy", []checker.Result{
		{Name: checker.CheckBudget, Verdict: checker.Pass, Observed: 1, Bound: 1, Unit: "units", Explanation: "tight"},
		{Name: checker.CheckLoadDelivered, Verdict: checker.Fail, Observed: 0.83, Bound: 0.95, Unit: "fraction of planned requests sent on time", Explanation: "behind"},
		{Name: checker.CheckMaxLatency, Class: checker.ClassHarness, Verdict: checker.Unknown, Observed: 12, Bound: 500, Unit: "ms", Explanation: "invalid"},
	})
	s.Add("over", []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Fail, Observed: 12, Bound: 10, Unit: "units"}})
	s.AddSkipped("peer-nginx-delay", "nginx is not installed: apt-get install nginx")
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, buf.String())
	}
	if got.Tests != 5 || got.Failures != 1 || got.Errors != 2 || got.Skipped != 1 {
		t.Errorf("tests=%d failures=%d errors=%d skipped=%d, want 5, 1, 2, 1:\n%s", got.Tests, got.Failures, got.Errors, got.Skipped, buf.String())
	}
	if len(got.Suites) != 3 {
		t.Fatalf("%d suites, want 3", len(got.Suites))
	}
	busy := got.Suites[0]
	if busy.Errors != 2 || busy.Failures != 0 {
		t.Errorf("suite busy: errors=%d failures=%d, want 2 and 0", busy.Errors, busy.Failures)
	}
	if c := busy.Cases[1]; c.Error == nil || c.Failure != nil || c.Error.Type != "harness" || !strings.HasPrefix(c.Error.Message, "error: observed 0.83") {
		t.Errorf("load-delivered case = %+v, want an <error type=harness>", c)
	}
	if c := busy.Cases[0]; !strings.Contains(c.SystemOut, "observed 1 unit, bound 1 unit") {
		t.Errorf("system-out = %q, want the unit in the singular", c.SystemOut)
	}
	if c := got.Suites[1].Cases[0]; c.Failure == nil || c.Error != nil || c.Failure.Type != "fail" {
		t.Errorf("budget case = %+v, want a <failure type=fail>", c)
	}
	sk := got.Suites[2]
	if sk.Name != "peer-nginx-delay" || sk.Skipped != 1 || len(sk.Cases) != 1 || sk.Cases[0].Skipped == nil || sk.Cases[0].Skipped.Message != "nginx is not installed: apt-get install nginx" {
		t.Errorf("skipped suite = %+v", sk)
	}
}

// TestWriteJUnitNotes: a scenario's notes, the observed store stalls' among
// them, are its suite's <system-out>, one a line; a suite without notes has
// none.
func TestWriteJUnitNotes(t *testing.T) {
	stall := "the store stalled beyond the store timeout 200ms 2 times (total 600 ms, 233 requests of the 299 the declared faults left judged excused) outside the declared faults: at 0.30–0.60 s, 7.40–7.70 s"
	s := checker.NewSummary(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s.AddReport("drill-redis-kill-open", &checker.Report{
		Results: []checker.Result{{Name: checker.CheckBudget, Class: checker.ClassHarness, Verdict: checker.Unknown, Unit: "units", Explanation: "too little of the run was judged"}},
		Notes:   []string{"checks.headers is false", stall},
	})
	s.AddReport("quiet", &checker.Report{Results: []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Pass, Unit: "units"}}})
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, buf.String())
	}
	if got, want := got.Suites[0].SystemOut, "checks.headers is false\n"+stall; got != want {
		t.Errorf("suite system-out = %q, want %q", got, want)
	}
	if got := got.Suites[1].SystemOut; got != "" {
		t.Errorf("suite without notes: system-out = %q, want none", got)
	}
	if i, j := strings.Index(buf.String(), "</testcase>"), strings.Index(buf.String(), "<system-out>checks.headers"); j < 0 || j < i {
		// The schema puts a suite's system-out after its test cases.
		t.Errorf("the suite's system-out is missing or before its test cases:\n%s", buf.String())
	}
}
