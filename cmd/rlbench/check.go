package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/reports"
)

// checkCommand re-checks a saved history (rlbench's, or vegeta's JSON
// results) against a policy, without contacting any target.
type checkCommand struct{ stdout io.Writer }

var checkHelp = help{
	synopsis: "rlbench check [flags] HISTORY | rlbench check [--summary FILE] RUN_DIR\n" +
		"       rlbench check [--out DIR] [--allow-missing-shards] SHARD_DIR...\n" +
		"       rlbench check [--out DIR] [--allow-missing-shards] SHARDS_ROOT",
	about: `Checks a recorded history against a rate-limit policy and prints one verdict
per check, without contacting any target. HISTORY is an rlbench history
(.jsonl or .jsonl.gz) or, with --format vegeta, the output of
'vegeta encode --to json'. A history in a run directory
(RUN_DIR/NAME/history.jsonl.gz) is checked with its scenario's entry of
RUN_DIR/run.json too: fault windows, the declared failure mode, the load
delivered, latency bounds, Retry-After probes and Redis key scans. RUN_DIR,
the --out of 'rlbench run', re-checks every scenario of the run from its
histories and run.json alone (only --summary applies), prints the verdict
tables 'rlbench run' printed, and says whether they agree with
RUN_DIR/summary.json.

Memory: a history is checked on every core from a compact form of about 40
bytes a record, held in memory up to 256 MiB (some 6 to 7 million records);
a larger one goes to a temporary file in $TMPDIR, removed when the check
ends or is killed: a 100-million-record history needs about 4 GB there. Set
TMPDIR to a directory with room. The partitions under check take up to 256
MiB more: a check's process stays within about 600 MiB however large the
history (10 million records: 380–510 MiB; 100 million: 600 MiB).

Sharded runs: several SHARD_DIRs, the run directories of the shards of one
run ('rlbench run --shard I/N --run-id ID'; a shard's history,
SHARD_DIR/NAME/history.jsonl.gz, stands for its SHARD_DIR), or one SHARDS_ROOT whose
subdirectories they are (as an Indexed Job leaves them on a shared volume),
are checked as one run. Their histories are merged onto the limiter's clock,
each request placed by its shard's clock offset and widened by that offset's
uncertainty, and the checks of the history (budget, false rejections,
headers, status, faults) run on the merged history; the checks of the run
itself (load-delivered, history-complete, latency, probes, faults injected)
run on each shard's own records and run.json, one row per shard ("shard
1/3"). Each shard's clock offset and load generator ceiling are noted below
the table. Every shard must be present, agree on scenario, run id and
policies, and know its clock offset. --out writes the merged run as
'rlbench run' writes a run: summary.json, junit.xml, report.html, run.json
and NAME/history.jsonl.gz (the merged history); 'rlbench check DIR' on it
checks the shards again from where they were.`,
	footer: `Exit codes: 0 every check passed; 1 a check of the limiter failed or its
verdict is unknown; 2 invalid input or usage; 3 only checks of the harness
(ERROR) did not pass, or a scenario of RUN_DIR could not run.`,
}

func (c *checkCommand) Usage() string { return checkHelp.text(new(checkFlags).flagSet()) }

// checkFlags are check's flags.
type checkFlags struct {
	policies, routes                listFlag
	format, keyHeader, instHdr      string
	summary, expect, out            string
	allowMissing                    bool
	tolerance                       float64
	trustDecision                   bool
	cost                            int64
	offset, uncertainty, resolution time.Duration
}

