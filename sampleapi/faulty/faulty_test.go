//go:build unix

package faulty

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/limiter/resilience"
)

// t0 starts every fixed timeline: aligned on every window the tests use.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func redisEnv(t *testing.T) (*redistest.Server, Env) {
	t.Helper()
	s := redistest.StartForTest(t)
	return s, Env{Redis: &redis.Options{Addr: s.Addr(), DisableIdentity: true, ContextTimeoutEnabled: true}}
}

func open(t *testing.T, name string, env Env) limiter.Limiter {
	t.Helper()
	v, err := Lookup(name)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", name, err)
	}
	lim, closeLim, err := v.Open(context.Background(), env)
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := closeLim(); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	return lim
}

// openRef opens the reference limiter on env, as the variants built on it do.
func openRef(t *testing.T, env Env) limiter.Limiter {
	t.Helper()
	if env.Clock == nil {
		env.Clock = time.Now
	}
	lim, closeLim, err := openReference(context.Background(), Variant{}, env)
	if err != nil {
		t.Fatalf("open the reference: %v", err)
	}
	t.Cleanup(func() { closeLim() })
	return lim
}

// openVariantOrRef opens the variant called name, or the reference for "reference".
func openVariantOrRef(t *testing.T, name string, env Env) limiter.Limiter {
	t.Helper()
	if name == "reference" {
		return openRef(t, env)
	}
	return open(t, name, env)
}

func mustLimit(t *testing.T, spec string) limiter.Limit {
	t.Helper()
	l, err := limiter.ParseLimit(spec)
	if err != nil {
		t.Fatalf("ParseLimit(%q): %v", spec, err)
	}
	return l
}

func TestLookup(t *testing.T) {
	for _, name := range Names() {
		v, err := Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", name, err)
		}
		if v.Name != name || v.Fault == "" {
			t.Errorf("Lookup(%q) = %+v, want its name and a fault", name, v)
		}
	}
	v, err := Lookup("non-atomic:20ms")
	if err != nil {
		t.Fatalf("Lookup(non-atomic:20ms): %v", err)
	}
	if got, want := v.delay, 20*time.Millisecond; got != want {
		t.Errorf("delay = %v, want %v", got, want)
	}
	if v, _ := Lookup(NonAtomic); v.delay != DefaultNonAtomicDelay {
		t.Errorf("default delay = %v, want %v", v.delay, DefaultNonAtomicDelay)
	}
	if v, _ := Lookup(LRUKeys); v.keys != DefaultLRUKeys {
		t.Errorf("default keys = %d, want %d", v.keys, DefaultLRUKeys)
	}
	if v, err := Lookup("lru-keys:8"); err != nil || v.keys != 8 {
		t.Errorf("Lookup(lru-keys:8) = %d keys, %v; want 8", v.keys, err)
	}
	for _, bad := range []string{"", "reference", "no-ttl:1s", "non-atomic:soon", "non-atomic:-1ms", "lru-keys:0", "lru-keys:many", "retry-after-ms:1"} {
		if _, err := Lookup(bad); err == nil {
			t.Errorf("Lookup(%q) succeeded, want an error", bad)
		}
	}
	if _, err := Lookup("atomic"); !errors.Is(err, ErrUnknownVariant) {
		t.Errorf("Lookup(atomic) error = %v, want ErrUnknownVariant", err)
	}
	if _, _, err := (Variant{}).Open(context.Background(), Env{}); err == nil {
		t.Error("the zero Variant opened")
	}
	if _, _, err := mustLookup(t, NonAtomic).Open(context.Background(), Env{}); err == nil {
		t.Error("non-atomic opened without Redis")
	}
}

