package faulty

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/resilience"
)

// openGoStore opens a goStore on env's Redis with the faults set by configure.
func openGoStore(env Env, configure func(*goStore)) (limiter.Limiter, func() error, error) {
	client := redis.NewClient(env.Redis)
	s := newGoStore(client)
	configure(s)
	return s, client.Close, nil
}

func openNonAtomic(_ context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	return openGoStore(env, func(s *goStore) { s.racy, s.delay = true, v.delay })
}

func openClientClock(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	return openGoStore(env, func(s *goStore) { s.clock = env.Clock })
}

func openRejectedConsumes(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	return openGoStore(env, func(s *goStore) { s.chargeRejected = true })
}

func openHalfToken(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	return openGoStore(env, func(s *goStore) { s.halfToken = true })
}

// fixedAsSliding serves every sliding window log limit as a fixed window of
// the same limit and window, and reports the declared limit in its
// decisions, as a limiter that documents one algorithm and runs another.
type fixedAsSliding struct{ limiter.Limiter }

func openFixedAsSliding(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	ref, closeRef, err := openReference(ctx, v, env)
	if err != nil {
		return nil, nil, err
	}
	return fixedAsSliding{ref}, closeRef, nil
}

// served returns the limits actually enforced for the declared ones.
func served(declared []limiter.Limit) []limiter.Limit {
	out := make([]limiter.Limit, len(declared))
	for i, l := range declared {
		if l.Algorithm == limiter.SlidingWindowLog {
			l.Algorithm = limiter.FixedWindow
		}
		out[i] = l
	}
	return out
}

// declare puts back the declared limit in a decision taken on served ones.
func declare(d limiter.Decision, declared, servedAs []limiter.Limit) limiter.Decision {
	for i, l := range servedAs {
		if d.Limit == l {
			return withLimit(d, declared[i], d.RetryAfter)
		}
	}
	return d
}

// withLimit rebuilds d under limit l with the wait retryAfter.
func withLimit(d limiter.Decision, l limiter.Limit, retryAfter time.Duration) limiter.Decision {
	out := limiter.NewDecision(l, d.Allowed, d.Remaining, d.ResetAfter.Microseconds(), retryAfter.Microseconds(), d.Delay.Microseconds())
	out.Degraded = d.Degraded
	return out
}

func (f fixedAsSliding) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	s := served(limits)
	d, err := f.Limiter.AllowN(ctx, key, n, s...)
	return declare(d, limits, s), err
}

func (f fixedAsSliding) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	s := served(limits)
	d, err := f.Limiter.Peek(ctx, key, s...)
	return declare(d, limits, s), err
}

func (f fixedAsSliding) Reset(ctx context.Context, key string, limits ...limiter.Limit) error {
	return f.Limiter.Reset(ctx, key, served(limits)...)
}

// noTTL is the reference Redis store whose keys lose their TTL: after each
// decision it PERSISTs the keys, as if the EXPIRE of an INCR-then-EXPIRE
// pair never landed. Decisions are the reference's, since its scripts never
// trust a TTL to end a window; the keys pile up in Redis forever.
type noTTL struct {
	*redisstore.Store
	client redis.UniversalClient
}

func openNoTTL(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	client := redis.NewClient(env.Redis)
	return noTTL{Store: redisstore.New(client), client: client}, client.Close, nil
}

func (s noTTL) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	d, err := s.Store.AllowN(ctx, key, n, limits...)
	if err != nil || !d.Allowed {
		return d, err
	}
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, l := range limits {
			p.Persist(ctx, s.StorageKey(key, l))
		}
		return nil
	})
	if err != nil {
		return limiter.Decision{}, fmt.Errorf("redis persist: %w", err)
	}
	return d, nil
}

// retryAfterShort is the reference limiter whose rejections announce a
// wait one second shorter than the real one (never below zero, so a wait
// under a second still reads Retry-After: 1).
type retryAfterShort struct{ limiter.Limiter }

func openRetryAfterShort(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	ref, closeRef, err := openReference(ctx, v, env)
	if err != nil {
		return nil, nil, err
	}
	return retryAfterShort{ref}, closeRef, nil
}

func (r retryAfterShort) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	d, err := r.Limiter.AllowN(ctx, key, n, limits...)
	if err != nil || d.Allowed {
		return d, err
	}
	return withLimit(d, d.Limit, d.RetryAfter-time.Second), nil
}

// noTimeoutWait stands for "no timeout" in the resilience wrapper, which
// always sets one: a day, far beyond any fault a scenario injects.
const noTimeoutWait = 24 * time.Hour

// openNoTimeout is the reference Redis store behind a fail-open resilience
// wrapper, both without a timeout: the client neither bounds its reads and
// writes nor honours the caller's deadline, so a request waits as long as
// Redis is paused.
func openNoTimeout(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	r, client := newNoTimeout(env)
	return r, func() error { return errors.Join(r.Close(), client.Close()) }, nil
}

func newNoTimeout(env Env) (*resilience.Limiter, *redis.Client) {
	opts := *env.Redis
	opts.ReadTimeout, opts.WriteTimeout = -1, -1
	opts.ContextTimeoutEnabled = false
	opts.PoolTimeout = noTimeoutWait
	client := redis.NewClient(&opts)
	r := resilience.New(redisstore.New(client), resilience.Config{Mode: resilience.FailOpen, Timeout: noTimeoutWait, Clock: env.Clock, Logger: env.Logger})
	return r, client
}

// trustLeftmostXFF takes the leftmost X-Forwarded-For entry, which any
// client can write, as the client's address, whoever sent the request: it
// becomes the request's peer address and the header is dropped, so that the
// limiter keys the request by the forged address.
func trustLeftmostXFF(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if values := r.Header.Values("X-Forwarded-For"); len(values) > 0 {
			leftmost, _, _ := strings.Cut(values[0], ",")
			if leftmost = strings.TrimSpace(leftmost); leftmost != "" {
				if host, _, err := net.SplitHostPort(leftmost); err == nil {
					leftmost = host
				}
				r.RemoteAddr = net.JoinHostPort(strings.Trim(leftmost, "[]"), "0")
				r.Header.Del("X-Forwarded-For")
			}
		}
		h.ServeHTTP(w, r)
	})
}
