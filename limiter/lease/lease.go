// Package lease decides most requests under a bucket limit that declares a
// lease (Limit.LeaseTokens, Limit.LeaseFor: "gcra:1000/1s,burst=1000,lease=10/900ms")
// without a round trip to the shared store, while the shared budget stays
// exact. It wraps a store implementing limiter.Leaser (limiter.MemoryStore,
// redisstore.Store) and keeps, per key and limit, two things:
//
//   - a lease: units the store granted to this instance (LeaseN), charged
//     there as if spent at the lease's end, which this instance spends
//     locally until they run out or LeaseFor has passed since it sent the
//     request that took them (measured on its monotonic clock from before
//     the send, so that it ends no later than the store's charge assumed).
//     A lease is never extended: an expired or spent one sends the next
//     request to the store, which may grant another. limiter/lease.go holds
//     the proof that no interval admits more than the limit allows;
//   - a denial: after the store rejects a request of cost 1 with
//     Retry-After R, every request is rejected locally until R has passed
//     since that request was sent. This is exact for GCRA and the token
//     bucket: the bucket holds less than one unit until then, so no
//     instance can be admitted meanwhile (units already leased are
//     charged), the key's state does not change, and the store would
//     reject them too, with the same wait. A denial of a larger cost is not
//     kept: smaller requests may still be admitted, on any instance, and
//     lengthen the wait unseen.
//
// Headers stay truthful. A local admission reports as Remaining what is
// surely left to the holder: its unspent units, plus the part of the
// lease's shift (limiter.Grant) that the rest of the lease cannot take back,
// ⌊min(Shift, LeaseFor − elapsed)/T⌋; whatever other instances do, the
// ideal limiter (each unit charged when spent) leaves at least that. A
// local rejection reports the store's wait, counted from when its answer
// arrived (never shorter than the store's), lengthened by (n − 1)·T for a
// larger cost, and Remaining 0.
//
// Requests under several limits, or under a limit without a lease, go to
// the store unchanged. The state is a sharded map, bounded by MaxEntries
// (entries whose lease and denial are over are dropped first, then any),
// with no goroutine of its own; a dropped entry only sends its key's next
// request to the store. A Limiter is safe for concurrent use.
package lease

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// DefaultMaxEntries bounds the keys and limits a Limiter remembers.
const DefaultMaxEntries = 1 << 16

// shards is the number of independently locked maps.
const shards = 64

// Limiter is a limiter.Limiter that serves requests under leased limits
// from local leases and denials, and every other request from its store.
type Limiter struct {
	store    limiter.Leaser
	now      func() time.Duration // monotonic, from an arbitrary origin
	perShard int
	seed     maphash.Seed
	shards   [shards]shard
}

type shard struct {
	mu sync.Mutex
	m  map[entryKey]*entry
	_  [48]byte // keep shards on separate cache lines
}

type entryKey struct {
	key   string
	limit limiter.Limit
}

