package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/runner"
	"github.com/rlbench/rlbench/scenarios"
)

// validateCommand parses and validates scenarios without running them.
type validateCommand struct{ stdout io.Writer }

var validateHelp = help{
	synopsis: "rlbench validate SCENARIO|DIR|NAME...",
	about: `Parses and validates scenario files strictly, as 'rlbench run' would, and
runs nothing. An error names the file, the line and the field at fault.`,
	footer: `Exit codes: 0 valid, 2 invalid.`,
}

func (c *validateCommand) Usage() string {
	return validateHelp.text(c.flagSet())
}

// flagSet is validate's flag set: it has no flags of its own, only -h.
func (c *validateCommand) flagSet() *flag.FlagSet {
	return flag.NewFlagSet("validate", flag.ContinueOnError)
}

func (c *validateCommand) Run(_ context.Context, args []string) error {
	fs := c.flagSet()
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	if fs.NArg() == 0 {
		return usagef("name at least one scenario file, directory or shipped scenario")
	}
	scs, err := scenarios.Load(fs.Args()...)
	if err != nil {
		return err
	}
	for _, sc := range scs {
		plan := runner.PlannedRequests(sc, nil)
		fmt.Fprintf(c.stdout, "%s: valid (%s, %s, %s %s)\n", sc.Source, sc.Name, checker.Count(len(sc.Phases), "phases"),
			plan, checker.UnitFor(float64(plan.Requests), "requests planned"))
	}
	return nil
}
