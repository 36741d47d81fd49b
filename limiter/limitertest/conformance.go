package limitertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// Factory returns a fresh, empty Limiter whose decisions read time from clock.
type Factory func(t *testing.T, clock func() time.Time) limiter.Limiter

// step is one request on a timeline and the decision it must get. cost 0 is
// a Peek. Every expected value was worked out by hand from the algorithm's
// definition (see the comments on each table), not taken from a run.
type step struct {
	at         time.Duration // offset from T0
	cost       int64
	allowed    bool
	remaining  int64
	resetAfter time.Duration
	retryAfter time.Duration
	delay      time.Duration
}

type table struct {
	name   string
	limits []limiter.Limit
	steps  []step
}

const (
	ms = time.Millisecond
	s  = time.Second
)

// bucketSteps holds for TokenBucket, GCRA and LeakyBucket at 10/s, burst 5:
// the emission interval is 100 ms and a full bucket refills in 500 ms. The
// three admit identically (GCRA is the token bucket's virtual-scheduling
// form); LeakyBucket adds the queueing delay given by delays.
func bucketSteps(delays bool) []step {
	d := func(x time.Duration) time.Duration {
		if delays {
			return x
		}
		return 0
	}
	return []step{
		{at: 0, cost: 1, allowed: true, remaining: 4, resetAfter: 100 * ms},
		{at: 0, cost: 4, allowed: true, remaining: 0, resetAfter: 500 * ms, delay: d(100 * ms)},
		// Empty: the next token arrives 100 ms after the last refill.
		{at: 0, cost: 1, remaining: 0, resetAfter: 500 * ms, retryAfter: 100 * ms},
		{at: 50 * ms, cost: 1, remaining: 0, resetAfter: 450 * ms, retryAfter: 50 * ms},
		// Exactly at Retry-After: admitted; the queue ahead is 400 ms long.
		{at: 100 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 500 * ms, delay: d(400 * ms)},
		// 150 ms later one token is back and half of the next; two are asked.
		{at: 250 * ms, cost: 2, remaining: 1, resetAfter: 350 * ms, retryAfter: 50 * ms},
		// A rejected request consumed nothing: one token is still there.
		{at: 250 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 450 * ms, delay: d(350 * ms)},
		// Long idle refills to the burst, never above.
		{at: 10 * s, cost: 0, allowed: true, remaining: 5},
		{at: 10 * s, cost: 5, allowed: true, remaining: 0, resetAfter: 500 * ms},
		{at: 400 * 24 * time.Hour, cost: 0, allowed: true, remaining: 5},
	}
}

