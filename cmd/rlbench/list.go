package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

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
	rows := make([][2]string, len(infos))
	for i, in := range infos {
		rows[i] = [2]string{in.Name, in.Description}
	}
	_, err = io.WriteString(c.stdout, twoColumns([2]string{"NAME", "WHAT IT PROVES"}, rows, usageWidth))
	return err
}

// twoColumns lays out rows under head in two columns, the second wrapped so
// that no line is longer than width (but for a word longer than the
// column): the second column starts two spaces after the longest first
// one, at most at a third of width; a first column longer than that has
// the line to itself.
func twoColumns(head [2]string, rows [][2]string, width int) string {
	left := len(head[0])
	for _, r := range rows {
		left = max(left, len([]rune(r[0])))
	}
	col := min(left, width/3) + 2
	var b strings.Builder
	for _, r := range append([][2]string{head}, rows...) {
		lines := strings.Split(strings.TrimSuffix(wrapParagraph(r[1], width-col), "\n"), "\n")
		if n := len([]rune(r[0])); n+2 > col {
			b.WriteString(r[0] + "\n" + strings.Repeat(" ", col) + lines[0] + "\n")
		} else {
			b.WriteString(r[0] + strings.Repeat(" ", col-n) + lines[0] + "\n")
		}
		for _, l := range lines[1:] {
			b.WriteString(strings.Repeat(" ", col) + l + "\n")
		}
	}
	return b.String()
}
