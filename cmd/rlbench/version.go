package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// versionCommand prints the build's version, commit and Go version.
type versionCommand struct{ stdout io.Writer }

var versionHelp = help{
	synopsis: "rlbench version",
	about:    "Prints the version and commit rlbench was built from, and the Go version.",
}

func (c *versionCommand) Usage() string {
	return versionHelp.text(c.flagSet())
}

// flagSet is version's flag set: it has no flags of its own, only -h.
func (c *versionCommand) flagSet() *flag.FlagSet {
	return flag.NewFlagSet("version", flag.ContinueOnError)
}

func (c *versionCommand) Run(_ context.Context, args []string) error {
	fs := c.flagSet()
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.Usage())
		}
		return err
	}
	if fs.NArg() > 0 {
		return usagef("version takes no arguments")
	}
	fmt.Fprintf(c.stdout, "rlbench %s (commit %s, %s)\n", Version(), Commit(), runtime.Version())
	return nil
}

// Version is the module version the binary was built from, or "devel".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Commit is the VCS revision the binary was built from, with "+dirty" when
// the tree had changes, or "unknown".
func Commit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	return rev + dirty
}
