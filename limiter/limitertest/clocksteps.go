package limitertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// The limiter's clock may step: NTP corrects a clock that ran fast, a VM is
// restored, Redis fails over to a replica whose clock is behind. The rule
// every algorithm and store keeps (see limiter/algorithms.go): per-key time
// never runs backwards. A decision at a time before the key's last write is
// taken as at that write, and the key's time then runs on from the new
// clock, so a client that had budget still has it, a rejected client's wait
// is the one it was told before the step (never longer), and that wait then
// elapses. A forward step is time passing: the budget refills.

// stepBucketSteps holds for TokenBucket, GCRA and LeakyBucket at 1/s,
// burst 3. The clock steps back 2 s after one admission, and 1 s more
// while the key is exhausted; then it jumps an hour forward. Before the
// step back, GCRA's TAT was 11 s; moved back with the clock it is 9 s.
func stepBucketSteps(delays bool) []step {
	d := func(x time.Duration) time.Duration {
		if delays {
			return x
		}
		return 0
	}
	return []step{
		{at: 10 * s, cost: 1, allowed: true, remaining: 2, resetAfter: 1 * s},
		// Back to 8 s: decided as at 10 s. The slot of this request is 1 s
		// after the previous one's, as it was before the step.
		{at: 8 * s, cost: 1, allowed: true, remaining: 1, resetAfter: 2 * s, delay: d(1 * s)},
		{at: 8 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 3 * s, delay: d(2 * s)},
		{at: 8 * s, cost: 1, remaining: 0, resetAfter: 3 * s, retryAfter: 1 * s},
		// Exhausted, back to 7 s: the wait is still 1 s, not 2 s ...
		{at: 7 * s, cost: 1, remaining: 0, resetAfter: 3 * s, retryAfter: 1 * s},
		// ... and 1 s later the request is admitted: no lockout.
		{at: 8 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 3 * s, delay: d(2 * s)},
		// An hour forward: full again, never above the burst.
		{at: time.Hour + 8*s, cost: 0, allowed: true, remaining: 3},
		{at: time.Hour + 8*s, cost: 3, allowed: true, remaining: 0, resetAfter: 3 * s},
	}
}

