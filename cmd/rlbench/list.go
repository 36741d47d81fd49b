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

func (c *listCommand) Usage() string {
	return `Usage: rlbench list

Lists the scenarios shipped inside rlbench, which 'rlbench run NAME' runs from
any directory, with what each proves.
`
}

func (c *listCommand) Run(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
			return err
		}
		return usagef("%v", err)
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