func tables() []table {
	bucket := func(alg limiter.Algorithm) limiter.Limit {
		return limiter.Limit{Algorithm: alg, Rate: 10, Period: s, Burst: 5}
	}
	fixed := limiter.Window(limiter.FixedWindow, 3, 10*s)
	swl := limiter.Window(limiter.SlidingWindowLog, 2, time.Minute)
	swc := limiter.Window(limiter.SlidingWindowCounter, 10, 10*s)
	edge := func(alg limiter.Algorithm) limiter.Limit { return limiter.Window(alg, 5, 5*s) }
	return []table{
		{name: "token_bucket", limits: []limiter.Limit{bucket(limiter.TokenBucket)}, steps: bucketSteps(false)},
		{name: "gcra", limits: []limiter.Limit{bucket(limiter.GCRA)}, steps: bucketSteps(false)},
		{name: "leaky_bucket", limits: []limiter.Limit{bucket(limiter.LeakyBucket)}, steps: bucketSteps(true)},
		{
			// 3 per 10 s; windows start at multiples of 10 s since the epoch.
			name: "fixed_window", limits: []limiter.Limit{fixed},
			steps: []step{
				{at: 0, cost: 1, allowed: true, remaining: 2, resetAfter: 10 * s},
				{at: 1 * s, cost: 2, allowed: true, remaining: 0, resetAfter: 9 * s},
				{at: 2 * s, cost: 1, remaining: 0, resetAfter: 8 * s, retryAfter: 8 * s},
				{at: 9999 * ms, cost: 1, remaining: 0, resetAfter: 1 * ms, retryAfter: 1 * ms},
				// A new window: a fresh count, never the old one carried over (C3).
				{at: 10 * s, cost: 1, allowed: true, remaining: 2, resetAfter: 10 * s},
				{at: 10 * s, cost: 0, allowed: true, remaining: 2, resetAfter: 10 * s},
				{at: 35 * s, cost: 3, allowed: true, remaining: 0, resetAfter: 5 * s},
			},
		},
		{
			// The fixed window's documented 2x burst: 5 at the end of one
			// window and 5 at the start of the next, 1 ms apart.
			name: "fixed_window_edge_burst", limits: []limiter.Limit{edge(limiter.FixedWindow)},
			steps: []step{
				{at: 4999 * ms, cost: 5, allowed: true, remaining: 0, resetAfter: 1 * ms},
				{at: 5 * s, cost: 5, allowed: true, remaining: 0, resetAfter: 5 * s},
			},
		},
		{
			// 2 per minute (C4): Retry-After comes from the oldest entry.
			name: "sliding_window_log", limits: []limiter.Limit{swl},
			steps: []step{
				{at: 0, cost: 1, allowed: true, remaining: 1, resetAfter: 60 * s},
				{at: 10 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 60 * s},
				{at: 20 * s, cost: 1, remaining: 0, resetAfter: 50 * s, retryAfter: 40 * s},
				// The entry at 0 stops counting exactly 60 s later.
				{at: 60 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 60 * s},
				{at: 69999 * ms, cost: 1, remaining: 0, resetAfter: 50001 * ms, retryAfter: 1 * ms},
				{at: 70 * s, cost: 0, allowed: true, remaining: 1, resetAfter: 50 * s},
			},
		},
		{
			// At a window edge the log refuses the second burst until the
			// first has slid out.
			name: "sliding_window_log_edge_burst", limits: []limiter.Limit{edge(limiter.SlidingWindowLog)},
			steps: []step{
				{at: 4999 * ms, cost: 5, allowed: true, remaining: 0, resetAfter: 5 * s},
				{at: 5 * s, cost: 5, remaining: 0, resetAfter: 4999 * ms, retryAfter: 4999 * ms},
				{at: 9999 * ms, cost: 5, allowed: true, remaining: 0, resetAfter: 5 * s},
			},
		},
		{
			// 5 per 10 s at cost 3: the wait is for the entry holding the excess.
			name: "sliding_window_log_cost", limits: []limiter.Limit{limiter.Window(limiter.SlidingWindowLog, 5, 10*s)},
			steps: []step{
				{at: 0, cost: 3, allowed: true, remaining: 2, resetAfter: 10 * s},
				{at: 1 * s, cost: 3, remaining: 2, resetAfter: 9 * s, retryAfter: 9 * s},
				{at: 1 * s, cost: 2, allowed: true, remaining: 0, resetAfter: 10 * s},
				{at: 10 * s, cost: 3, allowed: true, remaining: 0, resetAfter: 10 * s},
			},
		},
		{
			// 10 per 10 s. The estimate is prev·(10 s − elapsed)/10 s + curr.
			name: "sliding_window_counter", limits: []limiter.Limit{swc},
			steps: []step{
				{at: 0, cost: 6, allowed: true, remaining: 4, resetAfter: 20 * s},
				{at: 9 * s, cost: 4, allowed: true, remaining: 0, resetAfter: 11 * s},
				// New window: prev = 10 weighs fully; 1 more fits once 1 s of it slid out.
				{at: 10 * s, cost: 1, remaining: 0, resetAfter: 10 * s, retryAfter: 1 * s},
				{at: 11 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 19 * s},
				// Estimate 10·5/10 + 1 = 6: 4 remain.
				{at: 15 * s, cost: 0, allowed: true, remaining: 4, resetAfter: 15 * s},
				{at: 15 * s, cost: 4, allowed: true, remaining: 0, resetAfter: 15 * s},
				// 10·(10−e)/10 + 5 + 1 ≤ 10 from e = 6 s: 1 s from now.
				{at: 15 * s, cost: 1, remaining: 0, resetAfter: 15 * s, retryAfter: 1 * s},
				// Two windows later nothing weighs any more.
				{at: 30 * s, cost: 1, allowed: true, remaining: 9, resetAfter: 20 * s},
			},
		},
		{
			// At a window edge the counter refuses the second burst: the
			// previous window's 5 weigh fully at its start.
			name: "sliding_window_counter_edge_burst", limits: []limiter.Limit{edge(limiter.SlidingWindowCounter)},
			steps: []step{
				{at: 4999 * ms, cost: 5, allowed: true, remaining: 0, resetAfter: 5001 * ms},
				{at: 5 * s, cost: 5, remaining: 0, resetAfter: 5 * s, retryAfter: 5 * s},
				// Half-way: 5·2.5/5 = 2.5 weigh, so 2 fit.
				{at: 7500 * ms, cost: 2, allowed: true, remaining: 0, resetAfter: 7500 * ms},
			},
		},
		{
			// C2: fixed window, 5 per 5 s: five requests in 400 ms, the sixth rejected.
			name: "C2_off_by_one", limits: []limiter.Limit{limiter.Window(limiter.FixedWindow, 5, 5*s)},
			steps: []step{
				{at: 0, cost: 1, allowed: true, remaining: 4, resetAfter: 5 * s},
				{at: 100 * ms, cost: 1, allowed: true, remaining: 3, resetAfter: 4900 * ms},
				{at: 200 * ms, cost: 1, allowed: true, remaining: 2, resetAfter: 4800 * ms},
				{at: 300 * ms, cost: 1, allowed: true, remaining: 1, resetAfter: 4700 * ms},
				{at: 400 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 4600 * ms},
				{at: 400 * ms, cost: 1, remaining: 0, resetAfter: 4600 * ms, retryAfter: 4600 * ms},
			},
		},
		{
			// C3: a request 0.5 ms before the window ends still counts in
			// it; the first request of the next window starts from 1.
			name: "C3_window_lifecycle", limits: []limiter.Limit{fixed},
			steps: []step{
				{at: 0, cost: 2, allowed: true, remaining: 1, resetAfter: 10 * s},
				{at: 9999500 * time.Microsecond, cost: 1, allowed: true, remaining: 0, resetAfter: 500 * time.Microsecond},
				{at: 10 * s, cost: 1, allowed: true, remaining: 2, resetAfter: 10 * s},
			},
		},
		{
			// C7: fixed window, 2 per 6 s, one request every 5 s for a
			// minute: a steady client within budget is never locked out.
			name: "C7_steady_client", limits: []limiter.Limit{limiter.Window(limiter.FixedWindow, 2, 6*s)},
			steps: steadyClient(),
		},
		{
			// Huge budgets and long windows: no overflow.
			name: "huge_fixed_window", limits: []limiter.Limit{limiter.Window(limiter.FixedWindow, 1e12, 24*time.Hour)},
			steps: []step{
				{at: 0, cost: 1e12, allowed: true, remaining: 0, resetAfter: 24 * time.Hour},
				{at: time.Hour, cost: 1, remaining: 0, resetAfter: 23 * time.Hour, retryAfter: 23 * time.Hour},
				{at: 24 * time.Hour, cost: 1, allowed: true, remaining: 1e12 - 1, resetAfter: 24 * time.Hour},
			},
		},
		{
			// A monthly quota as a token bucket: 1e6 per 720 h refills one
			// unit every 2.592 s.
			name: "huge_token_bucket", limits: []limiter.Limit{{Algorithm: limiter.TokenBucket, Rate: 1e6, Period: 720 * time.Hour, Burst: 1e6}},
			steps: []step{
				{at: 0, cost: 1e6, allowed: true, remaining: 0, resetAfter: 720 * time.Hour},
				{at: 2591 * ms, cost: 1, remaining: 0, resetAfter: 720*time.Hour - 2591*ms, retryAfter: 1 * ms},
				{at: 2592 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 720 * time.Hour},
			},
		},
		{
			// Tiers, all-or-nothing: a bucket of 1/s, burst 2, and a quota
			// of 5 per 10 s. The bucket's rejections must not charge the
			// quota: if they did, the quota would be spent by t0+1s.
			name: "tiers", limits: []limiter.Limit{{Algorithm: limiter.GCRA, Rate: 1, Period: s, Burst: 2}, limiter.Window(limiter.FixedWindow, 5, 10*s)},
			steps: []step{
				{at: 0, cost: 1, allowed: true, remaining: 1, resetAfter: 1 * s},
				{at: 0, cost: 1, allowed: true, remaining: 0, resetAfter: 2 * s},
				{at: 0, cost: 1, remaining: 0, resetAfter: 2 * s, retryAfter: 1 * s},
				{at: 0, cost: 1, remaining: 0, resetAfter: 2 * s, retryAfter: 1 * s},
				{at: 1 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 2 * s},
				// Equal remaining: the limit with the longer reset speaks.
				{at: 3 * s, cost: 1, allowed: true, remaining: 1, resetAfter: 7 * s},
				{at: 3 * s, cost: 1, allowed: true, remaining: 0, resetAfter: 7 * s},
				// Both reject: the longest wait wins.
				{at: 3 * s, cost: 1, remaining: 0, resetAfter: 7 * s, retryAfter: 7 * s},
				{at: 3 * s, cost: 0, remaining: 0, resetAfter: 7 * s, retryAfter: 7 * s},
			},
		},
	}
}

