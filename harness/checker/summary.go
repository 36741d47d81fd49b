package checker

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// SummarySchema is the value of Summary.Schema for this version.
const SummarySchema = "rlbench-summary/v1"

// Summary is the machine-readable verdict of a run or a re-check, written
// as summary.json. Schema rlbench-summary/v1:
//
//	schema      string: "rlbench-summary/v1".
//	generated   string: when it was written, RFC 3339.
//	verdict     string: "pass", "fail" or "unknown" over every scenario.
//	scenarios   array of objects:
//	  name      string: the scenario (or the history file re-checked).
//	  verdict   string: pass, fail or unknown over its checks.
//	  checks    array of objects:
//	    name         string: the check (budget, false-rejections, retry-after,
//	                 ratelimit-fields, header-style, status,
//	                 boundary-burst-ratio, fault-latency, failure-mode,
//	                 load-delivered, history-complete, max-latency,
//	                 latency-overhead, retry-after-probe, fault-injected,
//	                 key-ttl; "run" for a scenario that could not run).
//	    scope        string, optional: the limit or route checked.
//	    verdict      string: pass, fail or unknown.
//	    observed     number: the measured value, in unit.
//	    bound        number: the most the policy allows, in unit.
//	    unit         string: "units", "rejections", "responses", "× limit", ...
//	    explanation  string: one line for people.
//	    proof        object, optional: key, from_ns, to_ns (ns since the
//	                 run's start), request_ids, and instances (instance,
//	                 requests, cost).
//
// Fields are never removed or retyped within v1; consumers ignore fields
// they do not know.
type Summary struct {
	Schema    string            `json:"schema"`
	Generated time.Time         `json:"generated"`
	Verdict   Verdict           `json:"verdict"`
	Scenarios []ScenarioSummary `json:"scenarios"`
}

// ScenarioSummary is one scenario's checks in a Summary.
type ScenarioSummary struct {
	Name    string   `json:"name"`
	Verdict Verdict  `json:"verdict"`
	Checks  []Result `json:"checks"`
}

// NewSummary returns an empty summary generated at now.
func NewSummary(now time.Time) *Summary {
	return &Summary{Schema: SummarySchema, Generated: now.UTC(), Verdict: Pass}
}

// Add appends a scenario's results and updates the overall verdict.
func (s *Summary) Add(name string, results []Result) {
	rep := Report{Results: results}
	v := rep.Verdict()
	s.Scenarios = append(s.Scenarios, ScenarioSummary{Name: name, Verdict: v, Checks: results})
	switch {
	case v == Fail:
		s.Verdict = Fail
	case v == Unknown && s.Verdict == Pass:
		s.Verdict = Unknown
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

// ReadSummary decodes a summary and checks its schema.
func ReadSummary(r io.Reader) (*Summary, error) {
	var s Summary
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	if s.Schema != SummarySchema {
		return nil, fmt.Errorf("read summary: schema %q is not %q", s.Schema, SummarySchema)
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
