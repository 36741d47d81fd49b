//go:build unix

package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/mutation"
)

func TestMutateParse(t *testing.T) {
	c := &mutateCommand{}
	f, err := c.parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(f.variants), len(mutation.Mutants()); got != want {
		t.Fatalf("variants = %d, want every one (%d)", got, want)
	}
	f, err = c.parse([]string{"--out", "x", "no-ttl", "non-atomic"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.variants) != 2 || f.variants[0].Variant != "no-ttl" || f.variants[1].Variant != "non-atomic" || f.out != "x" {
		t.Fatalf("parse = %+v, want no-ttl and non-atomic into x", f)
	}
	f, err = c.parse([]string{"no-ttl", "--verbose", "--out", "y"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.variants) != 1 || f.variants[0].Variant != "no-ttl" || !f.verbose || f.out != "y" {
		t.Fatalf("parse with flags last = %+v, want no-ttl into y, verbose", f)
	}
	for _, args := range [][]string{{"atomic"}, {"--repeat-reference", "-1"}, {"--repeat-reference", "2", "no-ttl"}, {"--nope"}} {
		var ue *usageError
		if _, err := c.parse(args); !errors.As(err, &ue) {
			t.Errorf("parse(%q) error = %v, want a usage error", args, err)
		}
	}
}

// TestServeFaultyFlag: --faulty selects a variant; a wrong name or a
// variant that needs Redis on the memory store is refused.
func TestServeFaultyFlag(t *testing.T) {
	c := &serveCommand{}
	f, set, err := c.parse([]string{"--redis", "redis://127.0.0.1:7000/0", "--faulty", "non-atomic:10ms"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.configure(set)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Faulty, "non-atomic:10ms"; got != want {
		t.Fatalf("Faulty = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis", "redis://127.0.0.1:7000/0", "--faulty", "atomic"}, "unknown faulty variant"},
		{[]string{"--store", "memory", "--faulty", "no-ttl"}, "keeps its state in Redis"},
	} {
		f, set, err := c.parse(tc.args)
		if err == nil {
			_, err = f.configure(set)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