func (f *checkFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.Var(&f.policies, "policy", "hold the history to the limit `SPEC`, as in gcra:10/1s,burst=10 or fixed_window:100/1m; "+
		"repeat for a multi-limit policy (default the policies in the history's header)")
	fs.Var(&f.routes, "route", "apply the --policy limits to `ROUTE` (a trailing * matches a prefix); repeat for "+
		"several routes, which then share the limits' budgets (default all routes)")
	floatVar(fs, &f.tolerance, "tolerance", 0, 0, 1, "a fraction from 0 to 1, as in 0.05",
		"allow approximate algorithms a slack of `FRACTION` (0 to 1) of each limit's capacity")
	fs.StringVar(&f.format, "format", "rlbench", "read the history as `FORMAT`: rlbench or vegeta")
	fs.StringVar(&f.keyHeader, "key-header", "", "vegeta: read the key from the response header `NAME` (default the request URL)")
	fs.StringVar(&f.instHdr, "instance-header", "", "vegeta: read the instance from the response header `NAME`")
	fs.Int64Var(&f.cost, "cost", 1, "vegeta: charge every request `N` units")
	fs.DurationVar(&f.offset, "clock-offset", 0, "the limiter's clock minus the harness's, as in 3ms; overrides the "+
		"history's header (window alignment)")
	fs.DurationVar(&f.uncertainty, "clock-uncertainty", 0, "the clock offset's uncertainty")
	fs.DurationVar(&f.resolution, "resolution", 0, "the limiter clock's resolution, as in 1ms for a limiter reading "+
		"milliseconds (default the history header's clock_resolution_ns, else 1µs)")
	fs.BoolVar(&f.trustDecision, "trust-decision-time", false, "narrow each request to the decision time the target "+
		"reported (needs a known clock offset)")
	fs.StringVar(&f.expect, "expect-status", "", "expect the 5xx statuses in `LIST`, comma-separated, as in 503 or 502,503")
	fs.StringVar(&f.summary, "summary", "", "also write summary.json (schema rlbench-summary/v1) to `FILE`")
	fs.StringVar(&f.out, "out", "", "shards: write the merged run (summary.json, junit.xml, report.html, run.json, "+
		"NAME/history.jsonl.gz) into `DIR`")
	fs.BoolVar(&f.allowMissing, "allow-missing-shards", false, "shards: check a partial set of a run's shards; "+
		"the verdicts then cover the shards present only, and say so")
	return fs
}

