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
	synopsis: "rlbench check [flags] HISTORY | rlbench check [--summary FILE] RUN_DIR",
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
RUN_DIR/summary.json.`,
	footer: `Exit codes: 0 every check passed; 1 a check of the limiter failed or its
verdict is unknown; 2 invalid input or usage; 3 only checks of the harness
(ERROR) did not pass, or a scenario of RUN_DIR could not run.`,
}

func (c *checkCommand) Usage() string { return checkHelp.text(new(checkFlags).flagSet()) }

// checkFlags are check's flags.
type checkFlags struct {
	policies, routes                listFlag
	format, keyHeader, instHdr      string
	summary, expect                 string
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
	if fs.NArg() != 1 {
		return usagef("want exactly one HISTORY file or run directory, got %d arguments", fs.NArg())
	}
	if st, err := os.Stat(fs.Arg(0)); err == nil && st.IsDir() {
		var other []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "summary" {
				other = append(other, "--"+f.Name)
			}
		})
		if len(other) > 0 {
			return usagef("%s: a run directory is re-checked as it was run; check one of its histories (RUN_DIR/NAME/history.jsonl.gz) with other flags", strings.Join(other, ", "))
		}
		return c.checkRunDir(fs.Arg(0), summary)
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
		} else {
			rep, err := checker.CheckScenario(dir, sc)
			if err != nil {
				return fmt.Errorf("scenario %s: %w", sc.Name, err)
			}
			fmt.Fprintf(c.stdout, "[%s] re-checked from %s and run.json\n", sc.Name, sc.History)
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
