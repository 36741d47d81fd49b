package resilience

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/limitertest"
)

// flakyStore is a store whose health the test switches: healthy (an
// in-memory store), failing (an error at once) or hanging (until the
// context ends, as a paused Redis with a deadline-aware client does).
type flakyStore struct {
	mem   *limiter.MemoryStore
	mode  atomic.Value // "ok", "fail", "hang"
	calls atomic.Int64
	pings atomic.Int64
}

var errStoreDown = errors.New("connection refused")

func newFlakyStore(clock func() time.Time) *flakyStore {
	s := &flakyStore{mem: limiter.NewMemoryStore(limiter.WithClock(clock))}
	s.mode.Store("ok")
	return s
}

func (s *flakyStore) do(ctx context.Context) error {
	s.calls.Add(1)
	switch s.mode.Load() {
	case "fail":
		return errStoreDown
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *flakyStore) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	if err := s.do(ctx); err != nil {
		return limiter.Decision{}, err
	}
	return s.mem.AllowN(ctx, key, n, limits...)
}

func (s *flakyStore) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	if err := s.do(ctx); err != nil {
		return limiter.Decision{}, err
	}
	return s.mem.Peek(ctx, key, limits...)
}

func (s *flakyStore) Reset(ctx context.Context, key string, limits ...limiter.Limit) error {
	if err := s.do(ctx); err != nil {
		return err
	}
	return s.mem.Reset(ctx, key, limits...)
}

// pingableStore adds Ping, so the breaker probes in the background.
type pingableStore struct{ *flakyStore }

