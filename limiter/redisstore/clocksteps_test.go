package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/limitertest"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestMatchesMemoryStoreClockSteps drives the Redis store and
// limiter.MemoryStore with the same random requests on a clock that steps
// backwards and forwards, and requires identical decisions; after every
// request each key written has a TTL, longer than zero and no longer than
// the time its state takes to be fresh (plus the test-clock slack).
func TestMatchesMemoryStoreClockSteps(t *testing.T) {
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
	// fresh is the longest a limit's state takes to decide like a fresh key's.
	fresh := func(l limiter.Limit) time.Duration {
		if l.Algorithm.IsWindow() {
			return 2 * l.Period
		}
		return time.Duration(l.IntervalMicros()*l.Capacity()) * time.Microsecond
	}
	for _, m := range modes {
		for name, limits := range policies {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				clock := limitertest.NewClock(limitertest.T0.Add(777 * ms))
				opts := append([]redisstore.Option{redisstore.WithTestClock(clock.Now), redisstore.WithPrefix("steps-" + m.name + ":")}, m.opts...)
				rs := redisstore.New(client, opts...)
				mem := limiter.NewMemoryStore(limiter.WithClock(clock.Now))
				rng := rand.New(rand.NewPCG(2, uint64(len(name))))
				ctx := context.Background()
				for i := range 400 {
					var step time.Duration
					switch r := rng.IntN(20); {
					case r < 3: // back up to 5 s
						step = -time.Duration(rng.IntN(5_000_000)) * time.Microsecond
					case r == 3: // forward up to a minute
						step = time.Duration(rng.IntN(60_000_000)) * time.Microsecond
					default:
						step = time.Duration(rng.IntN(400_000)) * time.Microsecond
					}
					clock.Advance(step)
					key := fmt.Sprintf("user-%d", rng.IntN(3))
					var got, want limiter.Decision
					var gotErr, wantErr error
					if rng.IntN(5) == 0 {
						got, gotErr = rs.Peek(ctx, key, limits...)
						want, wantErr = mem.Peek(ctx, key, limits...)
					} else {
						n := 1 + rng.Int64N(3)
						got, gotErr = rs.AllowN(ctx, key, n, limits...)
						want, wantErr = mem.AllowN(ctx, key, n, limits...)
					}
					if gotErr != nil || wantErr != nil {
						t.Fatalf("step %d: errors %v (redis), %v (memory)", i, gotErr, wantErr)
					}
					if got != want {
						t.Fatalf("step %d at t0+%v (clock moved %v), key %s:\n redis  %+v\n memory %+v",
							i, clock.Now().Sub(limitertest.T0), step, key, got, want)
					}
					for _, l := range limits {
						pttl, err := client.PTTL(ctx, rs.StorageKey(key, l)).Result()
						if err != nil {
							t.Fatal(err)
						}
						if pttl == -2*time.Nanosecond { // never written: no key
							continue
						}
						if hi := fresh(l) + redisstore.TestClockTTLSlack + 2*ms; pttl <= 0 || pttl > hi {
							t.Fatalf("step %d at t0+%v (clock moved %v), %s: PTTL = %v, want in (0, %v]",
								i, clock.Now().Sub(limitertest.T0), step, l.Algorithm, pttl, hi)
						}
					}
				}
			})
		}
	}
}

// TestEarlierStateFormats: keys written by an earlier version of the store,
// which kept no time of the write, are still read, and decide as they did
// then; a step back is then detected as far as the old state allows.
func TestEarlierStateFormats(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := newClient(t, srv.Addr())
	at := limitertest.T0.Add(time.Hour + 15*s)
	now := at.UnixMicro()
	bucket := func(alg limiter.Algorithm) limiter.Limit {
		return limiter.Limit{Algorithm: alg, Rate: 1, Period: s, Burst: 3}
	}
	window := func(alg limiter.Algorithm) limiter.Limit { return limiter.Window(alg, 3, 10*s) }
	cases := []struct {
		limit limiter.Limit
		old   string // the state an earlier version wrote at t0+1h+15s
		want  limiter.Decision
	}{
		// 1 token left, refilled last at 15 s: one more is admitted, and
		// the bucket is full 3 s later.
		{bucket(limiter.TokenBucket), fmt.Sprintf("1 %d", now),
			limiter.NewDecision(bucket(limiter.TokenBucket), true, 0, 3e6, 0, 0)},
		// TAT 2 s ahead: one more fits in the burst of 3.
		{bucket(limiter.GCRA), fmt.Sprintf("%d", now+2e6),
			limiter.NewDecision(bucket(limiter.GCRA), true, 0, 3e6, 0, 0)},
		// 2 counted in the window [10 s, 20 s).
		{window(limiter.FixedWindow), fmt.Sprintf("%d 2", now-5e6),
			limiter.NewDecision(window(limiter.FixedWindow), true, 0, 5e6, 0, 0)},
		// 2 counted in the window [10 s, 20 s), none before.
		{window(limiter.SlidingWindowCounter), fmt.Sprintf("%d 0 2", now-5e6),
			limiter.NewDecision(window(limiter.SlidingWindowCounter), true, 0, 15e6, 0, 0)},
	}
	for _, tc := range cases {
		t.Run(string(tc.limit.Algorithm), func(t *testing.T) {
			clock := limitertest.NewClock(at)
			st := redisstore.New(client, redisstore.WithTestClock(clock.Now), redisstore.WithPrefix("old:"))
			ctx := context.Background()
			key := st.StorageKey("old", tc.limit)
			if err := client.Set(ctx, key, tc.old, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			d, err := st.Allow(ctx, "old", tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.want {
				t.Fatalf("decision on %q = %+v, want %+v", tc.old, d, tc.want)
			}
			val, err := client.Get(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if suffix := fmt.Sprintf(" %d", now); len(val) < len(suffix) || val[len(val)-len(suffix):] != suffix {
				t.Fatalf("state after the decision = %q, want it to end with the time of the write%s", val, suffix)
			}
		})
	}
}
