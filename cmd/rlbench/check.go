package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter"
)

// checkCommand re-checks a saved history (rlbench's, or vegeta's JSON
// results) against a policy, without contacting any target.
type checkCommand struct{ stdout io.Writer }

func (c *checkCommand) Usage() string {
	return `Usage: rlbench check [flags] HISTORY
       rlbench check [--summary FILE] RUN_DIR

Checks a recorded history against a rate-limit policy and prints one verdict
per check. HISTORY is an rlbench history (.jsonl or .jsonl.gz) or, with
--format vegeta, the output of 'vegeta encode --to json'. A history in a run
directory (RUN_DIR/NAME/history.jsonl.gz) is checked with its scenario's
entry of RUN_DIR/run.json too: fault windows, the declared failure mode, the
load delivered, latency bounds, Retry-After probes and Redis key scans.

RUN_DIR, the --out of 'rlbench run', re-checks every scenario of the run
from its histories and run.json alone and prints the verdict tables 'rlbench
run' printed; it then says whether they agree with RUN_DIR/summary.json.

Flags:
  --policy SPEC           a limit in force, e.g. gcra:10/1s,burst=10 or
                          fixed_window:100/1m; repeat for multi-limit policies.
                          Default: the policies in the history's header.
  --route ROUTE           a route the --policy limits apply to (a trailing *
                          matches a prefix); repeat for several routes, which
                          then share the limits' budgets. Default: all routes.
  --tolerance F           slack for approximate algorithms, as a fraction of
                          each limit's capacity (default 0)
  --format rlbench|vegeta the history's format (default rlbench)
  --key-header NAME       vegeta: the response header holding the key
                          (default: the request URL)
  --instance-header NAME  vegeta: the response header naming the instance
  --cost N                vegeta: every request's cost (default 1)
  --clock-offset D        the limiter's clock minus the harness's, e.g. 3ms;
                          overrides the header (window alignment)
  --clock-uncertainty D   the offset's uncertainty (default 0)
  --resolution D          the limiter clock's resolution (default 1µs)
  --trust-decision-time   narrow each request to the decision time the
                          target reported (needs a known clock offset)
  --expect-status LIST    5xx statuses the policy expects, e.g. 503
  --summary FILE          also write summary.json (schema rlbench-summary/v1)

Exit codes: 0 every check passed, 1 a check failed or its verdict is
unknown, 2 invalid input or usage.
`
}

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func (c *checkCommand) Run(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		policies, routes                listFlag
		format, keyHeader, instHdr      string
		summary, expect                 string
		tolerance                       float64
		trustDecision                   bool
		cost                            int64
		offset, uncertainty, resolution time.Duration
	)
	fs.Var(&policies, "policy", "")
	fs.Var(&routes, "route", "")
	fs.Float64Var(&tolerance, "tolerance", 0, "")
	fs.StringVar(&format, "format", "rlbench", "")
	fs.StringVar(&keyHeader, "key-header", "", "")
	fs.StringVar(&instHdr, "instance-header", "", "")
	fs.Int64Var(&cost, "cost", 1, "")
	fs.DurationVar(&offset, "clock-offset", 0, "")
	fs.DurationVar(&uncertainty, "clock-uncertainty", 0, "")
	fs.DurationVar(&resolution, "resolution", checker.DefaultResolution, "")
	fs.BoolVar(&trustDecision, "trust-decision-time", false, "")
	fs.StringVar(&expect, "expect-status", "", "")
	fs.StringVar(&summary, "summary", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
			return err
		}
		return usagef("%v", err)
	}
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
		var limits []limiter.Limit
		for _, spec := range policies {
			l, err := limiter.ParseLimit(spec)
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
		src, err = history.NewReader(f, path)
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
	printReport(c.stdout, rep)
	if summary != "" {
		s := checker.NewSummary(time.Now())
		s.Add(filepath.Base(path), rep.Results)
		if err := writeSummary(summary, s); err != nil {
			return err
		}
	}
	switch rep.Verdict() {
	case checker.Fail:
		return errChecksFailed
	case checker.Unknown:
		return fmt.Errorf("%w: requests of unknown outcome decide a verdict", errChecksFailed)
	}
	return nil
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
			results = []checker.Result{{Name: "run", Verdict: checker.Fail, Unit: "scenario", Explanation: sc.Error}}
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
			printReport(c.stdout, rep)
			fmt.Fprintln(c.stdout)
			results = rep.Results
		}
		s.Add(sc.Name, results)
		if saved != nil {
			diffs = append(diffs, compareSaved(saved, sc.Name, results)...)
		}
	}
	fmt.Fprintf(c.stdout, "Verdict: %s. %d scenarios re-checked from %s.\n", s.Verdict, len(rec.Scenarios), dir)
	switch {
	case saved == nil:
	case len(diffs) == 0:
		fmt.Fprintf(c.stdout, "Every check agrees with %s.\n", filepath.Join(dir, "summary.json"))
	default:
		fmt.Fprintf(c.stdout, "%d checks differ from %s (a run by another rlbench version, or a changed file):\n  %s\n", len(diffs), filepath.Join(dir, "summary.json"), strings.Join(diffs, "\n  "))
	}
	if summaryPath != "" {
		if err := writeSummary(summaryPath, s); err != nil {
			return err
		}
	}
	switch {
	case couldNotRun > 0:
		return fmt.Errorf("%d of %d scenarios could not run (recorded in run.json)", couldNotRun, len(rec.Scenarios))
	case s.Verdict == checker.Fail:
		return errChecksFailed
	case s.Verdict == checker.Unknown:
		return fmt.Errorf("%w: requests of unknown outcome decide a verdict", errChecksFailed)
	}
	return nil
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

func writeSummary(path string, s *checker.Summary) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if err := s.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// printReport writes the verdicts as an aligned table, then the totals.
func printReport(w io.Writer, rep *checker.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSCOPE\tVERDICT\tOBSERVED\tBOUND\tUNIT\tEXPLANATION")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Scope, strings.ToUpper(string(r.Verdict)),
			strconv.FormatFloat(r.Observed, 'f', -1, 64), strconv.FormatFloat(r.Bound, 'g', 6, 64), r.Unit, r.Explanation)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d records, %d keys: %d admitted, %d rejected, %d unknown (%d transport errors), %d unmatched by the policy. Verdict: %s\n",
		rep.Records, rep.Keys, rep.Admitted, rep.Rejected, rep.Unknown, rep.TransportErrors, rep.Unmatched, strings.ToUpper(string(rep.Verdict())))
}
