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
)

// Peers lists every peer.
var Peers = []Peer{PeerRedisRate, PeerNginx, PeerExpress}

// UsesRedis reports whether the peer keeps its state in the scenario's Redis.
func (p Peer) UsesRedis() bool { return p == PeerRedisRate || p == PeerExpress }

// CheckPolicy reports why the peer cannot enforce l exactly as claimed, or
// nil when it can: redis_rate takes a whole number of requests per period
// (gcra or token_bucket, which admit alike); NGINX takes a whole number per
// second or per minute (r/s, r/m), its burst being one less than the
// claimed GCRA burst; express-rate-limit takes a fixed window of a whole
// number of requests per whole number of milliseconds.
func (p Peer) CheckPolicy(l limiter.Limit) error {
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
	}
	return nil
}
