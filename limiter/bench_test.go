package limiter_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/rlbench/rlbench/limiter"
)

// benchKeys is the key-space size of the many-keys benchmarks.
const benchKeys = 10_000

var keyNames = func() []string {
	ks := make([]string, benchKeys)
	for i := range ks {
		ks[i] = "key-" + strconv.Itoa(i)
	}
	return ks
}()

// benchLimit is a high rate so the benchmarks measure admissions and
// rejections alike, as real traffic mixes them.
func benchLimit(alg limiter.Algorithm) limiter.Limit {
	if alg.IsWindow() {
		return limiter.Window(alg, 1000, time.Second)
	}
	return limiter.Limit{Algorithm: alg, Rate: 1000, Period: time.Second, Burst: 100}
}

// BenchmarkMemoryStore measures one decision per op for every algorithm,
// on one hot key and spread over 10k keys, from GOMAXPROCS goroutines.
func BenchmarkMemoryStore(b *testing.B) {
	ctx := context.Background()
	for _, alg := range limiter.Algorithms {
		for _, keys := range []int{1, benchKeys} {
			b.Run(string(alg)+"/keys="+strconv.Itoa(keys), func(b *testing.B) {
				s := limiter.NewMemoryStore()
				l := benchLimit(alg)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						if _, err := s.AllowN(ctx, keyNames[i%keys], 1, l); err != nil {
							b.Error(err)
							return
						}
						i += 7919 // a prime stride: goroutines spread over the keys
					}
				})
			})
		}
	}
}

// mutexRateMap is the anchor users write today: a map of x/time/rate
// limiters behind one mutex.
type mutexRateMap struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func (r *mutexRateMap) allow(key string) bool {
	r.mu.Lock()
	l, ok := r.m[key]
	if !ok {
		l = rate.NewLimiter(1000, 100)
		r.m[key] = l
	}
	r.mu.Unlock()
	return l.Allow()
}

// BenchmarkAnchorXTimeRate is the same workload on x/time/rate.
func BenchmarkAnchorXTimeRate(b *testing.B) {
	for _, keys := range []int{1, benchKeys} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) {
			r := &mutexRateMap{m: make(map[string]*rate.Limiter)}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					r.allow(keyNames[i%keys])
					i += 7919
				}
			})
		})
	}
}

// BenchmarkVersusXTimeRate alternates rounds of 10,000 decisions on the
// memory store (token bucket) and on the x/time/rate map, from GOMAXPROCS
// goroutines over 10k keys, so that a shared, noisy machine slows both
// alike; it reports both costs and their ratio ("x", ours/anchor: ≤ 1 means
// ours is at least as fast).
//
//	go test -run '^$' -bench VersusXTimeRate -benchtime 2000000x ./limiter/
func BenchmarkVersusXTimeRate(b *testing.B) {
	ctx := context.Background()
	s := limiter.NewMemoryStore()
	l := benchLimit(limiter.TokenBucket)
	r := &mutexRateMap{m: make(map[string]*rate.Limiter)}
	ours := func(key string) { s.AllowN(ctx, key, 1, l) }
	anchor := func(key string) { r.allow(key) }
	b.ReportAllocs()
	const round = 10_000
	var oursTime, anchorTime time.Duration
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		anchorTime += parallelRound(n, anchor)
		oursTime += parallelRound(n, ours)
	}
	b.ReportMetric(float64(oursTime.Nanoseconds())/float64(b.N), "ours-ns/op")
	b.ReportMetric(float64(anchorTime.Nanoseconds())/float64(b.N), "anchor-ns/op")
	b.ReportMetric(float64(oursTime)/float64(anchorTime), "x")
}

// parallelRound runs op n times from GOMAXPROCS goroutines over the keys.
func parallelRound(n int, op func(key string)) time.Duration {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				op(keyNames[(i*7919)%benchKeys])
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
