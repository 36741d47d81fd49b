package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/limitertest"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

// everyAlgorithm returns one limit per algorithm admitting capacity at once,
// with a negligible refill (bucket algorithms) or a one-day window.
func everyAlgorithm(capacity int64) []limiter.Limit {
	var ls []limiter.Limit
	for _, alg := range limiter.Algorithms {
		if alg.IsWindow() {
			ls = append(ls, limiter.Window(alg, capacity, 24*time.Hour))
		} else {
			ls = append(ls, limiter.Limit{Algorithm: alg, Rate: 1e-6, Period: s, Burst: capacity})
		}
	}
	return ls
}

// redisTime reads Redis TIME as a time.Time.
func redisTime(t *testing.T, c redis.UniversalClient) time.Time {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now
}

// TestMatchesMemoryStore drives the Redis store and limiter.MemoryStore with
// the same random requests on the same fake timeline, under every algorithm
// alone and under all six at once, and requires identical decisions: the Lua
// scripts and limiter/algorithms.go are one arithmetic.
func TestMatchesMemoryStore(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := newClient(t, srv.Addr())
	policies := map[string][]limiter.Limit{}
	for _, alg := range limiter.Algorithms {
		if alg.IsWindow() {
			policies[string(alg)] = []limiter.Limit{limiter.Window(alg, 7, 3*s)}
		} else {
			policies[string(alg)] = []limiter.Limit{{Algorithm: alg, Rate: 3, Period: s, Burst: 7}}
		}
	}
	policies["all_six"] = []limiter.Limit{
		{Algorithm: limiter.TokenBucket, Rate: 4, Period: s, Burst: 9},
		{Algorithm: limiter.GCRA, Rate: 2, Period: s, Burst: 8},
		{Algorithm: limiter.LeakyBucket, Rate: 3, Period: 1500 * ms, Burst: 7},
		limiter.Window(limiter.FixedWindow, 10, 4*s),
		limiter.Window(limiter.SlidingWindowLog, 8, 3*s),
		limiter.Window(limiter.SlidingWindowCounter, 9, 2*s),
	}
	for _, m := range modes {
		for name, limits := range policies {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				clock := limitertest.NewClock(limitertest.T0.Add(777 * ms))
				opts := append([]redisstore.Option{redisstore.WithTestClock(clock.Now), redisstore.WithPrefix("diff-" + m.name + ":")}, m.opts...)
				rs := redisstore.New(client, opts...)
				mem := limiter.NewMemoryStore(limiter.WithClock(clock.Now))
				rng := rand.New(rand.NewPCG(1, uint64(len(name))))
				ctx := context.Background()
				for i := range 400 {
					clock.Advance(time.Duration(rng.IntN(400_000)) * time.Microsecond)
					key := fmt.Sprintf("user-%d", rng.IntN(3))
					var got, want limiter.Decision
					var gotErr, wantErr error
					switch r := rng.IntN(20); {
					case r == 0:
						gotErr, wantErr = rs.Reset(ctx, key, limits...), mem.Reset(ctx, key, limits...)
					case r < 4:
						got, gotErr = rs.Peek(ctx, key, limits...)
						want, wantErr = mem.Peek(ctx, key, limits...)
					default:
						n := 1 + rng.Int64N(3)
						got, gotErr = rs.AllowN(ctx, key, n, limits...)
						want, wantErr = mem.AllowN(ctx, key, n, limits...)
					}
					if gotErr != nil || wantErr != nil {
						t.Fatalf("step %d: errors %v (redis), %v (memory)", i, gotErr, wantErr)
					}
					if got != want {
						t.Fatalf("step %d at t0+%v, key %s:\n redis  %+v\n memory %+v", i, clock.Now().Sub(limitertest.T0), key, got, want)
					}
				}
			})
		}
	}
}

