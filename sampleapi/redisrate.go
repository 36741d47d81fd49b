package sampleapi

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
)

// RedisRateLimit converts a gcra or token_bucket limit to go-redis/redis_rate's
// Limit{Rate, Burst, Period}, which admits what the GCRA of the same rate
// and burst admits. It fails for other algorithms and for a rate that is
// not a whole number per period.
func RedisRateLimit(l limiter.Limit) (redis_rate.Limit, error) {
	if l.Algorithm != limiter.GCRA && l.Algorithm != limiter.TokenBucket {
		return redis_rate.Limit{}, fmt.Errorf("redis_rate enforces GCRA, not %s", l.Algorithm)
	}
	if l.Rate < 1 || l.Rate != math.Trunc(l.Rate) || l.Rate > math.MaxInt32 || l.Burst > math.MaxInt32 {
		return redis_rate.Limit{}, fmt.Errorf("redis_rate takes a whole rate per period, not %v in %s", l.Rate, l.Spec())
	}
	return redis_rate.Limit{Rate: int(l.Rate), Burst: int(l.Capacity()), Period: l.Period}, nil
}

// byRedisRate reports whether er is one of the routes the reference
// instance of cfg serves with redis_rate.
func byRedisRate(cfg Config, er ExtraRoute) bool {
	return er.Limiter == LimiterRedisRate && cfg.Limiter != LimiterRedisRate && !er.Baseline
}

// redisRateRoutes decides the extra routes whose Limiter is
// LimiterRedisRate, on a Redis client of their own for cfg.Redis, made with
// the same options as the store's.
type redisRateRoutes struct {
	client *redis.Client
	lim    *redis_rate.Limiter
}

func newRedisRateRoutes(cfg Config) (*redisRateRoutes, error) {
	opts, err := redis.ParseURL(cfg.Redis)
	if err != nil {
		return nil, fmt.Errorf("redis URL %q: %w", cfg.Redis, err)
	}
	applyRedisDefaults(opts, cfg.Redis)
	client := redis.NewClient(opts)
	return &redisRateRoutes{client: client, lim: redis_rate.NewLimiter(client)}, nil
}

// handler serves next behind go-redis/redis_rate as a user of it would:
// the caller authenticated and keyed as on the other routes (hashed), one
// AllowN per request for the route's cost under its one limit, 429 with
// Retry-After (whole seconds, rounded up, at least 1) when rejected, 503
// with Retry-After: 1 when Redis fails. Each route keeps its own budget per
// caller (redis_rate key "rate:PATH:KEY").
func (rr *redisRateRoutes) handler(s *Server, er ExtraRoute, next http.Handler) (http.Handler, error) {
	l, err := RedisRateLimit(er.Limits[0])
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", er.Path, err)
	}
	cost := int(max(er.Cost, 1))
	prefix := er.Path + ":"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := s.authenticate(r)
		if err != nil {
			authFailed(w, r, err)
			return
		}
		key, err := s.keyFunc(r, id)
		if err != nil {
			httplimit.DefaultErrorHandler(w, r, err)
			return
		}
		res, err := rr.lim.AllowN(r.Context(), prefix+key, l, cost)
		if err != nil {
			w.Header().Set("Retry-After", "1")
			httplimit.WriteProblem(w, httplimit.Problem{Status: http.StatusServiceUnavailable, Detail: "the rate limiter is unavailable; retry shortly", Instance: r.URL.Path})
			return
		}
		if res.Allowed == 0 {
			wait := max(int64(math.Ceil(res.RetryAfter.Seconds())), 1)
			w.Header().Set("Retry-After", strconv.FormatInt(wait, 10))
			httplimit.WriteProblem(w, httplimit.Problem{Status: http.StatusTooManyRequests, Detail: "rate limit exceeded", Instance: r.URL.Path, RetryAfter: wait})
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}

// Close releases the routes' Redis client.
func (rr *redisRateRoutes) Close() error { return rr.client.Close() }

// Close releases what the server holds beyond its limiter: the Redis
// client of its redis_rate routes, if it has any.
func (s *Server) Close() error {
	if s.redisRate == nil {
		return nil
	}
	return s.redisRate.Close()
}
