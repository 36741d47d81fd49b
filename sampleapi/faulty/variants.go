package faulty

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/lease"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/resilience"
)

// openGoStore opens a goStore on env's Redis with the faults set by configure.
func openGoStore(env Env, configure func(*goStore)) (limiter.Limiter, func() error, error) {
	client := newClient(env)
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

func openTierChargedOnReject(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	return openGoStore(env, func(s *goStore) { s.chargeAdmittingTiers = true })
}

func openTTLWrongUnit(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	return openGoStore(env, func(s *goStore) { s.ttlSecondsAsMillis = true })
}

func openTimeRewind(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	return openGoStore(env, func(s *goStore) { s.staleNow, s.rewind = true, true })
}

// adjusted is a limiter that enforces other limits than the declared ones,
// or reports its decisions otherwise than it took them: serve maps each
// declared limit to the one enforced (nil: as declared), and answer rewrites
// each decision (nil: unchanged). Decisions carry the declared limit, as a
// limiter that documents one policy and enforces another reports it.
type adjusted struct {
	limiter.Limiter
	serve  func(limiter.Limit) limiter.Limit
	answer func(limiter.Decision) limiter.Decision
}

// openAdjusted opens the reference limiter on env behind adjusted's serve and answer.
func openAdjusted(ctx context.Context, v Variant, env Env, serve func(limiter.Limit) limiter.Limit, answer func(limiter.Decision) limiter.Decision) (limiter.Limiter, func() error, error) {
	ref, closeRef, err := openReference(ctx, v, env)
	if err != nil {
		return nil, nil, err
	}
	return adjusted{Limiter: ref, serve: serve, answer: answer}, closeRef, nil
}

// served returns the limits enforced for the declared ones.
func (a adjusted) served(declared []limiter.Limit) []limiter.Limit {
	if a.serve == nil {
		return declared
	}
	out := make([]limiter.Limit, len(declared))
	for i, l := range declared {
		out[i] = a.serve(l)
	}
	return out
}

// report puts back the declared limit in a decision taken on the served
// ones, and rewrites it with answer.
func (a adjusted) report(d limiter.Decision, declared, servedAs []limiter.Limit) limiter.Decision {
	for i, l := range servedAs {
		if d.Limit == l {
			d = rebuild(d, declared[i], d.ResetAfter, d.RetryAfter, d.Delay)
			break
		}
	}
	if a.answer != nil {
		d = a.answer(d)
	}
	return d
}

// rebuild is d under limit l with the given reset, wait and delay.
func rebuild(d limiter.Decision, l limiter.Limit, resetAfter, retryAfter, delay time.Duration) limiter.Decision {
	out := limiter.NewDecision(l, d.Allowed, d.Remaining, resetAfter.Microseconds(), retryAfter.Microseconds(), delay.Microseconds())
	out.Degraded = d.Degraded
	return out
}

func (a adjusted) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	s := a.served(limits)
	d, err := a.Limiter.AllowN(ctx, key, n, s...)
	if err != nil {
		return d, err
	}
	return a.report(d, limits, s), nil
}

func (a adjusted) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	s := a.served(limits)
	d, err := a.Limiter.Peek(ctx, key, s...)
	if err != nil {
		return d, err
	}
	return a.report(d, limits, s), nil
}

func (a adjusted) Reset(ctx context.Context, key string, limits ...limiter.Limit) error {
	return a.Limiter.Reset(ctx, key, a.served(limits)...)
}

// servedAs returns a serve function enforcing every limit of algorithm
// declared as one of algorithm actual, same limit and window.
func servedAs(declared, actual limiter.Algorithm) func(limiter.Limit) limiter.Limit {
	return func(l limiter.Limit) limiter.Limit {
		if l.Algorithm == declared {
			l.Algorithm = actual
		}
		return l
	}
}

func openFixedAsSliding(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	return openAdjusted(ctx, v, env, servedAs(limiter.SlidingWindowLog, limiter.FixedWindow), nil)
}

func openSlidingCounterAsFixed(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	return openAdjusted(ctx, v, env, servedAs(limiter.SlidingWindowCounter, limiter.FixedWindow), nil)
}