// TestRedisTime shows that without a test clock the scripts read Redis TIME
// and no caller's clock: the store sends no time and no TTL slack, and a
// fixed window's reset is the end of the window that holds Redis's time.
func TestRedisTime(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := newClient(t, srv.Addr())
	var headers []string
	var mu sync.Mutex
	client.AddHook(argvHook(func(args []any) {
		// EVALSHA sha numkeys key... slack mode ...: the mode is "" when
		// the script reads Redis TIME, "t" when the request brings a time.
		nkeys, ok := args[2].(int)
		if !ok || len(args) < 5+nkeys {
			t.Errorf("unexpected script call %v", args)
			return
		}
		mu.Lock()
		headers = append(headers, fmt.Sprintf("slack %v, mode %q", args[3+nkeys], args[4+nkeys]))
		mu.Unlock()
	}))
	w := time.Hour
	l := limiter.Window(limiter.FixedWindow, 100, w)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			st := redisstore.New(client, append([]redisstore.Option{redisstore.WithPrefix("time-" + m.name + ":")}, m.opts...)...)
			before := redisTime(t, client)
			d, err := st.Allow(context.Background(), "clock", l)
			if err != nil {
				t.Fatal(err)
			}
			after := redisTime(t, client)
			ranges := resetRanges(before, after, w)
			for _, r := range ranges {
				if d.ResetAfter >= r[0] && d.ResetAfter <= r[1] {
					return
				}
			}
			t.Fatalf("ResetAfter = %v, want within %v: the end of the window of Redis TIME at the decision, taken between %v and %v",
				d.ResetAfter, ranges, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(headers) == 0 {
		t.Fatal("no script call seen by the hook")
	}
	for _, got := range headers {
		if want := `slack 0, mode ""`; got != want {
			t.Fatalf("the store sent %s; without a test clock it must send %s (Redis TIME, TTLs without slack)", got, want)
		}
	}
}

// windowStart is the start of the window of length w that holds t, windows
// being aligned on the Unix epoch as the scripts align them.
func windowStart(t time.Time, w time.Duration) time.Time {
	us, wus := t.UnixMicro(), w.Microseconds()
	return time.UnixMicro(us - us%wus)
}

// resetRanges returns the ResetAfter values a fixed window of length w may
// report for a decision taken at some time in [before, after]: that time's
// window end less that time, in one range per window the interval touches.
// An interval across a window's edge gives two ranges, since the decision
// may lie on either side; none is left out, so a test never needs a rerun.
func resetRanges(before, after time.Time, w time.Duration) [][2]time.Duration {
	var ranges [][2]time.Duration
	for start := windowStart(before, w); !start.After(after); start = start.Add(w) {
		end := start.Add(w)
		first, last := maxTime(before, start), minTime(after, end.Add(-time.Microsecond))
		ranges = append(ranges, [2]time.Duration{end.Sub(last), end.Sub(first)})
	}
	return ranges
}

// windowsTouched is the number of windows of length w that [before, after]
// touches.
func windowsTouched(before, after time.Time, w time.Duration) int64 {
	return int64(windowStart(after, w).Sub(windowStart(before, w))/w) + 1
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// argvHook calls fn with the arguments of every FCALL, EVALSHA and EVAL,
// single or pipelined.
type argvHook func(args []any)

func (h argvHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h argvHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.see(cmd)
		return next(ctx, cmd)
	}
}

func (h argvHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.see(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h argvHook) see(cmd redis.Cmder) {
	if name := cmd.Name(); name == "fcall" || name == "evalsha" || name == "eval" {
		h(cmd.Args())
	}
}

// TestProductionConcurrency is the concurrency test on Redis's own clock:
// 100 goroutines over two clients send 1,000 requests for one key, capacity
// 10 and a negligible rate: exactly 10 admitted, for every algorithm. The
// windows are a day long; should the requests straddle midnight UTC on
// Redis's clock, a fixed window admits its 10 in each of the two windows
// and the bound says so. (The sliding window log is rolling, and the
// sliding window counter weighs the first window's count at nearly full
// weight just after the edge: both stay at exactly 10.)
func TestProductionConcurrency(t *testing.T) {
	srv := redistest.StartForTest(t)
	const day = 24 * time.Hour
	for _, m := range modes {
		clients := []*redis.Client{newClient(t, srv.Addr()), newClient(t, srv.Addr())}
		for _, l := range everyAlgorithm(10) {
			t.Run(m.name+"/"+string(l.Algorithm), func(t *testing.T) {
				var stores []*redisstore.Store
				for _, c := range clients {
					stores = append(stores, redisstore.New(c, append([]redisstore.Option{redisstore.WithPrefix("conc-" + m.name + ":")}, m.opts...)...))
				}
				before := redisTime(t, clients[0])
				admitted := hammer(t, stores, "one-key", 1000, l)
				after := redisTime(t, clients[0])
				lo, hi := int64(10), int64(10)
				if l.Algorithm == limiter.FixedWindow {
					hi = 10 * windowsTouched(before, after, day)
				}
				if admitted < lo || admitted > hi {
					t.Fatalf("admitted %d of 1000 between %v and %v on Redis's clock, want between %d and %d",
						admitted, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano), lo, hi)
				}
			})
		}
	}
}

// TestC1ProductionClock is field case C1 on Redis's own clock: GCRA, burst
// 5 at 5/s, 50 requests at once from several clients. Time moves while they
// run, so the bound is the burst plus what the rate refilled meanwhile
// (measured on Redis TIME): exactly 5 when the requests take under 200 ms.
func TestC1ProductionClock(t *testing.T) {
	srv := redistest.StartForTest(t)
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 5, Period: s, Burst: 5}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var stores []*redisstore.Store
			clients := []*redis.Client{newClient(t, srv.Addr()), newClient(t, srv.Addr()), newClient(t, srv.Addr())}
			for _, c := range clients {
				stores = append(stores, redisstore.New(c, append([]redisstore.Option{redisstore.WithPrefix("c1-" + m.name + ":")}, m.opts...)...))
			}
			before := redisTime(t, clients[0])
			admitted := hammer(t, stores, "c1", 50, l)
			elapsed := redisTime(t, clients[0]).Sub(before)
			bound := 5 + int64(elapsed/(200*ms))
			if admitted < 5 || admitted > bound {
				t.Fatalf("admitted %d of 50 in %v, want between 5 and %d", admitted, elapsed, bound)
			}
		})
	}
}