func mustLookup(t *testing.T, name string) Variant {
	t.Helper()
	v, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// step is one request of a timeline: at offset from t0, of cost n.
type step struct {
	at time.Duration
	n  int64
}

// TestGoStoreMatchesReference holds goStore with every fault off to
// limiter.MemoryStore on a fixed timeline: the variants built on it differ
// from the reference by their fault alone.
func TestGoStoreMatchesReference(t *testing.T) {
	_, env := redisEnv(t)
	client := redis.NewClient(env.Redis)
	defer client.Close()
	steps := []step{{0, 1}, {0, 1}, {0, 1}, {100 * time.Millisecond, 1}, {250 * time.Millisecond, 2}, {400 * time.Millisecond, 1},
		{time.Second, 1}, {1200 * time.Millisecond, 1}, {1900 * time.Millisecond, 2}, {2 * time.Second, 1}, {2 * time.Second, 1}, {5 * time.Second, 3}}
	for _, spec := range []string{"gcra:5/1s,burst=3", "fixed_window:3/1s", "gcra:30/1m,burst=3", "token_bucket:5/1s,burst=3", "token_bucket:30/1m,burst=3"} {
		t.Run(spec, func(t *testing.T) {
			l := mustLimit(t, spec)
			clock := &fakeClock{}
			s := newGoStore(client)
			s.clock = clock.now
			ref := limiter.NewMemoryStore(limiter.WithClock(clock.now))
			ctx := context.Background()
			for i, st := range steps {
				at := t0.Add(st.at)
				clock.set(at)
				got, err := s.AllowN(ctx, "k-"+spec, st.n, l)
				if err != nil {
					t.Fatalf("step %d: AllowN: %v", i, err)
				}
				want, err := ref.AllowN(ctx, "k", st.n, l)
				if err != nil {
					t.Fatalf("step %d: reference: %v", i, err)
				}
				if got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.RetryAfter != want.RetryAfter || got.ResetAfter != want.ResetAfter {
					t.Fatalf("step %d (+%v, cost %d): got %+v, want %+v", i, st.at, st.n, got, want)
				}
				peek, err := s.Peek(ctx, "k-"+spec, l)
				if err != nil {
					t.Fatalf("step %d: Peek: %v", i, err)
				}
				wantPeek, err := ref.Peek(ctx, "k", l)
				if err != nil {
					t.Fatalf("step %d: reference Peek: %v", i, err)
				}
				if peek.Allowed != wantPeek.Allowed || peek.Remaining != wantPeek.Remaining || peek.RetryAfter != wantPeek.RetryAfter || peek.ResetAfter != wantPeek.ResetAfter {
					t.Fatalf("step %d: Peek = %+v, want %+v", i, peek, wantPeek)
				}
			}
			if err := s.Reset(ctx, "k-"+spec, l); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			if d, err := s.AllowN(ctx, "k-"+spec, 1, l); err != nil || d.Remaining != l.Capacity()-1 {
				t.Fatalf("after Reset: %+v, %v; want a full budget less one", d, err)
			}
		})
	}
	if _, err := newGoStore(client).AllowN(context.Background(), "k", 1, mustLimit(t, "sliding_window_log:1/1s")); !errors.Is(err, limiter.ErrInvalidLimit) {
		t.Errorf("sliding window log error = %v, want ErrInvalidLimit", err)
	}
}

// interleave makes s run other's decision between its read and its write,
// once: the schedule field case C1 describes, made deterministic.
func interleave(s *goStore, other func()) {
	var once sync.Once
	s.afterRead = func() { once.Do(other) }
}

// TestNonAtomic: a decision slipped between another's read and write is
// lost by the non-atomic store (both admitted under burst 1) and retried by
// the reference (the second rejected).
func TestNonAtomic(t *testing.T) {
	_, env := redisEnv(t)
	client := redis.NewClient(env.Redis)
	defer client.Close()
	l := mustLimit(t, "gcra:1/1m,burst=1")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		racy bool
		want int
	}{{"reference", false, 1}, {NonAtomic, true, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newGoStore(client)
			s.racy = tc.racy
			key := "c1-" + tc.name
			var other limiter.Decision
			var otherErr error
			interleave(s, func() { other, otherErr = newGoStore(client).AllowN(ctx, key, 1, l) })
			d, err := s.AllowN(ctx, key, 1, l)
			if err != nil || otherErr != nil {
				t.Fatalf("AllowN: %v, %v", err, otherErr)
			}
			admitted := 0
			for _, x := range []limiter.Decision{d, other} {
				if x.Allowed {
					admitted++
				}
			}
			if admitted != tc.want {
				t.Fatalf("admitted %d of 2 under burst 1, want %d", admitted, tc.want)
			}
		})
	}
	v := mustLookup(t, NonAtomic)
	lim, closeLim, err := v.Open(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLim()
	if s := lim.(*goStore); !s.racy || s.delay != DefaultNonAtomicDelay {
		t.Fatalf("non-atomic variant: racy %v, delay %v; want racy with %v", s.racy, s.delay, DefaultNonAtomicDelay)
	}
}

