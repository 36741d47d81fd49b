package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// versionCommand prints the build's version, commit and Go version.
type versionCommand struct{ stdout io.Writer }

func (c *versionCommand) Usage() string { return "Usage: rlbench version\n" }

func (c *versionCommand) Run(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
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