// hammer sends requests requests of cost 1 for key under limits l from 100
// goroutines spread over stores and returns how many were admitted.
func hammer(t *testing.T, stores []*redisstore.Store, key string, requests int64, l ...limiter.Limit) int64 {
	t.Helper()
	var (
		admitted, next atomic.Int64
		wg             sync.WaitGroup
		errs           = make(chan error, 100)
		start          = make(chan struct{})
	)
	for w := range 100 {
		st := stores[w%len(stores)]
		wg.Go(func() {
			<-start
			for next.Add(1) <= requests {
				d, err := st.Allow(context.Background(), key, l...)
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
		t.Fatalf("Allow: %v", err)
	}
	return admitted.Load()
}

// TestC9ClusterTwoKeys is field case C9: a policy of two token buckets per
// identity on Redis Cluster, 100 concurrent requests for one key at one
// instant from two clients. The keys share a hash tag (no CROSSSLOT error
// reaches a caller) and the tighter limit holds exactly.
func TestC9ClusterTwoKeys(t *testing.T) {
	cl := redistest.StartClusterForTest(t, 3)
	limits := []limiter.Limit{
		{Name: "burst", Algorithm: limiter.TokenBucket, Rate: 1, Period: s, Burst: 7},
		{Name: "hourly", Algorithm: limiter.TokenBucket, Rate: 100, Period: time.Hour, Burst: 100},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			clock := limitertest.NewClock(limitertest.T0)
			var stores []*redisstore.Store
			for range 2 {
				opts := append([]redisstore.Option{redisstore.WithTestClock(clock.Now), redisstore.WithPrefix("c9-" + m.name + ":")}, m.opts...)
				stores = append(stores, redisstore.New(newClusterClient(t, cl.Addrs()), opts...))
			}
			if got := hammer(t, stores, "c9", 100, limits...); got != 7 {
				t.Fatalf("admitted %d of 100, want exactly 7", got)
			}
			d, err := stores[0].Peek(context.Background(), "c9", limits[1])
			if err != nil {
				t.Fatal(err)
			}
			if d.Remaining != 93 {
				t.Fatalf("hourly Remaining = %d, want 93: only admitted requests charged it", d.Remaining)
			}
		})
	}
}

// TestTTLs is field case C6 for every algorithm: each key a decision writes
// has a TTL, and no longer than until its state is fresh again (plus the
// test clock's TestClockTTLSlack). The test clock places each decision in
// its window, up to half a millisecond before a fixed window's end.
// TestRedisTime shows that on Redis's clock the store sends no slack.
func TestTTLs(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := newClient(t, srv.Addr())
	clock := limitertest.NewClock(limitertest.T0)
	st := redisstore.New(client, redisstore.WithTestClock(clock.Now), redisstore.WithPrefix("ttl:"))
	ctx := context.Background()
	cases := []struct {
		name  string
		limit limiter.Limit
		cost  int64
		at    time.Duration // the decision's time after T0
		fresh time.Duration // how long after it the state is fresh again
	}{
		{"token_bucket", limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 5, Period: s, Burst: 5}, 2, 0, 400 * ms},
		{"gcra", limiter.Limit{Algorithm: limiter.GCRA, Rate: 5, Period: s, Burst: 5}, 2, 0, 400 * ms},
		{"leaky_bucket", limiter.Limit{Algorithm: limiter.LeakyBucket, Rate: 5, Period: s, Burst: 5}, 3, 0, 600 * ms},
		{"fixed_window/mid-window", limiter.Window(limiter.FixedWindow, 5, time.Minute), 1, 45 * s, 15 * s},
		{"fixed_window/window's end", limiter.Window(limiter.FixedWindow, 5, time.Minute), 1, time.Minute - 500*time.Microsecond, 500 * time.Microsecond},
		{"sliding_window_log", limiter.Window(limiter.SlidingWindowLog, 5, time.Minute), 1, 45 * s, time.Minute},
		{"sliding_window_counter/window's start", limiter.Window(limiter.SlidingWindowCounter, 5, time.Minute), 1, 0, 2 * time.Minute},
		{"sliding_window_counter/mid-window", limiter.Window(limiter.SlidingWindowCounter, 5, time.Minute), 1, 45 * s, 75 * s},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprint("ttl-user-", i)
			clock.Set(limitertest.T0.Add(tc.at))
			start := time.Now()
			if _, err := st.AllowN(ctx, key, tc.cost, tc.limit); err != nil {
				t.Fatal(err)
			}
			pttl, err := client.PTTL(ctx, st.StorageKey(key, tc.limit)).Result()
			if err != nil {
				t.Fatal(err)
			}
			elapsed := time.Since(start)
			// The key lives until its state is fresh and at most 2 ms longer
			// (rounding up to milliseconds, plus one); Redis's own clock ran
			// on by at most elapsed, and a millisecond of its rounding,
			// between setting the TTL and reading it.
			want := tc.fresh + redisstore.TestClockTTLSlack
			if lo, hi := want-elapsed-ms, want+2*ms; pttl < lo || pttl > hi {
				t.Fatalf("PTTL = %v, want in [%v, %v]: %v until fresh, plus %v of slack", pttl, lo, hi, tc.fresh, redisstore.TestClockTTLSlack)
			}
		})
	}
}