func (c *checkCommand) Run(_ context.Context, args []string) error {
	flags := &checkFlags{}
	fs := flags.flagSet()
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	var (
		policies, routes                = flags.policies, flags.routes
		format, keyHeader, instHdr      = flags.format, flags.keyHeader, flags.instHdr
		summary, expect                 = flags.summary, flags.expect
		tolerance                       = flags.tolerance
		trustDecision                   = flags.trustDecision
		cost                            = flags.cost
		offset, uncertainty, resolution = flags.offset, flags.uncertainty, flags.resolution
	)
	if fs.NArg() == 0 {
		return usagef("want a HISTORY file, a run directory, or the run directories of a run's shards")
	}
	shardDirs, err := shardDirsOf(fs.Args())
	if err != nil {
		return err
	}
	var set []string
	fs.Visit(func(f *flag.Flag) { set = append(set, f.Name) })
	onlyFlags := func(what string, allowed ...string) error {
		var other []string
		for _, name := range set {
			if !slices.Contains(allowed, name) {
				other = append(other, "--"+name)
			}
		}
		if len(other) > 0 {
			return usagef("%s: %s", strings.Join(other, ", "), what)
		}
		return nil
	}
	if shardDirs != nil {
		if err := onlyFlags("the shards of a run are checked as they were run; check one shard's history with other flags", "summary", "out", "allow-missing-shards"); err != nil {
			return err
		}
		return c.checkShards(shardDirs, flags)
	}
	if st, err := os.Stat(fs.Arg(0)); err == nil && st.IsDir() {
		if err := onlyFlags("a run directory is re-checked as it was run; check one of its histories (RUN_DIR/NAME/history.jsonl.gz) with other flags", "summary"); err != nil {
			return err
		}
		return c.checkRunDir(fs.Arg(0), summary)
	}
	if err := onlyFlags("--out and --allow-missing-shards apply to the shards of a sharded run", slices.DeleteFunc(slices.Clone(set), func(n string) bool { return n == "out" || n == "allow-missing-shards" })...); err != nil {
		return err
	}
	if cost < 1 {
		return usagef("--cost %d: want a whole number >= 1", cost)
	}
	if uncertainty < 0 {
		return usagef("--clock-uncertainty %v: want 0 or more, as in 2ms", uncertainty)
	}
	if resolution < 0 {
		return usagef("--resolution %v: want 0 or more, as in 1ms", resolution)
	}
	p := checker.Policy{Resolution: resolution, ClockUncertainty: uncertainty, TrustDecisionTime: trustDecision}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "clock-offset" {
			p.ClockOffset = &offset
		}
	})
	if len(routes) > 0 && len(policies) == 0 {
		return usagef("--route needs --policy")
	}
	if len(policies) > 0 {
		var limits []checker.Limit
		for _, spec := range policies {
			l, err := checker.ParseLimit(spec)
			if err != nil {
				return usagef("--policy: %v", err)
			}
			limits = append(limits, l)
		}
		if j, err := checker.LeaseAlone(limits); err != nil {
			return usagef("--policy %s: %v (each --policy flag adds a limit to one rule)", policies[j], err)
		}
		if len(routes) == 0 {
			routes = listFlag{""}
		}
		for _, route := range routes {
			p.Rules = append(p.Rules, checker.Rule{Route: route, Limits: limits, Tolerance: tolerance})
		}
	}
	for _, s := range strings.FieldsFunc(expect, func(r rune) bool { return r == ',' || r == ' ' }) {
		code, err := strconv.Atoi(s)
		if err != nil || code < 100 || code > 999 {
			return usagef("--expect-status: %q is not a status code", s)
		}
		p.ExpectedStatuses = append(p.ExpectedStatuses, code)
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	var src history.Source
	switch format {
	case "rlbench":
		var r *history.Reader
		if r, err = history.NewReader(f, path); err == nil {
			r.ReadAhead(runtime.GOMAXPROCS(0)) // decoding JSON is most of reading
			defer r.Close()
			src = r
		}
	case "vegeta":
		src, err = history.NewVegetaReader(f, path, history.VegetaConfig{KeyHeader: keyHeader, InstanceHeader: instHdr, Cost: cost})
	default:
		return usagef("--format %q: want rlbench or vegeta", format)
	}
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	var rec *runrecord.ScenarioRecord
	if format == "rlbench" {
		if rec, err = c.recordBeside(path, src.Header().Scenario); err != nil {
			return err
		}
	}
	if len(p.Rules) == 0 && len(src.Header().Policies) == 0 {
		return usagef("no policy: pass --policy or record the policies in the history's header")
	}
	rep, err := checker.CheckRun(src, rec, p)
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if rep.Records > 0 && rep.Unmatched == rep.Records {
		return usagef("none of the %d records matches the policy's routes", rep.Records)
	}
	if err := reports.WriteText(c.stdout, rep); err != nil {
		return err
	}
	if t, ok := src.(interface{ Truncated() error }); ok && t.Truncated() != nil {
		fmt.Fprintf(c.stdout, "Note: %v; the verdict covers the records before it only (an interrupted run?).\n", t.Truncated())
	}
	if summary != "" {
		s := checker.NewSummary(time.Now())
		s.AddReport(filepath.Base(path), rep)
		if err := s.WriteFile(summary); err != nil {
			return err
		}
	}
	return statusError(rep.Status())
}

