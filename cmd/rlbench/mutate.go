//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/runner"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/reports"
	"github.com/rlbench/rlbench/sampleapi/faulty"
	"github.com/rlbench/rlbench/scenarios"
	"github.com/rlbench/rlbench/scenarios/mutation"
)

// mutateCommand verifies the checker by mutation: every faulty limiter
// variant must be caught by the check aimed at it, while the reference
// limiter passes the same scenario.
type mutateCommand struct{ stdout, stderr io.Writer }

func (c *mutateCommand) Usage() string {
	return `Usage: rlbench mutate [flags] [VARIANT...]

Verifies the checker by mutation. For each faulty limiter variant of the
sample API it runs the variant's scenario (scenarios/mutation/VARIANT.yaml)
twice: against the reference limiter, which must pass every check, and
against the variant (rlbench serve --faulty VARIANT), which must fail the
check meant to catch it. It prints a table and the mutation score, variants
caught by their check over variants run. With no VARIANT every variant is
run; the variants are
  ` + strings.Join(faulty.Names(), ", ") + `.
Each run's summary.json and report.html are under --out/VARIANT/reference
and --out/VARIANT/faulty.

Scenarios without faults run on a Redis of the suite's own, which is scanned
after the run: every key left without a TTL fails the check key-ttl.

With --repeat-reference N it instead runs every shipped scenario N times
against the reference limiter and counts the false failures: any failure is
one, since the reference keeps every promise. Use N = 20 before a release:
  rlbench mutate --repeat-reference 20

Flags:
  --out DIR                output directory (default rlbench-mutation)
  --binary PATH            the rlbench executable instances run (default: this one)
  --repeat-reference N     run the shipped scenarios N times against the reference instead
  --verbose                print the runner's messages

Exit codes: 0 every variant caught by its check and every reference run
passed (or, with --repeat-reference, no false failure), 1 otherwise, 2 on
invalid input or a run that could not complete.
`
}

// Check names the suite adds to a run's results.
const (
	// checkKeyTTL fails when a key was left in Redis without a TTL
	// (DESIGN.md: every key written has a TTL in the same atomic step).
	checkKeyTTL = "key-ttl"
)

// mutant is a faulty variant and the check that must catch it.
type mutant struct {
	variant string
	check   string
}

// mutants are the suite, in faulty's order.
var mutants = []mutant{
	{variant: faulty.PrivateBucket, check: checker.CheckBudget},
	{variant: faulty.NonAtomic, check: checker.CheckBudget},
	{variant: faulty.ClientClock, check: checker.CheckBudget},
	{variant: faulty.FixedAsSliding, check: checker.CheckBudget},
	{variant: faulty.NoTTL, check: checkKeyTTL},
	{variant: faulty.RejectedConsumes, check: checker.CheckFalseRejections},
	{variant: faulty.RetryAfterShort, check: checker.CheckRetryAfter},
	{variant: faulty.HalfToken, check: checker.CheckBudget},
	{variant: faulty.NoTimeout, check: checker.CheckFaultLatency},
	{variant: faulty.LeftmostXFF, check: checker.CheckBudget},
}

// mutateFlags are mutate's parsed command line.
type mutateFlags struct {
	out, binary string
	repeat      int
	verbose     bool
	variants    []mutant
}

