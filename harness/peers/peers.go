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
