package redisstore_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/cputime"
	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// benchCallers is the number of concurrent callers of every benchmark.
const benchCallers = 64

// benchKeys are the identities of the many-keys benchmarks.
var benchKeys = func() []string {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%d", i)
	}
	return keys
}()

// parallel runs op from benchCallers goroutines, each passing the key it
// should use next (one key, or a round of nkeys), and reports decisions/s.
func parallel(b *testing.B, nkeys int, op func(ctx context.Context, key string) error) {
	b.Helper()
	b.ReportAllocs()
	b.SetParallelism((benchCallers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var seq atomic.Int64
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1) * 7919)
		for pb.Next() {
			i++
			if err := op(ctx, benchKeys[i%nkeys]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkRedis measures decisions per second with 64 concurrent callers
// on one redis-server: a no-op EVALSHA as the ceiling of one round trip per
// call, go-redis/redis_rate v10 Allow as the anchor, and the store for every
// algorithm, batched and not, on one key and on 10,000 keys.
//
//	go test -run '^$' -bench BenchmarkRedis -benchtime 3s ./limiter/redisstore/
func BenchmarkRedis(b *testing.B) {
	srv := redistest.StartForTest(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, PoolSize: 2 * benchCallers})
	defer client.Close()
	if err := client.Ping(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	keyCounts := []struct {
		name string
		n    int
	}{{"1key", 1}, {"10kkeys", len(benchKeys)}}

	noop := redis.NewScript("return 1")
	b.Run("ceiling=noop_evalsha", func(b *testing.B) {
		parallel(b, 1, func(ctx context.Context, key string) error {
			return noop.Run(ctx, client, []string{key}).Err()
		})
	})
	rr := redis_rate.NewLimiter(client)
	for _, kc := range keyCounts {
		b.Run("anchor=redis_rate/"+kc.name, func(b *testing.B) {
			parallel(b, kc.n, func(ctx context.Context, key string) error {
				_, err := rr.Allow(ctx, key, redis_rate.PerSecond(1000))
				return err
			})
		})
	}
	for _, m := range modes {
		st := redisstore.New(client, append([]redisstore.Option{redisstore.WithPrefix("bench:")}, m.opts...)...)
		for _, alg := range limiter.Algorithms {
			l := limiter.Limit{Algorithm: alg, Rate: 1000, Period: time.Second, Burst: 1000}
			for _, kc := range keyCounts {
				b.Run(fmt.Sprintf("store=%s/%s/%s", m.name, alg, kc.name), func(b *testing.B) {
					parallel(b, kc.n, func(ctx context.Context, key string) error {
						_, err := st.Allow(ctx, key, l)
						return err
					})
				})
			}
		}
		l := []limiter.Limit{limiter.PerSecond(1000, 1000), limiter.Window(limiter.FixedWindow, 100_000, time.Hour)}
		b.Run(fmt.Sprintf("store=%s/two_limits/10kkeys", m.name), func(b *testing.B) {
			parallel(b, len(benchKeys), func(ctx context.Context, key string) error {
				_, err := st.Allow(ctx, key, l...)
				return err
			})
		})
	}
}

// BenchmarkVersusRedisRate measures the store, batched, unbatched and as
// scripts (WithoutFunctions), against go-redis/redis_rate v10 on one
// redis-server, 64 concurrent callers over 10,000 keys, in alternating
// rounds of 10,000 decisions each, so that a shared, noisy machine slows
// both alike. It reports both rates and their ratio ("x"), the CPU time
// redis-server spent per decision for each (INFO cpu, user and system, in
// µs), and the CPU time this process, the callers and the client, spent
// per decision in each side's rounds: with redis-server's, whether the two
// cores or the round trips' turnaround bound a rate. "floor/gcra" pits
// redis_rate against FloorLibrary, one FCALL per decision that only reads
// TIME, writes the key and replies: the most any store making one call per
// decision could reach against redis_rate here.
//
//	go test -run '^$' -bench BenchmarkVersusRedisRate -benchtime 100000x ./limiter/redisstore/
func BenchmarkVersusRedisRate(b *testing.B) {
	srv := redistest.StartForTest(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, PoolSize: 2 * benchCallers})
	defer client.Close()
	rr := redis_rate.NewLimiter(client)
	anchor := func(ctx context.Context, key string) error {
		_, err := rr.Allow(ctx, key, redis_rate.PerSecond(1000))
		return err
	}
	for _, m := range modes {
		for _, alg := range limiter.Algorithms {
			st := redisstore.New(client, append([]redisstore.Option{redisstore.WithPrefix("versus-" + m.name + ":")}, m.opts...)...)
			l := limiter.Limit{Algorithm: alg, Rate: 1000, Period: time.Second, Burst: 1000}
			store := func(ctx context.Context, key string) error {
				_, err := st.Allow(ctx, key, l)
				return err
			}
			b.Run(m.name+"/"+string(alg), func(b *testing.B) { versus(b, client, anchor, store) })
		}
	}
	// The floor: one FCALL per decision of a function that only reads TIME,
	// writes the key and replies, as any one-decision call must.
	if err := client.FunctionLoadReplace(context.Background(), redisstore.FloorLibrary).Err(); err != nil {
		b.Fatal(err)
	}
	floor := func(ctx context.Context, key string) error {
		return client.FCall(ctx, redisstore.FloorFunction, []string{"floor:" + key}).Err()
	}
	b.Run("floor/gcra", func(b *testing.B) { versus(b, client, anchor, floor) })
}

// versus runs b.N decisions of anchor and of store in alternating rounds of
// 10,000 and reports both rates, their ratio ("x"), and the CPU redis-server
// and this process each spent per decision in each side's rounds (the
// latter only where the process's CPU time is at hand).
func versus(b *testing.B, client *redis.Client, anchor, store func(ctx context.Context, key string) error) {
	b.ReportAllocs()
	const round = 10_000
	var anchorTime, storeTime, anchorCPU, storeCPU, anchorClient, storeClient time.Duration
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		cpu0, own0 := redisCPU(b, client), cputime.Process()
		anchorTime += rounds(b, n, anchor)
		cpu1, own1 := redisCPU(b, client), cputime.Process()
		storeTime += rounds(b, n, store)
		anchorCPU, storeCPU = anchorCPU+cpu1-cpu0, storeCPU+redisCPU(b, client)-cpu1
		anchorClient, storeClient = anchorClient+own1-own0, storeClient+cputime.Process()-own1
	}
	anchorRate, storeRate := float64(b.N)/anchorTime.Seconds(), float64(b.N)/storeTime.Seconds()
	b.ReportMetric(anchorRate, "redis_rate-decisions/s")
	b.ReportMetric(storeRate, "store-decisions/s")
	b.ReportMetric(storeRate/anchorRate, "x")
	perDecision := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(perDecision(anchorCPU), "redis_rate-redis-cpu-us/decision")
	b.ReportMetric(perDecision(storeCPU), "store-redis-cpu-us/decision")
	// The callers' and the client's CPU (this process's, which the INFO
	// calls between rounds barely touch).
	if anchorClient > 0 && storeClient > 0 {
		b.ReportMetric(perDecision(anchorClient), "redis_rate-client-cpu-us/decision")
		b.ReportMetric(perDecision(storeClient), "store-client-cpu-us/decision")
	}
}

// redisCPU is the CPU time redis-server behind client has used so far, user
// and system, from INFO cpu (microsecond resolution).
func redisCPU(b *testing.B, client *redis.Client) time.Duration {
	info, err := client.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, line := range strings.Split(info, "\n") {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name != "used_cpu_user" && name != "used_cpu_sys" {
			continue
		}
		seconds, err := strconv.ParseFloat(value, 64)
		if err != nil {
			b.Fatalf("INFO cpu %s: %v", name, err)
		}
		total += time.Duration(seconds * float64(time.Second))
	}
	return total
}

// rounds runs n calls of op from benchCallers goroutines over the 10,000
// keys and returns the time they took.
func rounds(b *testing.B, n int, op func(ctx context.Context, key string) error) time.Duration {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		ctx  = context.Background()
	)
	start := time.Now()
	for range benchCallers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := op(ctx, benchKeys[(i*7919)%int64(len(benchKeys))]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
