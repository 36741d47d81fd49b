//go:build unix

package mutation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rlbench/rlbench/harness/checker"
	harnesspeers "github.com/rlbench/rlbench/harness/peers"
	"github.com/rlbench/rlbench/scenarios"
	"github.com/rlbench/rlbench/scenarios/peers"
)

// Tally is one scenario's false failures over repeated runs against the
// reference limiter (or, for a peer scenario, against the peer, which
// keeps the promise its scenario claims for it).
type Tally struct {
	Scenario string
	// Failures counts the completed runs with a check that did not pass.
	Failures int
	// Checks names the checks that did not pass, in the order first seen;
	// a harness check of a run counted in Invalid is marked "(harness)".
	Checks []string
	// Known counts the completed runs that failed only checks the
	// scenario's known findings name (scenarios/peers.Findings: a peer
	// that does not keep the policy claimed for it): true failures, not
	// false alarms.
	Known int
	// Invalid counts the completed runs that stayed the harness's error
	// after every attempt (a generator that fell behind on a busy machine,
	// a burst not released as one): they judged no limiter, so they are
	// neither passes nor false failures.
	Invalid int
	// Skipped counts the runs of a peer scenario whose peer is not
	// installed on this machine: neither passed nor failed.
	Skipped int
	// Why says why the runs were skipped (the first such run's reason).
	Why string
}

// FalseAlarms is the outcome of RepeatReference. Since the reference
// limiter keeps every promise, any failure is a false alarm.
type FalseAlarms struct {
	// Rounds is how many times every scenario ran.
	Rounds int
	// Tallies holds one Tally per scenario: the shipped ones in
	// scenarios.List order, then the peer scenarios (scenarios/peers).
	Tallies []Tally
	// Incomplete counts the runs that could not complete.
	Incomplete int
	// Out is where the runs' outputs are.
	Out string
}

// Skipped counts the runs skipped over every scenario.
func (f *FalseAlarms) Skipped() int {
	n := 0
	for _, t := range f.Tallies {
		n += t.Skipped
	}
	return n
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
// reference limiter, and every peer scenario (scenarios/peers) as many
// times against its peer, round r's under opts.Out/round-R/NAME, and
// tallies the runs that failed a check. A run whose peer is not installed
// is counted as skipped; any other run that could not complete is counted
// in Incomplete, not returned. Errors: the scenarios cannot be read, and
// ctx's end ("interrupted").
func RepeatReference(ctx context.Context, opts Options, rounds int) (*FalseAlarms, error) {
	all, err := referenceScenarios()
	if err != nil {
		return nil, err
	}
	fa := &FalseAlarms{Rounds: rounds, Out: opts.Out, Tallies: make([]Tally, len(all))}
	for j, sc := range all {
		fa.Tallies[j].Scenario = sc.Name
	}
	for i := range rounds {
		for j, sc := range all {
			opts.progressf("mutate: reference %d/%d: %s", i+1, rounds, sc.Name)
			known := peers.Findings[sc.Name]
			results, err := runValid(ctx, &opts, sc, filepath.Join(opts.Out, fmt.Sprintf("round-%d", i+1), sc.Name), "", 0, known)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("interrupted: %w", ctx.Err())
			}
			if missing := (*harnesspeers.NotInstalledError)(nil); errors.As(err, &missing) {
				t := &fa.Tallies[j]
				if t.Skipped == 0 {
					t.Why = missing.Error()
					opts.progressf("mutate: %s: skipped: %v", sc.Name, missing)
				}
				t.Skipped++
				continue
			}
			if err != nil {
				fa.Incomplete++
				opts.progressf("mutate: %s: could not complete: %v", sc.Name, err)
				continue
			}
			t := &fa.Tallies[j]
			if harnessError(results, known) {
				t.Invalid++
				for _, r := range results {
					if n := r.Name + " (harness)"; r.Verdict != checker.Pass && r.Whose() == checker.ClassHarness && !slices.Contains(t.Checks, n) {
						t.Checks = append(t.Checks, n)
					}
				}
				continue
			}
			names := failed(results)
			if len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(known, n) }) {
				t.Known++
				continue
			}
			if len(names) > 0 {
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

// referenceScenarios are the scenarios RepeatReference runs: the shipped
// ones, then the peer scenarios.
func referenceScenarios() ([]*scenarios.Scenario, error) {
	infos, err := scenarios.List()
	if err != nil {
		return nil, err
	}
	var all []*scenarios.Scenario
	for _, info := range infos {
		sc, err := scenarios.Lookup(info.Name)
		if err != nil {
			return nil, err
		}
		all = append(all, sc)
	}
	more, err := peers.All()
	if err != nil {
		return nil, err
	}
	return append(all, more...), nil
}

// Invalids counts the runs over every scenario that stayed the harness's
// error.
func (f *FalseAlarms) Invalids() int {
	n := 0
	for _, t := range f.Tallies {
		n += t.Invalid
	}
	return n
}

// WriteText writes one row per scenario (its runs, skipped runs, runs
// that showed only a known finding, runs that stayed the harness's error,
// false failures and the checks that failed), the reasons for skipped runs
// and the total. The only errors are w's.
func (f *FalseAlarms) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRUNS\tSKIPPED\tKNOWN FINDINGS\tHARNESS ERRORS\tFALSE FAILURES\tFAILED CHECKS")
	var why []string
	for _, t := range f.Tallies {
		checks := "-"
		if len(t.Checks) > 0 {
			checks = strings.Join(t.Checks, ", ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", t.Scenario, f.Rounds-t.Skipped, t.Skipped, t.Known, t.Invalid, t.Failures, checks)
		if t.Why != "" {
			why = append(why, fmt.Sprintf("%s skipped: %s", t.Scenario, t.Why))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(why) > 0 {
		if _, err := fmt.Fprintf(w, "\n%s\n", strings.Join(why, "\n")); err != nil {
			return err
		}
	}
	runs := f.Rounds*len(f.Tallies) - f.Skipped()
	_, err := fmt.Fprintf(w, "\nFalse failures: %d in %d reference runs (%d scenarios × %d, %d skipped, %d the harness's error after %d attempts). Runs in %s.\n",
		f.Total(), runs, len(f.Tallies), f.Rounds, f.Skipped(), f.Invalids(), attempts, f.Out)
	return err
}