// steadyClient is C7's timeline: every request admitted. Windows are
// [0,6), [6,12), ...: a window holds at most two of the 5 s-spaced requests.
func steadyClient() []step {
	var steps []step
	for at := time.Duration(0); at <= time.Minute; at += 5 * s {
		windowEnd := (at/(6*s) + 1) * 6 * s
		used := int64(0)
		for prev := at - 5*s; prev >= 0 && prev >= windowEnd-6*s; prev -= 5 * s {
			used++
		}
		steps = append(steps, step{at: at, cost: 1, allowed: true, remaining: 2 - used - 1, resetAfter: windowEnd - at})
	}
	return steps
}

// Run runs the conformance suite against the stores newLimiter makes.
func Run(t *testing.T, newLimiter Factory) {
	t.Run("tables", func(t *testing.T) { runTables(t, newLimiter, tables()) })
	t.Run("clock_steps", func(t *testing.T) {
		runTables(t, newLimiter, clockStepTables())
		t.Run("never_locks_out", func(t *testing.T) { backwardStepNeverLocksOut(t, newLimiter) })
		t.Run("forward_refills", func(t *testing.T) { forwardStepRefills(t, newLimiter) })
		t.Run("tiers", func(t *testing.T) { tiersStepBack(t, newLimiter) })
	})
	t.Run("peek_does_not_consume", func(t *testing.T) { peekDoesNotConsume(t, newLimiter) })
	t.Run("reset_restores", func(t *testing.T) { resetRestores(t, newLimiter) })
	t.Run("retry_at_retry_after", func(t *testing.T) { retryAtRetryAfter(t, newLimiter) })
	t.Run("invalid_input", func(t *testing.T) { invalidInput(t, newLimiter) })
	t.Run("keys_are_independent", func(t *testing.T) { keysAreIndependent(t, newLimiter) })
	t.Run("C11_extreme_rate", func(t *testing.T) { extremeRate(t, newLimiter) })
}

