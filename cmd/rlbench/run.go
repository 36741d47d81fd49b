//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/outdir"
	"github.com/rlbench/rlbench/harness/peers"
	"github.com/rlbench/rlbench/harness/progress"
	"github.com/rlbench/rlbench/harness/runner"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/traffic"
	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/reports"
	"github.com/rlbench/rlbench/scenarios"
)

// runCommand runs scenarios end to end and gates on their checks.
type runCommand struct{ stdout, stderr io.Writer }

// runFlags are run's flags.
type runFlags struct {
	out, provider, redisURL, binary, runID string
	claims                                 listFlag
	failOnSkip                             bool
	shard                                  shardFlag
}

func (f *runFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&f.out, "out", "rlbench-out", "write the outputs into `DIR`")
	fs.StringVar(&f.provider, "redis-provider", "", "run every scenario on a Redis from `PROVIDER` instead of its own: auto, process, docker, embedded or external")
	fs.StringVar(&f.redisURL, "redis-url", "", "use the Redis at `URL` with --redis-provider external")
	fs.StringVar(&f.binary, "binary", "", "run the instances from the rlbench executable at `PATH` (default this one)")
	fs.StringVar(&f.runID, "run-id", "", "name the generated identities with `ID` (eight hex digits, as run.json's run_id records it) "+
		"instead of a random id per scenario, to send an earlier run's identities again")
	fs.Var(&f.claims, "claim", "hold the route to the limit in `ROUTE=SPEC` (as in /api/items=gcra:9/1m,burst=9) instead of "+
		"the scenario's policies, or the keys of an identity group with GROUP=SPEC (free=gcra:600/1m,burst=100); "+
		"repeat for several limits. The instances still enforce the scenario's: this checks another promise")
	fs.Var(&f.shard, "shard", "fire shard `I/N` of a sharded run: shard I (from 0) of N, or with I alone of the scenario's shards.count; "+
		"every shard of the run takes the same --run-id (see Sharded runs above)")
	fs.BoolVar(&f.failOnSkip, "fail-on-skip", false, "make a skipped scenario (a peer limiter not installed) fail the run with exit code 3, for a CI gate that must run every scenario")
	return fs
}

var runHelp = help{
	synopsis: "rlbench run [flags] SCENARIO|DIR|NAME...",
	about: `Runs each scenario: provisions Redis, starts the sample API instances, fires
the traffic phases, records every request, checks the history against the
scenario's policies and writes, under --out:

  summary.json           every scenario's checks, skips and totals
                         (schema rlbench-summary/v1)
  run.json               what the run did (schema rlbench-run/v1)
  junit.xml              one test case per check, for CI systems
  report.html            the report, readable offline
  NAME/history.jsonl.gz  each scenario's recorded requests

With $GITHUB_STEP_SUMMARY set, a Markdown summary is appended to that file.
NAME is a shipped scenario (see 'rlbench list'); DIR runs every .yaml in it.
A scenario whose peer limiter is not installed (scenarios/peers/) is reported
as skipped, with how to install it, and counts as neither pass nor failure
unless --fail-on-skip is given. The last line counts the scenarios: "Verdict:
pass. 12 scenarios: 9 passed, 3 skipped."

Sharded runs: with --shard I/N the run fires shard I of N of each
scenario, so that N load generators (hosts) fire its traffic together,
every planned request exactly once. A request belongs to the shard of its
identity (identity index mod N); a request of an identity the scenario's
shards.spread names (the hot key, a group) to the shard of its place in
its phase (k mod N); the Retry-After probe to shard 0. Each shard sends
its requests at the times the whole run plans them, and its checks count
its own share. Every shard takes the same --run-id, so that all send the
same identities. A scenario with faults, or whose instances rlbench starts
without a Redis every shard reaches (--redis-provider external), cannot be
sharded.

A check of the harness itself (load-delivered, history-complete,
fault-injected, a latency check made invalid by a generator that fell behind)
that does not pass shows as ERROR: the harness could not make a valid test,
which says nothing of the limiter.`,
	footer: `Exit codes: 0 every check passed; 1 a check of the limiter failed or its
verdict is unknown; 2 invalid input or usage; 3 the harness could not make a
valid test (an ERROR check, a scenario that could not run, a skip with
--fail-on-skip) and no check of the limiter failed.`,
}

func (c *runCommand) Usage() string { return runHelp.text(new(runFlags).flagSet()) }

