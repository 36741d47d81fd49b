package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// LeaseN implements limiter.Leaser: it decides a request of cost n for key
// under l, one gcra or token_bucket limit declaring a lease, in one
// evaluation of the algorithm's script (lua/lease.lua), and when it admits
// may grant up to l.LeaseTokens units, charged at the lease's end, as
// limiter.Leaser documents. A limit without a lease is decided as AllowN
// decides it. Requests under a lease share batches with plain ones. Errors
// are AllowN's.
func (s *Store) LeaseN(ctx context.Context, key string, n int64, l limiter.Limit) (limiter.Decision, limiter.Grant, error) {
	limits := []limiter.Limit{l}
	if err := limiter.CheckRequest(n, limits); err != nil {
		return limiter.Decision{}, limiter.Grant{}, err
	}
	if !l.Leased() {
		d, err := s.decide(ctx, key, n, limits)
		return d, limiter.Grant{}, err
	}
	if err := ctx.Err(); err != nil {
		return limiter.Decision{}, limiter.Grant{}, err
	}
	prog, keys, args := s.request(key, n, limits)
	args[len(args)-1] = leaseSpec(l) // the limit's spec, last
	var (
		reply any
		err   error
	)
	if s.batch != nil {
		reply, err = s.batch.do(ctx, prog, s.hashTag(keys[0]), keys, args, leaseReplyFields)
	} else {
		reply, err = s.run.run(ctx, prog, keys, args).Result()
		if err == nil {
			reply, err = onlyReply(reply, leaseReplyFields)
		}
	}
	if err != nil {
		return limiter.Decision{}, limiter.Grant{}, fmt.Errorf("redis decide: %w", CheckAuth(err))
	}
	return parseLeaseReply(reply, l)
}

// leaseReplyFields is the number of integers lease.lua returns: the five
// of every limit, the units granted and the shift in µs.
const leaseReplyFields = replyFields + 2

// parseLeaseReply turns lease.lua's reply into the decision and the grant,
// checking every type as parseReply does.
func parseLeaseReply(reply any, l limiter.Limit) (limiter.Decision, limiter.Grant, error) {
	if err, ok := reply.(error); ok {
		return limiter.Decision{}, limiter.Grant{}, fmt.Errorf("redis decide: %w", err)
	}
	vals, ok := reply.([]any)
	if !ok || len(vals) != leaseReplyFields {
		return limiter.Decision{}, limiter.Grant{}, fmt.Errorf("%w: %T of %d values for a lease", ErrUnexpectedReply, reply, len(vals))
	}
	var f [leaseReplyFields]int64
	for j := range f {
		v, ok := vals[j].(int64)
		if !ok {
			return limiter.Decision{}, limiter.Grant{}, fmt.Errorf("%w: value %d is %T, want an integer", ErrUnexpectedReply, j, vals[j])
		}
		f[j] = v
	}
	if f[0] != 0 && f[0] != 1 || f[5] < 0 || f[5] > l.LeaseTokens || f[6] < 0 || f[6] > int64(l.LeaseFor/time.Microsecond) {
		return limiter.Decision{}, limiter.Grant{}, fmt.Errorf("%w: lease reply %v", ErrUnexpectedReply, f)
	}
	d := limiter.NewDecision(l, f[0] == 1, f[1], f[2], f[3], f[4])
	return d, limiter.Grant{Tokens: f[5], Shift: time.Duration(f[6]) * time.Microsecond}, nil
}

var (
	leaseSpecs       sync.Map // limiter.Limit → string
	leaseSpecsCached atomic.Int64
)

// leaseSpec is l's spec as lease.lua reads it:
// "lease:ALGORITHM:TOKENS:HOLD_µs INTERVAL CAPACITY", formatted once per
// limit (up to maxCachedLimits of them).
func leaseSpec(l limiter.Limit) any {
	if v, ok := leaseSpecs.Load(l); ok {
		return v
	}
	spec := fmt.Sprintf("lease:%s:%d:%d %d %d", l.Algorithm, l.LeaseTokens, l.LeaseFor/time.Microsecond, l.IntervalMicros(), l.Capacity())
	if leaseSpecsCached.Load() < maxCachedLimits {
		if _, loaded := leaseSpecs.LoadOrStore(l, spec); !loaded {
			leaseSpecsCached.Add(1)
		}
	}
	return spec
}