// TestClientClock: two instances half a window apart in their clocks open
// a fresh window each when the client clock decides, but share one on
// Redis TIME.
func TestClientClock(t *testing.T) {
	_, env := redisEnv(t)
	l := mustLimit(t, "fixed_window:2/720h")
	skew := 720 * time.Hour // one window: the skewed instance is always in the next one
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		want int
	}{{"reference", 2}, {ClientClock, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b limiter.Limiter
			if tc.name == "reference" {
				a, b = openRef(t, env), openRef(t, env)
			} else {
				envB := env
				envB.Clock = func() time.Time { return time.Now().Add(skew) }
				a, b = open(t, ClientClock, env), open(t, ClientClock, envB)
			}
			admitted := 0
			for _, lim := range []limiter.Limiter{a, a, a, b, b, b} {
				d, err := lim.AllowN(ctx, "skewed", 1, l)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted++
				}
			}
			// Deleted so the reference's 30-day keys do not collide across subtests.
			rdb := redis.NewClient(env.Redis)
			defer rdb.Close()
			rdb.Del(ctx, redisstore.New(rdb).StorageKey("skewed", l))
			if admitted != tc.want {
				t.Fatalf("admitted %d under a limit of 2, want %d", admitted, tc.want)
			}
		})
	}
}

// TestRejectedConsumesAndHalfToken walks GCRA 1/s (burst 1) on a fixed
// timeline where the two faults and the reference part ways.
func TestRejectedConsumesAndHalfToken(t *testing.T) {
	_, env := redisEnv(t)
	client := redis.NewClient(env.Redis)
	defer client.Close()
	l := mustLimit(t, "gcra:1/1s,burst=1")
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fault func(*goStore)
		want  []bool // at 0, 500 ms, 1 s
	}{
		{"reference", func(*goStore) {}, []bool{true, false, true}},
		{RejectedConsumes, func(s *goStore) { s.chargeRejected = true }, []bool{true, false, false}},
		{HalfToken, func(s *goStore) { s.halfToken = true }, []bool{true, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{}
			s := newGoStore(client)
			s.clock = clock.now
			tc.fault(s)
			for i, at := range []time.Duration{0, 500 * time.Millisecond, time.Second} {
				clock.set(t0.Add(at))
				d, err := s.AllowN(ctx, "tl-"+tc.name, 1, l)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := d.Allowed, tc.want[i]; got != want {
					t.Fatalf("at +%v: Allowed = %v, want %v", at, got, want)
				}
			}
		})
	}
	for _, name := range []string{RejectedConsumes, HalfToken} {
		s := open(t, name, env).(*goStore)
		if s.clock != nil || s.racy {
			t.Errorf("%s: clock %v, racy %v; want Redis TIME in one transaction", name, s.clock != nil, s.racy)
		}
	}
}

