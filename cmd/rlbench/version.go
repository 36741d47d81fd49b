package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
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
	fmt.Fprintln(c.stdout, versionLine(buildInfo(), runtime.Version()))
	return nil
}

// buildInfo is the binary's build information, or nil when it has none.
func buildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// versionLine is what `rlbench version` prints: "rlbench v1.2.3 (commit
// 4f2c1e7…, go1.26.0)", without the commit when the build recorded none
// (go install …@v1.2.3 builds from the module cache, without VCS data).
func versionLine(bi *debug.BuildInfo, goVersion string) string {
	if c := commitOf(bi); c != "unknown" {
		return fmt.Sprintf("rlbench %s (commit %s, %s)", versionOf(bi), c, goVersion)
	}
	return fmt.Sprintf("rlbench %s (%s)", versionOf(bi), goVersion)
}

// Version is the module version the binary was built from (v1.2.3 for
// `go install github.com/rlbench/rlbench/cmd/rlbench@v1.2.3`, a
// pseudo-version for a build between releases), or "devel" when the build
// recorded none ("(devel)").
func Version() string { return versionOf(buildInfo()) }

func versionOf(bi *debug.BuildInfo) string {
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Commit is the VCS revision the binary was built from, with "+dirty" when
// the tree had changes; without VCS data, the revision a pseudo-version
// names (v0.0.0-20260101120000-1b8651ffbfe0); else "unknown".
func Commit() string { return commitOf(buildInfo()) }

func commitOf(bi *debug.BuildInfo) string {
	if bi == nil {
		return "unknown"
	}
	rev, dirty := "", ""
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
	if rev != "" {
		return rev + dirty
	}
	if m := pseudoRevision.FindStringSubmatch(bi.Main.Version); m != nil {
		return m[1]
	}
	return "unknown"
}

// pseudoRevision matches a Go pseudo-version's revision: its last twelve
// hex digits after a fourteen-digit timestamp.
var pseudoRevision = regexp.MustCompile(`[-.]\d{14}-([0-9a-f]{12})(?:\+[0-9A-Za-z.]+)?$`)
