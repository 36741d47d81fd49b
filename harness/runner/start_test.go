//go:build unix

package runner

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/shardsync"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/scenarios"
)

// externalTarget starts an external target of 5 per 5 s and, with redis,
// a Redis for its scenario's redis.url; it returns the scenario (three
// requests at once).
func externalTarget(t *testing.T, redis bool) *scenarios.Scenario {
	t.Helper()
	srv := httptest.NewServer(&aheadWindow{window: 5 * time.Second, limit: 5, counts: map[string]int{}})
	t.Cleanup(srv.Close)
	section := "{provider: none}"
	if redis {
		section = `{provider: external, url: "` + redistest.StartForTest(t).URL() + `"}`
	}
	return aheadScenario(t, srv.URL, section, "", true)
}

// TestStartAt: a start given on the limiter's clock (Redis TIME) is waited
// for and recorded, with how late the first phase began; a start on this
// host's clock is recorded as such. The tolerance is wide: a busy test
// machine wakes a sleeper late.
func TestStartAt(t *testing.T) {
	sc := externalTarget(t, true)
	for _, tt := range []struct {
		name   string
		onHost bool
		clock  string
	}{
		{"limiter's clock", false, runrecord.StartClockLimiter},
		{"this host's clock", true, runrecord.StartClockHost},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			at := time.Now().Add(time.Second)
			o, err := New(Options{OutDir: dir, Start: Start{At: at, OnHost: tt.onHost, Tolerance: 500 * time.Millisecond}}).Run(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			a := o.Record().AgreedStart
			if a == nil {
				t.Fatal("run.json records no agreed start")
			}
			if a.By != runrecord.StartAt || a.Clock != tt.clock || !a.At.Equal(at) || a.Tolerance != 500*time.Millisecond {
				t.Errorf("agreed start = %+v, want by %s at %v on the %s clock with a tolerance of 500ms", *a, runrecord.StartAt, at, tt.clock)
			}
			if a.Late < 0 || a.Late > a.Tolerance {
				t.Errorf("late %v, want within [0, %v]", a.Late, a.Tolerance)
			}
			// The history begins at the start, mapped onto this host's clock
			// through the offset (about 0 on one host).
			h := readHeader(t, filepath.Join(dir, o.HistoryPath))
			if d := h.Start.Sub(at); d < -5*time.Millisecond || d > a.Tolerance+5*time.Millisecond {
				t.Errorf("history start %v is %v from the start %v", h.Start, d, at)
			}
		})
	}
}

