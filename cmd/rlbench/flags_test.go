//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// subcommandFlagSets builds each subcommand's flag set.
var subcommandFlagSets = map[string]func() *flag.FlagSet{
	"run":      new(runFlags).flagSet,
	"check":    new(checkFlags).flagSet,
	"validate": new(validateCommand).flagSet,
	"report":   new(reportFlags).flagSet,
	"mutate":   new(mutateFlags).flagSet,
	"serve":    new(serveFlags).flagSet,
	"list":     new(listCommand).flagSet,
	"doctor":   new(doctorFlags).flagSet,
	"init":     new(initFlags).flagSet,
	"k8s":      new(k8sFlags).flagSet,
	"version":  new(versionCommand).flagSet,
}

// TestFlagsRefuseNonFiniteNumbers: every float flag of every subcommand
// refuses NaN, the infinities and a number beyond float64's range (which
// strconv.ParseFloat, and so flag.Float64Var, would take): a NaN bound
// compares false with everything and bounds nothing.
func TestFlagsRefuseNonFiniteNumbers(t *testing.T) {
	for name := range commands {
		if _, ok := subcommandFlagSets[name]; !ok {
			t.Errorf("subcommand %s has no entry in subcommandFlagSets", name)
		}
	}
	floats := 0
	for cmd, flagSet := range subcommandFlagSets {
		flagSet().VisitAll(func(f *flag.Flag) {
			g, ok := f.Value.(flag.Getter)
			if !ok {
				return
			}
			if _, isFloat := g.Get().(float64); !isFloat {
				return
			}
			floats++
			if _, ok := f.Value.(*floatFlag); !ok {
				t.Errorf("%s --%s is a %T; define float flags with floatVar", cmd, f.Name, f.Value)
			}
			for _, bad := range []string{"NaN", "nan", "+Inf", "-Inf", "infinity", "1e400", "-1e400"} {
				if err := f.Value.Set(bad); err == nil {
					t.Errorf("%s --%s %s accepted, now %s", cmd, f.Name, bad, f.Value)
				}
			}
		})
	}
	if floats == 0 {
		t.Fatal("no float flag found; the test looks at nothing")
	}
}

// TestFloatFlag: a floatFlag takes finite numbers within its range and
// says what it takes otherwise.
func TestFloatFlag(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		err  string
	}{
		{"0.05", 0.05, ""},
		{" 1 ", 1, ""},
		{"0", 0, ""},
		{"1e-3", 0.001, ""},
		{"NaN", 0.5, "not a finite number; want a fraction from 0 to 1"},
		{"-Inf", 0.5, "not a finite number; want a fraction from 0 to 1"},
		{"1e309", 0.5, "not a finite number; want a fraction from 0 to 1"},
		{"-0.5", 0.5, "out of range; want a fraction from 0 to 1"},
		{"1.01", 0.5, "out of range; want a fraction from 0 to 1"},
		{"half", 0.5, "not a number; want a fraction from 0 to 1"},
		{"", 0.5, "not a number; want a fraction from 0 to 1"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var got float64
		floatVar(fs, &got, "f", 0.5, 0, 1, "a fraction from 0 to 1", "a `FRACTION`")
		err := fs.Lookup("f").Value.Set(tt.in)
		if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
			t.Errorf("Set(%q) error = %v, want %q", tt.in, err, tt.err)
		}
		if got != tt.want {
			t.Errorf("Set(%q): value = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestCheckRefusesBadNumberFlags: `rlbench check` refuses a NaN or
// out-of-range tolerance and negative clock bounds with exit 2, naming the
// flag and what it takes, before reading any history.
func TestCheckRefusesBadNumberFlags(t *testing.T) {
	history := filepath.Join("testdata", "check", "pass.jsonl.gz")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--tolerance", "NaN"}, `--tolerance NaN: not a finite number; want a fraction from 0 to 1, as in 0.05`},
		{[]string{"--tolerance=+Inf"}, `--tolerance +Inf: not a finite number`},
		{[]string{"--tolerance", "1.5"}, `--tolerance 1.5: out of range; want a fraction from 0 to 1`},
		{[]string{"--clock-uncertainty", "-2ms"}, "--clock-uncertainty -2ms: want 0 or more, as in 2ms"},
		{[]string{"--resolution", "-1ms"}, "--resolution -1ms: want 0 or more, as in 1ms"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			prev := commands["check"]
			commands["check"] = func() command { return &checkCommand{stdout: &out} }
			defer func() { commands["check"] = prev }()
			args := append(append([]string{"check", "--policy", "gcra:5/1s,burst=5"}, tt.args...), history)
			if code := run(context.Background(), args, &errOut); code != exitInvalid {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInvalid, out.String(), errOut.String())
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("stderr lacks %q:\n%s", tt.want, errOut.String())
			}
			if out.Len() > 0 {
				t.Fatalf("a refused flag printed a verdict:\n%s", out.String())
			}
		})
	}
}

