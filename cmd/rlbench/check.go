package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
	synopsis: "rlbench check [flags] HISTORY",
	about: `Checks a recorded history against a rate-limit policy and prints one verdict
per check, without contacting any target. HISTORY is an rlbench history
(.jsonl or .jsonl.gz) or, with --format vegeta, the output of
'vegeta encode --to json'. A history inside a run directory
(DIR/NAME/history.jsonl.gz) is checked with the drill's fault windows from
DIR/run.json, as the run checked it.`,
	footer: `Exit codes: 0 every check passed, 1 a check failed or its verdict is
unknown, 2 invalid input or usage.`,
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
	fs.Float64Var(&f.tolerance, "tolerance", 0, "allow approximate algorithms a slack of `FRACTION` of each limit's capacity")
	fs.StringVar(&f.format, "format", "rlbench", "read the history as `FORMAT`: rlbench or vegeta")
	fs.StringVar(&f.keyHeader, "key-header", "", "vegeta: read the key from the response header `NAME` (default the request URL)")
	fs.StringVar(&f.instHdr, "instance-header", "", "vegeta: read the instance from the response header `NAME`")
	fs.Int64Var(&f.cost, "cost", 1, "vegeta: charge every request `N` units")
	fs.DurationVar(&f.offset, "clock-offset", 0, "the limiter's clock minus the harness's, as in 3ms; overrides the "+
		"history's header (window alignment)")
	fs.DurationVar(&f.uncertainty, "clock-uncertainty", 0, "the clock offset's uncertainty")
	fs.DurationVar(&f.resolution, "resolution", checker.DefaultResolution, "the limiter clock's resolution")
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
		return usagef("want exactly one HISTORY file, got %d arguments", fs.NArg())
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
		src, err = history.NewReader(f, path)
	case "vegeta":
		src, err = history.NewVegetaReader(f, path, history.VegetaConfig{KeyHeader: keyHeader, InstanceHeader: instHdr, Cost: cost})
	default:
		return usagef("--format %q: want rlbench or vegeta", format)
	}
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	if format == "rlbench" {
		if err := c.drillFromRun(path, src.Header().Scenario, &p); err != nil {
			return err
		}
	}
	if len(p.Rules) == 0 && len(src.Header().Policies) == 0 {
		return usagef("no policy: pass --policy or record the policies in the history's header")
	}
	rep, err := checker.Check(src, p)
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
		fmt.Fprintf(c.stdout, "Note: %v (an interrupted run?); the verdict covers those records only.\n", t.Truncated())
	}
	if summary != "" {
		s := checker.NewSummary(time.Now())
		s.Add(filepath.Base(path), rep.Results)
		if err := s.WriteFile(summary); err != nil {
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

// drillFromRun reads the fault windows of a drill's history from the run.json
// of the run directory holding it (DIR/NAME/history.jsonl.gz), so that the
// history is checked as the run checked it.
func (c *checkCommand) drillFromRun(historyPath, scenario string, p *checker.Policy) error {
	runPath := filepath.Join(filepath.Dir(filepath.Dir(historyPath)), "run.json")
	f, err := os.Open(runPath)
	if err != nil {
		return nil // not a run directory: no drill to apply
	}
	defer f.Close()
	rec, err := runrecord.Read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", runPath, err)
	}
	for _, sc := range rec.Scenarios {
		if sc.Name != scenario || sc.Drill == nil {
			continue
		}
		d := sc.Drill
		faults := &checker.Faults{Mode: checker.FailureMode(d.Mode), Instances: d.Instances, Timeout: d.Timeout, Slack: d.Slack, Recovery: d.Recovery}
		for _, w := range d.Windows {
			faults.Windows = append(faults.Windows, checker.FaultWindow{Kind: w.Kind, FromNs: w.FromNs, ToNs: w.ToNs, Unavailable: w.Unavailable, LosesState: w.LosesState, Instance: w.Instance})
		}
		p.Faults = faults
		if faults.Mode == checker.FailClosed {
			p.ExpectedStatuses = append(p.ExpectedStatuses, http.StatusServiceUnavailable)
		}
		fmt.Fprintf(c.stdout, "Checking %s as the drill it was: %d fault windows from %s.\n\n", historyPath, len(faults.Windows), runPath)
	}
	return nil
}
