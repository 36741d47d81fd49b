//go:build unix

package resilience_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/limiter/resilience"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(discardLogger{}) // dial failures are expected here
	os.Exit(m.Run())
}

// faultClient is a go-redis client set up for faults: it honours context
// deadlines, does not retry, and gives up dialling after timeout.
func faultClient(addr string, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, DisableIdentity: true, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, PoolTimeout: timeout,
	})
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFailureModesOnRedis runs every failure mode against a real
// redis-server that is killed and then restarted empty, and one that is
// paused (SIGSTOP) and resumed.
func TestFailureModesOnRedis(t *testing.T) {
	limit := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1e-3, Period: time.Second, Burst: 6}
	faults := []struct {
		name         string
		inject, heal func(*redistest.Server) error
	}{
		{"killed", (*redistest.Server).Kill, func(s *redistest.Server) error { return s.Restart(context.Background()) }},
		{"paused", (*redistest.Server).Pause, (*redistest.Server).Resume},
	}
	modes := []struct {
		mode        resilience.Mode
		wantAllowed []bool // four requests during the fault, 2 of 6 already spent
	}{
		{resilience.FailOpen, []bool{true, true, true, true}},
		{resilience.FailClosed, []bool{false, false, false, false}},
		{resilience.Fallback, []bool{true, true, false, false}}, // a share of 6/3 = 2
	}
	for _, f := range faults {
		for _, m := range modes {
			t.Run(f.name+"/"+string(m.mode), func(t *testing.T) {
				srv := redistest.StartForTest(t)
				client := faultClient(srv.Addr(), 50*time.Millisecond)
				defer client.Close()
				l := resilience.New(redisstore.New(client), resilience.Config{
					Mode: m.mode, Timeout: 50 * time.Millisecond, Instances: 3, Logger: quiet,
					Breaker: resilience.BreakerConfig{ConsecutiveFailures: 2, OpenFor: 100 * time.Millisecond},
				})
				defer l.Close()
				ctx := context.Background()
				for i := range 2 {
					if d, err := l.AllowN(ctx, "alice", 1, limit); err != nil || !d.Allowed || d.Degraded {
						t.Fatalf("healthy request %d: %+v, %v", i, d, err)
					}
				}
				if err := f.inject(srv); err != nil {
					t.Fatal(err)
				}
				for i, want := range m.wantAllowed {
					d, err := l.AllowN(ctx, "alice", 1, limit)
					if err != nil {
						t.Fatalf("request %d during the fault: %v; a store failure must become a decision", i, err)
					}
					if !d.Degraded || d.Allowed != want {
						t.Fatalf("request %d during the fault: Allowed = %v, Degraded = %v; want %v, true", i, d.Allowed, d.Degraded, want)
					}
				}
				if l.BreakerState() == resilience.Closed {
					t.Fatalf("breaker closed after %d failures", len(m.wantAllowed))
				}
				if err := f.heal(srv); err != nil {
					t.Fatal(err)
				}
				var d limiter.Decision
				waitFor(t, "shared store deciding again", func() bool {
					var err error
					d, err = l.Peek(ctx, "alice", limit)
					return err == nil && !d.Degraded
				})
				// A restarted Redis is empty (and has no scripts cached: C8).
				// A resumed one still holds the 2 units spent before, and it
				// then runs the scripts of the requests that timed out while
				// it was paused: their outcome was unknown to the caller, and
				// each may have been charged.
				hi, lo := int64(4), 4-l.Stats().StoreErrors
				if f.name == "killed" {
					hi, lo = 6, 6
				}
				if d.Remaining < lo || d.Remaining > hi {
					t.Fatalf("after recovery: Remaining = %d, want %d..%d", d.Remaining, lo, hi)
				}
				if got := l.Stats().StoreErrors; got < 1 {
					t.Fatalf("StoreErrors = %d, want the failures counted", got)
				}
			})
		}
	}
}

// TestUnreachableRedisFailsOpen is case C10: 100000 per minute, Redis
// unreachable, fail-open with a 2 s timeout: every request is admitted and
// none errors.
func TestUnreachableRedisFailsOpen(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	client := faultClient("127.0.0.1:"+itoa(port), 2*time.Second)
	defer client.Close()
	l := resilience.New(redisstore.New(client), resilience.Config{Mode: resilience.FailOpen, Timeout: 2 * time.Second, Logger: quiet})
	defer l.Close()
	limit := limiter.PerMinute(100000, 100000)
	for i := range 50 {
		d, err := l.AllowN(context.Background(), "k", 1, limit)
		if err != nil || !d.Allowed || !d.Degraded {
			t.Fatalf("request %d: %+v, %v; want admitted, degraded, no error", i, d, err)
		}
	}
	st := l.Stats()
	if st.FailedOpen != 50 || st.StoreErrors == 0 {
		t.Fatalf("stats %+v: want 50 fail-open decisions and the store errors counted", st)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// blackhole listens on a free loopback port and accepts connections but
// never reads or writes on them, as a cut route does: a request sent there
// hangs until its client gives up. It returns the address; the listener and
// its connections close at cleanup.
func blackhole(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// BenchmarkDecisionOnFaultyRedis measures how long one decision takes when
// Redis is dead (connection refused), paused (SIGSTOP) or black-holed (a
// proxy that carries nothing), with the breaker disabled so every decision
// pays the fault, and with it enabled.
func BenchmarkDecisionOnFaultyRedis(b *testing.B) {
	limit := limiter.PerSecond(1000, 1000)
	for _, fault := range []string{"dead", "paused", "blackholed"} {
		for _, breaker := range []bool{false, true} {
			name := fault + "/breaker=off"
			if breaker {
				name = fault + "/breaker=on"
			}
			b.Run(name, func(b *testing.B) {
				srv := redistest.StartForTest(b)
				addr := srv.Addr()
				switch fault {
				case "dead":
					srv.Stop()
				case "paused":
					srv.Pause()
					b.Cleanup(func() { srv.Resume() })
				case "blackholed":
					addr = blackhole(b)
				}
				client := faultClient(addr, 50*time.Millisecond)
				defer client.Close()
				cfg := resilience.Config{Mode: resilience.FailOpen, Timeout: 50 * time.Millisecond, Logger: quiet,
					Breaker: resilience.BreakerConfig{ConsecutiveFailures: 1 << 30, FailureRate: 1, Window: 1 << 20}}
				if breaker {
					cfg.Breaker = resilience.BreakerConfig{ConsecutiveFailures: 3, OpenFor: time.Hour}
				}
				l := resilience.New(redisstore.New(client, redisstore.WithBatching(1, 1)), cfg)
				defer l.Close()
				b.ReportAllocs()
				for b.Loop() {
					if d, err := l.AllowN(context.Background(), "k", 1, limit); err != nil || !d.Degraded {
						b.Fatalf("%+v, %v", d, err)
					}
				}
			})
		}
	}
}
