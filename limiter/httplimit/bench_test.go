package httplimit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
	"github.com/rlbench/rlbench/limiter/lease"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/limiter/resilience"
)

// benchLimit never rejects the benchmarks' traffic: every request is
// decided and admitted, the path a limiter adds to most requests.
var benchLimit = limiter.Limit{Algorithm: limiter.GCRA, Rate: 100_000, Period: time.Second, Burst: 100_000}

// benchKeys are the API keys the benchmarks' requests carry in turn.
var benchKeys = func() []string {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "bench-key-" + strconv.Itoa(i)
	}
	return keys
}()

// work is the handler behind every route: a small JSON body, as the
// sample API's GET /v1/data writes.
func work(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"items": []string{"alpha", "bravo", "charlie", "delta"}})
}

// keyAuth authenticates by X-API-Key, every key with no plan of its own.
func keyAuth(r *http.Request) (httplimit.Identity, error) {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		return httplimit.Identity{}, fmt.Errorf("%w: missing X-API-Key", httplimit.ErrUnauthenticated)
	}
	return httplimit.Identity{Key: key}, nil
}

// newBenchMiddleware is the middleware as the sample API runs it: the
// route's limit, authentication, IETF headers and metrics.
func newBenchMiddleware(tb testing.TB, lim limiter.Limiter, pattern string) *httplimit.Middleware {
	return newBenchMiddlewareOf(tb, lim, pattern, benchLimit)
}

// newBenchMiddlewareOf is newBenchMiddleware under the limit l.
func newBenchMiddlewareOf(tb testing.TB, lim limiter.Limiter, pattern string, l limiter.Limit) *httplimit.Middleware {
	tb.Helper()
	m, err := httplimit.New(lim,
		httplimit.WithRoutes(httplimit.Route{Pattern: pattern, Name: "bench", Limits: []limiter.Limit{l}}),
		httplimit.WithAuthenticator(keyAuth),
		httplimit.WithMetrics(prometheus.NewRegistry()),
	)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkMiddlewareKeyed measures the middleware's own cost per request
// of an API key under a route's limit, on a memory store and with the
// response recorded in memory: the CPU and allocations it adds besides the
// store's decision.
//
//	go test -run '^$' -bench BenchmarkMiddlewareKeyed ./limiter/httplimit/
func BenchmarkMiddlewareKeyed(b *testing.B) {
	h := newBenchMiddleware(b, limiter.NewMemoryStore(), "GET /v1/data").Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest(http.MethodGet, "/v1/data", nil)
		i := 0
		for pb.Next() {
			r.Header.Set("X-API-Key", benchKeys[i%len(benchKeys)])
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Errorf("status %d", w.Code)
				return
			}
			i++
		}
	})
}

// BenchmarkMiddlewareRedis measures a request through the middleware and
// the Redis store under the resilience wrapper (as the sample API runs
// them in a scenario), on a redis-server of its own, from GOMAXPROCS
// goroutines: the CPU and allocations of the whole decision path.
//
//	go test -run '^$' -bench BenchmarkMiddlewareRedis -cpuprofile cpu.out ./limiter/httplimit/
func BenchmarkMiddlewareRedis(b *testing.B) {
	srv := redistest.StartForTest(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, ContextTimeoutEnabled: true})
	defer client.Close()
	lim := resilience.New(redisstore.New(client, redisstore.WithPrefix("bench:")), resilience.Config{Timeout: time.Second})
	defer lim.Close()
	h := newBenchMiddleware(b, lim, "GET /v1/data").Handler(http.HandlerFunc(work))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest(http.MethodGet, "/v1/data", nil)
		i := 0
		for pb.Next() {
			r.Header.Set("X-API-Key", benchKeys[i%len(benchKeys)])
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Errorf("status %d", w.Code)
				return
			}
			i++
		}
	})
}

