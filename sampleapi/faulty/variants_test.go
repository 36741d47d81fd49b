//go:build unix

package faulty

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
	"github.com/rlbench/rlbench/limiter/lease"
	"github.com/rlbench/rlbench/limiter/redisstore"
)

// admittedOf counts the admissions of lim for key, one request after
// another under limits.
func admittedOf(t *testing.T, lim limiter.Limiter, key string, requests int, limits ...limiter.Limit) int {
	t.Helper()
	n := 0
	for range requests {
		d, err := lim.AllowN(context.Background(), key, 1, limits...)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			n++
		}
	}
	return n
}

// TestTierChargedOnReject: a per-minute tier of 3 and a second tier of 1
// on every request. The second tier rejects requests 2 and 3; the reference
// charges neither tier for them, so the first tier alone still admits 2,
// while the variant has charged them to the first tier, which admits none.
func TestTierChargedOnReject(t *testing.T) {
	_, env := redisEnv(t)
	first, second := mustLimit(t, "gcra:3/1m,burst=3,name=first"), mustLimit(t, "gcra:1/1m,burst=1,name=second")
	for _, tc := range []struct {
		name string
		want int
	}{{"reference", 2}, {TierChargedOnReject, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			lim := openVariantOrRef(t, tc.name, env)
			key := "tiers-" + tc.name
			if got, want := admittedOf(t, lim, key, 3, first, second), 1; got != want {
				t.Fatalf("both tiers admitted %d of 3, want %d", got, want)
			}
			if got := admittedOf(t, lim, key, 3, first); got != tc.want {
				t.Fatalf("the first tier then admitted %d of 3, want %d", got, tc.want)
			}
		})
	}
	if s := open(t, TierChargedOnReject, env).(*goStore); !s.chargeAdmittingTiers || s.chargeRejected {
		t.Fatalf("tier-charged-on-reject: %+v; want the admitting tiers charged only", s)
	}
}

// TestTTLWrongUnit: a fixed window of 10 s written at its start. The
// reference's key lives for the window; the variant's for 10 ms, after
// which the window's budget is whole again.
func TestTTLWrongUnit(t *testing.T) {
	_, env := redisEnv(t)
	client := redis.NewClient(env.Redis)
	defer client.Close()
	l := mustLimit(t, "fixed_window:1/10s")
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		wrongUnit    bool
		maxTTL       time.Duration
		minTTL       time.Duration
		admitsSecond bool
	}{
		{"reference", false, 10 * time.Second, 9 * time.Second, false},
		{TTLWrongUnit, true, 10 * time.Millisecond, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: t0}
			s := newGoStore(client)
			s.clock, s.ttlSecondsAsMillis = clock.now, tc.wrongUnit
			key := "ttl-unit-" + tc.name
			if d, err := s.AllowN(ctx, key, 1, l); err != nil || !d.Allowed {
				t.Fatalf("first: %+v, %v; want admitted", d, err)
			}
			sk := s.storageKeys(key, []limiter.Limit{l})[0]
			ttl, err := client.PTTL(ctx, sk).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl > tc.maxTTL || ttl < tc.minTTL && ttl != -2 { // -2: already gone
				t.Fatalf("PTTL = %v, want within [%v, %v]", ttl, tc.minTTL, tc.maxTTL)
			}
			if tc.wrongUnit { // wait for Redis to expire the key, as a later request would find it
				deadline := time.Now().Add(5 * time.Second)
				for client.Exists(ctx, sk).Val() != 0 {
					if time.Now().After(deadline) {
						t.Fatalf("key %s outlived its %v TTL by 5 s", sk, ttl)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			d, err := s.AllowN(ctx, key, 1, l) // the same instant on the limiter's clock
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.admitsSecond {
				t.Fatalf("second request in the same window: Allowed = %v, want %v", d.Allowed, tc.admitsSecond)
			}
			client.Del(ctx, sk)
		})
	}
	if s := open(t, TTLWrongUnit, env).(*goStore); !s.ttlSecondsAsMillis || s.clock != nil {
		t.Fatalf("ttl-wrong-unit: %+v; want the TTL fault on Redis TIME", s)
	}
}