// TestC7TTLNotPushedForward is field case C7 on Redis: a fixed window's key
// expires at the end of its window, however often a client in budget calls.
func TestC7TTLNotPushedForward(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := newClient(t, srv.Addr())
	clock := limitertest.NewClock(limitertest.T0)
	st := redisstore.New(client, redisstore.WithTestClock(clock.Now), redisstore.WithPrefix("c7:"))
	l := limiter.Window(limiter.FixedWindow, 2, 6*s)
	ctx := context.Background()
	var last time.Duration
	for i, at := range []time.Duration{0, 5 * s} { // both in the window [0, 6 s)
		clock.Set(limitertest.T0.Add(at))
		d, err := st.Allow(ctx, "steady", l)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			t.Fatalf("request %d at t0+%v rejected", i, at)
		}
		pttl, err := client.PTTL(ctx, st.StorageKey("steady", l)).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := 6*s - at + redisstore.TestClockTTLSlack
		if pttl > want+2*ms || pttl < want-time.Minute {
			t.Fatalf("request %d at t0+%v: PTTL = %v, want about %v: the window's end, not a refreshed window", i, at, pttl, want)
		}
		if i > 0 && pttl > last-4*s {
			t.Fatalf("request %d: PTTL = %v after %v: pushed forward", i, pttl, last)
		}
		last = pttl
	}
}

