//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/mutation"
	"github.com/rlbench/rlbench/harness/outdir"
	"github.com/rlbench/rlbench/sampleapi/faulty"
)

// mutateCommand verifies the checker by mutation (harness/mutation): every
// faulty limiter variant must be caught by the check aimed at it, while the
// reference limiter passes the same scenario.
type mutateCommand struct{ stdout, stderr io.Writer }

// mutateFlags are mutate's parsed command line.
type mutateFlags struct {
	out, binary string
	repeat      int
	shards      int
	verbose     bool
	variants    []mutation.Mutant
}

func (f *mutateFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.StringVar(&f.out, "out", mutation.DefaultOut, "write the runs' outputs under `DIR`")
	fs.StringVar(&f.binary, "binary", "", "run the instances from the rlbench executable at `PATH` (default this one)")
	fs.IntVar(&f.repeat, "repeat-reference", 0, "run every shipped scenario `N` times against the reference limiter, "+
		"and every peer scenario against its peer, instead, and count the false failures")
	fs.IntVar(&f.shards, "shards", 0, "run every variant whose scenario can be sharded as `N` local shards (rlbench run --local-shards N), "+
		"reference and variant alike; a scenario with faults runs unsharded, marked so in the table")
	fs.BoolVar(&f.verbose, "verbose", false, "print the runner's messages")
	return fs
}

var mutateHelp = help{
	synopsis: "rlbench mutate [flags] [VARIANT...]",
	about: `Verifies the checker by mutation. For each faulty limiter variant of the
sample API it runs the variant's scenario (scenarios/mutation/VARIANT.yaml)
twice: against the reference limiter, which must pass every check, and
against the variant (rlbench serve --faulty VARIANT), which must fail the
check meant to catch it. It prints a table and the mutation score, variants
caught by their check over variants run. With no VARIANT every variant is
run; the variants are ` + strings.Join(faulty.Names(), ", ") + `.
Each run's outputs (summary.json, run.json, junit.xml, report.html) are under
--out/VARIANT/reference and --out/VARIANT/faulty.

Scenarios without faults run on a Redis of the suite's own, which is scanned
after the run: every key left without a TTL fails the check key-ttl.

With --shards N every variant whose scenario can be sharded runs it as N
local shards against one set of instances (see 'rlbench run --local-shards'),
checked as one run, and the table's SHARDS column says which did; a scenario
with faults runs unsharded, marked "unsharded (faults)".

With --repeat-reference N it instead runs every shipped scenario N times
against the reference limiter, and every peer scenario (scenarios/peers) N
times against its peer, and counts the false failures: any failure of a
limiter check is one, since each keeps the promise its scenario claims (a
peer's known findings aside). A run the harness could not make valid (a
generator behind its schedule, a burst not released as one) is made again,
up to 3 times, and then counted as a harness error, not as a false failure.
A peer this machine lacks is skipped, not failed. Use N = 20 before a
release:

  rlbench mutate --repeat-reference 20`,
	footer: `Exit codes: 0 every variant caught by its check and every reference run
passed (or, with --repeat-reference, no false failure), 1 otherwise, 2 on
invalid input or a run that could not complete, 3 with --repeat-reference
when no run failed falsely but some stayed the harness's error.`,
}

func (c *mutateCommand) Usage() string { return mutateHelp.text(new(mutateFlags).flagSet()) }

func (c *mutateCommand) parse(args []string) (*mutateFlags, error) {
	f := &mutateFlags{}
	fs := f.flagSet()
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	if f.repeat < 0 {
		return nil, usagef("--repeat-reference %d: want a positive count", f.repeat)
	}
	if f.shards != 0 && (f.shards < 2 || f.shards > history.MaxShards) {
		return nil, usagef("--shards %d: want 2 to %d local shards", f.shards, history.MaxShards)
	}
	if f.shards != 0 && f.repeat > 0 {
		return nil, usagef("--shards applies to the variants' runs, not to --repeat-reference")
	}
	if f.repeat > 0 && fs.NArg() > 0 {
		return nil, usagef("--repeat-reference runs the shipped scenarios; it takes no VARIANT")
	}
	if fs.NArg() == 0 {
		f.variants = mutation.Mutants()
	}
	for _, name := range fs.Args() {
		m, ok := mutation.Lookup(name)
		if !ok {
			return nil, usagef("unknown variant %q; the variants are %s", name, strings.Join(faulty.Names(), ", "))
		}
		f.variants = append(f.variants, m)
	}
	return f, nil
}

func (c *mutateCommand) Run(ctx context.Context, args []string) error {
	f, err := c.parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, c.Usage())
		return err
	}
	if err != nil {
		return err
	}
	lock, err := outdir.Acquire(f.out) // one run at a time writes into --out
	if err != nil {
		return err
	}
	defer lock.Release()
	opts := mutation.Options{Out: f.out, Binary: f.binary, Version: Version(), Commit: Commit(), Progress: c.stderr, Shards: f.shards}
	if f.verbose {
		opts.Log = c.stderr
	}
	if f.repeat > 0 {
		fa, err := mutation.RepeatReference(ctx, opts, f.repeat)
		if err != nil {
			return err
		}
		if err := fa.WriteText(c.stdout); err != nil {
			return err
		}
		switch {
		case fa.Incomplete > 0:
			return fmt.Errorf("%d runs could not complete (see above)", fa.Incomplete)
		case fa.Total() > 0:
			return errChecksFailed
		case fa.Invalids() > 0:
			return fmt.Errorf("%w: %d runs stayed the harness's error after every attempt (see above)", errHarness, fa.Invalids())
		}
		return nil
	}
	score, err := mutation.Run(ctx, opts, f.variants)
	if err != nil {
		return err
	}
	if err := score.WriteText(c.stdout); err != nil {
		return err
	}
	switch {
	case score.Incomplete() > 0:
		return fmt.Errorf("%d runs could not complete (see above)", score.Incomplete())
	case !score.Passed():
		return errChecksFailed
	}
	return nil
}
