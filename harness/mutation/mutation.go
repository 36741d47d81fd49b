//go:build unix

// Package mutation is rlbench's mutation suite, the test of the checker
// itself (`rlbench mutate`). Each faulty limiter variant of sampleapi/faulty
// runs the scenario aimed at it (scenarios/mutation) twice: against the
// reference limiter, which must pass every check, and against the variant,
// which must fail the check meant to catch it. Run gives the mutation score;
// RepeatReference runs the shipped scenarios again and again against the
// reference limiter and counts the false failures.
//
// The functions run real processes (Redis, sample API instances) one
// scenario at a time; they are safe to call from one goroutine at a time.
package mutation

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/runner"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/reports"
	"github.com/rlbench/rlbench/sampleapi/faulty"
	"github.com/rlbench/rlbench/scenarios"
	mutationscenarios "github.com/rlbench/rlbench/scenarios/mutation"
)

// DefaultOut is the output directory of `rlbench mutate` unless told otherwise.
const DefaultOut = "rlbench-mutation"

// Mutant is a faulty limiter variant and the check that must catch it.
type Mutant struct {
	// Variant is the sampleapi/faulty variant (rlbench serve --faulty).
	Variant string
	// Check is the name of the check whose failure catches it.
	Check string
}

// mutants are the suite, in faulty's order.
var mutants = []Mutant{
	{Variant: faulty.PrivateBucket, Check: checker.CheckBudget},
	{Variant: faulty.NonAtomic, Check: checker.CheckBudget},
	{Variant: faulty.ClientClock, Check: checker.CheckBudget},
	{Variant: faulty.FixedAsSliding, Check: checker.CheckBudget},
	{Variant: faulty.NoTTL, Check: checker.CheckKeyTTL},
	{Variant: faulty.RejectedConsumes, Check: checker.CheckFalseRejections},
	{Variant: faulty.RetryAfterShort, Check: checker.CheckRetryAfter},
	{Variant: faulty.HalfToken, Check: checker.CheckBudget},
	{Variant: faulty.NoTimeout, Check: checker.CheckFaultLatency},
	{Variant: faulty.LeftmostXFF, Check: checker.CheckBudget},
	{Variant: faulty.TierChargedOnReject, Check: checker.CheckFalseRejections},
	{Variant: faulty.TTLWrongUnit, Check: checker.CheckBudget},
	{Variant: faulty.RetryAfterMillis, Check: checker.CheckRetryAfter},
	{Variant: faulty.RetryAfterZero, Check: checker.CheckRetryAfter},
	{Variant: faulty.TimeRewind, Check: checker.CheckBudget},
	{Variant: faulty.PooledOver, Check: checker.CheckBudget},
	{Variant: faulty.SlidingCounterAsFixed, Check: checker.CheckBudget},
	{Variant: faulty.QueueNoDelay, Check: checker.CheckQueueDelay},
	{Variant: faulty.LRUKeys, Check: checker.CheckBudget},
	{Variant: faulty.ResetEpoch, Check: checker.CheckRateLimitFields},
	{Variant: faulty.NoMonotonicTime, Check: checker.CheckFalseRejections},
	{Variant: faulty.NoFailover, Check: checker.CheckBudget},
	{Variant: faulty.UnboundedConnections, Check: checker.CheckConnections},
	{Variant: faulty.NaiveLease, Check: checker.CheckBudget},
}

// Mutants returns the whole suite, one Mutant per faulty variant, in
// faulty.Names' order.
func Mutants() []Mutant { return slices.Clone(mutants) }

// Lookup returns the Mutant of variant, and false when the suite has none.
func Lookup(variant string) (Mutant, bool) {
	i := slices.IndexFunc(mutants, func(m Mutant) bool { return m.Variant == variant })
	if i < 0 {
		return Mutant{}, false
	}
	return mutants[i], true
}

