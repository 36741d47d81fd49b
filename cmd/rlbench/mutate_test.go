//go:build unix

package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/sampleapi/faulty"
	"github.com/rlbench/rlbench/scenarios/mutation"
)

// TestMutantsCoverEveryVariant: the suite runs every faulty variant, each
// with a scenario, and names a check.
func TestMutantsCoverEveryVariant(t *testing.T) {
	var names []string
	for _, m := range mutants {
		names = append(names, m.variant)
		if m.check == "" {
			t.Errorf("%s names no check", m.variant)
		}
		if _, err := mutation.Scenario(m.variant); err != nil {
			t.Errorf("%s: %v", m.variant, err)
		}
	}
	if !slices.Equal(names, faulty.Names()) {
		t.Fatalf("mutants = %v, want faulty.Names() = %v", names, faulty.Names())
	}
}

func TestMutateParse(t *testing.T) {
	c := &mutateCommand{}
	f, err := c.parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(f.variants), len(mutants); got != want {
		t.Fatalf("variants = %d, want every one (%d)", got, want)
	}
	f, err = c.parse([]string{"--out", "x", "no-ttl", "non-atomic"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.variants) != 2 || f.variants[0].variant != "no-ttl" || f.variants[1].variant != "non-atomic" || f.out != "x" {
		t.Fatalf("parse = %+v, want no-ttl and non-atomic into x", f)
	}
	for _, args := range [][]string{{"atomic"}, {"--repeat-reference", "-1"}, {"--repeat-reference", "2", "no-ttl"}, {"--nope"}} {
		var ue *usageError
		if _, err := c.parse(args); !errors.As(err, &ue) {
			t.Errorf("parse(%q) error = %v, want a usage error", args, err)
		}
	}
}

func TestRowVerdicts(t *testing.T) {
	pass := []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Pass}}
	failBudget := []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Fail}, {Name: checker.CheckRetryAfter, Verdict: checker.Pass}}
	failOther := []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Pass}, {Name: checker.CheckRetryAfter, Verdict: checker.Fail}}
	unknown := []checker.Result{{Name: checker.CheckBudget, Verdict: checker.Unknown}}
	m := mutant{variant: "v", check: checker.CheckBudget}
	for _, tc := range []struct {
		name            string
		r               row
		refPass, caught bool
	}{
		{"caught", row{m: m, reference: pass, variant: failBudget}, true, true},
		{"another check failed", row{m: m, reference: pass, variant: failOther}, true, false},
		{"unknown is not caught", row{m: m, reference: pass, variant: unknown}, true, false},
		{"reference failed", row{m: m, reference: failBudget, variant: failBudget}, false, true},
		{"variant could not run", row{m: m, reference: pass, variant: failBudget, varErr: errors.New("boom")}, true, false},
		{"reference could not run", row{m: m, refErr: errors.New("boom"), variant: failBudget}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.referencePassed(); got != tc.refPass {
				t.Errorf("referencePassed = %v, want %v", got, tc.refPass)
			}
			if got := tc.r.caught(); got != tc.caught {
				t.Errorf("caught = %v, want %v", got, tc.caught)
			}
		})
	}
	if got, want := strings.Join(failed(append(failOther, unknown...)), ","), "retry-after,budget"; got != want {
		t.Errorf("failed = %s, want %s", got, want)
	}
}

// TestKeyTTLCheck: a key without a TTL fails the check; keys with one pass.
func TestKeyTTLCheck(t *testing.T) {
	s := redistest.StartForTest(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), DisableIdentity: true})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "rl:{a}:x", "1", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := keyTTLCheck(ctx, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if res.Name != checkKeyTTL || res.Verdict != checker.Pass || res.Observed != 0 {
		t.Fatalf("with a TTL: %+v, want a pass", res)
	}
	if err := rdb.Set(ctx, "rl:{b}:x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	res, err = keyTTLCheck(ctx, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Fail || res.Observed != 1 || !strings.Contains(res.Explanation, "rl:{b}:x") {
		t.Fatalf("without a TTL: %+v, want a failure naming rl:{b}:x", res)
	}
	rdb.Del(ctx, "rl:{b}:x") // the server's cleanup fails the test on a key without a TTL
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