// runTables walks each table's timeline on a fresh limiter of its own. A
// step's time may lie before the previous one's: the clock steps back.
func runTables(t *testing.T, newLimiter Factory, tabs []table) {
	for _, tc := range tabs {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock(T0)
			l := newLimiter(t, clock.Now)
			key := "conformance-" + tc.name
			for i, st := range tc.steps {
				clock.Set(T0.Add(st.at))
				d, err := decideStep(l, key, st.cost, tc.limits)
				if err != nil {
					t.Fatalf("step %d (t0+%v, cost %d): %v", i, st.at, st.cost, err)
				}
				checkStep(t, i, st, d)
			}
		})
	}
}

func decideStep(l limiter.Limiter, key string, cost int64, limits []limiter.Limit) (limiter.Decision, error) {
	if cost == 0 {
		return l.Peek(context.Background(), key, limits...)
	}
	return l.AllowN(context.Background(), key, cost, limits...)
}

func checkStep(t *testing.T, i int, want step, d limiter.Decision) {
	t.Helper()
	at := fmt.Sprintf("step %d (t0+%v, cost %d)", i, want.at, want.cost)
	if got := d.Allowed; got != want.allowed {
		t.Errorf("%s: Allowed = %v, want %v (decision %+v)", at, got, want.allowed, d)
	}
	if got := d.Remaining; got != want.remaining {
		t.Errorf("%s: Remaining = %d, want %d", at, got, want.remaining)
	}
	if got := d.ResetAfter; got != want.resetAfter {
		t.Errorf("%s: ResetAfter = %v, want %v", at, got, want.resetAfter)
	}
	if got := d.RetryAfter; got != want.retryAfter {
		t.Errorf("%s: RetryAfter = %v, want %v", at, got, want.retryAfter)
	}
	if got := d.Delay; got != want.delay {
		t.Errorf("%s: Delay = %v, want %v", at, got, want.delay)
	}
	wantSeconds := int64(0)
	if !want.allowed {
		wantSeconds = max(int64((want.retryAfter+s-1)/s), 1)
	}
	if got := d.RetryAfterSeconds(); got != wantSeconds {
		t.Errorf("%s: RetryAfterSeconds = %d, want %d", at, got, wantSeconds)
	}
}