// recordBeside returns the scenario's entry of the run.json of the run
// directory holding the history (DIR/NAME/history.jsonl.gz), so that the
// history is checked as the run checked it; nil when there is none.
func (c *checkCommand) recordBeside(historyPath, scenario string) (*runrecord.ScenarioRecord, error) {
	runPath := filepath.Join(filepath.Dir(filepath.Dir(historyPath)), "run.json")
	f, err := os.Open(runPath)
	if err != nil {
		return nil, nil // not a run directory: the history alone
	}
	defer f.Close()
	rec, err := runrecord.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", runPath, err)
	}
	for i := range rec.Scenarios {
		if sc := &rec.Scenarios[i]; sc.Name == scenario && sc.Error == "" {
			fmt.Fprintf(c.stdout, "Checking %s with its scenario's record in %s.\n\n", historyPath, runPath)
			return sc, nil
		}
	}
	return nil, nil
}

// checkRunDir re-checks every scenario of the run directory dir from its
// histories and run.json, prints each verdict table as `rlbench run` did,
// and compares them with dir/summary.json when there is one.
func (c *checkCommand) checkRunDir(dir, summaryPath string) error {
	runPath := filepath.Join(dir, "run.json")
	f, err := os.Open(runPath)
	if errors.Is(err, os.ErrNotExist) {
		return usagef("%s has no run.json: re-check one of its histories, rlbench check %s", dir, filepath.Join(dir, "NAME", "history.jsonl.gz"))
	}
	if err != nil {
		return fmt.Errorf("open run record: %w", err)
	}
	rec, err := runrecord.Read(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", runPath, err)
	}
	saved, err := readSavedSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		return err
	}
	s := checker.NewSummary(time.Now())
	couldNotRun := 0
	var diffs []string
	for i := range rec.Scenarios {
		sc := &rec.Scenarios[i]
		var results []checker.Result
		if sc.Error != "" {
			// As `rlbench run` recorded it: a scenario that could not run fails.
			fmt.Fprintf(c.stdout, "[%s] could not run: %s\n\n", sc.Name, sc.Error)
			results = []checker.Result{checker.CouldNotRun(errors.New(sc.Error))}
			s.Add(sc.Name, results)
			couldNotRun++
		} else if len(sc.Shards) > 0 {
			rep, err := c.recheckMerged(dir, sc)
			if err != nil {
				return fmt.Errorf("scenario %s: %w", sc.Name, err)
			}
			results = rep.Results
			s.AddReport(sc.Name, rep)
		} else {
			rep, err := checker.CheckScenario(dir, sc)
			if err != nil {
				return fmt.Errorf("scenario %s: %w", sc.Name, err)
			}
			fmt.Fprintf(c.stdout, "[%s] re-checked from %s and run.json\n", sc.Name, sc.History)
			if sc.Shard != nil && sc.Shard.Count > 1 {
				fmt.Fprintf(c.stdout, "Note: this is shard %s of run %s: its verdicts cover its own requests only; check the run's %d shard directories together (rlbench check SHARD_DIR... or the directory holding them)\n", sc.Shard, sc.RunID, sc.Shard.Count)
			}
			if sc.Checks == nil {
				fmt.Fprintf(c.stdout, "run.json predates the recorded check bounds: %s, %s and %s are not re-checked\n", checker.CheckLoadDelivered, checker.CheckMaxLatency, checker.CheckOverhead)
			}
			if err := reports.WriteText(c.stdout, rep); err != nil {
				return err
			}
			fmt.Fprintln(c.stdout)
			results = rep.Results
			s.AddReport(sc.Name, rep)
		}
		if saved != nil {
			diffs = append(diffs, compareSaved(saved, sc.Name, results)...)
		}
	}
	fmt.Fprintf(c.stdout, "Verdict: %s. %s (re-checked from %s).\n", s.Status, reports.TotalsLine(s.Totals), dir)
	switch {
	case saved == nil:
	case len(diffs) == 0:
		fmt.Fprintf(c.stdout, "Every check agrees with %s.\n", filepath.Join(dir, "summary.json"))
	default:
		verb := "differ"
		if len(diffs) == 1 {
			verb = "differs"
		}
		fmt.Fprintf(c.stdout, "%s %s from %s (a run by another rlbench version, or a changed file):\n  %s\n", checker.Count(len(diffs), "checks"), verb, filepath.Join(dir, "summary.json"), strings.Join(diffs, "\n  "))
	}
	if summaryPath != "" {
		if err := s.WriteFile(summaryPath); err != nil {
			return err
		}
	}
	err = statusError(s.Status)
	if couldNotRun > 0 && !errors.Is(err, errChecksFailed) {
		return fmt.Errorf("%w: %d of %s could not run (recorded in run.json)", errHarness, couldNotRun, checker.Count(len(rec.Scenarios), "scenarios"))
	}
	return err
}

