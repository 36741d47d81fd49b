package runner

import (
	"context"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/traffic"
)

// HostClock is this host's wall clock as a run reads and records it. The
// zero value reads and records it as it is. Its fields tell a fiction, for
// drills and for tests of merged shards on one machine, each in this one
// place:
//
//   - Skew makes the run behave as if its wall clock ran Skew ahead (negative:
//     behind): the history's start, the measurement of the offset to the
//     limiter's clock and the wait for an agreed start read it Skew later.
//     A sound offset absorbs it: a request's time on the limiter's clock
//     (the history's start, plus the request's time, plus the offset) does
//     not move.
//   - Misreport is added to every recorded offset, its uncertainty left as
//     it is: each request's recorded limiter time is Misreport off while
//     claiming to lie within the uncertainty. It is the one way a check of
//     merged shards can report a failure that did not happen.
//   - UncertaintyFloor raises every recorded uncertainty to at least it, as
//     a shard on a slow link to the limiter's clock would measure it:
//     sound, only less sharp.
//
// Requests are still timed on the monotonic clock, which the fiction does
// not touch. A HostClock is a value, safe for concurrent use.
type HostClock struct {
	Skew, Misreport, UncertaintyFloor time.Duration
}

// Now reads the wall clock: time.Now() plus Skew, its monotonic reading
// moved with it, so that two readings of the clock differ exactly.
func (c HostClock) Now() time.Time { return c.Wall(time.Now()) }

// Wall returns what the wall clock read at t, a reading of time.Now().
func (c HostClock) Wall(t time.Time) time.Time { return t.Add(c.Skew) }

// MeasureOffset measures the limiter's clock minus the wall clock from
// remote's readings of the limiter's, as traffic.MeasureClockOffset does
// (offset ± uncertainty). Reading the local clock Skew ahead and reading
// the remote one Skew behind give the same offset; it does the latter.
// Errors are remote's, wrapped.
func (c HostClock) MeasureOffset(ctx context.Context, remote func(context.Context) (time.Time, error)) (offset, uncertainty time.Duration, err error) {
	return traffic.MeasureClockOffset(ctx, func(ctx context.Context) (time.Time, error) {
		t, err := remote(ctx)
		return t.Add(-c.Skew), err
	}, 0)
}

// Offset returns the offset to the wall clock of a limiter whose clock is
// d ahead of this host's true clock: a declared offset, or 0 for a limiter
// that reads this host's clock.
func (c HostClock) Offset(d time.Duration) time.Duration { return d - c.Skew }

// Process returns the offset to this process's true clock (time.Now) of a
// limiter whose clock is d ahead of the wall clock: the offset that paces
// requests against the limiter's clock (edge bursts).
func (c HostClock) Process(d time.Duration) time.Duration { return d + c.Skew }

// Record returns the offset and uncertainty a run records for an offset to
// the wall clock measured (or declared) as offset ± uncertainty.
func (c HostClock) Record(offset, uncertainty time.Duration) (time.Duration, time.Duration) {
	return offset + c.Misreport, max(uncertainty, c.UncertaintyFloor)
}

// Drill returns the run record's account of the fiction; nil for the zero
// HostClock.
func (c HostClock) Drill() *runrecord.ClockDrill {
	if c == (HostClock{}) {
		return nil
	}
	return &runrecord.ClockDrill{Skew: c.Skew, Misreport: c.Misreport, UncertaintyFloor: c.UncertaintyFloor}
}
