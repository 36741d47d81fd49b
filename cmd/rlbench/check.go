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
	"text/tabwriter"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// checkCommand re-checks a saved history (rlbench's, or vegeta's JSON
// results) against a policy, without contacting any target.
type checkCommand struct{ stdout io.Writer }

func (c *checkCommand) Usage() string {
	return `Usage: rlbench check [flags] HISTORY

Checks a recorded history against a rate-limit policy and prints one verdict
per check. HISTORY is an rlbench history (.jsonl or .jsonl.gz) or, with
--format vegeta, the output of 'vegeta encode --to json'.

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
