//go:build unix

package faulty

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/limiter/resilience"
)

// TestNoMonotonicTime is field case C12 on a Redis whose clock steps back:
// GCRA 1/s, burst 2, one admission leaves one unit; the clock steps 2 s
// back; the reference admits the next request, as the token bucket would,
// and the variant, whose per-key time follows the clock back, rejects it.
func TestNoMonotonicTime(t *testing.T) {
	if err := redistest.FaketimeAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := redistest.Start(ctx, redistest.Options{FakeClock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	env := Env{Redis: &redis.Options{Addr: s.Addr(), DisableIdentity: true, ContextTimeoutEnabled: true}}
	l := mustLimit(t, "gcra:1/1s,burst=2")
	for _, tc := range []struct {
		name string
		want bool
	}{{"reference", true}, {NoMonotonicTime, false}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.SetClockOffset(0); err != nil {
				t.Fatal(err)
			}
			lim := openVariantOrRef(t, tc.name, env)
			key := "c12-" + tc.name
			if d, err := lim.AllowN(ctx, key, 1, l); err != nil || !d.Allowed || d.Remaining != 1 {
				t.Fatalf("first request: %+v, %v; want admitted with 1 left", d, err)
			}
			if err := s.SetClockOffset(-2 * time.Second); err != nil {
				t.Fatal(err)
			}
			d, err := lim.AllowN(ctx, key, 1, l)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.want {
				t.Fatalf("after the clock stepped 2 s back: Allowed = %v, want %v (%+v)", d.Allowed, tc.want, d)
			}
		})
	}
}

// TestNoFailover: after a switchover the reference, following the
// Sentinel, decides on the new master; the variant, on a plain client to
// the master as configured, meets the demoted one and fails.
func TestNoFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := redistest.StartSentinel(ctx, redistest.SentinelOptions{})
	if err != nil {
		t.Skipf("skipping: %v", err) // redis-server missing: redisEnv's tests say so
	}
	defer g.Stop()
	opts := &redis.Options{Addr: g.Master().Addr(), DisableIdentity: true, ContextTimeoutEnabled: true, MaxRetries: 1}
	env := Env{Redis: opts, Sentinel: &redis.FailoverOptions{
		MasterName: g.MasterName(), SentinelAddrs: g.SentinelAddrs(), DisableIdentity: true, ContextTimeoutEnabled: true, MaxRetries: 1,
	}}
	l := mustLimit(t, "gcra:100/1s,burst=100")
	ref, variant := openRef(t, env), open(t, NoFailover, env)
	for _, lim := range []limiter.Limiter{ref, variant} {
		if _, err := lim.AllowN(ctx, "k", 1, l); err != nil {
			t.Fatalf("before the failover: %v", err)
		}
	}
	if err := g.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	promoted, _, err := g.AwaitMaster(ctx, g.Master().Addr(), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := redistest.Follow(ctx, g.Master(), promoted); err != nil {
		t.Fatal(err)
	}
	if err := redistest.AwaitRole(ctx, g.Master(), "slave", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := ref.AllowN(ctx, "k", 1, l); err != nil {
		t.Errorf("reference after the failover: %v, want a decision on the new master", err)
	}
	if _, err := variant.AllowN(ctx, "k", 1, l); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("no-failover after the failover: %v, want READONLY from the demoted master", err)
	}
}

// TestUnboundedConnections: against a Redis that is gone, the reference's
// resilience wrapper opens its circuit breaker and stops calling it; the
// variant never does, and keeps calling it, a round trip per decision on a
// pool without a bound whose commands ignore the caller's deadline.
func TestUnboundedConnections(t *testing.T) {
	s, env := redisEnv(t)
	env.StoreTimeout = 20 * time.Millisecond
	v, err := Lookup(UnboundedConnections)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OwnFailureMode || !v.NeedsRedis {
		t.Fatalf("%+v: want a variant that answers store failures itself, on Redis", v)
	}
	lim := open(t, UnboundedConnections, env)
	r, ok := lim.(*resilience.Limiter)
	if !ok {
		t.Fatalf("%T, want the resilience wrapper", lim)
	}
	ref := resilience.New(openRef(t, env), resilience.Config{Mode: resilience.FailOpen, Timeout: env.StoreTimeout})
	defer ref.Close()
	l := mustLimit(t, "gcra:100/1s,burst=100")
	ctx := context.Background()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		for _, lim := range []limiter.Limiter{r, ref} {
			if d, err := lim.AllowN(ctx, "k"+strconv.Itoa(i), 1, l); err != nil || !d.Allowed {
				t.Fatalf("decision %d with Redis gone: %+v, %v; want admitted (fail-open)", i, d, err)
			}
		}
	}
	if got, want := ref.BreakerState(), resilience.Open; got != want {
		t.Errorf("reference breaker = %v, want %v", got, want)
	}
	if got, want := r.BreakerState(), resilience.Closed; got != want {
		t.Errorf("variant breaker = %v, want %v: it never stops calling the store", got, want)
	}
	if st := r.Stats(); st.ShortCircuits != 0 {
		t.Errorf("variant short-circuited %d decisions, want 0", st.ShortCircuits)
	}
}
