package redisstore

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// runner runs the store's programs on its Redis: as functions (FCALL) once
// their library is loaded, else as scripts (EVALSHA, EVAL on NOSCRIPT). A
// program's library is loaded on its first call by that one caller, while
// calls that arrive meanwhile run the script; a call that finds the
// function gone (Redis restarted without persistence, FUNCTION FLUSH, a
// failover to a server that never had it) runs the script, and the next
// call loads the library again. A server that refuses FUNCTION (Redis
// before 7, an ACL without it, a proxy) gets scripts from then on. Safe for
// concurrent use.
type runner struct {
	client redis.UniversalClient
	// functions is set for a single server: a library loaded through
	// client is then on the server every FCALL reaches. (A cluster client
	// would send FUNCTION LOAD to one node.)
	functions bool
	refused   atomic.Bool
	state     []atomic.Int32 // per program index: unloaded, loading or loaded
	retryAt   atomic.Int64   // UnixNano before which no load is tried again
}

// The states of a program's library on the runner's server.
const (
	unloaded int32 = iota
	loading
	loaded
)

// loadRetry is how long a runner waits to load a library again after a load
// failed for a reason that may pass (a timeout, LOADING, OOM), running
// scripts meanwhile, so that a struggling server does not get a FUNCTION
// LOAD with every call.
const loadRetry = time.Second

func newRunner(client redis.UniversalClient, functions bool) *runner {
	_, single := client.(*redis.Client)
	return &runner{client: client, functions: functions && single, state: make([]atomic.Int32, len(programs))}
}

// run evaluates p on keys and args; the command carries its reply or error.
func (r *runner) run(ctx context.Context, p *program, keys []string, args []any) *redis.Cmd {
	if !r.functions || r.refused.Load() {
		return p.script.Run(ctx, r.client, keys, args...)
	}
	state := &r.state[p.index]
	switch state.Load() {
	case loaded:
		if cmd, ok := r.fcall(ctx, p, keys, args); ok {
			return cmd
		}
	case unloaded:
		if time.Now().UnixNano() >= r.retryAt.Load() && state.CompareAndSwap(unloaded, loading) {
			if r.load(ctx, p) {
				state.Store(loaded)
				if cmd, ok := r.fcall(ctx, p, keys, args); ok {
					return cmd
				}
			} else {
				state.Store(unloaded)
			}
		}
	}
	return p.script.Run(ctx, r.client, keys, args...)
}

// fcall calls p's function and reports whether it ran. When Redis does not
// hold the library (any more: flushed, restarted, failed over, even just
// after the load) or refuses FCALL itself, the next call loads it again
// (or, on a refusal, no call uses functions again) and this one, whose
// function never ran, is left to the script.
func (r *runner) fcall(ctx context.Context, p *program, keys []string, args []any) (*redis.Cmd, bool) {
	cmd := r.client.FCall(ctx, p.name, keys, args...)
	switch err := cmd.Err(); {
	case isNoFunction(err):
		r.state[p.index].CompareAndSwap(loaded, unloaded)
		return nil, false
	case err != nil && redis.HasErrorPrefix(err, "NOPERM") && strings.Contains(err.Error(), "fcall"):
		r.refused.Store(true)
		return nil, false
	}
	return cmd, true
}

// load loads p's library, replacing one of the same name (whose code is the
// same: the name is the code's hash), and reports whether Redis holds it.
//
// A PING goes first. Redis closes the connection of a client that has not
// authenticated when it sends a string over 16 KiB, as a library is, after
// an error reply that leaves go-redis the closed connection in its pool for
// the next command: the caller would read EOF where it should read NOAUTH.
// A client whose PING is refused for want of authentication loads nothing
// and is left to the script, whose NOAUTH says what is wrong.
func (r *runner) load(ctx context.Context, p *program) bool {
	err := r.client.Ping(ctx).Err()
	if err == nil || redis.HasErrorPrefix(err, "NOPERM") { // NOPERM: a known user, only not allowed PING
		err = r.client.FunctionLoadReplace(ctx, p.library).Err()
	}
	switch {
	case err == nil:
		return true
	case refusesFunctions(err):
		r.refused.Store(true)
	default:
		r.retryAt.Store(time.Now().Add(loadRetry).UnixNano())
	}
	return false
}

// refusesFunctions reports whether err says the server will never load a
// library for this client: it has no FUNCTION command (Redis before 7, a
// proxy) or the client's ACL user may not run it.
func refusesFunctions(err error) bool {
	return redis.HasErrorPrefix(err, "unknown command") || redis.HasErrorPrefix(err, "unknown subcommand") ||
		redis.HasErrorPrefix(err, "NOPERM")
}

// isNoFunction reports whether err is FCALL's answer for a function the
// server does not hold.
func isNoFunction(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "Function not found")
}
