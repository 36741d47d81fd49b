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
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/outdir"
	"github.com/rlbench/rlbench/harness/peers"
	"github.com/rlbench/rlbench/harness/progress"
	"github.com/rlbench/rlbench/harness/runner"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/shardsync"
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
	start                                  startFlags
	shard                                  shardFlag
	local                                  localFlags
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
	f.start.register(fs)
	f.local.register(fs)
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
pass. 12 scenarios: 9 passed, 3 skipped." Scenario directories an earlier run
into the same --out left are kept as they are: one line names them, and so
does summary.json (stale_dirs), since its summary and report describe this
run alone.

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

--start-at and --barrier start the shards of a sharded run together: each
provisions its scenario, measures its offset to the limiter's clock (Redis
TIME), then waits for the start mapped onto its own clock and begins the
first phase then. A shard that reaches its start later than
--start-tolerance after it fails the scenario (exit code 3) rather than run
late. run.json records the start as agreed_start. A shard whose offset to the
limiter's clock is unknown before the traffic refuses to run: shards are
merged on that clock.

Local shards: --local-shards N runs each scenario's sharded path on this
machine. The run provisions Redis and starts the sample API instances as an
unsharded run does, then launches N 'rlbench run --shard I/N' processes
against them as an external target (the Redis as its redis.url, where they
measure their clock offset by TIME and meet at a --barrier), waits for them,
stops the target and checks the shards as one run ('rlbench check
SHARD_DIR...'): the scenario's verdicts, summary and report are the merged
run's, its shards' runs under --out/NAME/shards/shard-I. A scenario that
cannot be sharded (a drill's faults) runs unsharded, and its report says
why. --local-shard-skews and the other --local-shard- lists give each shard
its clock drill, as 0,300ms,-2s.

A check of the harness itself (load-delivered, history-complete,
fault-injected, a latency check made invalid by a generator that fell behind)
that does not pass shows as ERROR: the harness could not make a valid test,
which says nothing of the limiter.`,
	drills: drillFlags,
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
	for _, claims := range []map[string][]limiter.Limit{claimed, groupClaimed} {
		for at, limits := range claims {
			if j, err := limiter.CheckLeaseAlone(limits); err != nil {
				return usagef("--claim %s=%s: %v (each --claim of %s adds a limit to its one rule)", at, limits[j].Spec(), err, at)
			}
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
	start, clock, err := f.start.options(f.shard.s != nil, len(scs), fs)
	if err != nil {
		return err
	}
	local, target, err := f.local.options(f.shard.s != nil, f.claims, fs)
	if err != nil {
		return err
	}
	r := runner.New(runner.Options{
		OutDir: f.out, Binary: f.binary, Provider: provider, RedisURL: f.redisURL, Claims: claimed, GroupClaims: groupClaimed, RunID: runID,
		Shard: f.shard.s, Progress: c.stderr, Log: c.stderr, Interactive: progress.Interactive(c.stderr),
		Start: start, Clock: clock, Target: target,
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
	begun := time.Now()
	summary := checker.NewSummary(begun)
	record := &runrecord.RunRecord{Schema: runrecord.Schema, Meta: runrecord.NewMeta(Version(), Commit(), begun)}
	record.Meta.ClockDrill = clock.Drill()
	if cal, err := traffic.Calibrate(ctx, time.Second, 0); err != nil {
		fmt.Fprintf(c.stderr, "rlbench run: calibrating the load generator: %v\n", err)
	} else {
		record.Meta.Generator = &runrecord.GeneratorCeiling{Rate: cal.Rate, P50: cal.P50, P99: cal.P99}
		fmt.Fprintf(c.stderr, "load generator ceiling on this machine: %.0f req/s against a no-op handler (p50 %v, p99 %v)\n", cal.Rate, cal.P50, cal.P99)
	}
	failedToRun := 0
	for _, sc := range scs {
		var o *runner.Outcome
		var merged *checker.ShardedReport
		var unsharded error
		if local.Count > 0 {
			unsharded = r.LocalShardable(sc)
		}
		if local.Count > 0 && unsharded == nil {
			merged, err = r.RunLocalShards(ctx, sc, local)
		} else {
			o, err = r.Run(ctx, sc)
		}
		if ctx.Err() != nil {
			if ie := (*runner.InterruptedError)(nil); errors.As(err, &ie) && ie.Advice != "" {
				// What the local shards ran before the interrupt, and how to check it.
				return fmt.Errorf("interrupted: %w\n%s", ctx.Err(), ie.Advice)
			}
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
		var rep *checker.Report
		var rec runrecord.ScenarioRecord
		if merged != nil {
			rep, rec = merged.Report, merged.Record
		} else {
			rep, rec = o.Report, o.Record()
		}
		if unsharded != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("run unsharded, not over %s: %v", checker.Count(local.Count, "local shards"), unsharded))
		}
		summary.AddReport(sc.Name, rep)
		record.Scenarios = append(record.Scenarios, rec)
		if err := reports.WriteText(c.stdout, rep); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout)
	}
	record.Meta.Duration = time.Since(begun)
	ran := make([]string, len(record.Scenarios))
	for i, sc := range record.Scenarios {
		ran[i] = sc.Name
	}
	if stale, err := outdir.Stale(f.out, ran); err != nil {
		fmt.Fprintf(c.stderr, "rlbench run: looking for earlier runs' scenario directories: %v\n", err)
	} else if len(stale) > 0 {
		summary.StaleDirs = stale
		fmt.Fprintln(c.stderr, staleWarning(f.out, stale))
	}
	if f.failOnSkip {
		summary.FailSkips()
	}
	if err := reports.WriteRun(f.out, summary, record); err != nil {
		return err
	}
	if path := os.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		if err := reports.AppendMarkdown(path, summary); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "Verdict: %s. %s. Summary, JUnit and report in %s\n", summary.Status, reports.TotalsLine(summary.Totals), f.out)
	if note := reports.ErrorNote(summary); note != "" {
		fmt.Fprintln(c.stdout, note)
	}
	return runError(summary, failedToRun, f.failOnSkip)
}

// staleWarning is the one line run prints when --out holds the scenario
// directories stale of earlier runs, naming at most five of them.
func staleWarning(out string, stale []string) string {
	names := strings.Join(stale, ", ")
	if len(stale) > 5 {
		names = strings.Join(stale[:5], ", ") + fmt.Sprintf(" and %d more", len(stale)-5)
	}
	return fmt.Sprintf("rlbench run: %s also holds %s from an earlier run (%s), which this run's summary and report do not describe; "+
		"they are left as they are: move them aside, or give --out a new directory", out, checker.Count(len(stale), "scenario directories"), names)
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

// startFlags are run's flags for the start of the first phase, and for
// the clock's fiction in drills and tests.
type startFlags struct {
	at                                string
	tolerance, lead, timeout          time.Duration
	barrier                           bool
	skew, misreport, uncertaintyFloor time.Duration
}

// drillFlags are run's flags for drills and tests, listed apart in its usage.
var drillFlags = []string{"clock-skew", "clock-misreport", "clock-uncertainty-floor",
	"local-shard-skews", "local-shard-misreports", "local-shard-uncertainty-floors", "local-target"}

func (f *startFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.at, "start-at", "", "begin the first phase at `TIME`: RFC 3339 with fractional seconds on the limiter's clock "+
		"(2025-06-01T12:00:00.5Z; this host's when the offset to it is known only after the traffic), or, unsharded, +DURATION "+
		"after now on this host's clock (+30s); give every shard the same absolute TIME. One scenario only")
	fs.DurationVar(&f.tolerance, "start-tolerance", shardsync.DefaultTolerance, "fail a scenario whose first phase would begin more than `DURATION` after the start of --start-at or --barrier")
	fs.BoolVar(&f.barrier, "barrier", false, "meet the other shards (--shard I/N, the same --run-id) before each scenario in its Redis "+
		"(redis.url or --redis-url, shared by the shards) and begin together, --barrier-lead after the last arrives")
	fs.DurationVar(&f.lead, "barrier-lead", shardsync.DefaultLead, "begin `DURATION` after the last shard arrives at the barrier, on Redis's clock")
	fs.DurationVar(&f.timeout, "barrier-timeout", shardsync.DefaultTimeout, "fail a scenario whose shards have not all arrived at the barrier within `DURATION`")
	fs.DurationVar(&f.skew, "clock-skew", 0, "behave as if this host's wall clock ran `DURATION` ahead (negative: behind) in the histories' "+
		"start, the offset measurement and the wait for the start; a sound offset absorbs it")
	fs.DurationVar(&f.misreport, "clock-misreport", 0, "add `DURATION` to every recorded clock offset without widening its uncertainty: "+
		"a merged check of the shards may then fail falsely")
	fs.DurationVar(&f.uncertaintyFloor, "clock-uncertainty-floor", 0, "record every clock offset's uncertainty as at least `DURATION`, as a shard on a slow link would")
}

// options returns the runner's Start and HostClock for the flags, given
// whether --shard was given (which needs --run-id) and how many scenarios
// the run has; fs tells which flags were set. Errors are usage errors
// naming the flag.
func (f *startFlags) options(shard bool, scenarios int, fs *flag.FlagSet) (runner.Start, runner.HostClock, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	clock := runner.HostClock{Skew: f.skew, Misreport: f.misreport, UncertaintyFloor: f.uncertaintyFloor}
	s := runner.Start{Barrier: f.barrier, Lead: f.lead, Timeout: f.timeout, Tolerance: f.tolerance}
	switch {
	case f.uncertaintyFloor < 0:
		return s, clock, usagef("--clock-uncertainty-floor %v: want a duration of 0 or more", f.uncertaintyFloor)
	case f.tolerance <= 0:
		return s, clock, usagef("--start-tolerance %v: want a positive duration, as 50ms", f.tolerance)
	case f.lead <= 0:
		return s, clock, usagef("--barrier-lead %v: want a positive duration, as 2s", f.lead)
	case f.timeout <= 0:
		return s, clock, usagef("--barrier-timeout %v: want a positive duration, as 2m", f.timeout)
	case f.barrier && f.at != "":
		return s, clock, usagef("--barrier and --start-at each fix the start: give one")
	case f.barrier && !shard:
		return s, clock, usagef("--barrier: a barrier is where the shards of a sharded run meet: give each its --shard I/N")
	case !f.barrier && (set["barrier-lead"] || set["barrier-timeout"]):
		return s, clock, usagef("--barrier-lead and --barrier-timeout are for a start agreed at a barrier: add --barrier")
	case !f.barrier && f.at == "" && set["start-tolerance"]:
		return s, clock, usagef("--start-tolerance bounds the lateness of a start given by --start-at or --barrier: add one")
	case f.at != "" && scenarios > 1:
		return s, clock, usagef("--start-at fixes the start of one scenario, and this run has %d: name one, or use --barrier, which meets before each", scenarios)
	}
	if f.at != "" {
		var err error
		if s.At, s.OnHost, err = parseStartAt(f.at, clock.Now()); err != nil {
			return s, clock, usagef("--start-at %v", err)
		}
		if s.OnHost && shard {
			// Each shard would add the delay to its own launch, on its own
			// host's clock: hosts launched a second apart start a second apart.
			return s, clock, usagef("--start-at %s: each shard would read +DURATION from its own launch on its own host, and the shards start apart: "+
				"give every shard one absolute time, as --start-at %s, or meet at --barrier",
				f.at, s.At.Add(time.Second-1).Truncate(time.Second).UTC().Format(time.RFC3339))
		}
	}
	return s, clock, nil
}

// parseStartAt parses --start-at's TIME: an RFC 3339 time, or +DURATION
// after now (onHost: on this host's clock).
func parseStartAt(v string, now time.Time) (at time.Time, onHost bool, err error) {
	const want = "want an RFC 3339 time with fractional seconds, as 2025-06-01T12:00:00.5Z, or +DURATION after now, as +30s"
	if rest, ok := strings.CutPrefix(v, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d <= 0 {
			return time.Time{}, false, fmt.Errorf("%q: %s is not a positive duration: %s", v, rest, want)
		}
		return now.Add(d), true, nil
	}
	at, err = time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%q: %s", v, want)
	}
	return at, false, nil
}

// localFlags are run's flags for local shards: --local-shards, each
// shard's clock drill, and the target a shard of them is given.
type localFlags struct {
	count                     int
	skews, misreports, floors durationsFlag
	target                    string
}

func (f *localFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.count, "local-shards", 0, "run each scenario that can be sharded as `N` shards on this machine (2 or more), against "+
		"one target and Redis this run starts, and check them as one run (see Local shards above)")
	fs.Var(&f.skews, "local-shard-skews", "give local shard I the --clock-skew of item I of `LIST`, as 0,300ms,-2s")
	fs.Var(&f.misreports, "local-shard-misreports", "give local shard I the --clock-misreport of item I of `LIST`, as 0,0,5ms")
	fs.Var(&f.floors, "local-shard-uncertainty-floors", "give local shard I the --clock-uncertainty-floor of item I of `LIST`, as 0,0,50ms")
	fs.StringVar(&f.target, "local-target", "", "fire at the target the parent of --local-shards started, described in `FILE`; it passes this to its shards")
}

// options returns the runner's LocalShards and, for a shard of local
// shards, its target, given whether --shard was given and the --claim
// values every shard takes again; fs tells which flags were set. Errors
// are usage errors naming the flag.
func (f *localFlags) options(shard bool, claims []string, fs *flag.FlagSet) (runner.LocalShards, *runner.LocalTarget, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	ls := runner.LocalShards{Count: f.count, Skews: f.skews, Misreports: f.misreports, UncertaintyFloors: f.floors}
	for _, c := range claims {
		ls.Args = append(ls.Args, "--claim", c)
	}
	lists := set["local-shard-skews"] || set["local-shard-misreports"] || set["local-shard-uncertainty-floors"]
	switch {
	case set["local-shards"] && (f.count < 2 || f.count > history.MaxShards):
		return ls, nil, usagef("--local-shards %d: want 2 to %d shards", f.count, history.MaxShards)
	case f.count > 0 && shard:
		return ls, nil, usagef("--local-shards launches its own shards: drop --shard")
	case f.count > 0 && (set["start-at"] || set["barrier"] || set["clock-skew"] || set["clock-misreport"] || set["clock-uncertainty-floor"]):
		return ls, nil, usagef("--local-shards agrees its shards' start and gives their clocks: drop --start-at, --barrier and --clock-*; use the --local-shard- lists")
	case f.count == 0 && lists:
		return ls, nil, usagef("the --local-shard- lists give each local shard its clock drill: add --local-shards N")
	case len(f.skews) > f.count || len(f.misreports) > f.count || len(f.floors) > f.count:
		return ls, nil, usagef("a --local-shard- list has more items than --local-shards %d shards", f.count)
	case f.target != "" && !shard:
		return ls, nil, usagef("--local-target is the target of one shard of --local-shards: give its --shard I/N")
	}
	for _, fl := range []durationsFlag{f.floors} {
		for i, d := range fl {
			if d < 0 {
				return ls, nil, usagef("--local-shard-uncertainty-floors: item %d is %v: want 0 or more", i+1, d)
			}
		}
	}
	if f.target == "" {
		return ls, nil, nil
	}
	t, err := runner.ReadLocalTarget(f.target)
	if err != nil {
		return ls, nil, usagef("--local-target: %v", err)
	}
	return ls, t, nil
}
