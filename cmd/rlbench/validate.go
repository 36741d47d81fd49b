package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/rlbench/rlbench/scenarios"
)

// validateCommand parses and validates scenarios without running them.
type validateCommand struct{ stdout io.Writer }

func (c *validateCommand) Usage() string {
	return `Usage: rlbench validate SCENARIO|DIR|NAME...

Parses and validates scenario files strictly, as 'rlbench run' would, and
runs nothing. An error names the file, the line and the field at fault.
Exit codes: 0 valid, 2 invalid.
`
}

func (c *validateCommand) Run(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
			return err
		}
		return usagef("%v", err)
	}
	if fs.NArg() == 0 {
		return usagef("name at least one scenario file, directory or shipped scenario")
	}
	scs, err := scenarios.Load(fs.Args()...)
	if err != nil {
		return err
	}
	for _, sc := range scs {
		fmt.Fprintf(c.stdout, "%s: valid (%s, %d phases, %d planned requests)\n", sc.Source, sc.Name, len(sc.Phases), planned(sc))
	}
	return nil
}

func planned(sc *scenarios.Scenario) int {
	n := 0
	for _, ph := range sc.Phases {
		n += ph.PlannedRequests()
	}
	return n
}
