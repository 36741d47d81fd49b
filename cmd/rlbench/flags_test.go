//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFlagsAfterArguments: every subcommand accepts its flags before and
// after its positional arguments, in both spellings, with bool flags taking
// no value and "--" ending the flags.
func TestFlagsAfterArguments(t *testing.T) {
	flagSets := map[string]func() *flag.FlagSet{
		"run":      new(runFlags).flagSet,
		"check":    new(checkFlags).flagSet,
		"validate": new(validateCommand).flagSet,
		"report":   new(reportFlags).flagSet,
		"mutate":   new(mutateFlags).flagSet,
		"serve":    new(serveFlags).flagSet,
		"list":     new(listCommand).flagSet,
	}
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
		{cmd: "run", args: []string{"quickstart", "--out"}, err: "flag needs an argument: --out"},
		{cmd: "run", args: []string{"quickstart", "--", "--out", "DIR"}, flags: map[string]string{"out": "rlbench-out"}, rest: []string{"quickstart", "--out", "DIR"}},
		{cmd: "run", args: []string{"quickstart", "--nope"}, err: "flag provided but not defined: -nope"},
		{cmd: "run", args: []string{"quickstart", "-h"}, err: flag.ErrHelp.Error()},
		{cmd: "check", args: []string{"h.jsonl.gz", "--trust-decision-time", "--policy", "gcra:5/1s"},
			flags: map[string]string{"trust-decision-time": "true", "policy": "gcra:5/1s"}, rest: []string{"h.jsonl.gz"}},
		{cmd: "check", args: []string{"--trust-decision-time", "h.jsonl.gz", "--cost=3", "-format", "vegeta"},
			flags: map[string]string{"trust-decision-time": "true", "cost": "3", "format": "vegeta"}, rest: []string{"h.jsonl.gz"}},
		{cmd: "check", args: []string{"h.jsonl.gz", "--trust-decision-time=false", "--tolerance", "-0.5"},
			flags: map[string]string{"trust-decision-time": "false", "tolerance": "-0.5"}, rest: []string{"h.jsonl.gz"}},
		{cmd: "check", args: []string{"--", "-h.jsonl"}, rest: []string{"-h.jsonl"}},
		{cmd: "check", args: []string{"-", "--summary", "s.json"}, flags: map[string]string{"summary": "s.json"}, rest: []string{"-"}},
		{cmd: "validate", args: []string{"a.yaml", "b.yaml"}, rest: []string{"a.yaml", "b.yaml"}},
		{cmd: "validate", args: []string{"a.yaml", "--", "--b.yaml"}, rest: []string{"a.yaml", "--b.yaml"}},
		{cmd: "validate", args: []string{"a.yaml", "--help"}, err: flag.ErrHelp.Error()},
		{cmd: "validate", args: []string{"a.yaml", "--strict"}, err: "flag provided but not defined: -strict"},
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