// everyAlgorithm returns one limit per algorithm with capacity 3.
func everyAlgorithm() []limiter.Limit {
	var ls []limiter.Limit
	for _, alg := range limiter.Algorithms {
		if alg.IsWindow() {
			ls = append(ls, limiter.Window(alg, 3, 10*s))
		} else {
			ls = append(ls, limiter.Limit{Algorithm: alg, Rate: 1, Period: s, Burst: 3})
		}
	}
	return ls
}

func peekDoesNotConsume(t *testing.T, newLimiter Factory) {
	for _, l := range everyAlgorithm() {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			clock := NewClock(T0)
			lim := newLimiter(t, clock.Now)
			ctx := context.Background()
			mustAllow(t, lim, "peek", 1, l, true)
			for range 3 {
				d, err := lim.Peek(ctx, "peek", l)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := d.Remaining, int64(2); got != want || !d.Allowed {
					t.Fatalf("Peek: Remaining = %d, Allowed = %v; want %d, true", got, d.Allowed, want)
				}
			}
			mustAllow(t, lim, "peek", 2, l, true)
			d, err := lim.Peek(ctx, "peek", l)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 {
				t.Fatalf("Peek on an empty budget = %+v, want rejected with Remaining 0 and a RetryAfter", d)
			}
		})
	}
}