// clockStepTables are the step tables of every algorithm, and field case
// C12. Each expected value was worked out by hand from the rule above.
func clockStepTables() []table {
	bucket := func(alg limiter.Algorithm) limiter.Limit {
		return limiter.Limit{Algorithm: alg, Rate: 1, Period: s, Burst: 3}
	}
	window := func(alg limiter.Algorithm) limiter.Limit { return limiter.Window(alg, 3, 10*s) }
	c12 := func(alg limiter.Algorithm) table {
		return table{
			// C12: GCRA, 1/s, burst 2: admitted at 10 s (1 left); the clock
			// steps back to 8 s; one more request is admitted, as the token
			// bucket of the same policy admits it; the next waits 1 s, and
			// is admitted after it.
			name:   "C12_clock_steps_back/" + string(alg),
			limits: []limiter.Limit{{Algorithm: alg, Rate: 1, Period: s, Burst: 2}},
			steps: []step{
				{at: 10 * s, cost: 1, allowed: true, remaining: 1, resetAfter: 1 * s},
				{at: 8 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 2 * s},
				{at: 8 * s, cost: 1, remaining: 0, resetAfter: 2 * s, retryAfter: 1 * s},
				{at: 9 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 2 * s},
			},
		}
	}
	return []table{
		c12(limiter.GCRA),
		c12(limiter.TokenBucket),
		{name: "token_bucket", limits: []limiter.Limit{bucket(limiter.TokenBucket)}, steps: stepBucketSteps(false)},
		{name: "gcra", limits: []limiter.Limit{bucket(limiter.GCRA)}, steps: stepBucketSteps(false)},
		{name: "leaky_bucket", limits: []limiter.Limit{bucket(limiter.LeakyBucket)}, steps: stepBucketSteps(true)},
		{
			// 3 per 10 s; windows [10 s, 20 s), ... The window of the first
			// request, moved back 2 s and 2 s more, ends at 16 s: at 16 s the
			// aligned window [10 s, 20 s) starts a fresh count.
			name: "fixed_window", limits: []limiter.Limit{window(limiter.FixedWindow)},
			steps: []step{
				{at: 15 * s, cost: 1, allowed: true, remaining: 2, resetAfter: 5 * s},
				{at: 13 * s, cost: 1, allowed: true, remaining: 1, resetAfter: 5 * s},
				{at: 13 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 5 * s},
				{at: 13 * s, cost: 1, remaining: 0, resetAfter: 5 * s, retryAfter: 5 * s},
				{at: 11 * s, cost: 1, remaining: 0, resetAfter: 5 * s, retryAfter: 5 * s},
				{at: 16 * s, cost: 1, allowed: true, remaining: 2, resetAfter: 4 * s},
				{at: time.Hour + 16*s, cost: 0, allowed: true, remaining: 3},
				{at: time.Hour + 16*s, cost: 3, allowed: true, remaining: 0, resetAfter: 4 * s},
			},
		},
		{
			// 3 per 10 s. Entries move back with the clock: admitted at 15 s,
			// 13 s (= 15 s) and 14 s (= 16 s); back to 12 s they are at 11 s,
			// 11 s and 12 s, and the first two slide out at 21 s.
			name: "sliding_window_log", limits: []limiter.Limit{window(limiter.SlidingWindowLog)},
			steps: []step{
				{at: 15 * s, cost: 1, allowed: true, remaining: 2, resetAfter: 10 * s},
				{at: 13 * s, cost: 1, allowed: true, remaining: 1, resetAfter: 10 * s},
				{at: 14 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 10 * s},
				{at: 14 * s, cost: 1, remaining: 0, resetAfter: 10 * s, retryAfter: 9 * s},
				{at: 12 * s, cost: 1, remaining: 0, resetAfter: 10 * s, retryAfter: 9 * s},
				{at: 21 * s, cost: 1, allowed: true, remaining: 1, resetAfter: 10 * s},
				{at: time.Hour + 21*s, cost: 0, allowed: true, remaining: 3},
				{at: time.Hour + 21*s, cost: 3, allowed: true, remaining: 0, resetAfter: 10 * s},
			},
		},
		{
			// 3 per 10 s. The window [10 s, 20 s), moved back 2 s and 2 s
			// more, is [6 s, 16 s); 3 counted 5 s into it, one more fits
			// once 3·(10 s − e)/10 s + 1 ≤ 3 in the next window, [16 s,
			// 26 s): e ≥ 3.333334 s (rounded up to the microsecond). The key
			// keeps that phase until it is idle two windows.
			name: "sliding_window_counter", limits: []limiter.Limit{window(limiter.SlidingWindowCounter)},
			steps: []step{
				{at: 15 * s, cost: 1, allowed: true, remaining: 2, resetAfter: 15 * s},
				{at: 13 * s, cost: 1, allowed: true, remaining: 1, resetAfter: 15 * s},
				{at: 13 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 15 * s},
				{at: 13 * s, cost: 1, remaining: 0, resetAfter: 15 * s, retryAfter: 8333334 * time.Microsecond},
				{at: 11 * s, cost: 1, remaining: 0, resetAfter: 15 * s, retryAfter: 8333334 * time.Microsecond},
				{at: 19333334 * time.Microsecond, cost: 1, allowed: true, remaining: 0, resetAfter: 16666666 * time.Microsecond},
				{at: time.Hour + 5*s, cost: 0, allowed: true, remaining: 3},
				{at: time.Hour + 5*s, cost: 3, allowed: true, remaining: 0, resetAfter: 15 * s},
			},
		},
	}
}

// backSteps are the sizes of the backward steps the property tests try:
// within an emission interval, across one, across a window, and an hour.
var backSteps = []time.Duration{time.Millisecond, 700 * ms, 3 * s, 25 * s, time.Hour}

