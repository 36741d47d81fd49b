// Package faulty holds deliberately faulty limiter variants, one per fault
// that widely used rate limiters have shipped, for verifying rlbench's
// checker by mutation: every variant differs from the reference limiter by
// its fault alone, and a scenario aimed at it must fail with the check that
// names the fault (DESIGN.md, "Verifying the verifier"). A sample API
// instance runs one with `rlbench serve --faulty NAME`; none is ever the
// default, and each name says what is wrong with it.
//
// Variants and the check meant to catch each:
//
//	private-bucket     a private in-memory bucket per instance: N instances give N budgets (budget)
//	non-atomic         GET, decide, SET in separate round trips, with a delay between read and write (budget; case C1)
//	client-clock       the instance's own clock decides the shared state, so a skewed instance disagrees (budget)
//	fixed-as-sliding   a fixed window served where a sliding window log is declared (budget)
//	no-ttl             the window key's TTL is never set: an immortal key (a TTL scan of Redis; case C6)
//	rejected-consumes  a rejected request still consumes quota (false-rejections)
//	retry-after-short  Retry-After one second short of the truth (retry-after; case C5)
//	half-token         half a token rounded up to a whole one, admitting early (budget)
//	no-timeout         fail-open with no timeout: requests hang on a paused Redis (fault-latency; case C10)
//	leftmost-xff       the leftmost X-Forwarded-For entry, written by the client, names it (budget)
//	tier-charged-on-reject  a request one limit rejects is charged to the limits that admitted it (false-rejections)
//	ttl-wrong-unit     keys expire after the right number of milliseconds where seconds are meant (budget)
//	retry-after-ms     Retry-After carries the wait in milliseconds (retry-after)
//	retry-after-zero   Retry-After is the wait rounded down: 0 for a wait under a second (retry-after)
//	time-rewind        a token bucket decides on a clock read before its transaction, and a stale
//	                   reading moves its refill time back under contention (budget)
//	pooled-5pct-over   every limit enforced with a burst and rate 5% above the declared ones (budget)
//	sliding-counter-as-fixed  a fixed window served where a sliding window counter is declared (budget)
//	queue-no-delay     a leaky bucket as a queue whose admitted requests do not wait for their slot (queue-delay)
//	lru-keys           state kept for the last 4 keys only: an evicted key starts afresh (budget)
//	reset-epoch        the RateLimit reset is a Unix time where seconds from now are meant (ratelimit-fields)
//	no-monotonic-time  per-key time follows the limiter's clock backwards: a step back locks clients out (false-rejections; case C12)
//	no-failover        a plain client to the master as configured: a failover leaves it on a dead or demoted server (budget, failure-mode)
//	unbounded-connections  nothing bounds its connections (pool, deadline, breaker): a slow Redis gets one per waiting request (redis-connections; case C18)
//	naive-lease        a lease's units charged when granted, not at the lease's end: spent after the store refilled, they come on top of a full burst (budget)
package faulty

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
)

// Names of the variants.
const (
	PrivateBucket    = "private-bucket"
	NonAtomic        = "non-atomic"
	ClientClock      = "client-clock"
	FixedAsSliding   = "fixed-as-sliding"
	NoTTL            = "no-ttl"
	RejectedConsumes = "rejected-consumes"
	RetryAfterShort  = "retry-after-short"
	HalfToken        = "half-token"
	NoTimeout        = "no-timeout"
	LeftmostXFF      = "leftmost-xff"

	TierChargedOnReject   = "tier-charged-on-reject"
	TTLWrongUnit          = "ttl-wrong-unit"
	RetryAfterMillis      = "retry-after-ms"
	RetryAfterZero        = "retry-after-zero"
	TimeRewind            = "time-rewind"
	PooledOver            = "pooled-5pct-over"
	SlidingCounterAsFixed = "sliding-counter-as-fixed"
	QueueNoDelay          = "queue-no-delay"
	LRUKeys               = "lru-keys"
	ResetEpoch            = "reset-epoch"
	NoMonotonicTime       = "no-monotonic-time"
	NoFailover            = "no-failover"
	UnboundedConnections  = "unbounded-connections"
	NaiveLease            = "naive-lease"
)

// DefaultNonAtomicDelay is the pause of NonAtomic between reading a key's
// state and writing it back, as in field case C1; "non-atomic:DURATION"
// sets another.
const DefaultNonAtomicDelay = 5 * time.Millisecond

// ErrUnknownVariant is returned by Lookup for a name that is no variant.
var ErrUnknownVariant = errors.New("unknown faulty variant")