// recheckMerged checks again, from its shards' run directories, a scenario
// of a run merged from shards (`rlbench check --out`, `rlbench run
// --local-shards`) in the run directory dir, and prints its verdict table.
// A shard directory recorded relative is relative to dir.
func (c *checkCommand) recheckMerged(dir string, sc *runrecord.ScenarioRecord) (*checker.Report, error) {
	dirs := make([]string, len(sc.Shards))
	for i, sh := range sc.Shards {
		dirs[i] = sh.Dir
		if !filepath.IsAbs(sh.Dir) {
			dirs[i] = filepath.Join(dir, sh.Dir)
		}
	}
	scs, err := checker.LoadShards(dirs)
	if err != nil {
		return nil, fmt.Errorf("a merged run is checked again from its shards: %w", err)
	}
	i := slices.IndexFunc(scs, func(s checker.ShardedScenario) bool { return s.Name == sc.Name })
	if i < 0 {
		return nil, fmt.Errorf("the shards in %s no longer hold it", strings.Join(dirs, ", "))
	}
	partial := len(sc.Shards) < sc.Shards[0].Shard.Count
	rep, err := checker.CheckShards(scs[i].Shards, checker.ShardOptions{AllowMissing: partial, KeyScan: sc.KeyScan})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c.stdout, "[%s] re-checked from its %s: %s\n", sc.Name, checker.Count(len(dirs), "shards"), strings.Join(dirs, ", "))
	if err := reports.WriteText(c.stdout, rep.Report); err != nil {
		return nil, err
	}
	fmt.Fprintln(c.stdout)
	return rep.Report, nil
}

// readSavedSummary reads the summary.json at path; nil when there is none.
func readSavedSummary(path string) (*checker.Summary, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open summary: %w", err)
	}
	defer f.Close()
	s, err := checker.ReadSummary(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// compareSaved lists how results differ from the saved summary's entry for
// scenario name.
func compareSaved(saved *checker.Summary, name string, results []checker.Result) []string {
	for _, sc := range saved.Scenarios {
		if sc.Name == name {
			diffs := checker.CompareResults(results, sc.Checks)
			for i, d := range diffs {
				diffs[i] = name + ": " + d
			}
			return diffs
		}
	}
	return []string{name + ": not in summary.json"}
}

// shardDirsOf returns the run directories of a sharded run's shards that
// args name: several directories, or one directory without a run.json
// whose subdirectories hold run.json files (a SHARDS_ROOT; the merged run
// `check --out` wrote there is left out). Nil when args name a single
// history or run directory. Paths are made absolute, so that a merged
// run's record finds them again from anywhere.
func shardDirsOf(args []string) ([]string, error) {
	var dirs []string
	switch {
	case len(args) > 1:
		for _, a := range args {
			st, err := os.Stat(a)
			if err == nil && !st.IsDir() {
				// A shard's history (SHARD_DIR/NAME/history.jsonl.gz)
				// stands for the run directory that holds it.
				if run := filepath.Dir(filepath.Dir(a)); fileExists(filepath.Join(run, reports.RunFile)) {
					dirs = append(dirs, run)
					continue
				}
			}
			if err != nil || !st.IsDir() {
				return nil, usagef("%s is neither a shard's run directory nor a history in one (DIR/NAME/history.jsonl.gz beside DIR/run.json): several arguments are the shards of one run", a)
			}
			dirs = append(dirs, a)
		}
	default:
		root := args[0]
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			return nil, nil
		}
		if _, err := os.Stat(filepath.Join(root, reports.RunFile)); err == nil {
			return nil, nil
		}
		entries, err := os.ReadDir(root)
		if err != nil {
			return nil, fmt.Errorf("read shards: %w", err)
		}
		for _, e := range entries {
			dir := filepath.Join(root, e.Name())
			if rec, err := readRunRecord(dir); e.IsDir() && err == nil && rec != nil && !merged(rec) {
				dirs = append(dirs, dir)
			}
		}
		if len(dirs) == 0 {
			return nil, nil
		}
	}
	for i, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("shard directory %s: %w", d, err)
		}
		dirs[i] = abs
	}
	return dirs, nil
}