// backwardStepNeverLocksOut holds every algorithm to the rule for every
// step size: after a step back, a client that had budget is admitted with
// one unit less; an exhausted client's Retry-After and reset are no longer
// than before the step, and a request exactly Retry-After later is admitted.
func backwardStepNeverLocksOut(t *testing.T, newLimiter Factory) {
	for _, l := range everyAlgorithm() {
		for _, back := range backSteps {
			t.Run(fmt.Sprintf("%s/back_%v", l.Algorithm, back), func(t *testing.T) {
				start := T0.Add(time.Hour + 12345*ms) // inside a window, not at its start
				clock := NewClock(start)
				lim := newLimiter(t, clock.Now)
				d := mustAllow(t, lim, "step", 1, l, true)
				clock.Set(start.Add(-back))
				after := mustAllow(t, lim, "step", 1, l, true)
				if got, want := after.Remaining, d.Remaining-1; got != want {
					t.Fatalf("after a step back of %v: Remaining = %d, want %d (one less than %d before)", back, got, want, d.Remaining)
				}
				for after.Allowed {
					after = allow(t, lim, "step", 1, l)
				}
				before := after
				clock.Set(start.Add(-2 * back))
				d = mustAllow(t, lim, "step", 1, l, false)
				if d.RetryAfter > before.RetryAfter || d.ResetAfter > before.ResetAfter {
					t.Fatalf("exhausted, after a step back of %v: RetryAfter %v, ResetAfter %v; want at most %v, %v as before the step",
						back, d.RetryAfter, d.ResetAfter, before.RetryAfter, before.ResetAfter)
				}
				if d.Remaining != 0 {
					t.Fatalf("exhausted, after a step back of %v: Remaining = %d, want 0", back, d.Remaining)
				}
				clock.Advance(d.RetryAfter)
				mustAllow(t, lim, "step", 1, l, true)
			})
		}
	}
}

// forwardStepRefills: an exhausted key whose clock jumps a day forward has
// its whole budget again, and no more.
func forwardStepRefills(t *testing.T, newLimiter Factory) {
	for _, l := range everyAlgorithm() {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			clock := NewClock(T0.Add(12345 * ms))
			lim := newLimiter(t, clock.Now)
			mustAllow(t, lim, "forward", 3, l, true)
			mustAllow(t, lim, "forward", 1, l, false)
			clock.Advance(24 * time.Hour)
			d, err := lim.Peek(context.Background(), "forward", l)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed || d.Remaining != 3 || d.ResetAfter != 0 {
				t.Fatalf("a day later: Peek = %+v, want allowed, Remaining 3, ResetAfter 0", d)
			}
			mustAllow(t, lim, "forward", 3, l, true)
			mustAllow(t, lim, "forward", 1, l, false)
		})
	}
}

// tiersStepBack: a request under two limits rejected by one of them after
// the clock stepped back charges neither, but moves both back: the fixed
// window that admitted it then ends when it would have had the clock not
// stepped. GCRA 1/s, burst 2, and 5 per 10 s.
func tiersStepBack(t *testing.T, newLimiter Factory) {
	gcra := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: s, Burst: 2}
	fixed := limiter.Window(limiter.FixedWindow, 5, 10*s)
	clock := NewClock(T0)
	lim := newLimiter(t, clock.Now)
	steps := []step{
		{at: 10 * s, cost: 1, allowed: true, remaining: 1, resetAfter: 1 * s},
		// The window [10 s, 20 s) moves back to [8 s, 18 s).
		{at: 8 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 2 * s},
		{at: 8 * s, cost: 1, remaining: 0, resetAfter: 2 * s, retryAfter: 1 * s},
		// Rejected by GCRA; the window moves back to [7 s, 17 s) all the same.
		{at: 7 * s, cost: 1, remaining: 0, resetAfter: 2 * s, retryAfter: 1 * s},
		{at: 8 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 2 * s},
	}
	for i, st := range steps {
		clock.Set(T0.Add(st.at))
		d, err := lim.AllowN(context.Background(), "tiers", st.cost, gcra, fixed)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		checkStep(t, i, st, d)
	}
	d, err := lim.Peek(context.Background(), "tiers", fixed)
	if err != nil {
		t.Fatal(err)
	}
	checkStep(t, len(steps), step{at: 8 * s, allowed: true, remaining: 2, resetAfter: 9 * s}, d)
}
