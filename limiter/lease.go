package limiter

import (
	"context"
	"time"
)

// Token leases: a store grants an instance several units of a bucket limit
// at once, which the instance then spends locally without a round trip
// (package limiter/lease), as Envoy's RLQS quota assignments, Google's
// Doorman and CockroachDB's tenant token bucket grant capacity ahead of use.
//
// A lease taken at store time t0 for L (Limit.LeaseFor) may be spent at any
// time in [t0, t0+L]: not before, since the instance learns of it from the
// store's reply, and not after, since the instance measures L from before it
// sent the request (its local start precedes t0), so clock skew can only
// shorten a lease. Taking g units at t0 as a plain decision would not be
// budget-safe: with a full bucket of burst B, take g at t0, wait until the
// bucket is full again, spend the g locally while other instances take B,
// and g + B units are admitted at one instant. So the store charges a lease
// as if it were spent at the latest moment, t0+L:
//
//	GCRA (emission interval T, tolerance τ = B·T), stored TAT, base = max(TAT, t0):
//	  granted only if base ≤ t0 + L and base + g·T − t0 ≤ τ;
//	  new TAT = t0 + L + g·T.
//
// The token bucket takes the same decision on its equivalent TAT (the time
// at which its tokens would be full again less burst − tokens intervals).
//
// Budget (every interval [a, b] admits at most B + (b − a)/T): give each
// store event a test time u and a charge time v ≥ u (a plain decision: both
// its time; a lease: t0 and t0 + L), and let S be the events with a unit
// spent in [a, b], so v ≥ a and u ≤ b for each. Every event of S raises the
// TAT to at least max(TAT, a) plus its units, so after the last of S is
// processed the TAT is at least a + cost(S)·T; that event's test,
// max(TAT, u) + its units − u ≤ τ, bounds a + cost(S)·T ≤ b + τ. Nothing in
// this uses the order of events, so interleaved instances are covered.
//
// Hold: the grant condition base ≤ t0 + L makes the store's state after a
// lease depend on that lease alone (new TAT = t0 + L + g·T, whatever came
// before), so a store never accumulates unspent units of old leases. The
// store's room then falls short of the ideal limiter's (every unit charged
// when spent) by at most g + L/T: the units of the latest lease and the
// refill its later charge defers. A 429 is therefore false only when the
// ideal room exceeds the cost by more than LeaseTokens + LeaseFor·rate
// (the checker's widening, harness/checker/doc.go).
//
// No lease is granted when it would turn away a request that a plain
// decision admits: when the grant condition fails, or fewer units than
// the request's cost plus one fit, the request is decided plainly.

// Grant is what LeaseN granted beside its decision.
type Grant struct {
	// Tokens is the number of units granted in all, the request's own cost
	// included; 0 when the request was decided plainly (no lease).
	Tokens int64
	// Shift is how much later than a plain charge the store charged the
	// grant: t0 + LeaseFor − max(TAT, t0), in [0, LeaseFor]. The holder's
	// surely remaining budget depends on it (see package limiter/lease).
	Shift time.Duration
}

// Leaser is a Limiter whose store can grant token leases. Implementations
// are safe for concurrent use.
type Leaser interface {
	Limiter
	// LeaseN decides a request of cost n for key under l, one bucket limit
	// declaring a lease (Limit.LeaseTokens, Limit.LeaseFor), and when it
	// admits the request may grant up to l.LeaseTokens units in all (the
	// request's n among them) charged as the package documents. A
	// request that a plain AllowN would admit is always admitted. On a
	// grant, the Decision's Remaining is the holder's surely remaining
	// budget, g − n + ⌊Shift/T⌋, and ResetAfter the store's time to full.
	// Errors are AllowN's.
	LeaseN(ctx context.Context, key string, n int64, l Limit) (Decision, Grant, error)
}

// lease decides a request of cost n at now on s under a bucket limit with a
// lease of want units for hold µs, as LeaseN documents, writing the state
// to out when it admits. It returns the granted units (0: decided plainly)
// and the shift in µs.
func lease(p *params, s *state, now, n, want, hold int64, out *state) (outcome, int64, int64) {
	st := s
	if s.seen > now {
		moved := stepBack(p, s, now)
		st = &moved
	}
	t, burst := p.interval, p.capacity
	tau := burst * t
	var tat int64
	switch p.alg {
	case GCRA:
		tat = max(st.a, now)
	case TokenBucket:
		tat = tokenBucketTAT(p, st, now)
	default:
		return decide(p, s, now, n, out), 0, 0
	}
	g := min(want, (tau-(tat-now))/t)
	if tat > now+hold || g <= n {
		return decide(p, s, now, n, out), 0, 0
	}
	newTAT := now + hold + g*t
	shift := now + hold - tat
	if out != nil {
		switch p.alg {
		case GCRA:
			*out = state{a: newTAT, seen: now}
		case TokenBucket:
			tokens := burst - g - ceilDiv(hold, t)
			*out = state{a: tokens, b: newTAT - (burst-tokens)*t, seen: now}
		}
	}
	return outcome{allowed: true, remaining: g - n + shift/t, resetAfter: newTAT - now}, g, shift
}

// tokenBucketTAT is the theoretical arrival time equivalent to a token
// bucket's state at now: now when the bucket is full, else the last refill
// plus the intervals of the missing tokens.
func tokenBucketTAT(p *params, s *state, now int64) int64 {
	t, burst := p.interval, p.capacity
	tokens, last := s.a, s.b
	if s.seen == 0 {
		return now
	}
	if elapsed := now - last; elapsed > 0 {
		if elapsed >= (burst-tokens)*t {
			return now
		}
		refill := elapsed / t
		tokens, last = tokens+refill, last+refill*t
	}
	if tokens >= burst {
		return now
	}
	return max(last+(burst-tokens)*t, now)
}

// LeaseN implements Leaser. It never returns a store error.
func (s *MemoryStore) LeaseN(_ context.Context, key string, n int64, l Limit) (Decision, Grant, error) {
	if err := CheckRequest(n, []Limit{l}); err != nil {
		return Decision{}, Grant{}, err
	}
	return s.leaseAt(key, n, s.now(), l)
}

// LeaseNAt is LeaseN at time t instead of the store's clock.
func (s *MemoryStore) LeaseNAt(key string, n int64, t time.Time, l Limit) (Decision, Grant, error) {
	if err := CheckRequest(n, []Limit{l}); err != nil {
		return Decision{}, Grant{}, err
	}
	return s.leaseAt(key, n, t.UnixMicro(), l)
}

func (s *MemoryStore) leaseAt(key string, n, now int64, l Limit) (Decision, Grant, error) {
	if !l.Leased() {
		d, err := s.decideAt(key, n, now, []Limit{l})
		return d, Grant{}, err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.get(key, l)
	p := paramsOf(l)
	o, g, shift := lease(&p, &st, now, n, l.LeaseTokens, int64(l.LeaseFor/time.Microsecond), &st)
	if o.allowed || o.stepped {
		sh.put(key, l, st)
	}
	return o.decision(&l), Grant{Tokens: g, Shift: time.Duration(shift) * time.Microsecond}, nil
}
