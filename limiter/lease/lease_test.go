package lease_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/lease"
	"github.com/rlbench/rlbench/limiter/limitertest"
)

const ms = time.Millisecond

// counting is a Leaser that counts the calls that reach it.
type counting struct {
	limiter.Leaser
	calls atomic.Int64
}

func (c *counting) LeaseN(ctx context.Context, key string, n int64, l limiter.Limit) (limiter.Decision, limiter.Grant, error) {
	c.calls.Add(1)
	return c.Leaser.LeaseN(ctx, key, n, l)
}

func (c *counting) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	c.calls.Add(1)
	return c.Leaser.AllowN(ctx, key, n, limits...)
}

// fixture is a lease.Limiter over a memory store, both on one fake clock
// (the store's reads it as wall time from T0, the Limiter as an offset).
type fixture struct {
	clock *limitertest.Clock
	store *counting
	lim   *lease.Limiter
}

func newFixture(opts ...lease.Option) *fixture {
	clock := limitertest.NewClock(limitertest.T0)
	store := &counting{Leaser: limiter.NewMemoryStore(limiter.WithClock(clock.Now))}
	opts = append([]lease.Option{lease.WithClock(func() time.Duration { return clock.Now().Sub(limitertest.T0) })}, opts...)
	return &fixture{clock: clock, store: store, lim: lease.New(store, opts...)}
}

// step is one request at an offset from T0 and what it must get, and
// whether it reached the store.
type step struct {
	at         time.Duration
	cost       int64
	allowed    bool
	remaining  int64
	resetAfter time.Duration
	retryAfter time.Duration
	store      bool
}

// 10/s, burst 10, lease 3 for 500 ms: T = 100 ms. The store's answers
// follow limitertest's lease table; local ones are worked from lease.go:
// Remaining = tokens left + ⌊min(shift, deadline − now)/T⌋, ResetAfter =
// the grant's ResetAfter less the time since, Retry-After = the store's
// less the time since its answer, plus (n − c)·T.
var gcraLease = limiter.Limit{Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 10, LeaseTokens: 3, LeaseFor: 500 * ms}

func TestLocalDecisions(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"grant-then-spend", []step{
			// Granted 3 (TAT 800 ms, shift 500 ms): 2 left locally.
			{at: 0, cost: 1, allowed: true, remaining: 7, resetAfter: 800 * ms, store: true},
			{at: 100 * ms, cost: 1, allowed: true, remaining: 1 + 4, resetAfter: 700 * ms},
			{at: 200 * ms, cost: 1, allowed: true, remaining: 0 + 3, resetAfter: 600 * ms},
			// Spent: the store again. TAT 800 ≤ 300 + 500: a new grant with
			// no shift, TAT 1100.
			{at: 300 * ms, cost: 1, allowed: true, remaining: 2, resetAfter: 800 * ms, store: true},
		}},
		{"expiry", []step{
			{at: 0, cost: 1, allowed: true, remaining: 7, resetAfter: 800 * ms, store: true},
			// Still within the lease at 499 ms: the kept shift is 1 ms, no unit.
			{at: 499 * ms, cost: 1, allowed: true, remaining: 1, resetAfter: 301 * ms},
			// At the deadline: the store. TAT 800 ≤ 1000: a new grant, shift
			// 200 ms, TAT 1300.
			{at: 500 * ms, cost: 1, allowed: true, remaining: 2 + 2, resetAfter: 800 * ms, store: true},
		}},
		{"larger-cost-than-left", []step{
			{at: 0, cost: 1, allowed: true, remaining: 7, resetAfter: 800 * ms, store: true},
			// 2 left, 3 asked: the store rejects (800 + 300 > 1000), and a
			// denial of cost 3 is not kept.
			{at: 0, cost: 3, remaining: 2, resetAfter: 800 * ms, retryAfter: 100 * ms, store: true},
			// The lease's 2 units are still this instance's.
			{at: 10 * ms, cost: 2, allowed: true, remaining: 0 + 4, resetAfter: 790 * ms},
			{at: 50 * ms, cost: 3, remaining: 2, resetAfter: 750 * ms, retryAfter: 50 * ms, store: true},
			// TAT 800 > 100 + 500: plain, 800 + 300 − 100 ≤ 1000.
			{at: 100 * ms, cost: 3, allowed: true, remaining: 0, resetAfter: 1000 * ms, store: true},
		}},
		{"deny-cache", []step{
			{at: 0, cost: 1, allowed: true, remaining: 7, resetAfter: 800 * ms, store: true},
			{at: 0, cost: 2, allowed: true, remaining: 0 + 5, resetAfter: 800 * ms},
			// No lease left; plain: TAT 1000.
			{at: 0, cost: 2, allowed: true, remaining: 0, resetAfter: 1000 * ms, store: true},
			// Rejected until 100 ms; the denial is kept.
			{at: 0, cost: 1, remaining: 0, resetAfter: 1000 * ms, retryAfter: 100 * ms, store: true},
			// Denied locally, with the store's wait less the time since, and
			// (n − 1)·T more for a cost of 3.
			{at: 50 * ms, cost: 1, remaining: 0, resetAfter: 950 * ms, retryAfter: 50 * ms},
			{at: 50 * ms, cost: 3, remaining: 0, resetAfter: 950 * ms, retryAfter: 250 * ms},
			// Over at 100 ms: the store admits, TAT 1100.
			{at: 100 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 1000 * ms, store: true},
			// 1100 + 200 − 100 > 1000: rejected, not kept (cost 2).
			{at: 100 * ms, cost: 2, remaining: 0, resetAfter: 1000 * ms, retryAfter: 200 * ms, store: true},
			{at: 150 * ms, cost: 2, remaining: 0, resetAfter: 950 * ms, retryAfter: 150 * ms, store: true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			for i, st := range tc.steps {
				f.clock.Set(limitertest.T0.Add(st.at))
				before := f.store.calls.Load()
				d, err := f.lim.AllowN(context.Background(), "k", st.cost, gcraLease)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got, want := f.store.calls.Load() > before, st.store; got != want {
					t.Errorf("step %d: reached the store = %v, want %v", i, got, want)
				}
				if got, want := d.Allowed, st.allowed; got != want {
					t.Fatalf("step %d: Allowed = %v, want %v (%+v)", i, got, want, d)
				}
				if got, want := d.Remaining, st.remaining; got != want {
					t.Errorf("step %d: Remaining = %d, want %d", i, got, want)
				}
				if got, want := d.ResetAfter, st.resetAfter; got != want {
					t.Errorf("step %d: ResetAfter = %v, want %v", i, got, want)
				}
				if got, want := d.RetryAfter, st.retryAfter; got != want {
					t.Errorf("step %d: RetryAfter = %v, want %v", i, got, want)
				}
			}
		})
	}
}

