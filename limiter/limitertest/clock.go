// Package limitertest is the conformance suite every limiter.Limiter store
// must pass: one table of steps per algorithm on a fixed timeline, the field
// cases of rate limiters that shipped faults, and a concurrency test. Stores
// run it from their own tests:
//
//	func TestConformance(t *testing.T) {
//		limitertest.Run(t, func(t *testing.T, clock func() time.Time) limiter.Limiter {
//			return limiter.NewMemoryStore(limiter.WithClock(clock))
//		})
//	}
package limitertest

import (
	"sync/atomic"
	"time"
)

// T0 is the start of every timeline: midnight UTC, so windows of a second,
// a minute, an hour or a day all start exactly there.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock is a fake clock for tests, safe for concurrent use.
type Clock struct{ micros atomic.Int64 }

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.UnixMicro(c.micros.Load()) }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.micros.Store(t.UnixMicro()) }

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) { c.micros.Add(d.Microseconds()) }