func (c *runCommand) Run(ctx context.Context, args []string) error {
	f := &runFlags{}
	fs := f.flagSet()
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	if fs.NArg() == 0 {
		return usagef("name at least one scenario file, directory or shipped scenario (rlbench list)")
	}
	provider := scenarios.Provider(f.provider)
	switch provider {
	case "", scenarios.ProviderAuto, scenarios.ProviderProcess, scenarios.ProviderDocker, scenarios.ProviderEmbedded:
	case scenarios.ProviderExternal:
		if f.redisURL == "" {
			return usagef("--redis-provider external needs --redis-url")
		}
	default:
		return usagef("--redis-provider %q: use auto, process, docker, embedded or external", f.provider)
	}
	runID, err := scenarios.ParseRunID(f.runID)
	if err != nil {
		return usagef("--run-id: %v", err)
	}
	if f.shard.s != nil && runID == "" {
		return usagef("--shard %s needs --run-id: the shards of one run send the same identities only under one run id; give every shard the same, such as --run-id %s", &f.shard, scenarios.NewRunID())
	}
	claimed, groupClaimed := map[string][]limiter.Limit{}, map[string][]limiter.Limit{}
	for _, claim := range f.claims {
		at, spec, ok := strings.Cut(claim, "=")
		if !ok || at == "" {
			return usagef("--claim %q: want ROUTE=SPEC or GROUP=SPEC, as in /api/items=gcra:9/1m,burst=9 or free=gcra:600/1m,burst=100", claim)
		}
		l, err := limiter.ParseLimit(spec)
		if err != nil {
			return usagef("--claim %q: %v", claim, err)
		}
		if strings.HasPrefix(at, "/") {
			claimed[at] = append(claimed[at], l)
		} else {
			groupClaimed[at] = append(groupClaimed[at], l)
		}
	}
	scs, err := scenarios.Load(fs.Args()...)
	if err != nil {
		return err
	}
	for route := range claimed {
		if !slices.ContainsFunc(scs, func(sc *scenarios.Scenario) bool {
			return slices.ContainsFunc(sc.Target.Routes, func(r scenarios.Route) bool { return r.Path == route && !r.Baseline() })
		}) {
			return usagef("--claim %s: no scenario of this run has a limited route %s", route, route)
		}
	}
	for group := range groupClaimed {
		if !slices.ContainsFunc(scs, func(sc *scenarios.Scenario) bool { return sc.Identities.GroupIndex(group) >= 0 }) {
			return usagef("--claim %s=...: no scenario of this run has an identity group %s (a route starts with /)", group, group)
		}
	}
	r := runner.New(runner.Options{
		OutDir: f.out, Binary: f.binary, Provider: provider, RedisURL: f.redisURL, Claims: claimed, GroupClaims: groupClaimed, RunID: runID,
		Shard: f.shard.s, Progress: c.stderr, Log: c.stderr, Interactive: progress.Interactive(c.stderr),
	})
	for _, sc := range scs {
		if _, err := r.Shard(sc); err != nil {
			return usagef("--shard %s: %v", &f.shard, err)
		}
	}
	lock, err := outdir.Acquire(f.out) // one run at a time writes into --out
	if err != nil {
		return err
	}
	defer lock.Release()
	start := time.Now()
	summary := checker.NewSummary(start)
	record := &runrecord.RunRecord{Schema: runrecord.Schema, Meta: runrecord.NewMeta(Version(), Commit(), start)}
	if cal, err := traffic.Calibrate(ctx, time.Second, 0); err != nil {
		fmt.Fprintf(c.stderr, "rlbench run: calibrating the load generator: %v\n", err)
	} else {
		record.Meta.Generator = &runrecord.GeneratorCeiling{Rate: cal.Rate, P50: cal.P50, P99: cal.P99}
		fmt.Fprintf(c.stderr, "load generator ceiling on this machine: %.0f req/s against a no-op handler (p50 %v, p99 %v)\n", cal.Rate, cal.P50, cal.P99)
	}
	failedToRun := 0
	for _, sc := range scs {
		o, err := r.Run(ctx, sc)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if missing := (*peers.NotInstalledError)(nil); errors.As(err, &missing) {
			// A peer limiter this machine lacks: skipped, neither passed nor
			// failed, unless --fail-on-skip.
			fmt.Fprintf(c.stdout, "%s: skipped: %v\n\n", sc.Name, missing)
			summary.AddSkipped(sc.Name, missing.Error())
			continue
		}
		if errors.Is(err, redistest.ErrNoFaketime) {
			// A drill that steps Redis's clock, on a machine without libfaketime.
			fmt.Fprintf(c.stdout, "%s: skipped: %v\n\n", sc.Name, err)
			continue
		}
		if err != nil {
			// The harness could not set the scenario up: its error, not the
			// limiter's failure.
			fmt.Fprintf(c.stderr, "rlbench run: %v\n", err)
			failedToRun++
			summary.Add(sc.Name, []checker.Result{checker.CouldNotRun(err)})
			record.Scenarios = append(record.Scenarios, runrecord.ScenarioRecord{Name: sc.Name, Description: sc.Description, Source: sc.Source, Seed: sc.Seed, Error: err.Error()})
			continue
		}
		summary.AddReport(sc.Name, o.Report)
		record.Scenarios = append(record.Scenarios, o.Record())
		if err := reports.WriteText(c.stdout, o.Report); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout)
	}
	record.Meta.Duration = time.Since(start)
	if err := reports.WriteRun(f.out, summary, record); err != nil {
		return err
	}
	if path := os.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		if err := reports.AppendMarkdown(path, summary); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "Verdict: %s. %s. Summary, JUnit and report in %s\n", summary.Status, reports.TotalsLine(summary.Totals), f.out)
	if summary.Status == checker.StatusError {
		fmt.Fprintln(c.stdout, reports.HarnessErrorNote)
	}
	return runError(summary, failedToRun, f.failOnSkip)
}

// runError is the error run returns for summary, which main maps to the
// exit code: a limiter's failed or unknown check (1) takes precedence over
// the harness's error (3), which scenarios that could not run and, with
// failOnSkip, skipped ones are too.
func runError(summary *checker.Summary, failedToRun int, failOnSkip bool) error {
	err := statusError(summary.Status)
	switch {
	case errors.Is(err, errChecksFailed):
		return err
	case failedToRun > 0:
		return fmt.Errorf("%w: %d of %s could not run (see above)", errHarness, failedToRun, checker.Count(summary.Totals.Scenarios, "scenarios"))
	case failOnSkip && summary.Totals.Skipped > 0:
		return fmt.Errorf("%w: %s skipped, and --fail-on-skip makes a skip fail the run", errHarness, checker.Count(summary.Totals.Skipped, "scenarios"))
	}
	return err
}