// entry is one key's local state under one limit. Times are on the
// Limiter's clock.
type entry struct {
	// The lease: tokens left, spendable before deadline.
	tokens   int64
	start    time.Duration // when the request that took it was sent
	deadline time.Duration // start + LeaseFor
	shift    time.Duration // limiter.Grant.Shift
	resetAt  time.Duration // the answer's arrival + its ResetAfter
	// The denial: every request is rejected before denyUntil.
	denyUntil   time.Duration // the rejected request's send + RetryAfter
	retryAt     time.Duration // the answer's arrival + RetryAfter
	denyResetAt time.Duration // the answer's arrival + ResetAfter
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock makes the Limiter read its monotonic clock from now, which must
// never run backwards; tests pass a fake one. The default is the time since
// the Limiter was made, on the process's monotonic clock.
func WithClock(now func() time.Duration) Option {
	return func(l *Limiter) { l.now = now }
}

// WithMaxEntries bounds the keys and limits the Limiter remembers
// (DefaultMaxEntries); at least one per shard is kept.
func WithMaxEntries(n int) Option {
	return func(l *Limiter) { l.perShard = max(n/shards, 1) }
}

// New returns a Limiter over store.
func New(store limiter.Leaser, opts ...Option) *Limiter {
	base := time.Now()
	l := &Limiter{
		store:    store,
		now:      func() time.Duration { return time.Since(base) },
		perShard: DefaultMaxEntries / shards,
		seed:     maphash.MakeSeed(),
	}
	for i := range l.shards {
		l.shards[i].m = make(map[entryKey]*entry)
	}
	for _, opt := range opts {
		opt(l)
	}
	return l
}

func (l *Limiter) shard(key string) *shard {
	return &l.shards[maphash.String(l.seed, key)%shards]
}

// AllowN implements limiter.Limiter. A request under one limit declaring a
// lease is decided locally when this instance holds a lease with n units
// left (admitted) or a denial (rejected), else by the
// store's LeaseN, whose grant or rejection is then kept. Errors are the
// store's; a failed call keeps nothing.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	if len(limits) != 1 || !limits[0].Leased() || n < 1 || n > limits[0].Capacity() {
		return l.store.AllowN(ctx, key, n, limits...)
	}
	lim := limits[0]
	k := entryKey{key, lim}
	sh := l.shard(key)
	now := l.now()
	sh.mu.Lock()
	if e := sh.m[k]; e != nil {
		if d, ok := e.local(&lim, now, n); ok {
			sh.mu.Unlock()
			return d, nil
		}
	}
	sh.mu.Unlock()

	sent := now
	d, g, err := l.store.LeaseN(ctx, key, n, lim)
	if err != nil {
		return d, err
	}
	recv := l.now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[k]
	switch {
	case g.Tokens > n:
		if e == nil {
			e = l.insert(sh, k, recv)
		}
		if sent+lim.LeaseFor > e.deadline { // keep the lease that lasts longer
			e.tokens, e.start, e.deadline, e.shift = g.Tokens-n, sent, sent+lim.LeaseFor, g.Shift
			e.resetAt = recv + d.ResetAfter
		}
		e.denyUntil = 0
	case !d.Allowed && !d.Degraded && n == 1:
		if e == nil {
			e = l.insert(sh, k, recv)
		}
		e.denyUntil, e.retryAt, e.denyResetAt = sent+d.RetryAfter, recv+d.RetryAfter, recv+d.ResetAfter
	case e != nil && e.over(recv):
		delete(sh.m, k)
	}
	return d, nil
}

// local decides a request of cost n at now from e, when it can.
func (e *entry) local(lim *limiter.Limit, now time.Duration, n int64) (limiter.Decision, bool) {
	t := time.Duration(lim.IntervalMicros()) * time.Microsecond
	if now < e.deadline && e.tokens >= n {
		e.tokens -= n
		kept := min(e.shift, e.deadline-now) // the shift the rest of the lease cannot take back
		remaining := e.tokens + int64(max(kept, 0)/t)
		return limiter.NewDecision(*lim, true, remaining, micros(e.resetAt-now), 0, 0), true
	}
	if now < e.denyUntil {
		retry := e.retryAt - now + time.Duration(n-1)*t
		return limiter.NewDecision(*lim, false, 0, micros(e.denyResetAt-now), micros(retry), 0), true
	}
	return limiter.Decision{}, false
}

// over reports whether e's lease and denial are both over at now.
func (e *entry) over(now time.Duration) bool {
	return (now >= e.deadline || e.tokens == 0) && now >= e.denyUntil
}

// micros is d in whole microseconds, rounded up.
func micros(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// insert adds an empty entry for k to sh, making room first when sh is
// full: entries that are over go, then, if none was, one entry.
func (l *Limiter) insert(sh *shard, k entryKey, now time.Duration) *entry {
	if len(sh.m) >= l.perShard {
		for key, e := range sh.m {
			if e.over(now) {
				delete(sh.m, key)
			}
		}
		for key := range sh.m {
			if len(sh.m) < l.perShard {
				break
			}
			delete(sh.m, key)
		}
	}
	e := &entry{}
	sh.m[k] = e
	return e
}

// Peek implements limiter.Limiter: the store's view, which counts every
// lease as spent.
func (l *Limiter) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	return l.store.Peek(ctx, key, limits...)
}

// Reset implements limiter.Limiter: it forgets this instance's leases and
// denials of key under the limits and resets the store's state. Leases
// other instances hold stay theirs until they end.
func (l *Limiter) Reset(ctx context.Context, key string, limits ...limiter.Limit) error {
	sh := l.shard(key)
	sh.mu.Lock()
	for _, lim := range limits {
		delete(sh.m, entryKey{key, lim})
	}
	sh.mu.Unlock()
	return l.store.Reset(ctx, key, limits...)
}

// Len reports the number of keys and limits the Limiter remembers.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