// TestC3StaleKeyIsNewWindow is field case C3 on Redis: a fixed window's key
// from the previous window still exists (its TTL has not fired), holding a
// full count; a request in the new window starts a fresh count and gives the
// key the new window's TTL.
func TestC3StaleKeyIsNewWindow(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := newClient(t, srv.Addr())
	clock := limitertest.NewClock(limitertest.T0.Add(9999500 * time.Microsecond)) // 0.5 ms before the window ends
	st := redisstore.New(client, redisstore.WithTestClock(clock.Now), redisstore.WithPrefix("c3:"))
	l := limiter.Window(limiter.FixedWindow, 3, 10*s)
	ctx := context.Background()
	d, err := st.AllowN(ctx, "c3", 3, l)
	if err != nil || !d.Allowed || d.ResetAfter != 500*time.Microsecond {
		t.Fatalf("last request of the window = %+v, %v; want admitted, reset 0.5 ms", d, err)
	}
	clock.Set(limitertest.T0.Add(10 * s))
	d, err = st.Allow(ctx, "c3", l)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || d.Remaining != 2 || d.ResetAfter != 10*s {
		t.Fatalf("first request of the new window = %+v; want admitted, remaining 2, reset 10s", d)
	}
	val, err := client.Get(ctx, st.StorageKey("c3", l)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if at := limitertest.T0.Add(10 * s).UnixMicro(); val != fmt.Sprintf("%d 1 %d", at, at) {
		t.Fatalf("state = %q, want %q: the new window with count 1, written at its start", val, fmt.Sprintf("%d 1 %d", at, at))
	}
}

// TestC8ScriptLost is field case C8: the script cache is flushed, then Redis
// is restarted empty, between requests; every request is decided, and no
// NOSCRIPT error reaches the caller.
func TestC8ScriptLost(t *testing.T) {
	srv := redistest.StartForTest(t)
	ctx := context.Background()
	l := limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 1e-6, Period: s, Burst: 3}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			client := newClient(t, srv.Addr())
			st := redisstore.New(client, append([]redisstore.Option{redisstore.WithPrefix("c8-" + m.name + ":")}, m.opts...)...)
			allow := func(step string, wantRemaining int64) {
				t.Helper()
				d, err := st.Allow(ctx, "c8", l)
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				if !d.Allowed || d.Remaining != wantRemaining {
					t.Fatalf("%s: %+v, want admitted with remaining %d", step, d, wantRemaining)
				}
			}
			allow("first request", 2)
			if err := client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			allow("after SCRIPT FLUSH", 1)
			if err := srv.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			allow("after a restart, empty", 2)
			allow("once more", 1)
		})
	}
}

