// Command rlbench proves that an API rate limiter keeps its promise under
// load and faults. See README.md for the subcommands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/scenarios/nearest"
)

// command is one subcommand: Run parses args itself (flag.ContinueOnError) and
// returns errors as values; main alone maps them to exit codes.
type command interface {
	Run(ctx context.Context, args []string) error
	Usage() string
}

// commands lists the subcommands by name.
var commands = map[string]func() command{
	"version":  func() command { return &versionCommand{stdout: os.Stdout} },
	"check":    func() command { return &checkCommand{stdout: os.Stdout} },
	"serve":    func() command { return &serveCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"run":      func() command { return &runCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"list":     func() command { return &listCommand{stdout: os.Stdout} },
	"validate": func() command { return &validateCommand{stdout: os.Stdout} },
	"report":   func() command { return &reportCommand{stdout: os.Stdout} },
	"mutate":   func() command { return &mutateCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"doctor":   func() command { return &doctorCommand{stdout: os.Stdout} },
	"init":     func() command { return &initCommand{stdout: os.Stdout} },
	"k8s":      func() command { return &k8sCommand{stdout: os.Stdout} },
}

// summaries are the commands' one-line descriptions, for the usage text.
var summaries = map[string]string{
	"check":    "check a recorded history (rlbench's or vegeta's) against a policy",
	"doctor":   "check a Redis that a limiter will keep its state in",
	"init":     "write a commented scenario for your own API from a few flags",
	"k8s":      "print the Kubernetes manifests of a run split into shards",
	"list":     "list the shipped scenarios and what each proves",
	"mutate":   "run the faulty limiter variants and print the mutation score",
	"report":   "render a saved run's report.html again",
	"run":      "run scenarios end to end and gate on their checks",
	"serve":    "run one instance of the sample API",
	"validate": "parse and validate scenario files without running them",
	"version":  "print the version, commit and Go version",
}

// Exit codes, as the command line contract in DESIGN.md and the README state.
const (
	exitOK          = 0
	exitCheckFailed = 1
	exitInvalid     = 2
	// exitHarnessError: the harness could not make a valid test (a
	// generator that fell behind, a fault never injected, a scenario that
	// could not run, a skip under --fail-on-skip), and no check of the
	// limiter failed or is unknown.
	exitHarnessError = 3
)

// errChecksFailed is returned by commands whose checks ran and did not all
// pass: a check of the limiter failed or is unknown.
var errChecksFailed = errors.New("one or more checks failed")

// errHarness is returned by commands whose limiter checks all passed but
// whose harness could not make a valid test.
var errHarness = errors.New("the harness could not make a valid test")

// statusError is the error a command returns for a run or re-check of
// status s, which main maps to its exit code: errChecksFailed for fail and
// unknown, errHarness for error, nil for pass.
func statusError(s checker.Status) error {
	switch s {
	case checker.StatusFail:
		return errChecksFailed
	case checker.StatusUnknown:
		return fmt.Errorf("%w: requests of unknown outcome decide a verdict", errChecksFailed)
	case checker.StatusError:
		return fmt.Errorf("%w (the ERROR checks above); no limiter check failed", errHarness)
	}
	return nil
}

// usageError is bad command-line input: main prints it on one line, naming
// the flag or argument and the fix, points at the command's -h, and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage())
		return exitInvalid
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return printHelp(args[1:], stderr)
	}
	newCmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "rlbench: unknown command %q%s\nrun 'rlbench help' for the commands\n", args[0], didYouMean(args[0], commandNames()))
		return exitInvalid
	}
	cmd := newCmd()
	err := cmd.Run(ctx, args[1:])
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errChecksFailed):
		fmt.Fprintf(stderr, "rlbench %s: %v\n", args[0], err)
		return exitCheckFailed
	case errors.Is(err, errHarness):
		fmt.Fprintf(stderr, "rlbench %s: %v\n", args[0], err)
		return exitHarnessError
	case errors.As(err, &ue):
		// One line and a pointer to the help, as go and git do: a full
		// usage would bury the line that says what to fix.
		fmt.Fprintf(stderr, "rlbench %s: %v\nrun 'rlbench %s -h' for help\n", args[0], err, args[0])
		return exitInvalid
	default:
		fmt.Fprintf(stderr, "rlbench %s: %v\n", args[0], err)
		return exitInvalid
	}
}

// printHelp prints the usage of rlbench, or of the command args names ("rlbench
// help run"), on w.
func printHelp(args []string, w io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(w, mainUsage())
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(w, "rlbench help: name one command, not %d\nrun 'rlbench help' for the commands\n", len(args))
		return exitInvalid
	}
	newCmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(w, "rlbench help: unknown command %q%s\nrun 'rlbench help' for the commands\n", args[0], didYouMean(args[0], commandNames()))
		return exitInvalid
	}
	fmt.Fprint(w, newCmd().Usage())
	return exitOK
}

// commandNames returns the subcommands' names, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// didYouMean returns "; did you mean X?" for the word of valid nearest to s,
// or "" when none is near enough to be a likely misspelling.
func didYouMean(s string, valid []string) string {
	if w := nearest.Word(s, valid); w != "" {
		return fmt.Sprintf("; did you mean %s?", w)
	}
	return ""
}

func mainUsage() string {
	names := commandNames()
	var b strings.Builder
	b.WriteString("Usage: rlbench COMMAND [flags] [args]\n\n" +
		wrap("rlbench proves that an API rate limiter keeps its promise under load and faults.", usageWidth) +
		"\nCommands:\n")
	for _, name := range names {
		fmt.Fprintf(&b, "  %-9s %s\n", name, summaries[name])
	}
	b.WriteString("\n" + wrap(`Run 'rlbench help COMMAND' or 'rlbench COMMAND -h' for a command's flags.
Flags may come before or after the arguments; -- ends the flags.

Exit codes:
  0  every check passed (skipped scenarios do not count)
  1  a check of the limiter failed, or its verdict is unknown (requests of
     unknown outcome alone decide it)
  2  invalid input or usage, or a run interrupted
  3  the harness could not make a valid test (a generator that fell behind,
     a fault never injected, a scenario that could not run, a skip with
     --fail-on-skip) and no check of the limiter failed: 1 takes precedence`, usageWidth))
	return b.String()
}
