package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlbench/rlbench/reports"
)

// reportCommand renders the HTML report of a saved run directory again,
// from its summary.json, run.json and histories alone.
type reportCommand struct{ stdout io.Writer }

var reportHelp = help{
	synopsis: "rlbench report [flags] DIR",
	about: `Renders DIR/report.html again from a saved run directory (the --out of
'rlbench run'): summary.json, run.json and each scenario's history. The page
is self-contained: it loads nothing from anywhere, reads offline and prints.
The checks are not re-run; use 'rlbench check' for that.`,
	footer: `Exit codes: 0 the report was written, 2 invalid input or usage.`,
}

// reportFlags are report's flags.
type reportFlags struct{ out string }

func (f *reportFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.StringVar(&f.out, "out", "", "write the report to `FILE` instead of DIR/report.html; - for standard output")
	return fs
}

func (c *reportCommand) Usage() string { return reportHelp.text(new(reportFlags).flagSet()) }

func (c *reportCommand) Run(_ context.Context, args []string) error {
	flags := &reportFlags{}
	fs := flags.flagSet()
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	out := flags.out
	if fs.NArg() != 1 {
		return usagef("want exactly one run directory, got %d arguments", fs.NArg())
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("run directory: %w", err)
	} else if !st.IsDir() {
		return usagef("%s is not a directory", dir)
	}
	if err := unfinishedRun(dir); err != nil {
		return err
	}
	if out == "" {
		if err := reports.WriteRunDir(dir); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "wrote %s\n", filepath.Join(dir, reports.ReportFile))
		return nil
	}
	run, err := reports.LoadRun(dir)
	if err != nil {
		return err
	}
	if out == "-" {
		return reports.WriteHTML(c.stdout, run)
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := reports.WriteHTML(f, run); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	fmt.Fprintf(c.stdout, "wrote %s\n", out)
	return nil
}

// unfinishedRun returns a usage error when dir has no summary.json, the
// checks a report is made from, saying what dir holds instead and the
// command that checks it: a run.json without a summary is a run that was
// interrupted while checking or never checked; histories alone, a run
// interrupted before it finished. Nil when dir has a summary.json, and
// when it cannot tell (LoadRun then reports the error).
func unfinishedRun(dir string) error {
	summary := filepath.Join(dir, reports.SummaryFile)
	if _, err := os.Stat(summary); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, reports.RunFile)); err == nil {
		return usagef("%s has no %s: the run was interrupted before its checks or never checked; check what it recorded, saving the summary, then render the report:\n  rlbench check --summary %s %s\n  rlbench report %s",
			dir, reports.SummaryFile, summary, dir, dir)
	}
	hists, _ := filepath.Glob(filepath.Join(dir, "*", "history.jsonl.gz"))
	if len(hists) > 0 {
		return usagef("%s has no %s and no %s: the run was interrupted; check each history it left (the verdicts cover the records written before the interruption):\n  rlbench check %s",
			dir, reports.SummaryFile, reports.RunFile, strings.Join(hists, "\n  rlbench check "))
	}
	return usagef("%s holds no run (no %s, %s or NAME/history.jsonl.gz): give the --out directory of 'rlbench run'", dir, reports.SummaryFile, reports.RunFile)
}