// TestNoLeaseOrSeveralLimits: requests the lease cannot serve go to the
// store unchanged, every time.
func TestNoLeaseOrSeveralLimits(t *testing.T) {
	f := newFixture()
	plain := gcraLease.WithoutLease()
	for i := range 5 {
		if _, err := f.lim.AllowN(context.Background(), "k", 1, plain); err != nil {
			t.Fatal(err)
		}
		if _, err := f.lim.AllowN(context.Background(), "k", 1, gcraLease, limiter.PerSecond(100, 100)); err != nil {
			t.Fatal(err)
		}
		if got, want := f.store.calls.Load(), int64(2*(i+1)); got != want {
			t.Fatalf("store calls = %d, want %d", got, want)
		}
	}
	if _, err := f.lim.AllowN(context.Background(), "k", 11, gcraLease); err == nil {
		t.Fatal("a cost above the burst was not refused")
	}
	if _, err := f.lim.AllowN(context.Background(), "k", 0, gcraLease); err == nil {
		t.Fatal("a cost of 0 was not refused")
	}
}

// TestBounded: the map never holds more than its bound, and dropping an
// entry only sends its key to the store.
func TestBounded(t *testing.T) {
	f := newFixture(lease.WithMaxEntries(64))
	for i := range 1000 {
		if _, err := f.lim.AllowN(context.Background(), fmt.Sprint("key-", i), 1, gcraLease); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.lim.Len(); got > 64 {
		t.Fatalf("Len = %d, want at most 64", got)
	}
	// After the leases end, finished entries go first, and a key seen
	// again is decided by the store.
	f.clock.Set(limitertest.T0.Add(time.Second))
	before := f.store.calls.Load()
	if _, err := f.lim.AllowN(context.Background(), "key-1", 1, gcraLease); err != nil {
		t.Fatal(err)
	}
	if f.store.calls.Load() != before+1 {
		t.Fatal("a key whose lease ended was decided locally")
	}
}

// TestResetForgets: Reset drops this instance's lease.
func TestResetForgets(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	if _, err := f.lim.AllowN(ctx, "k", 1, gcraLease); err != nil {
		t.Fatal(err)
	}
	if err := f.lim.Reset(ctx, "k", gcraLease); err != nil {
		t.Fatal(err)
	}
	before := f.store.calls.Load()
	if _, err := f.lim.AllowN(ctx, "k", 1, gcraLease); err != nil {
		t.Fatal(err)
	}
	if f.store.calls.Load() != before+1 {
		t.Fatal("a reset key was decided from its old lease")
	}
}

// TestSharedBudgetExact: three Limiters on one store, on one fake clock,
// take turns on one key under a tight budget in random order; over every
// interval the admitted units stay within B + (b − a)/T, the bound the
// proof in limiter/lease.go gives, and the store's leases actually serve
// most decisions locally.
func TestSharedBudgetExact(t *testing.T) {
	lim := limiter.Limit{Algorithm: limiter.GCRA, Rate: 100, Period: time.Second, Burst: 20, LeaseTokens: 5, LeaseFor: 100 * ms}
	clock := limitertest.NewClock(limitertest.T0)
	store := &counting{Leaser: limiter.NewMemoryStore(limiter.WithClock(clock.Now))}
	var lims []*lease.Limiter
	for range 3 {
		lims = append(lims, lease.New(store, lease.WithClock(func() time.Duration { return clock.Now().Sub(limitertest.T0) })))
	}
	var admitted []time.Duration
	seed := uint64(7)
	next := func() uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return seed >> 33 }
	const requests = 20000
	for i := range requests {
		clock.Advance(time.Duration(next()%700) * time.Microsecond) // about 2.9 offered per T
		d, err := lims[next()%3].AllowN(context.Background(), "hot", 1, lim)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted = append(admitted, clock.Now().Sub(limitertest.T0))
		}
		_ = i
	}
	T := 10 * ms
	for i := range admitted {
		for j := i; j < len(admitted); j++ {
			span := admitted[j] - admitted[i]
			if bound := lim.Burst + int64(span/T); int64(j-i+1) > bound {
				t.Fatalf("%d units admitted in [%v, %v], bound %d", j-i+1, admitted[i], admitted[j], bound)
			}
			if span > 2*time.Second {
				break
			}
		}
	}
	if calls := store.calls.Load(); calls > requests*2/3 {
		t.Errorf("%d of %d requests reached the store; leases served too few", calls, requests)
	}
	t.Logf("%d admitted, %d store calls of %d requests", len(admitted), store.calls.Load(), requests)
}
