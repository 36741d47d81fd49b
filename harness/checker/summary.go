package checker

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// SummarySchema is the value of Summary.Schema for this version.
const SummarySchema = "rlbench-summary/v1"

// Summary is the machine-readable verdict of a run or a re-check, written
// as summary.json. Schema rlbench-summary/v1:
//
//	schema      string: "rlbench-summary/v1".
//	generated   string: when it was written, RFC 3339.
//	verdict     string: "pass", "fail" or "unknown" over every check of
//	            every scenario, the harness's included.
//	status      string: what the run comes to for a gate, each check
//	            counted with its class: "fail" when a limiter check failed,
//	            else "unknown" when one is unknown, else "error" when a
//	            harness check did not pass (the harness could not make a
//	            valid test), else "pass". Skipped scenarios do not change it.
//	totals      object: scenarios (every scenario named, skipped ones
//	            included), passed, failed, unknown, errors, skipped: how
//	            many scenarios have each status.
//	scenarios   array of objects, the scenarios that ran or could not:
//	  name      string: the scenario (or the history file re-checked).
//	  verdict   string: pass, fail or unknown over its checks.
//	  status    string: pass, fail, unknown or error over its checks, as
//	            the run's status.
//	  counts    object, optional: the history's figures, as the verdict
//	            table's totals line prints them: records, keys (the
//	            traffic's keys), probe_keys (the Retry-After probes' own
//	            keys, not among keys), admitted, rejected, unknown (by
//	            recorded outcome; they add up to records),
//	            transport_errors, faulted (requests excused around faults
//	            and observed store stalls), fault_judged (those of them
//	            sent during a fault, which the fault checks judge),
//	            stall_excused (those excused by observed store stalls
//	            alone, which no check judges), unmatched (requests no
//	            rule of the policy covers). See Counts.
//	  notes     array of strings, optional: what the checks say beside
//	            their verdicts, as the terminal report prints it (checks not
//	            run, what the clock allowed, the store stalls the harness
//	            observed outside the declared faults and how many requests
//	            they excused).
//	  checks    array of objects:
//	    name         string: the check (budget, false-rejections, retry-after,
//	                 ratelimit-fields, header-style, status,
//	                 boundary-burst-ratio, fault-latency, failure-mode,
//	                 load-delivered, history-complete, max-latency,
//	                 latency-overhead, latency-overhead-ratio,
//	                 retry-after-probe, fault-injected,
//	                 key-ttl; "run" for a scenario that could not run).
//	    scope        string, optional: the limit or route checked.
//	    class        string: whose conclusion it is: "limiter", or "harness"
//	                 for load-delivered, history-complete, fault-injected,
//	                 run, and a latency check marked unknown because the
//	                 generator fell behind. Absent in summaries written
//	                 before it was recorded: read it from the name.
//	    verdict      string: pass, fail or unknown.
//	    observed     number: the measured value, in unit.
//	    bound        number: the most the policy allows, in unit.
//	    unit         string: "units", "rejections", "responses", "× limit", ...
//	    explanation  string: one line for people.
//	    proof        object, optional: key, from_ns, to_ns (ns since the
//	                 run's start), request_ids, and instances (instance,
//	                 requests, cost).
//	skipped     array of objects, optional: the scenarios that did not run
//	            for a reason that is no one's failure (a peer limiter this
//	            machine lacks):
//	  name      string: the scenario.
//	  status    string: "skipped".
//	  reason    string: why, and how to run it.
//
// Fields are never removed or retyped within v1; consumers ignore fields
// they do not know. status, totals, counts, class and skipped were added
// within v1: a reader of an older summary derives them (ReadSummary does).
// notes were added within v1 too; an older summary has none. skips_fail
// (boolean, optional) says the skipped scenarios made the status error
// (rlbench run --fail-on-skip).
type Summary struct {
	Schema    string            `json:"schema"`
	Generated time.Time         `json:"generated"`
	Verdict   Verdict           `json:"verdict"`
	Status    Status            `json:"status"`
	Totals    Totals            `json:"totals"`
	Scenarios []ScenarioSummary `json:"scenarios"`
	Skipped   []SkippedScenario `json:"skipped,omitempty"`
	// StaleDirs names the scenario directories beside this summary that an
	// earlier run into the same output directory left, and which this
	// summary does not describe (outdir.Stale); absent when none.
	StaleDirs []string `json:"stale_dirs,omitempty"`

	// SkipsFail says the skipped scenarios fail the run (FailSkips; rlbench
	// run --fail-on-skip); absent when they do not.
	SkipsFail bool `json:"skips_fail,omitempty"`
}