// Env is what a variant is built from: the instance's Redis and clock.
type Env struct {
	// Redis is the instance's Redis client options, with the sample API's
	// timeouts applied; nil when the instance runs without Redis.
	Redis *redis.Options
	// Sentinel, when set, is the same options for the master of a Sentinel
	// group: the variants follow it as the reference does (but NoFailover).
	Sentinel *redis.FailoverOptions
	// StoreTimeout is the instance's store timeout (Config.StoreTimeout);
	// zero means resilience.DefaultTimeout.
	StoreTimeout time.Duration
	// Clock is the instance's own clock (shifted by --clock-offset); nil
	// means time.Now.
	Clock func() time.Time
	// Logger receives the variants' messages; nil discards them.
	Logger *slog.Logger
}

// Variant is one faulty limiter. The zero value is not usable; get one
// from Lookup.
type Variant struct {
	// Name is the variant's name, as --faulty takes it.
	Name string
	// Fault says in one line what is wrong with it.
	Fault string
	// NeedsRedis reports whether the variant keeps its state in Redis.
	NeedsRedis bool
	// OwnFailureMode reports whether the variant answers store failures
	// itself, so that no resilience wrapper may be put around it.
	OwnFailureMode bool

	delay time.Duration // NonAtomic's pause between read and write
	keys  int           // LRUKeys' number of keys kept
	open  func(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error)
	wrap  func(http.Handler) http.Handler
}

var variants = []Variant{
	{Name: PrivateBucket, Fault: "a private in-memory bucket per instance: N instances give N budgets", open: openPrivateBucket},
	{Name: NonAtomic, Fault: "reads, decides and writes in separate Redis round trips (GET then SET), racing under concurrency", NeedsRedis: true, open: openNonAtomic},
	{Name: ClientClock, Fault: "the instance's own clock decides the shared state, so a skewed instance disagrees with the others", NeedsRedis: true, open: openClientClock},
	{Name: FixedAsSliding, Fault: "serves a fixed window where a sliding window log is declared", open: openFixedAsSliding},
	{Name: NoTTL, Fault: "never sets the TTL of the keys it writes: they live forever", NeedsRedis: true, open: openNoTTL},
	{Name: RejectedConsumes, Fault: "a rejected request still consumes quota", NeedsRedis: true, open: openRejectedConsumes},
	{Name: RetryAfterShort, Fault: "Retry-After one second short of the truth", open: openRetryAfterShort},
	{Name: HalfToken, Fault: "rounds the tokens left to the nearest whole one, granting half a token as a whole one", NeedsRedis: true, open: openHalfToken},
	{Name: NoTimeout, Fault: "fails open with no timeout: requests hang while Redis is paused", NeedsRedis: true, OwnFailureMode: true, open: openNoTimeout},
	{Name: LeftmostXFF, Fault: "trusts the leftmost X-Forwarded-For entry, which the client writes, as the client address", open: openReference, wrap: trustLeftmostXFF},
	{Name: TierChargedOnReject, Fault: "with several limits, a request one of them rejects is still charged to those that admitted it", NeedsRedis: true, open: openTierChargedOnReject},
	{Name: TTLWrongUnit, Fault: "sets each key's TTL in milliseconds to its number of seconds: state expires long before its window ends", NeedsRedis: true, open: openTTLWrongUnit},
	{Name: RetryAfterMillis, Fault: "Retry-After carries the wait in milliseconds where seconds are meant", open: openRetryAfterMillis},
	{Name: RetryAfterZero, Fault: "Retry-After is the wait rounded down to whole seconds: 0, retry at once, for a wait under a second", open: openRetryAfterZero, wrap: retryAfterInSeconds},
	{Name: TimeRewind, Fault: "a token bucket reads the clock before its transaction and stores that time even when older than the stored one: under contention a stale time rewinds the bucket, which refills the same time twice", NeedsRedis: true, open: openTimeRewind},
	{Name: PooledOver, Fault: "enforces every limit with a burst and rate 5% above the declared ones, so the instances' pooled budget is 5% over", open: openPooledOver},
	{Name: SlidingCounterAsFixed, Fault: "serves a fixed window where a sliding window counter is declared", open: openSlidingCounterAsFixed},
	{Name: QueueNoDelay, Fault: "a leaky bucket as a queue that admits requests into their slots without delaying them", open: openQueueNoDelay},
	{Name: LRUKeys, Fault: "keeps per-key state for the most recently used keys only (4 unless lru-keys:N): an evicted key starts again with a full budget", open: openLRUKeys},
	{Name: ResetEpoch, Fault: "the RateLimit reset is the Unix time in seconds at which the budget is full, where the seconds until then are meant", open: openResetEpoch},
	{Name: NoMonotonicTime, Fault: "per-key time follows the limiter's clock backwards: after a step back, a key's stored time lies ahead and its clients are rejected until the clock catches up", NeedsRedis: true, open: openNoMonotonicTime},
	{Name: NoFailover, Fault: "a plain client to the Redis master as configured, never asking the Sentinel: after a failover it talks to a dead or demoted server", NeedsRedis: true, open: openNoFailover},
	{Name: UnboundedConnections, Fault: "nothing bounds its connections to Redis (a pool without a bound, commands that outlive the store timeout, no circuit breaker): under a slow Redis every waiting request holds a connection of its own", NeedsRedis: true, OwnFailureMode: true, open: openUnboundedConnections},
	{Name: NaiveLease, Fault: "a lease's units are charged when the store grants them, as a limiter that prefetches tokens does, where the reference charges them at the lease's end: units leased before the store refills, spent after it, come on top of a full burst", NeedsRedis: true, open: openNaiveLease},
}