// Options configure Run and RepeatReference.
type Options struct {
	// Out is the directory the runs' outputs go under, one run directory
	// (summary.json, run.json, junit.xml, report.html, history) per run;
	// created when missing. Empty: the current directory.
	Out string
	// Binary is the rlbench executable the instances run; empty for the
	// running one.
	Binary string
	// Version and Commit name the build in each run's run.json.
	Version, Commit string
	// Progress receives a line as each run starts and one for each run that
	// could not complete; nil discards them.
	Progress io.Writer
	// Log receives the runner's messages; nil discards them.
	Log io.Writer
	// Shards, when 2 or more, runs every variant whose scenario can be
	// sharded (runner.Runner.LocalShardable) as that many local shards,
	// reference and variant alike (runner.Runner.RunLocalShards); a
	// scenario that cannot (a drill's faults) runs unsharded, and its Row
	// says so.
	Shards int
}

func (o *Options) progressf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// Row is one variant's outcome: the results of the reference run and of
// the variant's run, or why each could not complete.
type Row struct {
	Mutant Mutant
	// Scenario is the name of the scenario run (scenarios/mutation/NAME.yaml).
	Scenario                 string
	Reference, Variant       []checker.Result
	ReferenceErr, VariantErr error
	// Shards is the number of local shards the scenario ran as, 0 when it
	// ran unsharded; Unsharded says why, when Options.Shards asked for
	// shards.
	Shards    int
	Unsharded string
}

// ReferencePassed reports whether the reference run completed and passed
// every check.
func (r *Row) ReferencePassed() bool {
	return r.ReferenceErr == nil && len(failed(r.Reference)) == 0
}

// Caught reports whether the variant's run completed and failed the check
// meant to catch it. An unknown verdict is not a catch.
func (r *Row) Caught() bool {
	return r.VariantErr == nil && slices.ContainsFunc(r.Variant, func(res checker.Result) bool {
		return res.Name == r.Mutant.Check && res.Verdict == checker.Fail
	})
}

// Score is the outcome of the suite.
type Score struct {
	// Rows holds one Row per mutant run, in the order run.
	Rows []*Row
	// Out is where the runs' outputs are.
	Out string
}

// Caught counts the variants caught by their check.
func (s *Score) Caught() int {
	n := 0
	for _, r := range s.Rows {
		if r.Caught() {
			n++
		}
	}
	return n
}

// ReferenceFailures counts the reference runs that did not pass, those
// that could not complete included.
func (s *Score) ReferenceFailures() int {
	n := 0
	for _, r := range s.Rows {
		if !r.ReferencePassed() {
			n++
		}
	}
	return n
}

// Incomplete counts the runs, reference or variant, that could not complete.
func (s *Score) Incomplete() int {
	n := 0
	for _, r := range s.Rows {
		for _, err := range []error{r.ReferenceErr, r.VariantErr} {
			if err != nil {
				n++
			}
		}
	}
	return n
}

// Passed reports whether every run completed, every variant was caught by
// its check and every reference run passed.
func (s *Score) Passed() bool {
	return s.Incomplete() == 0 && s.Caught() == len(s.Rows) && s.ReferenceFailures() == 0
}

// Run runs the suite for ms (Mutants() for all): each mutant's scenario
// against the reference limiter, then against the variant, under
// opts.Out/VARIANT/reference and opts.Out/VARIANT/faulty. A run that could
// not complete is recorded in its Row, not returned. Errors: a mutant
// without a scenario (wrapping scenarios.ErrNotFound), an output directory
// that cannot be created, and ctx's end ("interrupted").
func Run(ctx context.Context, opts Options, ms []Mutant) (*Score, error) {
	s := &Score{Out: opts.Out}
	for _, m := range ms {
		sc, err := mutationscenarios.Scenario(m.Variant)
		if err != nil {
			return nil, err
		}
		r := &Row{Mutant: m, Scenario: sc.Name}
		if opts.Shards >= 2 {
			if err := runner.New(runner.Options{}).LocalShardable(sc); err != nil {
				r.Unsharded = err.Error()
			} else {
				r.Shards = opts.Shards
			}
		}
		s.Rows = append(s.Rows, r)
		opts.progressf("mutate: %s: reference limiter", m.Variant)
		r.Reference, r.ReferenceErr = runValid(ctx, &opts, sc, filepath.Join(opts.Out, m.Variant, "reference"), "", r.Shards, nil)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		opts.progressf("mutate: %s: faulty variant", m.Variant)
		r.Variant, r.VariantErr = runValid(ctx, &opts, sc, filepath.Join(opts.Out, m.Variant, "faulty"), m.Variant, r.Shards, nil)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		for _, err := range []error{r.ReferenceErr, r.VariantErr} {
			if err != nil {
				opts.progressf("mutate: %s: could not complete: %v", m.Variant, err)
			}
		}
	}
	return s, nil
}