// readRunRecord reads dir/run.json; nil without an error when there is none.
func readRunRecord(dir string) (*runrecord.RunRecord, error) {
	path := filepath.Join(dir, reports.RunFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open run record: %w", err)
	}
	defer f.Close()
	rec, err := runrecord.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// merged reports whether rec is the record of a run merged from shards
// (`rlbench check --out`).
func merged(rec *runrecord.RunRecord) bool {
	return len(rec.Scenarios) > 0 && slices.ContainsFunc(rec.Scenarios, func(sc runrecord.ScenarioRecord) bool { return len(sc.Shards) > 0 })
}

// checkShards checks the shards in dirs as one run, scenario by scenario,
// prints each verdict table, and with --out writes the merged run there.
func (c *checkCommand) checkShards(dirs []string, flags *checkFlags) error {
	scs, err := checker.LoadShards(dirs)
	if err != nil {
		return err
	}
	if len(scs) == 0 {
		return usagef("the run records in %s hold no scenario", strings.Join(dirs, ", "))
	}
	if flags.out != "" {
		if err := checkMergedOut(flags.out, dirs); err != nil {
			return err
		}
	}
	s := checker.NewSummary(time.Now())
	record := &runrecord.RunRecord{Schema: runrecord.Schema}
	var metas []runrecord.Meta
	for _, d := range dirs {
		for _, sc := range scs {
			if i := slices.IndexFunc(sc.Shards, func(r checker.ShardRun) bool { return r.Dir == d }); i >= 0 {
				metas = append(metas, sc.Shards[i].Meta)
				break
			}
		}
	}
	record.Meta = runrecord.MergeMeta(metas)
	couldNotRun := 0
	for _, sc := range scs {
		if i := slices.IndexFunc(sc.Shards, func(r checker.ShardRun) bool { return r.Record.Error != "" }); i >= 0 {
			// As `rlbench run` recorded it: a scenario that could not run fails.
			sh := sc.Shards[i]
			why := fmt.Sprintf("%s could not run in %s: %s", shardName(sh), sh.Dir, sh.Record.Error)
			fmt.Fprintf(c.stdout, "[%s] %s\n\n", sc.Name, why)
			if flags.out != "" {
				// What the merged run keeps names the shard from where it is.
				why = fmt.Sprintf("%s could not run in %s: %s", shardName(sh), reports.RelPath(flags.out, sh.Dir), sh.Record.Error)
			}
			s.Add(sc.Name, []checker.Result{checker.CouldNotRun(errors.New(why))})
			record.Scenarios = append(record.Scenarios, runrecord.ScenarioRecord{Name: sc.Name, Error: why})
			couldNotRun++
			continue
		}
		rep, err := c.checkShardedScenario(sc, flags.out, flags.allowMissing)
		if err != nil {
			return err
		}
		s.AddReport(sc.Name, rep.Report)
		record.Scenarios = append(record.Scenarios, rep.Record)
	}
	fmt.Fprintf(c.stdout, "Verdict: %s. %s (%s checked as one run).\n", s.Status, reports.TotalsLine(s.Totals), checker.Count(len(dirs), "shard directories"))
	if flags.out != "" {
		if err := reports.WriteRun(flags.out, s, record); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Summary, JUnit, report and run.json of the merged run in %s\n", flags.out)
	}
	if flags.summary != "" {
		if err := s.WriteFile(flags.summary); err != nil {
			return err
		}
	}
	if s.Status == checker.StatusError {
		fmt.Fprintln(c.stdout, reports.HarnessErrorNote)
	}
	err = statusError(s.Status)
	if couldNotRun > 0 && !errors.Is(err, errChecksFailed) {
		return fmt.Errorf("%w: %d of %s could not run (recorded in run.json)", errHarness, couldNotRun, checker.Count(len(scs), "scenarios"))
	}
	return err
}

// checkShardedScenario checks one scenario's shards as one run and prints
// its verdict table; with out set, the merged history goes to
// out/NAME/history.jsonl.gz and the merged record names it.
func (c *checkCommand) checkShardedScenario(sc checker.ShardedScenario, out string, allowMissing bool) (*checker.ShardedReport, error) {
	opts := checker.ShardOptions{AllowMissing: allowMissing}
	var rel string
	var f *os.File
	if out != "" {
		rel = filepath.Join(sc.Name, "history.jsonl.gz")
		if err := os.MkdirAll(filepath.Join(out, sc.Name), 0o755); err != nil {
			return nil, fmt.Errorf("write the merged history: %w", err)
		}
		var err error
		if f, err = os.Create(filepath.Join(out, rel)); err != nil {
			return nil, fmt.Errorf("write the merged history: %w", err)
		}
		defer f.Close()
		opts.History = f
	}
	rep, err := checker.CheckShards(sc.Shards, opts)
	var missing *history.MissingShardsError
	switch {
	case errors.As(err, &missing):
		return nil, fmt.Errorf("scenario %s: %w; give every shard's run directory, or check the shards present with --allow-missing-shards", sc.Name, err)
	case err != nil:
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("write the merged history: %w", err)
		}
	}
	rep.Record.History = rel
	fmt.Fprintf(c.stdout, "[%s] %s of run %s merged onto the limiter's clock\n", sc.Name, checker.Count(len(rep.Record.Shards), "shards"), rep.Header.RunID)
	if err := reports.WriteText(c.stdout, rep.Report); err != nil {
		return nil, err
	}
	fmt.Fprintln(c.stdout)
	return rep, nil
}

// shardName names a shard's run for messages: "shard 1/3", or its
// directory's scenario when the record names no shard.
func shardName(sh checker.ShardRun) string {
	if s := sh.Record.Shard; s != nil {
		return "shard " + s.String()
	}
	return "the shard"
}

// checkMergedOut refuses an --out that would overwrite a shard or a run
// other than a merged one.
func checkMergedOut(out string, dirs []string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	if slices.Contains(dirs, abs) {
		return usagef("--out %s is a shard's run directory: write the merged run elsewhere", out)
	}
	for _, d := range dirs {
		if d, err := filepath.Abs(d); err == nil && filepath.Dir(d) == abs {
			return usagef("--out %s holds the shards' run directories (%s): a merged run written there would make it a run directory, no longer a directory of shards; write it into a directory of its own, such as %s", out, filepath.Base(d), filepath.Join(out, "report"))
		}
	}
	rec, err := readRunRecord(out)
	if err != nil {
		return err
	}
	if rec != nil && !merged(rec) {
		return usagef("--out %s holds a run (run.json) that is not a merged one: write the merged run elsewhere", out)
	}
	return os.MkdirAll(out, 0o755)
}

// fileExists reports whether path names an existing file or directory.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