func resetRestores(t *testing.T, newLimiter Factory) {
	for _, l := range everyAlgorithm() {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			clock := NewClock(T0)
			lim := newLimiter(t, clock.Now)
			mustAllow(t, lim, "reset", 3, l, true)
			mustAllow(t, lim, "reset", 1, l, false)
			if err := lim.Reset(context.Background(), "reset", l); err != nil {
				t.Fatal(err)
			}
			if d := mustAllow(t, lim, "reset", 1, l, true); d.Remaining != 2 {
				t.Fatalf("after Reset: Remaining = %d, want 2", d.Remaining)
			}
		})
	}
}

// retryAtRetryAfter is C5 for every algorithm: exhaust the key, then keep
// retrying; while rejected, Retry-After is between 1 s and two windows, and a
// retry exactly RetryAfter later is admitted.
func retryAtRetryAfter(t *testing.T, newLimiter Factory) {
	for _, l := range everyAlgorithm() {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			clock := NewClock(T0.Add(1234 * ms))
			lim := newLimiter(t, clock.Now)
			for round := range 5 {
				for {
					d := allow(t, lim, "retry", 1, l)
					if !d.Allowed {
						break
					}
				}
				for probe := 0; ; probe++ {
					d := allow(t, lim, "retry", 1, l)
					if d.Allowed {
						if probe == 0 {
							t.Fatalf("round %d: admitted right after a rejection at %v", round, clock.Now())
						}
						break
					}
					if sec := d.RetryAfterSeconds(); sec < 1 || sec > 20 {
						t.Fatalf("round %d: RetryAfterSeconds = %d, want 1..20 (two windows)", round, sec)
					}
					if probe > 0 {
						t.Fatalf("round %d: rejected again exactly RetryAfter later, at %v: %+v", round, clock.Now(), d)
					}
					clock.Advance(d.RetryAfter)
				}
				clock.Advance(700 * ms)
			}
		})
	}
}

func invalidInput(t *testing.T, newLimiter Factory) {
	clock := NewClock(T0)
	lim := newLimiter(t, clock.Now)
	ctx := context.Background()
	good := limiter.PerSecond(1, 3)
	cases := []struct {
		name   string
		cost   int64
		limits []limiter.Limit
		want   error
	}{
		{"cost above capacity", 4, []limiter.Limit{good}, limiter.ErrCostExceedsCapacity},
		{"cost zero", 0, []limiter.Limit{good}, limiter.ErrInvalidCost},
		{"negative cost", -1, []limiter.Limit{good}, limiter.ErrInvalidCost},
		{"no limits", 1, nil, limiter.ErrInvalidCost},
		{"zero rate", 1, []limiter.Limit{{Algorithm: limiter.GCRA, Period: s, Burst: 1}}, limiter.ErrInvalidLimit},
		{"sub-millisecond window", 1, []limiter.Limit{limiter.Window(limiter.FixedWindow, 1, time.Microsecond)}, limiter.ErrInvalidLimit},
		{"second limit invalid", 1, []limiter.Limit{good, {Algorithm: "token-bucket", Rate: 1, Period: s, Burst: 1}}, limiter.ErrInvalidLimit},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			_, err := lim.AllowN(ctx, "invalid", tc.cost, tc.limits...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("AllowN error = %v, want %v", err, tc.want)
			}
		})
	}
	// Nothing above touched the good limit's state.
	if d := mustAllow(t, lim, "invalid", 3, good, true); d.Remaining != 0 {
		t.Fatalf("after invalid calls: Remaining = %d, want 0 after taking the whole burst", d.Remaining)
	}
}

func keysAreIndependent(t *testing.T, newLimiter Factory) {
	clock := NewClock(T0)
	lim := newLimiter(t, clock.Now)
	l := limiter.Window(limiter.FixedWindow, 2, time.Minute)
	other := l
	other.Name = "other-policy"
	mustAllow(t, lim, "alice", 2, l, true)
	mustAllow(t, lim, "alice", 1, l, false)
	mustAllow(t, lim, "bob", 2, l, true)
	mustAllow(t, lim, "alice", 2, other, true) // a policy of its own name keeps its own count
}