// WriteText writes the suite's table (one row per variant: its scenario,
// the intended check, the reference and variant verdicts, whether the
// intended check caught the variant, and every check that failed the
// variant), a line per failed reference run, the mutation score and, when
// every run completed, the verdict. The only errors are w's.
func (s *Score) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	sharded := slices.ContainsFunc(s.Rows, func(r *Row) bool { return r.Shards > 0 || r.Unsharded != "" })
	head := "VARIANT\tSCENARIO\tINTENDED CHECK\tREFERENCE\tVARIANT RUN\tCAUGHT\tCAUGHT BY (CHECKS THE VARIANT FAILED)"
	if sharded {
		head = "VARIANT\tSCENARIO\tSHARDS\tINTENDED CHECK\tREFERENCE\tVARIANT RUN\tCAUGHT\tCAUGHT BY (CHECKS THE VARIANT FAILED)"
	}
	fmt.Fprintln(tw, head)
	for _, r := range s.Rows {
		caught := "NO"
		if r.Caught() {
			caught = "yes"
		}
		scenario := r.Scenario
		if scenario == "" {
			scenario = r.Mutant.Variant
		}
		if sharded {
			scenario += "\t" + r.shardsCell()
		}
		fmt.Fprintf(tw, "%s\tmutation/%s\t%s\t%s\t%s\t%s\t%s\n", r.Mutant.Variant, scenario, r.Mutant.Check,
			verdictCell(r.Reference, r.ReferenceErr), verdictCell(r.Variant, r.VariantErr), caught, failedCell(r.Variant, r.VariantErr))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range s.Rows {
		if r.ReferenceErr == nil && !r.ReferencePassed() {
			fmt.Fprintf(&b, "reference run of %s failed: %s\n", r.Mutant.Variant, strings.Join(failed(r.Reference), ", "))
		}
	}
	caught, refFailed := s.Caught(), s.ReferenceFailures()
	fmt.Fprintf(&b, "\nMutation score: %d/%d variants caught by their intended check; %d reference runs failed.\n", caught, len(s.Rows), refFailed)
	if sharded {
		n, count := 0, 0
		for _, r := range s.Rows {
			if r.Shards > 0 {
				n, count = n+1, r.Shards
			}
		}
		fmt.Fprintf(&b, "%d of %d variants ran sharded over %d local shards, reference and variant alike; the rest unsharded, as marked.\n", n, len(s.Rows), count)
	}
	fmt.Fprintf(&b, "Runs in %s. For false alarms, run every shipped scenario 20 times against the reference:\n"+
		"  rlbench mutate --repeat-reference 20   (or: make mutation MUTATION_ARGS='--repeat-reference 20')\n", s.Out)
	switch {
	case s.Incomplete() > 0:
		fmt.Fprintf(&b, "%d runs could not complete.\n", s.Incomplete())
	case caught < len(s.Rows) || refFailed > 0:
		fmt.Fprintf(&b, "Verdict: fail: %d of %d variants not caught, %d reference runs failed.\n", len(s.Rows)-caught, len(s.Rows), refFailed)
	default:
		b.WriteString("Verdict: pass: every variant caught by its check, every reference run passed.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shardsCell is the row's SHARDS cell: the local shards it ran as, or
// "unsharded" and why in a word.
func (r *Row) shardsCell() string {
	switch {
	case r.Shards > 0:
		return fmt.Sprint(r.Shards)
	case strings.Contains(r.Unsharded, "faults:"):
		return "unsharded (faults)"
	case r.Unsharded != "":
		return "unsharded"
	}
	return "-"
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

// attempts is how often a run is made before its harness error (a
// generator that fell behind on a busy machine, a fault that was not
// injected) is taken as the outcome: such a run judged no limiter.
const attempts = 3

// runValid is runOnce, made again while the run is the harness's error
// rather than a verdict on the limiter (checker.ClassHarness results that
// did not pass, and no limiter check failed but the known ones, the checks
// a peer is known to fail), at most attempts times; the last attempt's
// outcome stands. Each attempt writes under its own dir.
func runValid(ctx context.Context, opts *Options, sc *scenarios.Scenario, dir, variant string, shards int, known []string) ([]checker.Result, error) {
	for i := 1; ; i++ {
		d := dir
		if i > 1 {
			d = fmt.Sprintf("%s-attempt-%d", dir, i)
		}
		results, err := runOnce(ctx, opts, sc, d, variant, shards)
		if err != nil || i == attempts || !harnessError(results, known) || ctx.Err() != nil {
			return results, err
		}
		opts.progressf("mutate: %s: the harness could not make a valid test (%s); running it again", sc.Name, strings.Join(failed(results), ", "))
	}
}

// harnessError reports whether results hold a harness check that did not
// pass and no limiter check that failed, but those named in known: a peer's
// known finding fails in every run, so it neither proves the run valid nor
// tells a harness error from a false failure.
func harnessError(results []checker.Result, known []string) bool {
	harness := false
	for _, r := range results {
		switch {
		case r.Verdict == checker.Pass:
		case r.Whose() == checker.ClassHarness:
			harness = true
		case r.Verdict == checker.Fail && !slices.Contains(known, r.Name):
			return false
		}
	}
	return harness
}

// runOnce runs sc on instances of the faulty limiter variant (the reference
// when variant is empty), its output under dir, and returns its results. A
// scenario without faults runs on a Redis the suite starts, which the runner
// scans after the traffic for keys without a TTL (the checker's key-ttl
// check reads the scan from the run record). With shards (2 or more) the
// scenario runs as that many local shards, checked as one run, and the
// scan of the suite's Redis follows the last shard.
func runOnce(ctx context.Context, opts *Options, sc *scenarios.Scenario, dir, variant string, shards int) ([]checker.Result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	ropts := runner.Options{OutDir: dir, Binary: opts.Binary, Faulty: variant, Log: opts.Log}
	var own *redistest.Server
	if len(sc.Faults) == 0 && sc.Redis.Provider != scenarios.ProviderNone && len(sc.Target.External) == 0 {
		var err error
		if own, err = redistest.Start(ctx, redistest.Options{}); err != nil {
			return nil, err
		}
		defer own.Stop()
		ropts.Provider, ropts.RedisURL, ropts.ScanKeys = scenarios.ProviderExternal, own.URL(), true
	}
	if shards >= 2 {
		rep, err := runner.New(ropts).RunLocalShards(ctx, sc, runner.LocalShards{Count: shards})
		if err != nil {
			return nil, err
		}
		summary := checker.NewSummary(rep.Record.Start)
		summary.AddReport(sc.Name, rep.Report)
		record := &runrecord.RunRecord{Schema: runrecord.Schema, Meta: runrecord.NewMeta(opts.Version, opts.Commit, rep.Record.Start)}
		record.Scenarios = append(record.Scenarios, rep.Record)
		record.Meta.Duration = rep.Record.Duration
		return rep.Results, reports.WriteRun(dir, summary, record)
	}
	o, err := runner.New(ropts).Run(ctx, sc)
	if err != nil {
		return nil, err
	}
	summary := checker.NewSummary(o.Start)
	summary.Add(o.Scenario.Name, o.Report.Results)
	record := &runrecord.RunRecord{Schema: runrecord.Schema, Meta: runrecord.NewMeta(opts.Version, opts.Commit, o.Start)}
	record.Scenarios = append(record.Scenarios, o.Record())
	record.Meta.Duration = o.Duration
	return o.Report.Results, reports.WriteRun(dir, summary, record)
}
