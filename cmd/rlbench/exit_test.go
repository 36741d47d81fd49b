package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
)

// fakeCommand returns err from Run.
type fakeCommand struct{ err error }

func (c fakeCommand) Run(context.Context, []string) error { return c.err }
func (c fakeCommand) Usage() string                       { return "Usage: rlbench fake\n" }

// TestMainExitCodes: main maps what a command returns to the exit codes
// the usage lists, a limiter's failure before the harness's error.
func TestMainExitCodes(t *testing.T) {
	summary := func(skipped int, results ...checker.Result) *checker.Summary {
		s := checker.NewSummary(time.Now())
		if len(results) > 0 {
			s.Add("sc", results)
		}
		for i := range skipped {
			s.AddSkipped(fmt.Sprintf("peer-%d", i), "not installed")
		}
		return s
	}
	var (
		pass    = checker.Result{Name: checker.CheckBudget, Verdict: checker.Pass}
		fail    = checker.Result{Name: checker.CheckBudget, Verdict: checker.Fail}
		unknown = checker.Result{Name: checker.CheckFalseRejections, Verdict: checker.Unknown}
		behind  = checker.Result{Name: checker.CheckLoadDelivered, Verdict: checker.Fail}
	)
	tests := []struct {
		name       string
		err        error
		want       int
		wantStderr string
	}{
		{"every check passed", runError(summary(0, pass), 0, false), exitOK, ""},
		{"skips pass", runError(summary(3, pass), 0, false), exitOK, ""},
		{"skips fail with --fail-on-skip", runError(summary(3, pass), 0, true), exitHarnessError, "3 scenarios skipped, and --fail-on-skip"},
		{"a limiter check failed", runError(summary(0, pass, fail), 0, false), exitCheckFailed, "one or more checks failed"},
		{"unknown exits 1", runError(summary(0, unknown), 0, false), exitCheckFailed, "requests of unknown outcome decide a verdict"},
		{"the generator fell behind", runError(summary(0, pass, behind), 0, false), exitHarnessError, "the harness could not make a valid test (the ERROR checks above); no limiter check failed"},
		{"a limiter failure takes precedence", runError(summary(0, behind, fail), 0, true), exitCheckFailed, "one or more checks failed"},
		{"a scenario that could not run", runError(summary(0, checker.CouldNotRun(errors.New("no redis-server"))), 1, false), exitHarnessError, "1 of 1 scenario could not run"},
		{"usage", usagef("bad flag"), exitInvalid, "rlbench fake: bad flag\nrun 'rlbench fake -h' for help\n"},
		{"help", flag.ErrHelp, exitOK, ""},
		{"invalid input", errors.New("scenario.yaml:3: bad"), exitInvalid, "scenario.yaml:3: bad"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			commands["fake"] = func() command { return fakeCommand{tc.err} }
			defer delete(commands, "fake")
			var stderr strings.Builder
			if got := run(context.Background(), []string{"fake"}, &stderr); got != tc.want {
				t.Errorf("exit %d, want %d (error %v)", got, tc.want, tc.err)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

// TestUsageExitCodes: the top-level usage and run's list every exit code,
// unknown's and the harness's included.
func TestUsageExitCodes(t *testing.T) {
	var out strings.Builder
	printHelp(nil, &out)
	for _, want := range []string{"1  a check of the limiter failed, or its verdict is unknown", "3  the harness could not make a valid test", "--fail-on-skip", "1 takes precedence"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rlbench help lacks %q:\n%s", want, out.String())
		}
	}
	usage := (&runCommand{stdout: io.Discard, stderr: io.Discard}).Usage()
	for _, want := range []string{"--fail-on-skip", "3 the harness could not make a", "9 passed, 3 skipped", "ERROR"} {
		if !strings.Contains(usage, want) {
			t.Errorf("rlbench help run lacks %q:\n%s", want, usage)
		}
	}
	for _, u := range []string{out.String(), usage} {
		for _, line := range strings.Split(u, "\n") {
			if len([]rune(line)) > usageWidth {
				t.Errorf("usage line longer than %d columns: %q", usageWidth, line)
			}
		}
	}
}

// TestListWrapsAt80: `rlbench list` keeps every line within 80 columns and
// every word of every description.
func TestListWrapsAt80(t *testing.T) {
	var out strings.Builder
	if err := (&listCommand{stdout: &out}).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "NAME ") || !strings.HasSuffix(lines[0], "WHAT IT PROVES") {
		t.Errorf("header %q", lines[0])
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if !strings.Contains(out.String(), "\nquickstart                 Three sample API instances share one GCRA budget per\n                           API key") {
		t.Errorf("quickstart's description is not wrapped in its column:\n%s", out.String())
	}

	got := twoColumns([2]string{"N", "D"}, [][2]string{{"short", "one two three four"}, {"a-name-longer-than-a-third", "x y"}}, 30)
	// The column starts at 30/3 + 2: the long name has its line alone.
	want := "N           D\n" +
		"short       one two three four\n" +
		"a-name-longer-than-a-third\n" +
		"            x y\n"
	if got != want {
		t.Errorf("twoColumns =\n%s\nwant\n%s", got, want)
	}
}

// TestUsageErrorOneLine: a wrong flag or argument to any command prints one
// line naming it and the fix, then where the help is, and exits 2; -h alone
// prints the whole usage, and exits 0.
func TestUsageErrorOneLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string // the first line, whole
	}{
		{"unknown flag", []string{"run", "--nope"}, "rlbench run: --nope: no such flag"},
		{"misspelled flag", []string{"run", "--fail-on-skp", "quickstart"}, "rlbench run: --fail-on-skp: no such flag; did you mean --fail-on-skip?"},
		{"no argument", []string{"check"}, "rlbench check: want a HISTORY file, a run directory, or the run directories of a run's shards"},
		{"bad value", []string{"k8s", "x", "--shards", "0"}, "rlbench k8s: --shards 0: want 1 to 1024"},
		{"not a number", []string{"k8s", "x", "--shards", "four"}, "rlbench k8s: --shards four: not a whole number"},
		{"not a duration", []string{"k8s", "x", "--timeout", "10"}, "rlbench k8s: --timeout 10: not a duration; want a number with a unit, as 500ms, 30s or 2m"},
		{"not a boolean", []string{"run", "--fail-on-skip=maybe", "quickstart"}, "rlbench run: --fail-on-skip maybe: want true or false"},
		{"flag without its value", []string{"report", "--nope=1", "dir"}, "rlbench report: --nope: no such flag"},
		{"unknown command", []string{"chekc"}, `rlbench: unknown command "chekc"; did you mean check?`},
		{"help of an unknown command", []string{"help", "mutant"}, `rlbench help: unknown command "mutant"; did you mean mutate?`},
		{"a flag without its value", []string{"init", "--route", "/v1", "--url"}, "rlbench init: --url: needs a value, as --url VALUE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := run(context.Background(), tt.args, &stderr); code != exitInvalid {
				t.Fatalf("exit %d, want %d:\n%s", code, exitInvalid, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("stderr has %d lines, want 2:\n%s", len(lines), stderr.String())
			}
			if lines[0] != tt.want {
				t.Errorf("stderr line 1 = %q, want %q", lines[0], tt.want)
			}
			wantHelp := fmt.Sprintf("run 'rlbench %s -h' for help", tt.args[0])
			if tt.args[0] == "chekc" || tt.args[0] == "help" {
				wantHelp = "run 'rlbench help' for the commands"
			}
			if lines[1] != wantHelp {
				t.Errorf("stderr line 2 = %q, want %q", lines[1], wantHelp)
			}
		})
	}
	var stdout bytes.Buffer
	if err := (&k8sCommand{stdout: &stdout}).Run(context.Background(), []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("k8s -h: %v, want flag.ErrHelp", err)
	}
	if !strings.HasPrefix(stdout.String(), "Usage: rlbench k8s") || !strings.Contains(stdout.String(), "--shards N") {
		t.Errorf("k8s -h prints no usage:\n%s", stdout.String())
	}
}