// TestC11ProductionClock is field case C11 on Redis's clock: a token bucket
// of 1e-10 per second, burst 1, admits once, then asks for exactly 1e10 s.
func TestC11ProductionClock(t *testing.T) {
	srv := redistest.StartForTest(t)
	l := limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 1e-10, Period: s, Burst: 1}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			st := redisstore.New(newClient(t, srv.Addr()), append([]redisstore.Option{redisstore.WithPrefix("c11-" + m.name + ":")}, m.opts...)...)
			ctx := context.Background()
			if d, err := st.Allow(ctx, "c11", l); err != nil || !d.Allowed {
				t.Fatalf("first request = %+v, %v; want admitted", d, err)
			}
			d, err := st.Allow(ctx, "c11", l)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				t.Fatal("second request admitted")
			}
			if got, want := d.RetryAfterSeconds(), int64(10_000_000_000); got != want {
				t.Fatalf("RetryAfterSeconds = %d, want %d", got, want)
			}
		})
	}
}

// TestAllOrNothing sends requests under all six algorithms at once: a
// request rejected by one limit charges none of the others.
func TestAllOrNothing(t *testing.T) {
	srv := redistest.StartForTest(t)
	cl := redistest.StartClusterForTest(t, 3)
	clients := map[string]redis.UniversalClient{
		"single":  newClient(t, srv.Addr()),
		"cluster": newClusterClient(t, cl.Addrs()),
	}
	for name, client := range clients {
		for _, m := range modes {
			t.Run(name+"/"+m.name, func(t *testing.T) {
				clock := limitertest.NewClock(limitertest.T0)
				st := redisstore.New(client, append([]redisstore.Option{redisstore.WithTestClock(clock.Now), redisstore.WithPrefix("aon-" + m.name + ":")}, m.opts...)...)
				ctx := context.Background()
				limits := everyAlgorithm(10)
				tight := limiter.Limit{Name: "tight", Algorithm: limiter.GCRA, Rate: 1e-6, Period: s, Burst: 2}
				all := append([]limiter.Limit{tight}, limits...)
				for i := range 5 {
					d, err := st.Allow(ctx, "aon", all...)
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					if got, want := d.Allowed, i < 2; got != want {
						t.Fatalf("request %d: Allowed = %v, want %v (%+v)", i, got, want, d)
					}
					if !d.Allowed && d.Limit != tight {
						t.Fatalf("request %d rejected by %v, want the tight limit", i, d.Limit)
					}
				}
				for _, l := range limits {
					d, err := st.Peek(ctx, "aon", l)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := d.Remaining, int64(8); got != want {
						t.Errorf("%s: Remaining = %d, want %d: only the two admitted requests were charged", l.Algorithm, got, want)
					}
				}
				if err := st.Reset(ctx, "aon", all...); err != nil {
					t.Fatal(err)
				}
				d, err := st.Peek(ctx, "aon", all...)
				if err != nil {
					t.Fatal(err)
				}
				if !d.Allowed || d.Remaining != 2 {
					t.Fatalf("after Reset: %+v, want admitted with the tight limit's full 2", d)
				}
			})
		}
	}
}

