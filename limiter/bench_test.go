package limiter_test

import (
	"context"
	"strconv"
	"sync"
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
