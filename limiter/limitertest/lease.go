package limitertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// leaseStep is one LeaseN on the timeline and what it must return.
type leaseStep struct {
	at         time.Duration
	cost       int64
	allowed    bool
	remaining  int64
	resetAfter time.Duration
	retryAfter time.Duration
	granted    int64
	shift      time.Duration
}

// leaseSteps holds for a GCRA and a token bucket of 10/s, burst 10, lease
// 3 for 500 ms: T = 100 ms, τ = 1 s. Worked by hand from limiter/lease.go:
// a grant needs base = max(TAT, now) ≤ now + 500 ms and sets TAT to
// now + 500 ms + 3·T; its Remaining is g − n + ⌊shift/T⌋. The token bucket
// decides alike on its equivalent TAT.
var leaseSteps = []leaseStep{
	// Fresh key: base = now, shift 500 ms, TAT = 800 ms.
	{at: 0, cost: 1, allowed: true, remaining: 3 - 1 + 5, resetAfter: 800 * ms, granted: 3, shift: 500 * ms},
	// TAT 800 ms > now + 500 ms: decided plainly, TAT 900 ms.
	{at: 0, cost: 1, allowed: true, remaining: 1, resetAfter: 900 * ms},
	// Plainly rejected: 900 + 200 > 1000.
	{at: 0, cost: 2, remaining: 1, resetAfter: 900 * ms, retryAfter: 100 * ms},
	// TAT 900 ms = now + 500 ms: granted with no shift, TAT 1200 ms.
	{at: 400 * ms, cost: 1, allowed: true, remaining: 2, resetAfter: 800 * ms, granted: 3},
	{at: 400 * ms, cost: 1, allowed: true, remaining: 1, resetAfter: 900 * ms},
	// TAT 1300 ms > 1200 ms: plain, TAT 1400 ms.
	{at: 700 * ms, cost: 1, allowed: true, remaining: 3, resetAfter: 700 * ms},
	// TAT 1400 ms ≤ 1500 ms: granted, shift 100 ms, TAT 1800 ms.
	{at: 1000 * ms, cost: 1, allowed: true, remaining: 3, resetAfter: 800 * ms, granted: 3, shift: 100 * ms},
	// A cost of the lease's size or more is never leased: plain, TAT 2100 ms.
	{at: 1500 * ms, cost: 3, allowed: true, remaining: 4, resetAfter: 600 * ms},
}

// leaseEnd is the counterexample to a naive lease: a lease of 3 on a full
// bucket at 0, then at 500 ms, when a lease charged at its start would see
// the bucket full again, the store must admit only B − 3 = 7 more units,
// so that the 3 leased units spent at 500 ms and the 7 make the burst.
var leaseEnd = []leaseStep{
	{at: 0, cost: 1, allowed: true, remaining: 7, resetAfter: 800 * ms, granted: 3, shift: 500 * ms},
	{at: 500 * ms, cost: 8, remaining: 7, resetAfter: 300 * ms, retryAfter: 100 * ms},
	{at: 500 * ms, cost: 7, allowed: true, remaining: 0, resetAfter: 1000 * ms},
}

// RunLease runs the lease table against a store implementing
// limiter.Leaser, for a GCRA and a token bucket, and checks that a lease
// on another algorithm is refused as an invalid limit.
func RunLease(t *testing.T, newLimiter Factory) {
	for _, alg := range []limiter.Algorithm{limiter.GCRA, limiter.TokenBucket} {
		lim := limiter.Limit{Algorithm: alg, Rate: 10, Period: time.Second, Burst: 10, LeaseTokens: 3, LeaseFor: 500 * ms}
		for name, steps := range map[string][]leaseStep{"table": leaseSteps, "charged-at-end": leaseEnd} {
			t.Run(string(alg)+"/"+name, func(t *testing.T) {
				clock := NewClock(T0)
				l, ok := newLimiter(t, clock.Now).(limiter.Leaser)
				if !ok {
					t.Fatal("the store does not implement limiter.Leaser")
				}
				for i, st := range steps {
					clock.Set(T0.Add(st.at))
					d, g, err := l.LeaseN(context.Background(), "lease-key", st.cost, lim)
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					checkStep(t, i, step{at: st.at, cost: st.cost, allowed: st.allowed, remaining: st.remaining, resetAfter: st.resetAfter, retryAfter: st.retryAfter}, d)
					if g.Tokens != st.granted || g.Shift != st.shift {
						t.Errorf("step %d: grant = %+v, want %d tokens shifted %v", i, g, st.granted, st.shift)
					}
				}
			})
		}
	}
	t.Run("refused", func(t *testing.T) {
		l, _ := newLimiter(t, NewClock(T0).Now).(limiter.Leaser)
		if l == nil {
			t.Fatal("the store does not implement limiter.Leaser")
		}
		bad := limiter.Limit{Algorithm: limiter.LeakyBucket, Rate: 10, Period: time.Second, Burst: 10, LeaseTokens: 3, LeaseFor: 500 * ms}
		if _, _, err := l.LeaseN(context.Background(), "k", 1, bad); !errors.Is(err, limiter.ErrInvalidLimit) {
			t.Fatalf("LeaseN under a leaky bucket with a lease: %v, want ErrInvalidLimit", err)
		}
	})
}