// TestStartAtLate: a start already past by more than the tolerance fails
// the scenario, before any request, with how late it is and what to do.
func TestStartAtLate(t *testing.T) {
	sc := externalTarget(t, true)
	for _, tt := range []struct {
		name  string
		shard *history.Shard
		want  []string
	}{
		{"whole run", nil, []string{"this run missed the start at ", " by 1.2", "launch the run earlier or give a later --start-at"}},
		{"shard", &history.Shard{Index: 2, Count: 3}, []string{"shard 2/3 missed the start at ", " by 1.2", "launch the shards earlier or give a later --start-at"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at := time.Now().Add(-1200 * time.Millisecond)
			_, err := New(Options{OutDir: t.TempDir(), RunID: "0a1b2c3d", Shard: tt.shard, Start: Start{At: at}}).Run(context.Background(), sc)
			var le *shardsync.LateError
			if !errors.As(err, &le) {
				t.Fatalf("Run error = %v, want a *shardsync.LateError", err)
			}
			if !le.At.Equal(at) || le.Late < 1200*time.Millisecond {
				t.Errorf("late error at %v by %v, want at %v by at least 1.2s", le.At, le.Late, at)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestShardNeedsKnownClock: a shard refuses a scenario whose offset to the
// limiter's clock is unknown before the traffic (Shard says so before
// anything starts); the same scenario runs as a whole run.
func TestShardNeedsKnownClock(t *testing.T) {
	sc := externalTarget(t, false)
	r := New(Options{OutDir: t.TempDir(), RunID: "0a1b2c3d", Shard: &history.Shard{Index: 1, Count: 2}})
	if _, err := r.Shard(sc); err == nil {
		t.Error("Shard: no error for a scenario without a known clock")
	}
	_, err := r.Run(context.Background(), sc)
	if err == nil || !strings.Contains(err.Error(), "scenario ahead: the offset to the limiter's clock is unknown before the traffic") ||
		!strings.Contains(err.Error(), "give the scenario redis.url") {
		t.Fatalf("Run error = %v, want one saying the offset is unknown and how to know it", err)
	}
	if _, err := New(Options{OutDir: t.TempDir()}).Run(context.Background(), sc); err != nil {
		t.Fatalf("the scenario as a whole run: %v", err)
	}
}

// TestBarrierShards: three shards, each a Runner of its own, meet at the
// barrier in their shared Redis and begin the scenario at one start on
// Redis's clock, each within the tolerance (wide: a busy test machine
// wakes a sleeper late), each history naming its shard.
func TestBarrierShards(t *testing.T) {
	srv := httptest.NewServer(&aheadWindow{window: 5 * time.Second, limit: 5, counts: map[string]int{}})
	defer srv.Close()
	// Three identities, one a shard, thirty requests among them.
	sc, err := scenarios.Parse("shards.yaml", []byte(`name: shards
description: three shards of thirty requests at once
redis: {provider: external, url: "`+redistest.StartForTest(t).URL()+`"}
target:
  external: [`+srv.URL+`]
  routes:
    - path: /api/items
      policies: ["fixed_window:5/5s"]
identities:
  count: 3
traffic:
  - {kind: burst, name: thirty, requests: 30}
checks:
  budget: {max_excess: 0}
  headers: false
`))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	run := scenarios.NewRunID()
	outs, errs, dirs := make([]*Outcome, n), make([]error, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i] = t.TempDir()
		opts := Options{OutDir: dirs[i], RunID: run, Shard: &history.Shard{Index: i, Count: n},
			Start: Start{Barrier: true, Lead: time.Second, Timeout: 30 * time.Second, Tolerance: 500 * time.Millisecond}}
		wg.Go(func() { outs[i], errs[i] = New(opts).Run(context.Background(), sc) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	first := outs[0].AgreedStart
	for i, o := range outs {
		a := o.Record().AgreedStart
		if a == nil || a.By != runrecord.StartBarrier || a.Clock != runrecord.StartClockLimiter || a.Barrier != shardsync.Key(string(run), sc.Name) {
			t.Fatalf("shard %d/%d: agreed start %+v, want one at barrier %s on the limiter's clock", i, n, a, shardsync.Key(string(run), sc.Name))
		}
		if !a.At.Equal(first.At) {
			t.Errorf("shard %d/%d: start %v, want shard 0's %v", i, n, a.At, first.At)
		}
		if a.Late < 0 || a.Late > a.Tolerance {
			t.Errorf("shard %d/%d: late %v, want within [0, %v]", i, n, a.Late, a.Tolerance)
		}
		h := readHeader(t, filepath.Join(dirs[i], o.HistoryPath))
		if h.Shard == nil || *h.Shard != (history.Shard{Index: i, Count: n}) {
			t.Errorf("shard %d/%d: history header shard %v", i, n, h.Shard)
		}
		// The history's start on the limiter's clock is the agreed start.
		if d := h.Start.Add(time.Duration(*h.ClockOffsetNs)).Sub(first.At); d < -5*time.Millisecond || d > a.Tolerance+5*time.Millisecond {
			t.Errorf("shard %d/%d: history start on the limiter's clock is %v from the agreed start", i, n, d)
		}
	}
}

// TestBarrierNeeds: a barrier needs a shard, a given run id and a Redis the
// shards share; without one the scenario fails at once, saying which.
func TestBarrierNeeds(t *testing.T) {
	withRedis, without := externalTarget(t, true), externalTarget(t, false)
	// A declared clock, so that the barrier is what fails without Redis.
	without.Target.Clock = &scenarios.Clock{}
	shard := &history.Shard{Index: 0, Count: 2}
	for _, tt := range []struct {
		name string
		sc   *scenarios.Scenario
		opts Options
		want string
	}{
		{"no shard", withRedis, Options{RunID: "0a1b2c3d"}, "give the shard (--shard I/N)"},
		{"no redis", without, Options{Shard: shard, RunID: "0a1b2c3d"}, "the scenario has no Redis for the shards to meet in"},
		{"own redis", withRedis, Options{Shard: shard, RunID: "0a1b2c3d", Provider: scenarios.ProviderProcess}, "this one's (provider process) is its own"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.OutDir = t.TempDir()
			tt.opts.Start = Start{Barrier: true, Timeout: time.Second}
			_, err := New(tt.opts).Run(context.Background(), tt.sc)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestHostClockFiction: a wall clock read 5 s ahead moves the history's
// start by 5 s and the measured offset by −5 s, so that the start on the
// limiter's clock does not move; a misreport moves the recorded offset
// alone, its uncertainty left as it is; a floor widens the uncertainty.
func TestHostClockFiction(t *testing.T) {
	sc := externalTarget(t, true)
	const skew, misreport, floor = 5 * time.Second, 300 * time.Millisecond, 40 * time.Millisecond
	for _, tt := range []struct {
		name  string
		clock HostClock
	}{
		{"as it is", HostClock{}},
		{"skew", HostClock{Skew: skew}},
		{"skew and misreport", HostClock{Skew: skew, Misreport: misreport}},
		{"uncertainty floor", HostClock{UncertaintyFloor: floor}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			before := time.Now()
			o, err := New(Options{OutDir: dir, Clock: tt.clock}).Run(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			h := readHeader(t, filepath.Join(dir, o.HistoryPath))
			if d := h.Start.Sub(before.Add(tt.clock.Skew)); d < 0 || d > 5*time.Second {
				t.Errorf("history start %v is %v after the skewed reading before the run", h.Start, d)
			}
			// Redis runs on this host: its clock is the true one, and the
			// start on it is the true start, the misreport aside.
			onLimiter := h.Start.Add(time.Duration(*h.ClockOffsetNs) - tt.clock.Misreport)
			if d := onLimiter.Sub(before); d < 0 || d > 5*time.Second {
				t.Errorf("history start on the limiter's clock %v is %v after the true start", onLimiter, d)
			}
			if got, want := o.ClockOffset-tt.clock.Misreport, -tt.clock.Skew; (got - want).Abs() > o.ClockUncertainty+time.Millisecond {
				t.Errorf("measured offset %v ± %v, want about %v", got, o.ClockUncertainty, want)
			}
			if tt.clock.Misreport == 0 && (o.ClockOffset+tt.clock.Skew).Abs() > o.ClockUncertainty+time.Millisecond {
				t.Errorf("offset %v ± %v does not hold the true %v", o.ClockOffset, o.ClockUncertainty, -tt.clock.Skew)
			}
			if o.ClockUncertainty < tt.clock.UncertaintyFloor || (tt.clock.UncertaintyFloor == 0 && o.ClockUncertainty > 20*time.Millisecond) {
				t.Errorf("uncertainty %v, want at least %v and a loopback round trip otherwise", o.ClockUncertainty, tt.clock.UncertaintyFloor)
			}
			if h.ClockUncertaintyNs != o.ClockUncertainty.Nanoseconds() || *h.ClockOffsetNs != o.ClockOffset.Nanoseconds() {
				t.Errorf("header clock %d ± %d ns, run.json %v ± %v", *h.ClockOffsetNs, h.ClockUncertaintyNs, o.ClockOffset, o.ClockUncertainty)
			}
		})
	}
}

// TestHostClockDeclared: a declared offset is of the true clock; a wall
// clock read ahead records it that much less, and this host's own clock
// (instances without Redis) as the skew's opposite.
func TestHostClockDeclared(t *testing.T) {
	c := HostClock{Skew: 2 * time.Second, Misreport: 10 * time.Millisecond, UncertaintyFloor: 5 * time.Millisecond}
	for _, tt := range []struct {
		name      string
		got, want time.Duration
	}{
		{"declared 700ms", c.Offset(700 * time.Millisecond), -1300 * time.Millisecond},
		{"this host's clock", c.Offset(0), -2 * time.Second},
		{"pacing", c.Process(c.Offset(700 * time.Millisecond)), 700 * time.Millisecond},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	off, unc := c.Record(-2*time.Second, time.Millisecond)
	if off != -1990*time.Millisecond || unc != 5*time.Millisecond {
		t.Errorf("Record(-2s, 1ms) = %v, %v; want -1.99s, 5ms", off, unc)
	}
	if off, unc := c.Record(0, 8*time.Millisecond); off != 10*time.Millisecond || unc != 8*time.Millisecond {
		t.Errorf("Record(0, 8ms) = %v, %v; want 10ms, 8ms", off, unc)
	}
	if got := (HostClock{}).Drill(); got != nil {
		t.Errorf("zero HostClock's Drill = %+v, want nil", got)
	}
	if got := c.Drill(); got == nil || got.Skew != c.Skew || got.Misreport != c.Misreport || got.UncertaintyFloor != c.UncertaintyFloor {
		t.Errorf("Drill = %+v, want %+v", got, c)
	}
	before := time.Now()
	now := c.Now()
	after := time.Now()
	if now.Before(before.Add(c.Skew)) || now.After(after.Add(c.Skew)) {
		t.Errorf("Now = %v, want within [%v, %v], time.Now %v ahead", now, before.Add(c.Skew), after.Add(c.Skew), c.Skew)
	}
}
