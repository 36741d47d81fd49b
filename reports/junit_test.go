package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

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