func (c *mutateCommand) parse(args []string) (*mutateFlags, error) {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &mutateFlags{}
	fs.StringVar(&f.out, "out", "rlbench-mutation", "")
	fs.StringVar(&f.binary, "binary", "", "")
	fs.IntVar(&f.repeat, "repeat-reference", 0, "")
	fs.BoolVar(&f.verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%v", err)
	}
	if f.repeat < 0 {
		return nil, usagef("--repeat-reference %d: want a positive count", f.repeat)
	}
	if f.repeat > 0 && fs.NArg() > 0 {
		return nil, usagef("--repeat-reference runs the shipped scenarios; it takes no VARIANT")
	}
	if fs.NArg() == 0 {
		f.variants = mutants
	}
	for _, name := range fs.Args() {
		i := slices.IndexFunc(mutants, func(m mutant) bool { return m.variant == name })
		if i < 0 {
			return nil, usagef("unknown variant %q; the variants are %s", name, strings.Join(faulty.Names(), ", "))
		}
		f.variants = append(f.variants, mutants[i])
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
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	if f.repeat > 0 {
		return c.repeatReference(ctx, f)
	}
	return c.mutate(ctx, f)
}

// row is one variant's line of the table.
type row struct {
	m                  mutant
	reference, variant []checker.Result
	refErr, varErr     error
}

func (r *row) referencePassed() bool { return r.refErr == nil && len(failed(r.reference)) == 0 }

func (r *row) caught() bool {
	return r.varErr == nil && slices.ContainsFunc(r.variant, func(res checker.Result) bool {
		return res.Name == r.m.check && res.Verdict == checker.Fail
	})
}

// mutate runs the suite and prints its table and score.
func (c *mutateCommand) mutate(ctx context.Context, f *mutateFlags) error {
	var rows []*row
	couldNotRun := 0
	for _, m := range f.variants {
		r := &row{m: m}
		rows = append(rows, r)
		sc, err := mutation.Scenario(m.variant)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "mutate: %s: reference limiter\n", m.variant)
		r.reference, r.refErr = c.runOnce(ctx, f, sc, filepath.Join(f.out, m.variant, "reference"), nil)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		fmt.Fprintf(c.stderr, "mutate: %s: faulty variant\n", m.variant)
		r.variant, r.varErr = c.runOnce(ctx, f, sc, filepath.Join(f.out, m.variant, "faulty"), []string{"--faulty", m.variant})
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		for _, err := range []error{r.refErr, r.varErr} {
			if err != nil {
				couldNotRun++
				fmt.Fprintf(c.stderr, "rlbench mutate: %s: %v\n", m.variant, err)
			}
		}
	}
	c.printTable(rows)
	caught, refFailed := 0, 0
	for _, r := range rows {
		if r.caught() {
			caught++
		}
		if !r.referencePassed() {
			refFailed++
		}
	}
	fmt.Fprintf(c.stdout, "\nMutation score: %d/%d variants caught by their intended check; %d reference runs failed.\n", caught, len(rows), refFailed)
	fmt.Fprintf(c.stdout, "Runs in %s. For false alarms, run every shipped scenario 20 times against the reference:\n  rlbench mutate --repeat-reference 20   (or: make mutation MUTATION_ARGS='--repeat-reference 20')\n", f.out)
	switch {
	case couldNotRun > 0:
		return fmt.Errorf("%d runs could not complete (see above)", couldNotRun)
	case caught < len(rows) || refFailed > 0:
		fmt.Fprintf(c.stdout, "Verdict: fail: %d of %d variants not caught, %d reference runs failed.\n", len(rows)-caught, len(rows), refFailed)
		return errChecksFailed
	}
	fmt.Fprintln(c.stdout, "Verdict: pass: every variant caught by its check, every reference run passed.")
	return nil
}

func (c *mutateCommand) printTable(rows []*row) {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIANT\tREFERENCE\tVARIANT RUN\tINTENDED CHECK\tCAUGHT\tFAILED CHECKS (VARIANT)")
	for _, r := range rows {
		caught := "NO"
		if r.caught() {
			caught = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.m.variant, verdictCell(r.reference, r.refErr), verdictCell(r.variant, r.varErr), r.m.check, caught, failedCell(r.variant, r.varErr))
	}
	tw.Flush()
	for _, r := range rows {
		if !r.referencePassed() && r.refErr == nil {
			fmt.Fprintf(c.stdout, "reference run of %s failed: %s\n", r.m.variant, strings.Join(failed(r.reference), ", "))
		}
	}
}

// verdictCell is "pass", "FAIL" or "error" for a run's results.
func verdictCell(results []checker.Result, err error) string {
	switch {
	case err != nil:
		return "error"
	case len(failed(results)) > 0:
		return "FAIL"
	}
	return "pass"
}

func failedCell(results []checker.Result, err error) string {
	if err != nil {
		return "could not run"
	}
	if names := failed(results); len(names) > 0 {
		return strings.Join(names, ", ")
	}
	return "none"
}

// failed lists the distinct names of the checks that did not pass.
func failed(results []checker.Result) []string {
	var names []string
	for _, res := range results {
		if res.Verdict != checker.Pass && !slices.Contains(names, res.Name) {
			names = append(names, res.Name)
		}
	}
	return names
}