// pooledOverPercent is how far PooledOver's limits exceed the declared ones.
const pooledOverPercent = 5

// overByPercent is c raised by pooledOverPercent, rounded up.
func overByPercent(c int64) int64 { return c + (c*pooledOverPercent+99)/100 }

// pooledOver enforces l with its burst (a window's limit) and rate
// pooledOverPercent higher, the burst rounded up.
func pooledOver(l limiter.Limit) limiter.Limit {
	if l.Algorithm.IsWindow() {
		l.Rate = float64(overByPercent(int64(l.Rate)))
		if l.Burst != 0 {
			l.Burst = int64(l.Rate)
		}
		return l
	}
	l.Burst = overByPercent(l.Burst)
	l.Rate *= 1 + pooledOverPercent/100.0
	return l
}

func openPooledOver(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	return openAdjusted(ctx, v, env, pooledOver, nil)
}

// openRetryAfterShort: rejections announce a wait one second shorter than
// the real one (never below zero, so a wait under a second still reads
// Retry-After: 1).
func openRetryAfterShort(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	return openAdjusted(ctx, v, env, nil, func(d limiter.Decision) limiter.Decision {
		if d.Allowed {
			return d
		}
		return rebuild(d, d.Limit, d.ResetAfter, d.RetryAfter-time.Second, d.Delay)
	})
}

// openRetryAfterMillis: rejections announce the wait in milliseconds, which
// Retry-After then carries as if they were seconds.
func openRetryAfterMillis(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	return openAdjusted(ctx, v, env, nil, func(d limiter.Decision) limiter.Decision {
		if d.Allowed {
			return d
		}
		ms := min(d.RetryAfter, limiter.MaxWait/1000) * 1000 // microseconds become milliseconds
		return rebuild(d, d.Limit, d.ResetAfter, ms, d.Delay)
	})
}

// openQueueNoDelay: the leaky bucket as a queue admits a request into its
// slot, and the request proceeds at once instead of waiting for it.
func openQueueNoDelay(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	return openAdjusted(ctx, v, env, nil, func(d limiter.Decision) limiter.Decision {
		return rebuild(d, d.Limit, d.ResetAfter, d.RetryAfter, 0)
	})
}

// openResetEpoch: the reset (RateLimit t, RateLimit-Reset) is the Unix time
// in seconds at which the budget is full, on the instance's clock, where the
// seconds until then are meant.
func openResetEpoch(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	return openAdjusted(ctx, v, env, nil, func(d limiter.Decision) limiter.Decision {
		epoch := time.Duration(env.Clock().UnixMicro()) * time.Microsecond
		return rebuild(d, d.Limit, epoch+min(d.ResetAfter, limiter.MaxWait-epoch), d.RetryAfter, d.Delay)
	})
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

// retryAfterFloor is the reference limiter whose rejections' exact wait
// reaches the HTTP layer (retryAfterInSeconds) through the request's
// context, where it is written as whole seconds rounded down.
type retryAfterFloor struct{ limiter.Limiter }

func openRetryAfterZero(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	ref, closeRef, err := openReference(ctx, v, env)
	if err != nil {
		return nil, nil, err
	}
	return retryAfterFloor{ref}, closeRef, nil
}

// waitSlot carries a rejection's exact wait from the limiter to the
// response of the request that asked; set once, read after.
type waitSlot struct {
	mu   sync.Mutex
	wait time.Duration
	set  bool
}

type waitSlotKey struct{}

func (r retryAfterFloor) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	d, err := r.Limiter.AllowN(ctx, key, n, limits...)
	if slot, ok := ctx.Value(waitSlotKey{}).(*waitSlot); ok && err == nil && !d.Allowed {
		slot.mu.Lock()
		slot.wait, slot.set = d.RetryAfter, true
		slot.mu.Unlock()
	}
	return d, err
}

// retryAfterInSeconds writes the Retry-After of every 429 as the exact wait
// in whole seconds rounded down, as int(reset - now) does: 0 for a wait
// under a second, which tells the client to retry at once.
func retryAfterInSeconds(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slot := &waitSlot{}
		h.ServeHTTP(&floorWriter{ResponseWriter: w, slot: slot}, r.WithContext(context.WithValue(r.Context(), waitSlotKey{}, slot)))
	})
}