// Names returns the names of every variant, in the order of the package
// documentation.
func Names() []string {
	out := make([]string, len(variants))
	for i, v := range variants {
		out[i] = v.Name
	}
	return out
}

// Lookup returns the variant called name. NonAtomic takes its delay after a
// colon, "non-atomic:20ms", and LRUKeys the number of keys it keeps,
// "lru-keys:8". Errors wrap ErrUnknownVariant, or describe a bad parameter.
func Lookup(name string) (Variant, error) {
	base, param, hasParam := strings.Cut(name, ":")
	for _, v := range variants {
		if v.Name != base {
			continue
		}
		switch {
		case v.Name == NonAtomic:
			v.delay = DefaultNonAtomicDelay
			if hasParam {
				d, err := time.ParseDuration(param)
				if err != nil || d < 0 {
					return Variant{}, fmt.Errorf("faulty variant %s: delay %q: want a duration such as 5ms", base, param)
				}
				v.delay = d
			}
		case v.Name == LRUKeys:
			v.keys = DefaultLRUKeys
			if hasParam {
				n, err := strconv.Atoi(param)
				if err != nil || n < 1 {
					return Variant{}, fmt.Errorf("faulty variant %s: keys %q: want a whole number of keys above 0, such as 4", base, param)
				}
				v.keys = n
			}
		case hasParam:
			return Variant{}, fmt.Errorf("faulty variant %s takes no parameter", base)
		}
		return v, nil
	}
	return Variant{}, fmt.Errorf("%w %q; the variants are %s", ErrUnknownVariant, name, strings.Join(Names(), ", "))
}

// Open builds the variant's limiter for env and returns it with a function
// releasing what it opened. It fails when the variant needs Redis and env
// has none.
func (v Variant) Open(ctx context.Context, env Env) (limiter.Limiter, func() error, error) {
	if v.open == nil {
		return nil, nil, fmt.Errorf("%w: the zero Variant; use Lookup", ErrUnknownVariant)
	}
	if v.NeedsRedis && env.Redis == nil {
		return nil, nil, fmt.Errorf("faulty variant %s keeps its state in Redis: run it with --redis", v.Name)
	}
	if env.Clock == nil {
		env.Clock = time.Now
	}
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	return v.open(ctx, v, env)
}

// Handler wraps the instance's HTTP handler for the variants whose fault
// lies in the HTTP layer, before the limiter (LeftmostXFF) or after it
// (RetryAfterZero); for the others it returns h.
func (v Variant) Handler(h http.Handler) http.Handler {
	if v.wrap == nil {
		return h
	}
	return v.wrap(h)
}

// openReference opens the reference limiter on env: the Redis store when
// env has Redis, else a memory store on the instance's clock.
func openReference(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	if env.Redis == nil {
		return limiter.NewMemoryStore(limiter.WithClock(env.Clock)), noClose, nil
	}
	client := newClient(env)
	return redisstore.New(client), client.Close, nil
}

// newClient is a client for env's Redis: through the Sentinel when env has
// one.
func newClient(env Env) redis.UniversalClient {
	if env.Sentinel != nil {
		return redis.NewFailoverClient(env.Sentinel)
	}
	return redis.NewClient(env.Redis)
}

func noClose() error { return nil }

// openPrivateBucket ignores Redis: each instance decides on a memory store
// of its own, so each has the whole budget.
func openPrivateBucket(_ context.Context, _ Variant, env Env) (limiter.Limiter, func() error, error) {
	return limiter.NewMemoryStore(limiter.WithClock(env.Clock)), noClose, nil
}
