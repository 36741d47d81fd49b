//go:build unix

package mutation

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rlbench/rlbench/scenarios"
)

// Tally is one shipped scenario's false failures over repeated runs
// against the reference limiter.
type Tally struct {
	Scenario string
	// Failures counts the completed runs with a check that did not pass.
	Failures int
	// Checks names the checks that did not pass, in the order first seen.
	Checks []string
}

// FalseAlarms is the outcome of RepeatReference. Since the reference
// limiter keeps every promise, any failure is a false alarm.
type FalseAlarms struct {
	// Rounds is how many times every scenario ran.
	Rounds int
	// Tallies holds one Tally per shipped scenario, in scenarios.List order.
	Tallies []Tally
	// Incomplete counts the runs that could not complete.
	Incomplete int
	// Out is where the runs' outputs are.
	Out string
}

// Total counts the false failures over every scenario.
func (f *FalseAlarms) Total() int {
	n := 0
	for _, t := range f.Tallies {
		n += t.Failures
	}
	return n
}

// RepeatReference runs every shipped scenario rounds times against the
// reference limiter, round r's under opts.Out/round-R/NAME, and tallies the
// runs that failed a check. A run that could not complete is counted in
// Incomplete, not returned. Errors: the shipped scenarios cannot be read,
// and ctx's end ("interrupted").
func RepeatReference(ctx context.Context, opts Options, rounds int) (*FalseAlarms, error) {
	infos, err := scenarios.List()
	if err != nil {
		return nil, err
	}
	fa := &FalseAlarms{Rounds: rounds, Out: opts.Out, Tallies: make([]Tally, len(infos))}
	for j, info := range infos {
		fa.Tallies[j].Scenario = info.Name
	}
	for i := range rounds {
		for j, info := range infos {
			sc, err := scenarios.Lookup(info.Name)
			if err != nil {
				return nil, err
			}
			opts.progressf("mutate: reference %d/%d: %s", i+1, rounds, info.Name)
			results, err := runValid(ctx, &opts, sc, filepath.Join(opts.Out, fmt.Sprintf("round-%d", i+1), info.Name), "")
			if ctx.Err() != nil {
				return nil, fmt.Errorf("interrupted: %w", ctx.Err())
			}
			if err != nil {
				fa.Incomplete++
				opts.progressf("mutate: %s: could not complete: %v", info.Name, err)
				continue
			}
			t := &fa.Tallies[j]
			if names := failed(results); len(names) > 0 {
				t.Failures++
				for _, n := range names {
					if !slices.Contains(t.Checks, n) {
						t.Checks = append(t.Checks, n)
					}
				}
			}
		}
	}
	return fa, nil
}

// WriteText writes one row per scenario (its runs, false failures and the
// checks that failed) and the total. The only errors are w's.
func (f *FalseAlarms) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRUNS\tFALSE FAILURES\tFAILED CHECKS")
	for _, t := range f.Tallies {
		checks := "-"
		if len(t.Checks) > 0 {
			checks = strings.Join(t.Checks, ", ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.Scenario, f.Rounds, t.Failures, checks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nFalse failures: %d in %d reference runs (%d scenarios × %d). Runs in %s.\n",
		f.Total(), f.Rounds*len(f.Tallies), len(f.Tallies), f.Rounds, f.Out)
	return err
}