// floorWriter rewrites Retry-After as the status of a rejection is written.
type floorWriter struct {
	http.ResponseWriter
	slot *waitSlot
}

func (f *floorWriter) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		f.slot.mu.Lock()
		wait, set := f.slot.wait, f.slot.set
		f.slot.mu.Unlock()
		if set {
			f.Header().Set("Retry-After", strconv.FormatInt(int64(wait/time.Second), 10))
		}
	}
	f.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (f *floorWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// openNoMonotonicTime decides on Redis TIME as the reference does, with no
// fault but one: the goStore makes no provision for a clock that steps
// back, so a key's stored time may lie ahead of the clock (field case C12).
func openNoMonotonicTime(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	return openGoStore(env, func(*goStore) {})
}

// openNoFailover is the reference store on a plain client to the address
// the configuration's URL names, ignoring the Sentinel.
func openNoFailover(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	client := redis.NewClient(env.Redis)
	return redisstore.New(client), client.Close, nil
}

// unboundedPool is the pool size of UnboundedConnections: no bound a run
// can reach.
const unboundedPool = 1 << 20

// openUnboundedConnections fails open on the store timeout as the
// reference does, but nothing bounds its connections to Redis: each
// decision is a round trip of its own (no batching), its pool has no bound, its commands ignore the caller's deadline (the store timeout
// answers the request while the command holds its connection until Redis
// replies or the read timeout), and no circuit breaker stops calling a
// store that keeps failing. Under a slow Redis every waiting request holds
// a connection of its own (field case C18).
func openUnboundedConnections(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	var client redis.UniversalClient
	if env.Sentinel != nil {
		o := *env.Sentinel
		o.PoolSize, o.ContextTimeoutEnabled = unboundedPool, false
		client = redis.NewFailoverClient(&o)
	} else {
		o := *env.Redis
		o.PoolSize, o.ContextTimeoutEnabled = unboundedPool, false
		client = redis.NewClient(&o)
	}
	never := resilience.BreakerConfig{ConsecutiveFailures: math.MaxInt, FailureRate: 1, Window: 1 << 20}
	r := resilience.New(redisstore.New(client, redisstore.WithBatching(1, 1)), resilience.Config{
		Mode: resilience.FailOpen, Timeout: env.StoreTimeout, Breaker: never, Clock: env.Clock, Logger: env.Logger,
	})
	return r, func() error { return errors.Join(r.Close(), client.Close()) }, nil
}

// naiveLeaser is the reference Redis store whose leases are plain
// decisions: LeaseN takes the lease's LeaseTokens units at once with
// AllowN, charged at the time of the grant, as a limiter that prefetches a
// batch of tokens for local use does. The reference charges a lease as if
// spent at its end (limiter/lease.go), since the holder may spend it until
// then: charged at the grant, units leased from a full bucket and spent
// after the store has refilled come on top of the burst other instances
// take from it meanwhile. A request of cost LeaseTokens or more, or one the
// lease does not fit, is decided plainly, as the reference does.
type naiveLeaser struct{ *redisstore.Store }

func (s naiveLeaser) LeaseN(ctx context.Context, key string, n int64, l limiter.Limit) (limiter.Decision, limiter.Grant, error) {
	if err := limiter.CheckRequest(n, []limiter.Limit{l}); err != nil {
		return limiter.Decision{}, limiter.Grant{}, err
	}
	if l.Leased() && n < l.LeaseTokens {
		d, err := s.Store.AllowN(ctx, key, l.LeaseTokens, l)
		if err != nil {
			return limiter.Decision{}, limiter.Grant{}, err
		}
		if d.Allowed {
			return d, limiter.Grant{Tokens: l.LeaseTokens}, nil
		}
	}
	d, err := s.Store.AllowN(ctx, key, n, l)
	return d, limiter.Grant{}, err
}

// openNaiveLease is the sample API's reference route, package lease over
// the Redis store, with the store's leases charged when granted
// (naiveLeaser).
func openNaiveLease(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	client := newClient(env)
	return lease.New(naiveLeaser{redisstore.New(client)}), client.Close, nil
}