// TestTimeRewind walks a token bucket of 10/s (burst 1, a token every
// 100 ms) through the schedule contention makes: a request reads the clock
// at 100 ms, another decides at 150 ms between its read and its write, and
// its transaction is retried. The reference retries at 150 ms and leaves
// the refill time there, so the next token is due at 250 ms; the variant
// retries on its reading of 100 ms and moves the refill time back to it, so
// the 50 ms already refilled are refilled again and a request at 200 ms is
// admitted.
func TestTimeRewind(t *testing.T) {
	_, env := redisEnv(t)
	client := redis.NewClient(env.Redis)
	defer client.Close()
	l := mustLimit(t, "token_bucket:10/1s,burst=1")
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		fault       bool
		wantAt200ms bool
	}{{"reference", false, false}, {TimeRewind, true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: t0}
			s := newGoStore(client)
			s.clock, s.staleNow, s.rewind = clock.now, tc.fault, tc.fault
			other := newGoStore(client)
			other.clock = clock.now
			key := "rewind-" + tc.name
			if d, err := s.AllowN(ctx, key, 1, l); err != nil || !d.Allowed {
				t.Fatalf("at 0: %+v, %v; want admitted", d, err)
			}
			clock.set(t0.Add(100 * time.Millisecond))
			var between limiter.Decision
			var betweenErr error
			interleave(s, func() {
				clock.set(t0.Add(150 * time.Millisecond))
				between, betweenErr = other.AllowN(ctx, key, 1, l)
			})
			d, err := s.AllowN(ctx, key, 1, l)
			if err != nil || betweenErr != nil {
				t.Fatalf("AllowN: %v, %v", err, betweenErr)
			}
			if !between.Allowed || d.Allowed {
				t.Fatalf("at 150 ms: %+v; retried: %+v; want the first admitted and the retried one rejected", between, d)
			}
			clock.set(t0.Add(200 * time.Millisecond))
			d, err = other.AllowN(ctx, key, 1, l)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.wantAt200ms {
				t.Fatalf("at 200 ms: Allowed = %v, want %v (%+v)", d.Allowed, tc.wantAt200ms, d)
			}
			if !tc.fault && d.RetryAfter != 50*time.Millisecond {
				t.Fatalf("at 200 ms: RetryAfter = %v, want 50ms, the token due at 250 ms", d.RetryAfter)
			}
		})
	}
	if s := open(t, TimeRewind, env).(*goStore); !s.staleNow || !s.rewind || s.clock != nil {
		t.Fatalf("time-rewind: %+v; want a stale, rewinding Redis TIME", s)
	}
}

// TestPooledOver: two instances share a burst of 40 on one Redis. The
// reference admits 40 of 60 between them; the variant 42, 5% over, and
// reports the declared limit.
func TestPooledOver(t *testing.T) {
	_, env := redisEnv(t)
	l := mustLimit(t, "gcra:40/1m,burst=40")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		want int
	}{{"reference", 40}, {PooledOver, 42}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := openVariantOrRef(t, tc.name, env), openVariantOrRef(t, tc.name, env)
			admitted := 0
			for i := range 60 {
				lim := a
				if i%2 == 1 {
					lim = b
				}
				d, err := lim.AllowN(ctx, "pooled-"+tc.name, 1, l)
				if err != nil {
					t.Fatal(err)
				}
				if d.Limit != l {
					t.Fatalf("decision's limit = %v, want the declared %v", d.Limit, l)
				}
				if d.Allowed {
					admitted++
				}
			}
			if admitted != tc.want {
				t.Fatalf("two instances admitted %d under burst 40, want %d", admitted, tc.want)
			}
		})
	}
	for _, tc := range []struct{ declared, enforced string }{
		{"gcra:40/1m,burst=40", "gcra:42/1m,burst=42"},
		{"gcra:10/1s,burst=5", "gcra:10.5/1s,burst=6"},
		{"fixed_window:100/1s", "fixed_window:105/1s"},
		{"sliding_window_log:20/1m", "sliding_window_log:21/1m"},
	} {
		if got, want := pooledOver(mustLimit(t, tc.declared)), mustLimit(t, tc.enforced); got != want {
			t.Errorf("pooledOver(%s) = %v, want %v", tc.declared, got, want)
		}
	}
}

