package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rlbench/rlbench/reports"
)

// reportCommand renders the HTML report of a saved run directory again,
// from its summary.json, run.json and histories alone.
type reportCommand struct{ stdout io.Writer }

func (c *reportCommand) Usage() string {
	return `Usage: rlbench report [flags] DIR

Renders DIR/report.html again from a saved run directory (the --out of
'rlbench run'): summary.json, run.json and each scenario's history. The page
is self-contained: it loads nothing from anywhere, reads offline and prints.
The checks are not re-run; use 'rlbench check' for that.

Flags:
  --out FILE   where to write the report (default DIR/report.html; - for
               standard output)

Exit codes: 0 the report was written, 2 invalid input or usage.
`
}

func (c *reportCommand) Run(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var out string
	fs.StringVar(&out, "out", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
			return err
		}
		return usagef("%v", err)
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one run directory, got %d arguments", fs.NArg())
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("run directory: %w", err)
	} else if !st.IsDir() {
		return usagef("%s is not a directory", dir)
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
