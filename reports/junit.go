// Package reports renders a run's verdicts for people and machines: the
// self-contained report.html, junit.xml for CI systems, and a short Markdown
// summary for CI job pages. summary.json, their machine-readable twin, is
// checker.Summary.
package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/rlbench/rlbench/harness/checker"
)

// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub Actions
// reporters): one <testsuite> per scenario, one <testcase> per check. A
// failed check of the limiter is a <failure>; an unknown one is a
// <failure type="unknown"> too, since a gate must not pass what it could
// not prove. A check of the harness that did not pass (a generator that
// fell behind, a fault never injected, a scenario that could not run) is
// an <error>, as JUnit means it: the test could not be carried out, which
// is not the limiter's failure. A skipped scenario is a suite of one
// <testcase name="run"> with <skipped message="why">. A scenario's notes
// (checker.ScenarioSummary.Notes: checks not run, the store stalls the
// harness observed and what they excused) are its suite's <system-out>, a
// line each, after its test cases as the JUnit schema orders them.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr,omitempty"`
	Cases    []junitCase `xml:"testcase"`
	// SystemOut is the scenario's notes, one a line.
	SystemOut string `xml:"system-out,omitempty"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes s as JUnit XML.
func WriteJUnit(w io.Writer, s *checker.Summary) error {
	out := junitSuites{Name: "rlbench"}
	add := func(suite junitSuite) {
		suite.Tests = len(suite.Cases)
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Errors += suite.Errors
		out.Skipped += suite.Skipped
		out.Suites = append(out.Suites, suite)
	}
	for _, sc := range s.Scenarios {
		suite := junitSuite{Name: sc.Name, SystemOut: strings.Join(sc.Notes, "\n")}
		for _, r := range sc.Checks {
			c := junitCase{Name: CheckLabel(r), ClassName: "rlbench." + sc.Name, SystemOut: outcomeLine(r)}
			switch r.Status() {
			case checker.StatusPass:
			case checker.StatusError:
				c.Error = &junitFailure{Type: "harness", Message: outcomeLine(r), Body: proofText(r)}
				suite.Errors++
			default:
				c.Failure = &junitFailure{Type: string(r.Verdict), Message: outcomeLine(r), Body: proofText(r)}
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
		add(suite)
	}
	for _, sk := range s.Skipped {
		add(junitSuite{Name: sk.Name, Skipped: 1, Cases: []junitCase{{
			Name: checker.CheckCouldRun, ClassName: "rlbench." + sk.Name, Skipped: &junitSkipped{Message: sk.Reason},
		}}})
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// CheckLabel names a result as tables and test cases show it: the check and,
// when it has one, its scope ("budget [gcra-10per1s-b10]").
func CheckLabel(r checker.Result) string {
	if r.Scope == "" {
		return r.Name
	}
	return r.Name + " [" + r.Scope + "]"
}

// outcomeLine is the one-line statement of a result: verdict (error for the
// harness's), observed against bound, and the explanation.
func outcomeLine(r checker.Result) string {
	return fmt.Sprintf("%s: observed %s %s, bound %s %s: %s", strings.ToLower(VerdictLabel(r)), FormatNumber(r.Observed), checker.UnitFor(r.Observed, r.Unit),
		FormatNumber(r.Bound), checker.UnitFor(r.Bound, r.Unit), r.Explanation)
}

func proofText(r checker.Result) string {
	if r.Proof == nil {
		return r.Explanation
	}
	p := r.Proof
	var b strings.Builder
	fmt.Fprintf(&b, "key %s, interval %d ns .. %d ns since the run's start\nrequests: %v\n", p.Key, p.FromNs, p.ToNs, p.RequestIDs)
	for _, is := range p.Instances {
		fmt.Fprintf(&b, "instance %s: %s, %s\n", is.Instance, checker.Count(is.Requests, "requests"), checker.Count(int(is.Cost), "units"))
	}
	return b.String()
}
