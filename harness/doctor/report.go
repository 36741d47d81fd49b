package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes the report for a person: a table of every check, then
// each finding with its fix.
func (r *Report) WriteText(w io.Writer) error {
	head := r.URL
	if r.Version != "" {
		head += fmt.Sprintf(": Redis %s, %s, role %s", r.Version, r.Mode, r.Role)
	}
	fmt.Fprintf(w, "rlbench doctor %s\n\n", head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tOBSERVED")
	for _, c := range r.Checks {
		result := "ok"
		if !c.OK {
			result = "FINDING"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, result, c.Observed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Healthy() {
		_, err := fmt.Fprintln(w, "\nhealthy: no findings")
		return err
	}
	noun := "findings"
	if r.Findings == 1 {
		noun = "finding"
	}
	fmt.Fprintf(w, "\n%d %s:\n", r.Findings, noun)
	for _, c := range r.Checks {
		if c.OK {
			continue
		}
		fmt.Fprintf(w, "\n%s: %s\n  fix: %s\n", c.Name, c.Finding, c.Fix)
	}
	return nil
}

// WriteJSON writes the report as one indented JSON object of schema Schema.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