// TestServedAsFixed: 2 per second admitted at 900 ms; at 1.1 s the
// declared sliding window (log, or counter whose estimate still weighs the
// previous window at 0.9) still holds them, the fixed window served in its
// place has started afresh.
func TestServedAsFixed(t *testing.T) {
	for _, tc := range []struct {
		variant, spec string
	}{{FixedAsSliding, "sliding_window_log:2/1s"}, {SlidingCounterAsFixed, "sliding_window_counter:2/1s"}} {
		l := mustLimit(t, tc.spec)
		for _, run := range []struct {
			name string
			want bool
		}{{"reference", false}, {tc.variant, true}} {
			t.Run(tc.variant+"/"+run.name, func(t *testing.T) {
				clock := &fakeClock{t: t0.Add(900 * time.Millisecond)}
				env := Env{Clock: clock.now}
				lim := openVariantOrRef(t, run.name, env)
				ctx := context.Background()
				for range 2 {
					if d, err := lim.AllowN(ctx, "k", 1, l); err != nil || !d.Allowed {
						t.Fatalf("at 900ms: %+v, %v; want admitted", d, err)
					}
				}
				clock.set(t0.Add(1100 * time.Millisecond))
				d, err := lim.AllowN(ctx, "k", 1, l)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed != run.want {
					t.Fatalf("at 1.1s: Allowed = %v, want %v", d.Allowed, run.want)
				}
				if d.Limit != l {
					t.Fatalf("decision's limit = %v, want the declared %v", d.Limit, l)
				}
				if p, err := lim.Peek(ctx, "k", l); err != nil || p.Limit != l {
					t.Fatalf("Peek: %+v, %v; want the declared limit", p, err)
				}
				if err := lim.Reset(ctx, "k", l); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestNoTTL: the reference's key carries a TTL; the variant's has none.
func TestNoTTL(t *testing.T) {
	_, env := redisEnv(t)
	rdb := redis.NewClient(env.Redis)
	defer rdb.Close()
	l := mustLimit(t, "fixed_window:5/1s")
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		immortal bool
	}{{"reference", false}, {NoTTL, true}} {
		t.Run(tc.name, func(t *testing.T) {
			lim := openVariantOrRef(t, tc.name, env)
			key := "ttl-" + tc.name
			if d, err := lim.AllowN(ctx, key, 1, l); err != nil || !d.Allowed {
				t.Fatalf("AllowN: %+v, %v", d, err)
			}
			sk := redisstore.New(rdb).StorageKey(key, l)
			ttl, err := rdb.PTTL(ctx, sk).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got := ttl == -1; got != tc.immortal { // -1: the key exists without a TTL
				t.Fatalf("PTTL(%s) = %v; immortal = %v, want %v", sk, ttl, got, tc.immortal)
			}
			rdb.Del(ctx, sk) // the server's cleanup fails the test on a key without a TTL
		})
	}
}

// TestRetryAfterShort: a 10 s wait announced as 9 s.
func TestRetryAfterShort(t *testing.T) {
	l := mustLimit(t, "gcra:6/1m,burst=1")
	for _, tc := range []struct {
		name string
		want int64
	}{{"reference", 10}, {RetryAfterShort, 9}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: t0}
			lim := openVariantOrRef(t, tc.name, Env{Clock: clock.now})
			ctx := context.Background()
			if d, err := lim.AllowN(ctx, "k", 1, l); err != nil || !d.Allowed {
				t.Fatalf("first: %+v, %v", d, err)
			}
			d, err := lim.AllowN(ctx, "k", 1, l)
			if err != nil || d.Allowed {
				t.Fatalf("second: %+v, %v; want rejected", d, err)
			}
			if got := d.RetryAfterSeconds(); got != tc.want {
				t.Fatalf("RetryAfterSeconds = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPrivateBucket: two instances on one Redis share a budget of 1 with
// the reference and have one each with the variant.
func TestPrivateBucket(t *testing.T) {
	_, env := redisEnv(t)
	l := mustLimit(t, "gcra:1/1m,burst=1")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		want int
	}{{"reference", 1}, {PrivateBucket, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			admitted := 0
			for range 2 {
				d, err := openVariantOrRef(t, tc.name, env).AllowN(ctx, "pb-"+tc.name, 1, l)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted++
				}
			}
			if admitted != tc.want {
				t.Fatalf("two instances admitted %d under burst 1, want %d", admitted, tc.want)
			}
		})
	}
}

// TestNoTimeout: on a paused Redis the reference wrapper fails open at its
// timeout (a degraded admission), while the variant's request waits for
// Redis and is decided by it once Redis resumes.
func TestNoTimeout(t *testing.T) {
	srv, env := redisEnv(t)
	l := mustLimit(t, "gcra:10/1s,burst=10")
	ctx := context.Background()

	refClient := redis.NewClient(env.Redis)
	defer refClient.Close()
	ref := resilience.New(redisstore.New(refClient), resilience.Config{Mode: resilience.FailOpen, Timeout: 50 * time.Millisecond})
	defer ref.Close()
	lim, client := newNoTimeout(Env{Redis: env.Redis, Clock: time.Now})
	defer lim.Close()
	defer client.Close()
	hook := &sentHook{sent: make(chan struct{})}
	client.AddHook(hook)

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	d, err := ref.AllowN(ctx, "paused", 1, l)
	if err != nil || !d.Allowed || !d.Degraded {
		t.Fatalf("reference on a paused Redis: %+v, %v; want a degraded admission", d, err)
	}

	type answer struct {
		d   limiter.Decision
		err error
	}
	done := make(chan answer, 1)
	go func() {
		d, err := lim.AllowN(ctx, "paused", 1, l)
		done <- answer{d, err}
	}()
	// Wait until the request has been handed to Redis, then let Redis go.
	select {
	case <-hook.sent:
	case a := <-done:
		t.Fatalf("answered on a paused Redis: %+v, %v; want a request waiting for Redis", a.d, a.err)
	}
	// Hold Redis paused well past the reference's timeout: a variant that
	// gave up would answer from its failure mode by now.
	time.Sleep(4 * resilience.DefaultTimeout)
	select {
	case a := <-done:
		t.Fatalf("answered on a paused Redis: %+v, %v; want a request waiting for Redis", a.d, a.err)
	default:
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	a := <-done
	if a.err != nil || !a.d.Allowed || a.d.Degraded {
		t.Fatalf("after resume: %+v, %v; want an admission decided by Redis, not by the failure mode", a.d, a.err)
	}
	if st := lim.Stats(); st.StoreErrors != 0 {
		t.Fatalf("store errors = %d, want 0: the request waited instead of timing out", st.StoreErrors)
	}
}

// sentHook closes sent when the client first sends a command or pipeline.
type sentHook struct {
	sent chan struct{}
	once sync.Once
}

func (h *sentHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sentHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.once.Do(func() { close(h.sent) })
		return next(ctx, cmd)
	}
}

func (h *sentHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.once.Do(func() { close(h.sent) })
		return next(ctx, cmds)
	}
}

// TestLeftmostXFF: behind a trusted proxy the reference keys a request by
// the address the proxy appended; the variant by the client's own.
func TestLeftmostXFF(t *testing.T) {
	resolver, err := httplimit.NewClientIPResolver("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := resolver.ClientIP(r)
		if err != nil {
			t.Errorf("ClientIP: %v", err)
		}
		got = a.String()
	})
	for _, tc := range []struct {
		name, want string
		h          http.Handler
	}{
		{"reference", "192.0.2.7", mustLookup(t, PrivateBucket).Handler(inner)},
		{LeftmostXFF, "203.0.113.66", mustLookup(t, LeftmostXFF).Handler(inner)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/v1/data", nil)
			r.RemoteAddr = "127.0.0.1:5555"
			r.Header.Set("X-Forwarded-For", "203.0.113.66, 192.0.2.7")
			tc.h.ServeHTTP(httptest.NewRecorder(), r)
			if got != tc.want {
				t.Fatalf("client = %s, want %s", got, tc.want)
			}
		})
	}
}
