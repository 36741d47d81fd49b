package redisstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/limitertest"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// modes are the ways the store sends its programs: batched and unbatched
// with functions (FCALL, on Redis 7), and unbatched as scripts (EVALSHA,
// as WithoutFunctions and Redis before 7 run them); all must decide alike.
var modes = []struct {
	name string
	opts []redisstore.Option
}{
	{"batched", nil},
	{"unbatched", []redisstore.Option{redisstore.WithBatching(0, 0)}},
	{"scripts", []redisstore.Option{redisstore.WithBatching(0, 0), redisstore.WithoutFunctions()}},
}

// factory returns stores on client in test-clock mode, each under a prefix
// of its own so that the suite's subtests never share state.
func factory(client redis.UniversalClient, mode string, opts []redisstore.Option) limitertest.Factory {
	var n atomic.Int64
	return func(t *testing.T, clock func() time.Time) limiter.Limiter {
		o := append([]redisstore.Option{
			redisstore.WithTestClock(clock),
			redisstore.WithPrefix(fmt.Sprintf("rl-%s-%d:", mode, n.Add(1))),
		}, opts...)
		return redisstore.New(client, o...)
	}
}

func TestConformance(t *testing.T) {
	srv := redistest.StartForTest(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			limitertest.Run(t, factory(newClient(t, srv.Addr()), m.name, m.opts))
		})
	}
}

func TestLeaseConformance(t *testing.T) {
	srv := redistest.StartForTest(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			limitertest.RunLease(t, factory(newClient(t, srv.Addr()), m.name, m.opts))
		})
	}
}

func TestConformanceCluster(t *testing.T) {
	cl := redistest.StartClusterForTest(t, 3)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			limitertest.Run(t, factory(newClusterClient(t, cl.Addrs()), m.name, m.opts))
		})
	}
}

// TestConformanceConcurrency runs the suite's concurrency test over three
// separate clients, each with its own connection pool, as three instances
// of a service would.
func TestConformanceConcurrency(t *testing.T) {
	srv := redistest.StartForTest(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			limitertest.RunConcurrency(t, func(t *testing.T, clock func() time.Time) []limiter.Limiter {
				var ls []limiter.Limiter
				for range 3 {
					o := append([]redisstore.Option{redisstore.WithTestClock(clock), redisstore.WithPrefix("rl-" + m.name + ":")}, m.opts...)
					ls = append(ls, redisstore.New(newClient(t, srv.Addr()), o...))
				}
				return ls
			})
		})
	}
}