// TestFlagsAfterArguments: every subcommand accepts its flags before and
// after its positional arguments, in both spellings, with bool flags taking
// no value and "--" ending the flags.
func TestFlagsAfterArguments(t *testing.T) {
	flagSets := subcommandFlagSets
	tests := []struct {
		cmd   string
		args  []string
		flags map[string]string // flag name to its value after parsing
		rest  []string          // the positional arguments
		err   string            // "" for none; flag.ErrHelp's text for help
	}{
		{cmd: "run", args: []string{"quickstart", "--out", "DIR"}, flags: map[string]string{"out": "DIR"}, rest: []string{"quickstart"}},
		{cmd: "run", args: []string{"--out=DIR", "quickstart"}, flags: map[string]string{"out": "DIR"}, rest: []string{"quickstart"}},
		{cmd: "run", args: []string{"a.yaml", "-out", "DIR", "b.yaml", "--claim", "/x=gcra:1/1s", "--claim=/y=gcra:2/1s", "c.yaml"},
			flags: map[string]string{"out": "DIR", "claim": "/x=gcra:1/1s,/y=gcra:2/1s"}, rest: []string{"a.yaml", "b.yaml", "c.yaml"}},
		{cmd: "run", args: []string{"quickstart", "--out"}, err: "--out: needs a value, as --out VALUE"},
		{cmd: "run", args: []string{"quickstart", "--", "--out", "DIR"}, flags: map[string]string{"out": "rlbench-out"}, rest: []string{"quickstart", "--out", "DIR"}},
		{cmd: "run", args: []string{"quickstart", "--nope"}, err: "--nope: no such flag"},
		{cmd: "run", args: []string{"quickstart", "-h"}, err: flag.ErrHelp.Error()},
		{cmd: "check", args: []string{"h.jsonl.gz", "--trust-decision-time", "--policy", "gcra:5/1s"},
			flags: map[string]string{"trust-decision-time": "true", "policy": "gcra:5/1s"}, rest: []string{"h.jsonl.gz"}},
		{cmd: "check", args: []string{"--trust-decision-time", "h.jsonl.gz", "--cost=3", "-format", "vegeta"},
			flags: map[string]string{"trust-decision-time": "true", "cost": "3", "format": "vegeta"}, rest: []string{"h.jsonl.gz"}},
		{cmd: "check", args: []string{"h.jsonl.gz", "--trust-decision-time=false", "--clock-offset", "-3ms", "--tolerance", "0.05"},
			flags: map[string]string{"trust-decision-time": "false", "clock-offset": "-3ms", "tolerance": "0.05"}, rest: []string{"h.jsonl.gz"}},
		{cmd: "check", args: []string{"--", "-h.jsonl"}, rest: []string{"-h.jsonl"}},
		{cmd: "check", args: []string{"-", "--summary", "s.json"}, flags: map[string]string{"summary": "s.json"}, rest: []string{"-"}},
		{cmd: "validate", args: []string{"a.yaml", "b.yaml"}, rest: []string{"a.yaml", "b.yaml"}},
		{cmd: "validate", args: []string{"a.yaml", "--", "--b.yaml"}, rest: []string{"a.yaml", "--b.yaml"}},
		{cmd: "validate", args: []string{"a.yaml", "--help"}, err: flag.ErrHelp.Error()},
		{cmd: "validate", args: []string{"a.yaml", "--strict"}, err: "--strict: no such flag"},
		{cmd: "report", args: []string{"DIR", "--out", "-"}, flags: map[string]string{"out": "-"}, rest: []string{"DIR"}},
		{cmd: "report", args: []string{"DIR", "--out=r.html"}, flags: map[string]string{"out": "r.html"}, rest: []string{"DIR"}},
		{cmd: "mutate", args: []string{"no-ttl", "--verbose", "non-atomic", "--out", "m"},
			flags: map[string]string{"verbose": "true", "out": "m"}, rest: []string{"no-ttl", "non-atomic"}},
		{cmd: "mutate", args: []string{"--verbose", "no-ttl"}, flags: map[string]string{"verbose": "true"}, rest: []string{"no-ttl"}},
		{cmd: "mutate", args: []string{"--repeat-reference=2"}, flags: map[string]string{"repeat-reference": "2"}},
		{cmd: "serve", args: []string{"--shadow", "--addr", "127.0.0.1:0", "-log-level=warn"},
			flags: map[string]string{"shadow": "true", "addr": "127.0.0.1:0", "log-level": "warn"}},
		{cmd: "serve", args: []string{"stray", "--shadow"}, flags: map[string]string{"shadow": "true"}, rest: []string{"stray"}},
		{cmd: "list", args: []string{"extra", "-h"}, err: flag.ErrHelp.Error()},
		{cmd: "list", args: nil},
	}
	for _, tt := range tests {
		t.Run(tt.cmd+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flagSets[tt.cmd]()
			err := parseArgs(fs, tt.args)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("parseArgs error = %v, want %q", err, tt.err)
				}
				if !errors.Is(err, flag.ErrHelp) && !isUsage(err) {
					t.Fatalf("parseArgs error %v is not a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs: %v", err)
			}
			for name, want := range tt.flags {
				if got := fs.Lookup(name).Value.String(); got != want {
					t.Errorf("--%s = %q, want %q", name, got, want)
				}
			}
			if got := fs.Args(); !slices.Equal(got, tt.rest) {
				t.Errorf("arguments = %q, want %q", got, tt.rest)
			}
		})
	}
}

