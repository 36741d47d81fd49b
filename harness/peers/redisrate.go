package peers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
)

// RedisRateRoute is one route a RedisRateHandler serves: requests with
// Method (GET also answers HEAD) on Path charge Cost units of Limit, keyed
// by the caller's API key.
type RedisRateRoute struct {
	Method, Path string
	Cost         int64
	// Limit is a gcra or token_bucket limit with a whole Rate; none makes
	// the route a baseline, served without a decision.
	Limit *limiter.Limit
}

// APIKeyHeader carries the identity a RedisRateHandler keys requests by.
const APIKeyHeader = "X-API-Key"

// RedisRateLimit converts a gcra or token_bucket limit to redis_rate's
// Limit{Rate, Burst, Period}, which admits what the GCRA of the same
// rate and burst admits. It fails for other algorithms and for a rate that
// is not a whole number per period.
func RedisRateLimit(l limiter.Limit) (redis_rate.Limit, error) {
	if l.Algorithm != limiter.GCRA && l.Algorithm != limiter.TokenBucket {
		return redis_rate.Limit{}, fmt.Errorf("redis_rate enforces GCRA, not %s", l.Algorithm)
	}
	if l.Rate < 1 || l.Rate != math.Trunc(l.Rate) || l.Rate > math.MaxInt32 || l.Burst > math.MaxInt32 {
		return redis_rate.Limit{}, fmt.Errorf("redis_rate takes a whole rate per period, not %v in %s", l.Rate, l.Spec())
	}
	return redis_rate.Limit{Rate: int(l.Rate), Burst: int(l.Capacity()), Period: l.Period}, nil
}

// RedisRateHandler answers the routes with redis_rate's decision for each
// request: 200 "ok" when admitted, 429 with Retry-After (whole seconds,
// rounded up, at least 1; RFC 6585 §4, RFC 9110 §10.2.3) when rejected,
// 401 without an API key, 503 with Retry-After: 1 when Redis fails, 404 and
// 405 for other paths and methods. Every route keeps its own budget per
// key (redis_rate key "rate:ROUTE:KEY", which redis_rate gives a TTL). It is
// safe for concurrent use.
func RedisRateHandler(rdb *redis.Client, routes []RedisRateRoute) (http.Handler, error) {
	lim := redis_rate.NewLimiter(rdb)
	mux := http.NewServeMux()
	for _, rt := range routes {
		method := rt.Method
		if method == "" {
			method = http.MethodGet
		}
		cost := max(rt.Cost, 1)
		var rl redis_rate.Limit
		if rt.Limit != nil {
			var err error
			if rl, err = RedisRateLimit(*rt.Limit); err != nil {
				return nil, fmt.Errorf("route %s: %w", rt.Path, err)
			}
			if cost > int64(rl.Burst) {
				return nil, fmt.Errorf("route %s: cost %d is above the burst %d", rt.Path, cost, rl.Burst)
			}
		}
		limited := rt.Limit != nil
		mux.HandleFunc(method+" "+rt.Path, func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get(APIKeyHeader)
			if key == "" {
				http.Error(w, "missing "+APIKeyHeader, http.StatusUnauthorized)
				return
			}
			if limited {
				res, err := lim.AllowN(r.Context(), rt.Path+":"+key, rl, int(cost))
				if err != nil {
					w.Header().Set("Retry-After", "1")
					http.Error(w, "rate limiter store unavailable", http.StatusServiceUnavailable)
					return
				}
				if res.Allowed == 0 {
					w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(res.RetryAfter), 10))
					http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
					return
				}
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok\n"))
		})
	}
	return mux, nil
}

// retryAfterSeconds is d in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int64 {
	s := int64(math.Ceil(d.Seconds()))
	return max(s, 1)
}

// ServeRedisRate serves RedisRateHandler for routes on ln until ctx ends,
// on a client of the Redis at redisURL, then stops accepting and drains
// in-flight requests for at most drain. It returns nil after a complete
// drain.
func ServeRedisRate(ctx context.Context, ln net.Listener, redisURL string, routes []RedisRateRoute, drain time.Duration) error {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return fmt.Errorf("redis URL %q: %w", redisURL, err)
	}
	opts.DisableIdentity = true
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	h, err := RedisRateHandler(rdb, routes)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("drain in-flight requests: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
