package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Limiter decides whether requests for a key may proceed under one or more
// limits. Implementations are safe for concurrent use by multiple goroutines.
//
// Every method takes the limits to apply per call, so one Limiter serves every
// route and plan. Several limits on one call are all-or-nothing: a request
// rejected by one of them consumes nothing from the others.
//
// Errors: ErrInvalidLimit (a limit fails Validate), ErrInvalidCost (n < 1 or
// no limits), ErrCostExceedsCapacity (n above a limit's capacity: no wait
// would ever admit it). Any other error is a failure of the store, which a
// resilience wrapper may turn into a decision.
type Limiter interface {
	// AllowN reports whether a request of cost n for key may happen now, and
	// consumes n units of every limit if so.
	AllowN(ctx context.Context, key string, n int64, limits ...Limit) (Decision, error)
	// Peek reports the key's budget under the limits without consuming:
	// Remaining is what is left now, and Allowed whether one unit would be
	// admitted.
	Peek(ctx context.Context, key string, limits ...Limit) (Decision, error)
	// Reset forgets the key's state under the limits, restoring a full budget.
	Reset(ctx context.Context, key string, limits ...Limit) error
}

// Allow is shorthand for l.AllowN(ctx, key, 1, limits...).
func Allow(ctx context.Context, l Limiter, key string, limits ...Limit) (Decision, error) {
	return l.AllowN(ctx, key, 1, limits...)
}

// ErrInvalidCost is returned for a cost below 1 or a call without limits.
var ErrInvalidCost = errors.New("invalid cost")

// CheckRequest validates the arguments every Limiter method receives (Peek
// and Reset pass n = 1); stores call it before touching state so that bad
// input never reaches storage.
func CheckRequest(n int64, limits []Limit) error {
	if len(limits) == 0 {
		return fmt.Errorf("%w: no limits given", ErrInvalidCost)
	}
	if n < 1 {
		return fmt.Errorf("%w: %d is below 1", ErrInvalidCost, n)
	}
	for _, l := range limits {
		if err := l.Validate(); err != nil {
			return err
		}
		if l.Start != StartAligned {
			return fmt.Errorf("%w: %s: the reference limiter enforces windows aligned on its clock only; start=%s describes another limiter, to claim with rlbench run --claim", ErrInvalidLimit, l.Spec(), l.Start)
		}
		if n > l.Capacity() {
			return fmt.Errorf("%w: cost %d is above %s's capacity %d; raise the burst or lower the cost", ErrCostExceedsCapacity, n, l.ID(), l.Capacity())
		}
	}
	return nil
}

// MaxWait is the longest wait a Decision's duration fields hold; exact waits
// beyond it (rates below one unit per 292 years) saturate there, while
// RetryAfterSeconds and ResetAfterSeconds stay exact.
const MaxWait = time.Duration(math.MaxInt64)

// Decision is a limiter's answer for one request. The zero value is a
// rejection with no limit attached. Durations are never negative.
type Decision struct {
	// Allowed reports whether the request was admitted (and charged).
	Allowed bool
	// Limit is the limit that decided: on rejection the one that rejected
	// with the longest wait, on admission the one with the least Remaining.
	Limit Limit
	// Remaining is the number of units still admissible now, after this
	// request's charge if it was admitted.
	Remaining int64
	// ResetAfter is how long until the key's budget is full again if no
	// further request arrives (RateLimit "reset").
	ResetAfter time.Duration
	// RetryAfter is how long until the same request would be admitted; zero
	// when Allowed. RFC 9110 §10.2.3 Retry-After, in seconds, ceiling: see
	// RetryAfterSeconds.
	RetryAfter time.Duration
	// Delay is, for LeakyBucket, how long the admitted request must wait for
	// its slot in the queue; zero for the other algorithms.
	Delay time.Duration
	// Degraded is set when the decision was not taken on the shared store
	// (fail-open, fail-closed or local fallback during a store failure).
	Degraded bool

	retryAfterMicros int64
	resetAfterMicros int64
}

// NewDecision builds a Decision from microsecond quantities, the unit every
// algorithm and the Redis scripts compute in. Negative waits become zero.
func NewDecision(l Limit, allowed bool, remaining, resetAfterMicros, retryAfterMicros, delayMicros int64) Decision {
	resetAfterMicros = max(resetAfterMicros, 0)
	retryAfterMicros = max(retryAfterMicros, 0)
	if allowed {
		retryAfterMicros = 0
	}
	return Decision{
		Allowed:          allowed,
		Limit:            l,
		Remaining:        max(remaining, 0),
		ResetAfter:       microsToDuration(resetAfterMicros),
		RetryAfter:       microsToDuration(retryAfterMicros),
		Delay:            microsToDuration(max(delayMicros, 0)),
		retryAfterMicros: retryAfterMicros,
		resetAfterMicros: resetAfterMicros,
	}
}

func microsToDuration(us int64) time.Duration {
	if us > int64(MaxWait/time.Microsecond) {
		return MaxWait
	}
	return time.Duration(us) * time.Microsecond
}

// RetryAfterSeconds is RetryAfter in whole seconds rounded up, as the
// Retry-After header carries it (RFC 9110 §10.2.3; RFC 6585 §4): at least 1
// on a rejection, 0 when Allowed. It is exact even beyond MaxWait.
func (d Decision) RetryAfterSeconds() int64 {
	if d.Allowed {
		return 0
	}
	return max(ceilDiv(d.retryAfterMicros, 1e6), 1)
}

// ResetAfterSeconds is ResetAfter in whole seconds rounded up, exact even
// beyond MaxWait.
func (d Decision) ResetAfterSeconds() int64 { return ceilDiv(d.resetAfterMicros, 1e6) }

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// Combine merges the decisions of several limits taken on one request into
// the one a caller acts on: rejected if any rejected (the longest wait wins),
// else admitted with the least Remaining (ties go to the longest reset).
func Combine(ds []Decision) Decision {
	if len(ds) == 0 {
		return Decision{}
	}
	worst := ds[0]
	for _, d := range ds[1:] {
		switch {
		case worst.Allowed && !d.Allowed:
			worst = d
		case !worst.Allowed && !d.Allowed:
			if d.retryAfterMicros > worst.retryAfterMicros {
				worst = d
			}
		case worst.Allowed && d.Allowed:
			if d.Remaining < worst.Remaining || (d.Remaining == worst.Remaining && d.resetAfterMicros > worst.resetAfterMicros) {
				worst = d
			}
		}
	}
	if worst.Allowed {
		for _, d := range ds {
			worst.Delay = max(worst.Delay, d.Delay)
		}
	}
	return worst
}