// TestFlagsFirst: the reordering itself, flags ahead, "--" before the
// positional arguments.
func TestFlagsFirst(t *testing.T) {
	fs := new(checkFlags).flagSet()
	tests := []struct {
		args, want []string
	}{
		{nil, nil},
		{[]string{"h"}, []string{"--", "h"}},
		{[]string{"h", "--policy", "p", "--trust-decision-time", "i"}, []string{"--policy", "p", "--trust-decision-time", "--", "h", "i"}},
		{[]string{"--summary=s", "h", "--", "--policy", "p"}, []string{"--summary=s", "--", "h", "--policy", "p"}},
		{[]string{"h", "--unknown", "x"}, []string{"--unknown", "--", "h", "x"}},
	}
	for _, tt := range tests {
		got, err := flagsFirst(fs, tt.args)
		if err != nil {
			t.Fatalf("flagsFirst(%q): %v", tt.args, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("flagsFirst(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestCommandUsage: every command's -h prints its usage, generated from its
// flag set (every flag listed), within 80 columns, and exits 0.
func TestCommandUsage(t *testing.T) {
	for name, newCmd := range commands {
		t.Run(name, func(t *testing.T) {
			usage := newCmd().Usage()
			if !strings.HasPrefix(usage, "Usage: rlbench "+name) {
				t.Errorf("usage starts %.40q, want the synopsis", usage)
			}
			for i, line := range strings.Split(usage, "\n") {
				if n := utf8.RuneCountInString(line); n > usageWidth && strings.Contains(strings.TrimSpace(line), " ") {
					t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
				}
			}
			if code := run(context.Background(), []string{"help", name}, io.Discard); code != exitOK {
				t.Errorf("rlbench help %s: exit %d, want %d", name, code, exitOK)
			}
		})
	}
	for name, fs := range map[string]*flag.FlagSet{
		"run": new(runFlags).flagSet(), "check": new(checkFlags).flagSet(), "report": new(reportFlags).flagSet(),
		"mutate": new(mutateFlags).flagSet(), "serve": new(serveFlags).flagSet(), "init": new(initFlags).flagSet(),
		"k8s": new(k8sFlags).flagSet(),
	} {
		usage := commands[name]().Usage()
		fs.VisitAll(func(f *flag.Flag) {
			if f.Usage == "" || !strings.Contains(usage, "\n  --"+f.Name+" ") && !strings.Contains(usage, "\n  --"+f.Name+"\n") {
				t.Errorf("%s: the usage does not describe --%s", name, f.Name)
			}
		})
	}
	for _, args := range [][]string{{"help", "frobnicate"}, {"help", "run", "check"}} {
		if code := run(context.Background(), args, io.Discard); code != exitInvalid {
			t.Errorf("rlbench %q: exit %d, want %d", args, code, exitInvalid)
		}
	}
}

func TestWrap(t *testing.T) {
	text := "one two three four five six\n\n  kept   as is\nseven eight\nnine"
	if got, want := wrap(text, 14), "one two three\nfour five six\n\n  kept   as is\nseven eight\nnine\n"; got != want {
		t.Errorf("wrap = %q, want %q", got, want)
	}
	if got, want := wrapParagraph("a averyveryverylongword b", 8), "a\naveryveryverylongword\nb\n"; got != want {
		t.Errorf("wrapParagraph = %q, want %q", got, want)
	}
}