// FailSkips makes the skipped scenarios fail the run, for a CI gate that
// must run every scenario: a status below error becomes error, the
// harness's (no check judged the limiters skipped), and SkipsFail is set.
// It does nothing when no scenario was skipped. The verdict, the limiters'
// alone, is left as it is.
func (s *Summary) FailSkips() {
	if s.Totals.Skipped == 0 {
		return
	}
	s.SkipsFail = true
	if statusRank(StatusError) > statusRank(s.Status) {
		s.Status = StatusError
	}
}

// ScenarioSummary is one scenario's checks in a Summary.
type ScenarioSummary struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	Status  Status  `json:"status"`
	// Counts are the history's figures; nil for a scenario that could not
	// run, and in summaries written before they were recorded.
	Counts *Counts `json:"counts,omitempty"`
	// Notes are the report's notes (Report.Notes); nil when it had none,
	// for a scenario that could not run, and in summaries written before
	// they were recorded.
	Notes  []string `json:"notes,omitempty"`
	Checks []Result `json:"checks"`
}

// SkippedScenario is a scenario that did not run, and why.
type SkippedScenario struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Reason string `json:"reason"`
}

// Totals count a Summary's scenarios by status.
type Totals struct {
	Scenarios int `json:"scenarios"`
	Passed    int `json:"passed"`
	Failed    int `json:"failed"`
	Unknown   int `json:"unknown"`
	Errors    int `json:"errors"`
	Skipped   int `json:"skipped"`
}

// NewSummary returns an empty summary generated at now.
func NewSummary(now time.Time) *Summary {
	return &Summary{Schema: SummarySchema, Generated: now.UTC(), Verdict: Pass, Status: StatusPass}
}

// Add appends a scenario's results, each with its class set (Result.Whose),
// and updates the overall verdict, status and totals.
func (s *Summary) Add(name string, results []Result) {
	s.add(ScenarioSummary{Name: name, Checks: results})
}

// AddReport is Add with rep's results, counts and notes.
func (s *Summary) AddReport(name string, rep *Report) {
	counts := rep.Counts
	s.add(ScenarioSummary{Name: name, Counts: &counts, Notes: slices.Clone(rep.Notes), Checks: rep.Results})
}

// AddSkipped records a scenario that did not run for reason, a skip that
// is no one's failure: it counts in Totals.Skipped and changes neither
// verdict nor status.
func (s *Summary) AddSkipped(name, reason string) {
	s.Skipped = append(s.Skipped, SkippedScenario{Name: name, Status: StatusSkipped, Reason: reason})
	s.Totals.Scenarios++
	s.Totals.Skipped++
}

func (s *Summary) add(sc ScenarioSummary) {
	classify(sc.Checks)
	rep := Report{Results: sc.Checks}
	sc.Verdict, sc.Status = rep.Verdict(), rep.Status()
	s.Scenarios = append(s.Scenarios, sc)
	switch {
	case sc.Verdict == Fail:
		s.Verdict = Fail
	case sc.Verdict == Unknown && s.Verdict == Pass:
		s.Verdict = Unknown
	}
	if statusRank(sc.Status) > statusRank(s.Status) {
		s.Status = sc.Status
	}
	s.Totals.Scenarios++
	switch sc.Status {
	case StatusPass:
		s.Totals.Passed++
	case StatusFail:
		s.Totals.Failed++
	case StatusUnknown:
		s.Totals.Unknown++
	case StatusError:
		s.Totals.Errors++
	}
}

// Write encodes s as indented JSON.
func (s *Summary) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// ReadSummary decodes a summary and checks its schema. A summary written
// before status, totals and class were recorded gets them derived from its
// checks, as Add would have set them.
func ReadSummary(r io.Reader) (*Summary, error) {
	var s Summary
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	if s.Schema != SummarySchema {
		return nil, fmt.Errorf("read summary: schema %q is not %q", s.Schema, SummarySchema)
	}
	if s.Status == "" {
		old := s
		s.Verdict, s.Status, s.Totals, s.Scenarios, s.Skipped = Pass, StatusPass, Totals{}, nil, nil
		for _, sc := range old.Scenarios {
			s.add(sc)
		}
		for _, sk := range old.Skipped {
			s.AddSkipped(sk.Name, sk.Reason)
		}
	}
	return &s, nil
}

// WriteFile writes s to the file at path (summary.json), replacing it.
// Errors are those of creating and writing the file.
func (s *Summary) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if err := s.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