// redisRateHandler is go-redis/redis_rate in front of next as its users
// write it: one AllowN per request on the caller's key, 429 with
// Retry-After when rejected, 503 when Redis fails.
func redisRateHandler(rr *redis_rate.Limiter, next http.Handler) http.Handler {
	l := redis_rate.Limit{Rate: int(benchLimit.Rate), Burst: int(benchLimit.Burst), Period: benchLimit.Period}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := keyAuth(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		res, err := rr.AllowN(r.Context(), "bench:"+id.Key, l, 1)
		if err != nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		if res.Allowed == 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(res.RetryAfter/time.Second)+1, 10))
			http.Error(w, "rate limited", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// BenchmarkOverheadVersusRedisRate measures the latency the middleware
// with the Redis store adds to a request, against go-redis/redis_rate in
// front of the same handler, on one HTTP server and one redis-server: an
// open-model client sends overheadRate requests per second to each of
// five routes (the baseline without a limiter, the reference, the reference
// under a lease of 10 units for 900 ms, redis_rate, and a no-op EVALSHA as
// the floor), interleaved request by request so that a noisy machine slows
// them alike, from overheadKeys identities in turn (about 10 req/s each, as
// the overhead scenario sends), and measures each from its intended send
// time. It reports each limiter's overhead over the baseline at p50 and
// p99, in ms, and the ratios reference/redis_rate ("x") and leased
// reference/redis_rate ("lease-x"; below 1: the reference adds less).
// b.N is the number of requests per route.
//
//	go test -run '^$' -bench BenchmarkOverheadVersusRedisRate -benchtime 5000x -count 3 ./limiter/httplimit/
func BenchmarkOverheadVersusRedisRate(b *testing.B) {
	const (
		overheadRate = 1000 // requests per second on each route
		overheadKeys = 100  // identities, each at overheadRate/overheadKeys
	)
	srv := redistest.StartForTest(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, ContextTimeoutEnabled: true})
	defer client.Close()
	mux := http.NewServeMux()
	mux.Handle("GET /baseline", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := keyAuth(r); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		work(w, r)
	}))
	// The reference as the sample API runs it in a scenario: the Redis
	// store under the resilience wrapper, failing open after 1 s.
	ref := resilience.New(redisstore.New(client, redisstore.WithPrefix("ref:")), resilience.Config{Timeout: time.Second})
	defer ref.Close()
	mux.Handle("GET /reference", newBenchMiddleware(b, ref, "GET /reference").Handler(http.HandlerFunc(work)))
	leased := benchLimit
	leased.LeaseTokens, leased.LeaseFor = 10, 900*time.Millisecond
	refLease := resilience.New(lease.New(redisstore.New(client, redisstore.WithPrefix("lease:"))), resilience.Config{Timeout: time.Second})
	defer refLease.Close()
	mux.Handle("GET /lease", newBenchMiddlewareOf(b, refLease, "GET /lease", leased).Handler(http.HandlerFunc(work)))
	mux.Handle("GET /redis_rate", redisRateHandler(redis_rate.NewLimiter(client), http.HandlerFunc(work)))
	noop := redis.NewScript("return 1")
	mux.Handle("GET /floor", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := keyAuth(r); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if err := noop.Run(r.Context(), client, []string{"floor"}).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		work(w, r)
	}))
	ts := httptest.NewServer(mux)
	defer ts.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	routes := []string{"/baseline", "/reference", "/redis_rate", "/floor", "/lease"}

	// Warm up connections, scripts and pools.
	for i := range 300 {
		if _, err := get(hc, ts.URL+routes[i%len(routes)], benchKeys[i%len(benchKeys)]); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([][]time.Duration, len(routes))
	for i := range lat {
		lat[i] = make([]time.Duration, b.N)
	}
	interval := time.Second / time.Duration(overheadRate*len(routes))
	var wg sync.WaitGroup
	var failed sync.Once
	b.ResetTimer()
	start := time.Now()
	for i := range b.N * len(routes) {
		intended := start.Add(time.Duration(i) * interval)
		if d := time.Until(intended); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			route := i % len(routes)
			if _, err := get(hc, ts.URL+routes[route], benchKeys[(i/len(routes))%overheadKeys]); err != nil {
				failed.Do(func() { b.Error(err) })
			}
			lat[route][i/len(routes)] = time.Since(intended)
		})
	}
	wg.Wait()
	b.StopTimer()
	q := func(route int, p float64) time.Duration {
		s := lat[route]
		slices.Sort(s)
		return s[min(max(int(p*float64(len(s))+0.5), 1), len(s))-1]
	}
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		base := q(0, p.q)
		ref, rr := q(1, p.q)-base, q(2, p.q)-base
		b.ReportMetric(ms(ref), "reference-"+p.name+"-ms")
		b.ReportMetric(ms(rr), "redis_rate-"+p.name+"-ms")
		b.ReportMetric(ms(ref)/ms(rr), p.name+"-x")
		b.ReportMetric(ms(q(3, p.q)-base), "floor-"+p.name+"-ms")
		lease := q(4, p.q) - base
		b.ReportMetric(ms(lease), "reference-lease-"+p.name+"-ms")
		b.ReportMetric(ms(lease)/ms(rr), p.name+"-lease-x")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// get sends GET url with key and reads the whole response, failing on any
// status but 200.
func get(hc *http.Client, url, key string) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", key)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return int(n), nil
}
