package scenarios

import (
	"fmt"
	"math"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// Peer names a rate limiter other than rlbench's reference that a scenario
// runs as its target (package harness/peers starts it), held to the
// policy the scenario claims for it.
type Peer string

const (
	// PeerRedisRate is github.com/go-redis/redis_rate (GCRA on Redis) behind
	// `rlbench serve --limiter redis_rate`, one process per instance, all
	// sharing the scenario's Redis.
	PeerRedisRate Peer = "redis_rate"
	// PeerNginx is NGINX limit_req (nodelay for gcra and token_bucket
	// policies, delaying for leaky_bucket) in front of a trivial upstream;
	// each instance is one nginx server with its own zone.
	PeerNginx Peer = "nginx"
	// PeerExpress is express-rate-limit on its Redis store
	// (rate-limit-redis), one node process per instance, all sharing the
	// scenario's Redis.
	PeerExpress Peer = "express"
	// PeerHAProxy is HAProxy's stick table http_req_rate(period) with
	// `http-request deny deny_status 429`; each instance is one haproxy
	// process with its own table.
	PeerHAProxy Peer = "haproxy"
	// PeerFlaskLimiter is Flask-Limiter on the limits package's Redis
	// storage (fixed-window for fixed_window policies, moving-window for
	// sliding_window_log), one python3 process per instance, all sharing
	// the scenario's Redis, with its in-memory fallback.
	PeerFlaskLimiter Peer = "flask_limiter"
	// PeerRateLimiterFlexible is rate-limiter-flexible's RateLimiterRedis
	// behind a small Express app, one node process per instance, all
	// sharing the scenario's Redis, with a RateLimiterMemory as its
	// insuranceLimiter.
	PeerRateLimiterFlexible Peer = "rate_limiter_flexible"
	// PeerFastify is @fastify/rate-limit on its Redis store, one node
	// process per instance, all sharing the scenario's Redis.
	PeerFastify Peer = "fastify"
	// PeerHTTPRate is go-chi/httprate (sliding window counter, in memory),
	// one rlbench-gopeers process per instance with its own counters.
	PeerHTTPRate Peer = "httprate"
	// PeerUlule is ulule/limiter v3 on its Redis store, one rlbench-gopeers
	// process per instance, all sharing the scenario's Redis.
	PeerUlule Peer = "ulule_limiter"
	// PeerGoLimiter is sethvargo/go-limiter's memorystore (Tokens reset
	// every Interval counted from a key's first request), one
	// rlbench-gopeers process per instance with its own buckets.
	PeerGoLimiter Peer = "go_limiter"
)

// Peers lists every peer.
var Peers = []Peer{PeerRedisRate, PeerNginx, PeerExpress, PeerHAProxy, PeerFlaskLimiter,
	PeerRateLimiterFlexible, PeerFastify, PeerHTTPRate, PeerUlule, PeerGoLimiter}

// UsesRedis reports whether the peer keeps its state in the scenario's Redis.
func (p Peer) UsesRedis() bool {
	switch p {
	case PeerRedisRate, PeerExpress, PeerFlaskLimiter, PeerRateLimiterFlexible, PeerFastify, PeerUlule:
		return true
	}
	return false
}

// TakesStoreFaults reports whether the peer may be drilled with faults of
// its Redis (redis_kill, redis_pause and the faults of the link to it),
// its documented failure behaviour declared in target.failure_mode.
func (p Peer) TakesStoreFaults() bool {
	switch p {
	case PeerFlaskLimiter, PeerRateLimiterFlexible, PeerFastify, PeerUlule:
		return true
	}
	return false
}

// CheckPolicy reports why the peer cannot enforce l exactly as claimed, or
// nil when it can: redis_rate takes a whole number of requests per period
// (gcra or token_bucket, which admit alike); NGINX takes a whole number per
// second or per minute (r/s, r/m), its burst being one less than the
// claimed GCRA burst; express-rate-limit takes a fixed window of a whole
// number of requests per whole number of milliseconds. No peer takes a
// lease.
func (p Peer) CheckPolicy(l limiter.Limit) error {
	if l.Leased() {
		// A claimed lease widens the false-rejection model by its hold,
		// which a peer that decides every request at its store never has.
		return fmt.Errorf("%s takes no lease; remove lease=%d/%v (a lease is the reference limiter's)", p, l.LeaseTokens, l.LeaseFor)
	}
	whole := l.Rate >= 1 && l.Rate == math.Trunc(l.Rate) && l.Rate <= math.MaxInt32
	switch p {
	case PeerRedisRate:
		if l.Algorithm != limiter.GCRA && l.Algorithm != limiter.TokenBucket {
			return fmt.Errorf("redis_rate enforces GCRA; claim gcra or token_bucket, not %s", l.Algorithm)
		}
		if !whole || l.Burst > math.MaxInt32 {
			return fmt.Errorf("redis_rate takes a whole rate per period; %s has rate %v", l.Spec(), l.Rate)
		}
	case PeerNginx:
		if l.Algorithm != limiter.GCRA && l.Algorithm != limiter.TokenBucket && l.Algorithm != limiter.LeakyBucket {
			return fmt.Errorf("nginx limit_req is a leaky bucket; claim gcra, token_bucket (nodelay) or leaky_bucket, not %s", l.Algorithm)
		}
		if !whole || (l.Period != time.Second && l.Period != time.Minute) {
			return fmt.Errorf("nginx takes a whole rate per second or per minute (rate=Nr/s, Nr/m); %s cannot be written so", l.Spec())
		}
	case PeerExpress:
		if l.Algorithm != limiter.FixedWindow {
			return fmt.Errorf("express-rate-limit counts requests per window; claim fixed_window, not %s", l.Algorithm)
		}
		if !whole || l.Period%time.Millisecond != 0 {
			return fmt.Errorf("express-rate-limit takes a whole limit per whole milliseconds; %s cannot be written so", l.Spec())
		}
	case PeerHAProxy, PeerHTTPRate:
		if l.Algorithm != limiter.SlidingWindowCounter {
			return fmt.Errorf("%s counts requests over a sliding period from two consecutive counters; claim sliding_window_counter, not %s", p, l.Algorithm)
		}
		if !whole || l.Period%time.Millisecond != 0 {
			return fmt.Errorf("%s takes a whole limit per whole milliseconds; %s cannot be written so", p, l.Spec())
		}
	case PeerFlaskLimiter:
		if l.Algorithm != limiter.FixedWindow && l.Algorithm != limiter.SlidingWindowLog {
			return fmt.Errorf("flask_limiter runs fixed-window or moving-window; claim fixed_window or sliding_window_log, not %s", l.Algorithm)
		}
		if !whole || l.Period%time.Second != 0 {
			return fmt.Errorf("flask_limiter takes a whole limit per whole seconds (\"N per S second\"); %s cannot be written so", l.Spec())
		}
	case PeerRateLimiterFlexible, PeerUlule:
		if l.Algorithm != limiter.FixedWindow {
			return fmt.Errorf("%s counts points per duration; claim fixed_window, not %s", p, l.Algorithm)
		}
		if !whole || l.Period%time.Second != 0 {
			return fmt.Errorf("%s takes a whole limit per whole seconds; %s cannot be written so", p, l.Spec())
		}
	case PeerFastify:
		if l.Algorithm != limiter.FixedWindow {
			return fmt.Errorf("@fastify/rate-limit counts requests per timeWindow; claim fixed_window, not %s", l.Algorithm)
		}
		if !whole || l.Period%time.Millisecond != 0 {
			return fmt.Errorf("@fastify/rate-limit takes a whole max per whole milliseconds; %s cannot be written so", l.Spec())
		}
	case PeerGoLimiter:
		if l.Algorithm != limiter.FixedWindow {
			return fmt.Errorf("go-limiter's memorystore resets Tokens every Interval from a key's first request; claim fixed_window, not %s", l.Algorithm)
		}
		if !whole || l.Period%time.Millisecond != 0 {
			return fmt.Errorf("go-limiter takes whole Tokens per whole milliseconds; %s cannot be written so", l.Spec())
		}
	}
	return nil
}