// TestKeys checks what reaches Redis: every key is the prefix, the hash tag
// of the identity's SHA-256 and the policy ID, never the raw identity, and
// on a cluster all keys of one identity share one slot.
func TestKeys(t *testing.T) {
	cl := redistest.StartClusterForTest(t, 3)
	client := newClusterClient(t, cl.Addrs())
	st := redisstore.New(client, redisstore.WithPrefix("keys:"))
	ctx := context.Background()
	identities := []string{"sk_live_SECRET-api-key-0001", "alice@example.com", "10.0.0.1"}
	limits := everyAlgorithm(5)
	for _, id := range identities {
		if _, err := st.Allow(ctx, id, limits...); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := redistest.Keys(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(keys), len(identities)*len(limits); got != want {
		t.Fatalf("%d keys in Redis, want %d: %v", got, want, keys)
	}
	shape := regexp.MustCompile(`^keys:\{[0-9a-f]{32}\}:[a-z]+-[0-9a-z.+-]+$`)
	slots := map[string]map[int64]bool{}
	for _, k := range keys {
		if !shape.MatchString(k) {
			t.Errorf("key %q does not have the documented shape", k)
		}
		for _, id := range identities {
			if strings.Contains(k, id) {
				t.Errorf("key %q holds the raw identity %q", k, id)
			}
		}
		slot, err := client.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		tag := k[strings.Index(k, "{"):strings.Index(k, "}")]
		if slots[tag] == nil {
			slots[tag] = map[int64]bool{}
		}
		slots[tag][slot] = true
	}
	for tag, s := range slots {
		if len(s) != 1 {
			t.Errorf("identity %s spans %d slots, want 1", tag, len(s))
		}
	}
	if got, want := st.StorageKey("alice@example.com", limits[0]),
		"keys:{ff8d9819fc0e12bf0d24892e45987e24}:tb-1e-06per1s-b5"; got != want {
		t.Fatalf("StorageKey = %q, want %q", got, want)
	}
}

// TestInvalidInputNeverReachesRedis uses a store whose Redis does not exist:
// invalid requests fail validation before any connection is tried.
func TestInvalidInputNeverReachesRedis(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1, DisableIdentity: true})
	defer client.Close()
	st := redisstore.New(client)
	ctx := context.Background()
	good := limiter.PerSecond(1, 3)
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"AllowN cost 0", func() error { _, err := st.AllowN(ctx, "k", 0, good); return err }, limiter.ErrInvalidCost},
		{"AllowN no limits", func() error { _, err := st.AllowN(ctx, "k", 1); return err }, limiter.ErrInvalidCost},
		{"AllowN above capacity", func() error { _, err := st.AllowN(ctx, "k", 4, good); return err }, limiter.ErrCostExceedsCapacity},
		{"Peek invalid limit", func() error { _, err := st.Peek(ctx, "k", limiter.Limit{}); return err }, limiter.ErrInvalidLimit},
		{"Reset invalid limit", func() error { return st.Reset(ctx, "k", limiter.Limit{Algorithm: limiter.GCRA}) }, limiter.ErrInvalidLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := st.Allow(ctx, "k", good); err == nil {
		t.Fatal("Allow with no Redis succeeded")
	}
}

// TestPausedRedisDoesNotHang pauses Redis: a decision returns its context's
// error when the context ends, in both modes and whether or not the client
// enforces context deadlines itself (then a batched call on an idle store
// sends its own request, and the client's timeout ends it), and decisions
// work again after Resume.
func TestPausedRedisDoesNotHang(t *testing.T) {
	srv := redistest.StartForTest(t)
	l := limiter.PerSecond(100, 100)
	for _, m := range modes {
		for _, deadlines := range []bool{false, true} {
			if m.name != "batched" && !deadlines {
				continue // a direct call needs a client that honours context deadlines
			}
			name := m.name + map[bool]string{false: "/client-timeouts", true: "/context-deadlines"}[deadlines]
			t.Run(name, func(t *testing.T) {
				client := newClient(t, srv.Addr())
				if deadlines {
					client = redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, ContextTimeoutEnabled: true})
					t.Cleanup(func() { client.Close() })
				}
				st := redisstore.New(client, append([]redisstore.Option{redisstore.WithPrefix("pause-" + m.name + ":")}, m.opts...)...)
				if _, err := st.Allow(context.Background(), "p", l); err != nil {
					t.Fatal(err)
				}
				if err := srv.Pause(); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 100*ms)
				start := time.Now()
				_, err := st.Allow(ctx, "p", l)
				took := time.Since(start)
				cancel()
				if resumeErr := srv.Resume(); resumeErr != nil {
					t.Fatal(resumeErr)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Allow on a paused Redis = %v, want context.DeadlineExceeded", err)
				}
				if took > 2*time.Second {
					t.Fatalf("Allow on a paused Redis took %v, want about its 100ms deadline", took)
				}
				if _, err := st.Allow(context.Background(), "p", l); err != nil {
					t.Fatalf("Allow after Resume: %v", err)
				}
			})
		}
	}
}