// TestRetryAfterUnits: a wait of 10 s announced as 10 s by the reference
// and as 10000, its milliseconds, by retry-after-ms.
func TestRetryAfterUnits(t *testing.T) {
	l := mustLimit(t, "gcra:6/1m,burst=1")
	for _, tc := range []struct {
		name string
		want int64
	}{{"reference", 10}, {RetryAfterMillis, 10_000}} {
		t.Run(tc.name, func(t *testing.T) {
			lim := openVariantOrRef(t, tc.name, Env{Clock: (&fakeClock{t: t0}).now})
			if got := admittedOf(t, lim, "k", 1, l); got != 1 {
				t.Fatalf("first request: %d admitted, want 1", got)
			}
			d, err := lim.AllowN(context.Background(), "k", 1, l)
			if err != nil || d.Allowed {
				t.Fatalf("second: %+v, %v; want rejected", d, err)
			}
			if got := d.RetryAfterSeconds(); got != tc.want {
				t.Fatalf("RetryAfterSeconds = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRetryAfterZero sends two requests through the middleware under GCRA
// 10/s (burst 1): the second waits 100 ms, which the reference announces
// as Retry-After: 1 and the variant, rounding down, as 0.
func TestRetryAfterZero(t *testing.T) {
	l := mustLimit(t, "gcra:10/1s,burst=1")
	for _, tc := range []struct{ name, want string }{{"reference", "1"}, {RetryAfterZero, "0"}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: t0}
			mw, err := httplimit.New(openVariantOrRef(t, tc.name, Env{Clock: clock.now}),
				httplimit.WithClock(clock.now),
				httplimit.WithAuthenticator(func(*http.Request) (httplimit.Identity, error) {
					return httplimit.Identity{Key: "k", Limits: []limiter.Limit{l}}, nil
				}))
			if err != nil {
				t.Fatal(err)
			}
			h := mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			if tc.name != "reference" {
				h = mustLookup(t, tc.name).Handler(h)
			}
			var codes []int
			var retryAfter string
			for range 2 {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/data", nil))
				codes = append(codes, w.Code)
				retryAfter = w.Header().Get("Retry-After")
			}
			if codes[0] != http.StatusOK || codes[1] != http.StatusTooManyRequests {
				t.Fatalf("statuses = %v, want [200 429]", codes)
			}
			if retryAfter != tc.want {
				t.Fatalf("Retry-After = %q, want %q", retryAfter, tc.want)
			}
		})
	}
}

// TestQueueNoDelay: the second of two requests at once under a leaky bucket
// of 10/s waits 100 ms for its slot with the reference, none with the
// variant.
func TestQueueNoDelay(t *testing.T) {
	l := mustLimit(t, "leaky_bucket:10/1s,burst=5")
	for _, tc := range []struct {
		name string
		want time.Duration
	}{{"reference", 100 * time.Millisecond}, {QueueNoDelay, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			lim := openVariantOrRef(t, tc.name, Env{Clock: (&fakeClock{t: t0}).now})
			var d limiter.Decision
			for i := range 2 {
				var err error
				if d, err = lim.AllowN(context.Background(), "k", 1, l); err != nil || !d.Allowed {
					t.Fatalf("request %d: %+v, %v; want admitted", i+1, d, err)
				}
			}
			if d.Delay != tc.want {
				t.Fatalf("second request's Delay = %v, want %v", d.Delay, tc.want)
			}
		})
	}
}

// TestResetEpoch: one request under GCRA 1/s (burst 1) leaves a budget full
// again in 1 s: the reference reports 1, the variant the Unix second of it.
func TestResetEpoch(t *testing.T) {
	l := mustLimit(t, "gcra:1/1s,burst=1")
	for _, tc := range []struct {
		name string
		want int64
	}{{"reference", 1}, {ResetEpoch, t0.Unix() + 1}} {
		t.Run(tc.name, func(t *testing.T) {
			lim := openVariantOrRef(t, tc.name, Env{Clock: (&fakeClock{t: t0}).now})
			d, err := lim.AllowN(context.Background(), "k", 1, l)
			if err != nil || !d.Allowed {
				t.Fatalf("%+v, %v; want admitted", d, err)
			}
			if got := d.ResetAfterSeconds(); got != tc.want {
				t.Fatalf("ResetAfterSeconds = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestLRUKeys: key a spends its budget of 1, then others are used. After 3
// others a is still cached and rejected by both; after 4 the variant has
// evicted it and admits it afresh.
func TestLRUKeys(t *testing.T) {
	l := mustLimit(t, "gcra:1/1m,burst=1")
	for _, tc := range []struct {
		name   string
		others []string
		want   bool
	}{
		{"reference", []string{"b", "c", "d", "e"}, false},
		{LRUKeys, []string{"b", "c", "d"}, false},
		{LRUKeys, []string{"b", "c", "d", "e"}, true},
		{LRUKeys, []string{"b", "c", "b", "d", "c", "b"}, false},
	} {
		t.Run(fmt.Sprintf("%s/%d-others", tc.name, len(tc.others)), func(t *testing.T) {
			lim := openVariantOrRef(t, tc.name, Env{Clock: (&fakeClock{t: t0}).now})
			if got := admittedOf(t, lim, "a", 2, l); got != 1 {
				t.Fatalf("key a: %d of 2 admitted, want 1", got)
			}
			for _, k := range tc.others {
				admittedOf(t, lim, k, 1, l)
			}
			d, err := lim.AllowN(context.Background(), "a", 1, l)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.want {
				t.Fatalf("key a after %v: Allowed = %v, want %v", tc.others, d.Allowed, tc.want)
			}
		})
	}
	lim := newLRUKeys(limiter.NewMemoryStore(limiter.WithClock((&fakeClock{t: t0}).now)), 2)
	admittedOf(t, lim, "a", 1, l)
	if err := lim.Reset(context.Background(), "a", l); err != nil {
		t.Fatal(err)
	}
	if got := lim.order.Len(); got != 0 {
		t.Fatalf("after Reset the cache holds %d keys, want 0", got)
	}
}

// TestRedisKeysOfWrappers: the variants built on the reference Redis store
// keep its keys, so that their state lives where the reference's would.
func TestRedisKeysOfWrappers(t *testing.T) {
	_, env := redisEnv(t)
	client := redis.NewClient(env.Redis)
	defer client.Close()
	l := mustLimit(t, "gcra:5/1s,burst=5")
	ctx := context.Background()
	for _, name := range []string{RetryAfterMillis, RetryAfterZero, QueueNoDelay, ResetEpoch, LRUKeys} {
		key := "wrapped-" + name
		if got := admittedOf(t, open(t, name, env), key, 1, l); got != 1 {
			t.Fatalf("%s: %d admitted, want 1", name, got)
		}
		if n := client.Exists(ctx, redisstore.New(client).StorageKey(key, l)).Val(); n != 1 {
			t.Errorf("%s: the reference's key for %q is missing", name, key)
		}
	}
}

// TestNaiveLease: GCRA 10/s (burst 15) with leases of 5 units for 1 s, on
// two instances. Instance a takes a lease from the full bucket (1 unit
// spent, 4 held); 700 ms later, the bucket refilled and the lease not over,
// a spends its 4 units and b takes what the store gives. Charged at the
// lease's end, the reference's lease leaves b 5 units, 9 in all; charged
// when granted, the naive lease leaves b the whole burst of 15, and a's 4
// units come on top: 19 within milliseconds, over the burst.
func TestNaiveLease(t *testing.T) {
	_, env := redisEnv(t)
	l := mustLimit(t, "gcra:10/1s,burst=15,lease=5/1s")
	for _, tc := range []struct {
		name    string
		atMost  int
		atLeast int
	}{{"reference", 15, 0}, {NaiveLease, 100, 19}} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b limiter.Limiter
			if tc.name == "reference" {
				client := redis.NewClient(env.Redis)
				t.Cleanup(func() { client.Close() })
				a, b = lease.New(redisstore.New(client)), lease.New(redisstore.New(client))
			} else {
				a, b = open(t, NaiveLease, env), open(t, NaiveLease, env)
			}
			key := "lease-" + tc.name
			if got := admittedOf(t, a, key, 1, l); got != 1 {
				t.Fatalf("a: the lease's first request: %d admitted, want 1", got)
			}
			time.Sleep(700 * time.Millisecond) // 5 units of refill; the lease lasts 1 s
			admitted := admittedOf(t, a, key, 4, l) + admittedOf(t, b, key, 30, l)
			t.Logf("%d admitted", admitted)
			if admitted > tc.atMost || admitted < tc.atLeast {
				t.Fatalf("a's 4 leased units and b's 30 requests after the refill: %d admitted, want %d to %d (burst 15)", admitted, tc.atLeast, tc.atMost)
			}
		})
	}
}