func (s pingableStore) Ping(ctx context.Context) error {
	s.pings.Add(1)
	switch s.mode.Load() {
	case "fail":
		return errStoreDown
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestFailureModes(t *testing.T) {
	limit := limiter.PerMinute(60, 6)
	tests := []struct {
		mode        Mode
		storeMode   string
		wantAllowed []bool // five requests during the outage
		wantRetry   bool
	}{
		{FailOpen, "fail", []bool{true, true, true, true, true}, false},
		{FailOpen, "hang", []bool{true, true, true, true, true}, false},
		{FailClosed, "fail", []bool{false, false, false, false, false}, true},
		{FailClosed, "hang", []bool{false, false, false, false, false}, true},
		// Three instances share 6: this one falls back to 2.
		{Fallback, "fail", []bool{true, true, false, false, false}, true},
		{Fallback, "hang", []bool{true, true, false, false, false}, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode)+"/"+tc.storeMode, func(t *testing.T) {
			clock := limitertest.NewClock(limitertest.T0)
			store := newFlakyStore(clock.Now)
			l := New(store, Config{Mode: tc.mode, Timeout: 5 * time.Millisecond, Instances: 3, Clock: clock.Now, Logger: quiet,
				Breaker: BreakerConfig{ConsecutiveFailures: 100}})
			defer l.Close()
			ctx := context.Background()
			if d, err := l.AllowN(ctx, "k", 1, limit); err != nil || !d.Allowed || d.Degraded {
				t.Fatalf("healthy store: %+v, %v; want an admitted, non-degraded decision", d, err)
			}
			store.mode.Store(tc.storeMode)
			for i, want := range tc.wantAllowed {
				d, err := l.AllowN(ctx, "k", 1, limit)
				if err != nil {
					t.Fatalf("request %d during the outage: error %v, want a decision", i, err)
				}
				if !d.Degraded || d.Allowed != want {
					t.Fatalf("request %d: Allowed = %v, Degraded = %v; want %v, true", i, d.Allowed, d.Degraded, want)
				}
				if !d.Allowed && tc.wantRetry && d.RetryAfterSeconds() < 1 {
					t.Fatalf("request %d: rejected without a Retry-After", i)
				}
			}
			if got, want := l.Stats().StoreErrors, int64(len(tc.wantAllowed)); got != want {
				t.Fatalf("StoreErrors = %d, want %d", got, want)
			}
			store.mode.Store("ok")
			if d, err := l.AllowN(ctx, "k", 1, limit); err != nil || !d.Allowed || d.Degraded {
				t.Fatalf("after recovery: %+v, %v; want the shared store deciding again", d, err)
			}
		})
	}
}

// TestBreakerSkipsTheStore shows an open breaker pays no timeout: the store
// is not called again until the breaker probes it.
func TestBreakerSkipsTheStore(t *testing.T) {
	clock := limitertest.NewClock(limitertest.T0)
	store := newFlakyStore(clock.Now)
	store.mode.Store("hang")
	l := New(store, Config{Mode: FailOpen, Timeout: 2 * time.Millisecond, Clock: clock.Now, Logger: quiet,
		Breaker: BreakerConfig{ConsecutiveFailures: 3, OpenFor: time.Second}})
	defer l.Close()
	limit := limiter.PerSecond(10, 10)
	for range 100 {
		if _, err := l.AllowN(context.Background(), "k", 1, limit); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := store.calls.Load(), int64(3); got != want {
		t.Fatalf("store called %d times for 100 requests, want %d (then the breaker opened)", got, want)
	}
	if got := l.Stats().ShortCircuits; got != 97 {
		t.Fatalf("ShortCircuits = %d, want 97", got)
	}
	// After OpenFor one request probes; the store is back, so it closes.
	store.mode.Store("ok")
	clock.Advance(time.Second)
	d, err := l.AllowN(context.Background(), "k", 1, limit)
	if err != nil || d.Degraded {
		t.Fatalf("probe: %+v, %v; want a decision from the store", d, err)
	}
	if got := l.BreakerState(); got != Closed {
		t.Fatalf("breaker %v after a successful probe, want closed", got)
	}
}

// TestBackgroundProbe: with a Pinger store no request waits on the probe.
func TestBackgroundProbe(t *testing.T) {
	clock := limitertest.NewClock(limitertest.T0)
	store := pingableStore{newFlakyStore(clock.Now)}
	store.mode.Store("fail")
	var mu sync.Mutex
	var seen []string
	l := New(store, Config{Mode: FailClosed, Clock: clock.Now, Logger: quiet, Breaker: BreakerConfig{ConsecutiveFailures: 2, OpenFor: time.Second}})
	defer l.Close()
	l.OnTransition(func(from, to State) { mu.Lock(); seen = append(seen, from.String()+">"+to.String()); mu.Unlock() })
	limit := limiter.PerSecond(10, 10)
	allow := func() limiter.Decision {
		d, err := l.AllowN(context.Background(), "k", 1, limit)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	allow()
	allow()
	if l.BreakerState() != Open {
		t.Fatalf("breaker %v after 2 failures, want open", l.BreakerState())
	}
	callsWhenOpened := store.calls.Load()
	store.mode.Store("ok")
	clock.Advance(time.Second)
	// This request is answered by the failure mode while a ping probes.
	if d := allow(); !d.Degraded || d.Allowed {
		t.Fatalf("request during the probe = %+v, want a degraded rejection (fail-closed)", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.BreakerState() != Closed {
		if time.Now().After(deadline) {
			t.Fatalf("breaker still %v 5 s after a successful ping", l.BreakerState())
		}
		time.Sleep(time.Millisecond)
	}
	if got := store.calls.Load(); got != callsWhenOpened {
		t.Fatalf("store decided %d requests while the breaker was open, want 0", got-callsWhenOpened)
	}
	if d := allow(); d.Degraded || !d.Allowed {
		t.Fatalf("after the probe closed the breaker: %+v, want the store's admission", d)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"closed>open", "open>half-open", "half-open>closed"}
	if len(seen) != len(want) {
		t.Fatalf("transitions %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("transitions %v, want %v", seen, want)
		}
	}
}

func TestInputErrorsAndCancelledCallersAreNotStoreFailures(t *testing.T) {
	clock := limitertest.NewClock(limitertest.T0)
	store := newFlakyStore(clock.Now)
	l := New(store, Config{Clock: clock.Now, Logger: quiet, Breaker: BreakerConfig{ConsecutiveFailures: 1}})
	defer l.Close()
	if _, err := l.AllowN(context.Background(), "k", 5, limiter.PerSecond(1, 2)); !errors.Is(err, limiter.ErrCostExceedsCapacity) {
		t.Fatalf("cost above capacity: error %v, want ErrCostExceedsCapacity", err)
	}
	store.mode.Store("hang")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.AllowN(ctx, "k", 1, limiter.PerSecond(1, 2)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: error %v, want context.Canceled", err)
	}
	if got := l.BreakerState(); got != Closed {
		t.Fatalf("breaker %v, want closed: neither call was the store's fault", got)
	}
	if got := l.Stats().StoreErrors; got != 0 {
		t.Fatalf("StoreErrors = %d, want 0", got)
	}
}

func TestShare(t *testing.T) {
	tests := []struct {
		in   limiter.Limit
		n    int
		want limiter.Limit
	}{
		{limiter.PerMinute(600, 100), 3, limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 200, Period: time.Minute, Burst: 33}},
		{limiter.PerSecond(1, 2), 4, limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 0.25, Period: time.Second, Burst: 1}},
		{limiter.Window(limiter.FixedWindow, 10, time.Minute), 3, limiter.Window(limiter.FixedWindow, 3, time.Minute)},
		{limiter.Window(limiter.SlidingWindowLog, 2, time.Minute), 3, limiter.Window(limiter.SlidingWindowLog, 1, time.Minute)},
		{limiter.PerSecond(5, 5), 1, limiter.PerSecond(5, 5)},
	}
	for _, tc := range tests {
		got := Share(tc.in, tc.n)
		if got != tc.want {
			t.Errorf("Share(%v, %d) = %#v, want %#v", tc.in, tc.n, got, tc.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Share(%v, %d) is invalid: %v", tc.in, tc.n, err)
		}
	}
}
