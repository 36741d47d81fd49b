package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/rlbench/rlbench/scenarios"
)

// listCommand lists the shipped scenarios.
type listCommand struct{ stdout io.Writer }

var listHelp = help{
	synopsis: "rlbench list",
	about: `Lists the scenarios shipped inside rlbench, which 'rlbench run NAME' runs from
any directory, with what each proves.`,
}

func (c *listCommand) Usage() string { return listHelp.text(c.flagSet()) }

// flagSet is list's flag set: it has no flags of its own, only -h.
func (c *listCommand) flagSet() *flag.FlagSet { return flag.NewFlagSet("list", flag.ContinueOnError) }

func (c *listCommand) Run(_ context.Context, args []string) error {
	fs := c.flagSet()
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	if fs.NArg() > 0 {
		return usagef("list takes no arguments")
	}
	infos, err := scenarios.List()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHAT IT PROVES")
	for _, in := range infos {
		fmt.Fprintf(tw, "%s\t%s\n", in.Name, in.Description)
	}
	return tw.Flush()
}