// extremeRate is C11: a token bucket of 1e-10 per second, burst 1, admits
// once and then asks for exactly 1e10 seconds, not a wrapped-around value.
func extremeRate(t *testing.T, newLimiter Factory) {
	clock := NewClock(T0)
	lim := newLimiter(t, clock.Now)
	l := limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 1e-10, Period: s, Burst: 1}
	mustAllow(t, lim, "extreme", 1, l, true)
	d := mustAllow(t, lim, "extreme", 1, l, false)
	if got, want := d.RetryAfterSeconds(), int64(1e10); got != want {
		t.Fatalf("RetryAfterSeconds = %d, want %d", got, want)
	}
	if got, want := d.RetryAfter, limiter.MaxWait; got != want {
		t.Fatalf("RetryAfter = %v, want the saturated %v", got, want)
	}
	if got, want := d.ResetAfterSeconds(), int64(1e10); got != want {
		t.Fatalf("ResetAfterSeconds = %d, want %d", got, want)
	}
}

func allow(t *testing.T, l limiter.Limiter, key string, n int64, limit limiter.Limit) limiter.Decision {
	t.Helper()
	d, err := l.AllowN(context.Background(), key, n, limit)
	if err != nil {
		t.Fatalf("AllowN(%q, %d, %v): %v", key, n, limit, err)
	}
	return d
}

func mustAllow(t *testing.T, l limiter.Limiter, key string, n int64, limit limiter.Limit, want bool) limiter.Decision {
	t.Helper()
	d := allow(t, l, key, n, limit)
	if d.Allowed != want {
		t.Fatalf("AllowN(%q, %d, %v): Allowed = %v, want %v (%+v)", key, n, limit, d.Allowed, want, d)
	}
	return d
}

// RunConcurrency sends 1,000 requests for one key from 100 goroutines spread
// over limiters (several clients of one store) for every algorithm with
// capacity 10 and a negligible rate, and requires exactly 10 admitted. Then
// it replays case C1: GCRA, burst 5 at 5/s, 50 requests at one instant.
// The limiters' clock, when they take one, is frozen at T0 plus an hour.
func RunConcurrency(t *testing.T, newLimiters func(t *testing.T, clock func() time.Time) []limiter.Limiter) {
	clock := NewClock(T0.Add(time.Hour))
	limiters := newLimiters(t, clock.Now)
	cases := []struct {
		name     string
		limit    limiter.Limit
		requests int
		want     int64
	}{
		{"C1_gcra_burst_5", limiter.Limit{Algorithm: limiter.GCRA, Rate: 5, Period: s, Burst: 5}, 50, 5},
	}
	for _, alg := range limiter.Algorithms {
		l := limiter.Limit{Algorithm: alg, Rate: 1e-6, Period: s, Burst: 10}
		if alg.IsWindow() {
			l = limiter.Window(alg, 10, 24*time.Hour)
		}
		cases = append(cases, struct {
			name     string
			limit    limiter.Limit
			requests int
			want     int64
		}{string(alg), l, 1000, 10})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const workers = 100
			var (
				admitted atomic.Int64
				next     atomic.Int64
				wg       sync.WaitGroup
				errs     = make(chan error, workers)
				start    = make(chan struct{})
			)
			key := "concurrency-" + tc.name
			for w := range workers {
				lim := limiters[w%len(limiters)]
				wg.Go(func() {
					<-start
					for next.Add(1) <= int64(tc.requests) {
						d, err := lim.AllowN(context.Background(), key, 1, tc.limit)
						if err != nil {
							errs <- err
							return
						}
						if d.Allowed {
							admitted.Add(1)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("AllowN: %v", err)
			}
			if got := admitted.Load(); got != tc.want {
				t.Fatalf("admitted %d of %d concurrent requests, want exactly %d", got, tc.requests, tc.want)
			}
		})
	}
}
