// Package peers starts and stops the rate limiters rlbench holds to their
// claims besides its own reference: go-redis/redis_rate behind a small HTTP
// server of rlbench's (`rlbench serve --limiter redis_rate`, see
// RedisRateHandler), NGINX limit_req in front of a trivial upstream
// (StartNginx), express-rate-limit on its Redis store in Node.js
// (StartExpress), HAProxy stick tables (StartHAProxy), Flask-Limiter
// (StartFlaskLimiter), rate-limiter-flexible and @fastify/rate-limit
// (StartNode), and go-chi/httprate, ulule/limiter and sethvargo/go-limiter
// in rlbench-gopeers, a module of its own (StartGoPeer); Start picks the
// one a scenario names. A peer that is not installed is reported with a
// *NotInstalledError that says how to install it, so that a run can skip
// the scenario rather than fail it.
package peers

import (
	"errors"
	"fmt"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// ErrNotInstalled is wrapped by every *NotInstalledError.
var ErrNotInstalled = errors.New("peer not installed")

// NotInstalledError says that a peer's program is missing from this
// machine, and how to install it.
type NotInstalledError struct {
	// Peer is the peer's name, such as "nginx".
	Peer string
	// Install is the command that installs it, such as "apt-get install nginx".
	Install string
	// Err is the lookup error.
	Err error
}

// Error says what is missing and how to install it.
func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("%s is not installed (%v); install it with: %s", e.Peer, e.Err, e.Install)
}

// Unwrap returns the lookup error.
func (e *NotInstalledError) Unwrap() error { return e.Err }

// Is reports whether target is ErrNotInstalled.
func (e *NotInstalledError) Is(target error) bool { return target == ErrNotInstalled }

// ClockResolution is the step of peer p's limiter clock, by which the
// checks widen every request's interval (checker.Policy.Resolution, the
// history header's clock_resolution_ns); 0 for a peer it does not know.
//
//   - redis_rate decides in one Lua script on Redis TIME, seconds and
//     microseconds: 1 µs.
//   - NGINX limit_req reads ngx_current_msec, whole milliseconds cached once
//     per iteration of a worker's event loop (ngx_time_update): 1 ms.
//   - express-rate-limit on rate-limit-redis opens a window as a key set
//     with a PX expiry, whole milliseconds on Redis's clock, and computes
//     its resets with Date.now(), whole milliseconds: 1 ms.
//   - HAProxy's stick tables count on now_ms, whole milliseconds of its
//     event loop: 1 ms.
//   - Flask-Limiter (limits) expires its Redis keys in whole seconds or
//     milliseconds on Redis's clock and takes time.time() for the moving
//     window's entries, which the peer's script rounds to milliseconds;
//     rate-limiter-flexible and @fastify/rate-limit keep PX/PEXPIRE
//     expiries and Date.now(): 1 ms.
//   - ulule/limiter's Redis store sets PEXPIRE windows in milliseconds:
//     1 ms.
//   - go-chi/httprate and sethvargo/go-limiter's memorystore decide on
//     time.Now() in process: 1 µs (finer than the harness's own record).
func ClockResolution(p scenarios.Peer) time.Duration {
	switch p {
	case scenarios.PeerRedisRate:
		return time.Microsecond
	case scenarios.PeerNginx, scenarios.PeerExpress, scenarios.PeerHAProxy, scenarios.PeerFlaskLimiter,
		scenarios.PeerRateLimiterFlexible, scenarios.PeerFastify, scenarios.PeerUlule:
		return time.Millisecond
	case scenarios.PeerHTTPRate, scenarios.PeerGoLimiter:
		return time.Microsecond
	}
	return 0
}