// runOnce runs sc with the extra serve flags args, its output under dir,
// and returns its results. A scenario without faults runs on a Redis the
// suite starts, scanned afterwards for keys without a TTL (checkKeyTTL).
func (c *mutateCommand) runOnce(ctx context.Context, f *mutateFlags, sc *scenarios.Scenario, dir string, args []string) ([]checker.Result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	opts := runner.Options{OutDir: dir, Binary: f.binary, InstanceArgs: args}
	if f.verbose {
		opts.Log = c.stderr
	}
	var own *redistest.Server
	if len(sc.Faults) == 0 && sc.Redis.Provider != scenarios.ProviderNone && len(sc.Target.External) == 0 {
		var err error
		if own, err = redistest.Start(ctx, redistest.Options{}); err != nil {
			return nil, err
		}
		defer own.Stop()
		opts.Provider, opts.RedisURL = scenarios.ProviderExternal, own.URL()
	}
	o, err := runner.New(opts).Run(ctx, sc)
	if err != nil {
		return nil, err
	}
	if own != nil {
		res, err := keyTTLCheck(ctx, own.Addr())
		if err != nil {
			return nil, err
		}
		o.Report.Results = append(o.Report.Results, res)
	}
	return o.Report.Results, writeRunOutputs(dir, o)
}

// writeRunOutputs writes summary.json, run.json and report.html of one run
// into dir, as `rlbench run` does, for a look at what a check saw.
func writeRunOutputs(dir string, o *runner.Outcome) error {
	summary := checker.NewSummary(o.Start)
	summary.Add(o.Scenario.Name, o.Report.Results)
	record := &runrecord.RunRecord{Schema: runrecord.Schema, Meta: runrecord.NewMeta(Version(), Commit(), o.Start)}
	record.Scenarios = append(record.Scenarios, o.Record())
	record.Meta.Duration = o.Duration
	if err := writeSummary(filepath.Join(dir, "summary.json"), summary); err != nil {
		return err
	}
	if err := createFile(filepath.Join(dir, "run.json"), record.Write); err != nil {
		return err
	}
	if err := reports.WriteRunDir(dir); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// keyTTLCheck scans the Redis at addr for keys without a TTL.
func keyTTLCheck(ctx context.Context, addr string) (checker.Result, error) {
	client := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer client.Close()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keys, err := redistest.KeysWithoutTTL(sctx, client)
	if err != nil {
		return checker.Result{}, fmt.Errorf("scan keys for a TTL: %w", err)
	}
	res := checker.Result{Name: checkKeyTTL, Verdict: checker.Pass, Observed: float64(len(keys)), Bound: 0, Unit: "keys",
		Explanation: "every key left in Redis after the run has a TTL"}
	if len(keys) > 0 {
		slices.Sort(keys)
		res.Verdict = checker.Fail
		res.Explanation = fmt.Sprintf("%d keys left in Redis without a TTL, such as %s: they never expire", len(keys), keys[0])
	}
	return res, nil
}

// repeatReference runs every shipped scenario f.repeat times against the
// reference limiter and reports the false failures.
func (c *mutateCommand) repeatReference(ctx context.Context, f *mutateFlags) error {
	infos, err := scenarios.List()
	if err != nil {
		return err
	}
	type tally struct {
		failures int
		checks   []string
	}
	tallies := make([]tally, len(infos))
	couldNotRun := 0
	for i := range f.repeat {
		for j, info := range infos {
			sc, err := scenarios.Lookup(info.Name)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "mutate: reference %d/%d: %s\n", i+1, f.repeat, info.Name)
			results, err := c.runOnce(ctx, f, sc, filepath.Join(f.out, fmt.Sprintf("round-%d", i+1), info.Name), nil)
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted: %w", ctx.Err())
			}
			if err != nil {
				couldNotRun++
				fmt.Fprintf(c.stderr, "rlbench mutate: %s: %v\n", info.Name, err)
				continue
			}
			if names := failed(results); len(names) > 0 {
				tallies[j].failures++
				for _, n := range names {
					if !slices.Contains(tallies[j].checks, n) {
						tallies[j].checks = append(tallies[j].checks, n)
					}
				}
			}
		}
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRUNS\tFALSE FAILURES\tFAILED CHECKS")
	total := 0
	for j, info := range infos {
		t := tallies[j]
		total += t.failures
		checks := "-"
		if len(t.checks) > 0 {
			checks = strings.Join(t.checks, ", ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", info.Name, f.repeat, t.failures, checks)
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "\nFalse failures: %d in %d reference runs (%d scenarios × %d). Runs in %s.\n", total, f.repeat*len(infos), len(infos), f.repeat, f.out)
	switch {
	case couldNotRun > 0:
		return fmt.Errorf("%d runs could not complete (see above)", couldNotRun)
	case total > 0:
		return errChecksFailed
	}
	return nil
}
