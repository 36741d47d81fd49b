//go:build unix

package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/shardsync"
	"github.com/rlbench/rlbench/scenarios"
)

// Start is when a scenario's first phase begins, so that the shards of a
// sharded run begin together. The zero value begins it as soon as the
// scenario is set up. Lead, Timeout and Tolerance start at the shardsync
// Default constants when zero.
type Start struct {
	// At, when not zero, is the start of every scenario the Runner runs
	// (give it one): on the limiter's clock when the run knows its offset
	// to it before the traffic (Redis TIME, a declared offset, this host's
	// clock for instances without Redis), mapped onto this host's clock
	// through that offset; on this host's clock otherwise, or when OnHost.
	At     time.Time
	OnHost bool
	// Barrier makes the shards of the run meet before each scenario at a
	// barrier in the scenario's Redis (shardsync.Barrier), under the run's
	// id, and begin at the start the last to arrive fixes on Redis's
	// clock, mapped onto this host's through the offset to it. It needs
	// Options.Shard (and so Options.RunID) and a Redis the shards share.
	Barrier bool
	// Lead and Timeout are the barrier's (shardsync.Barrier).
	Lead, Timeout time.Duration
	// Tolerance is how late after the start the first phase may begin; a
	// scenario that reaches its start later fails instead of running late.
	Tolerance time.Duration
}

// fixed reports whether s fixes a start at all.
func (s Start) fixed() bool { return !s.At.IsZero() || s.Barrier }

// startPoint is a start a scenario's first phase waits for.
type startPoint struct {
	// wall is the start on the wall clock (HostClock).
	wall time.Time
	// rec is its record; Late is filled in when the phase begins.
	rec *runrecord.AgreedStart
	// hint says how to avoid missing it.
	hint string
}

// agreeStart returns the start the first phase of sc waits for, or nil when
// it begins at once: Start.At mapped onto the wall clock, or the barrier's
// start. rdb is the scenario's Redis (nil without one); out holds the
// offset to the limiter's clock as measured (out.offset) and its source
// ("" when it is not known before the traffic).
func (r *Runner) agreeStart(ctx context.Context, sc *scenarios.Scenario, rdb *redis.Client, out *Outcome) (*startPoint, error) {
	s := r.opts.Start
	if !s.fixed() {
		return nil, nil
	}
	tol := s.Tolerance
	if tol == 0 {
		tol = shardsync.DefaultTolerance
	}
	if !s.Barrier {
		p := &startPoint{wall: s.At, rec: &runrecord.AgreedStart{By: runrecord.StartAt, At: s.At.UTC(), Clock: runrecord.StartClockHost, Tolerance: tol},
			hint: "launch the run earlier or give a later --start-at"}
		if out.Shard != nil {
			p.hint = "launch the shards earlier or give a later --start-at"
		}
		if !s.OnHost && out.ClockSource != "" {
			p.wall, p.rec.Clock = s.At.Add(-out.offset), runrecord.StartClockLimiter
		}
		return p, nil
	}
	shard := out.Shard
	switch {
	case shard == nil:
		return nil, errors.New("a barrier is where the shards of a sharded run meet: give the shard (--shard I/N)")
	case rdb == nil:
		return nil, fmt.Errorf("shard %s: the scenario has no Redis for the shards to meet in: give its redis.url, or --redis-provider external --redis-url URL", shard)
	case out.Redis.Provider != string(scenarios.ProviderExternal):
		return nil, fmt.Errorf("shard %s: the shards meet in the Redis they share, and this one's (provider %s) is its own: give --redis-provider external --redis-url URL, or the scenario's redis.provider: external and redis.url",
			shard, out.Redis.Provider)
	}
	// The barrier's start is on Redis's clock: the offset to it is the
	// limiter's when the limiter decides by Redis TIME, else its own.
	offset := out.offset
	if out.ClockSource != history.ClockRedisTime {
		var err error
		if offset, _, err = r.opts.Clock.MeasureOffset(ctx, func(ctx context.Context) (time.Time, error) {
			return rdb.Time(ctx).Result()
		}); err != nil {
			return nil, err
		}
	}
	b := &shardsync.Barrier{Redis: rdb, Key: shardsync.Key(string(r.opts.RunID), sc.Name), Shard: *shard, Lead: s.Lead, Timeout: s.Timeout}
	r.logf("%s: shard %s waiting at barrier %s for the other %s", sc.Name, shard, b.Key, checker.Count(shard.Count-1, "shards"))
	at, err := b.Meet(ctx)
	if err != nil {
		return nil, err
	}
	return &startPoint{wall: at.Add(-offset), rec: &runrecord.AgreedStart{By: runrecord.StartBarrier, At: at, Clock: runrecord.StartClockLimiter, Barrier: b.Key, Tolerance: tol},
		hint: "give a longer --barrier-lead; a shard started again after the others began needs a run of its own (another --run-id)"}, nil
}

// wait waits for p on the wall clock, for the run of out, and returns the moment the first
// phase may begin (a reading of time.Now), having recorded how late it is;
// a start reached more than the tolerance late is an error that says by
// how much and how to avoid it.
func (r *Runner) wait(ctx context.Context, sc *scenarios.Scenario, p *startPoint, out *Outcome) (time.Time, error) {
	if d := p.wall.Sub(r.opts.Clock.Now()); d > 0 {
		r.logf("%s: starting at %s (%s clock), in %v", sc.Name, p.rec.At.Format(time.RFC3339Nano), p.rec.Clock, d.Round(time.Millisecond))
	}
	err := shardsync.Wait(ctx, r.opts.Clock.Now, p.wall, p.rec.Tolerance)
	now := time.Now()
	if le := (*shardsync.LateError)(nil); errors.As(err, &le) {
		// The start as it was agreed, on its own clock.
		return time.Time{}, fmt.Errorf("%s %w: %s", self(out), &shardsync.LateError{At: p.rec.At, Late: le.Late, Tolerance: le.Tolerance}, p.hint)
	}
	if err != nil {
		return time.Time{}, err
	}
	p.rec.Late = r.opts.Clock.Wall(now).Sub(p.wall)
	return now, nil
}

// self names the run of out in a message: "shard 2/3" of a sharded run,
// else "this run".
func self(out *Outcome) string {
	if out.Shard == nil {
		return "this run"
	}
	return "shard " + out.Shard.String()
}
