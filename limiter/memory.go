package limiter

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"time"
)

// memoryShards is the number of independently locked maps; a power of two
// well above the core count keeps lock contention low on many keys.
const memoryShards = 64

// MemoryStore is a Limiter that keeps every key's state in this process. It
// is safe for concurrent use; state is created on a key's first request and
// dropped by Sweep once it equals a fresh key's, so memory follows the set of
// active keys. Decisions allocate nothing once a key exists.
type MemoryStore struct {
	now    func() int64
	seed   maphash.Seed
	shards [memoryShards]memoryShard
}

type memoryShard struct {
	mu sync.Mutex
	m  map[string]*keyState
	_  [48]byte // keep shards on separate cache lines
}

// keyState holds one key's state under each limit it has been charged by.
// The first limit lives inline, so the common one-limit key costs one
// pointer from the map; tiers add entries to more.
type keyState struct {
	first limitState
	more  []limitState
}

type limitState struct {
	limit  Limit
	params params
	st     state
}

// find returns the state of l, nil when the key has none yet. Limits are
// equal when their StateIDs are, so a plan whose parameters change starts
// afresh, as in the Redis store.
func (ks *keyState) find(l Limit) *limitState {
	if ks.first.limit == l {
		return &ks.first
	}
	for i := range ks.more {
		if ks.more[i].limit == l {
			return &ks.more[i]
		}
	}
	return nil
}

// drop removes the limits for which gone reports true, and reports how many
// it removed and whether the key holds nothing any more.
func (ks *keyState) drop(gone func(limitState) bool) (dropped int, empty bool) {
	all := append([]limitState{ks.first}, ks.more...)
	kept := all[:0]
	for _, ls := range all {
		if gone(ls) {
			dropped++
		} else {
			kept = append(kept, ls)
		}
	}
	if dropped == 0 {
		return 0, false
	}
	if len(kept) == 0 {
		return dropped, true
	}
	ks.first, ks.more = kept[0], slices.Clone(kept[1:])
	return dropped, false
}

// get returns the state of l or a fresh one.
func (sh *memoryShard) get(key string, l Limit) state {
	if ks := sh.m[key]; ks != nil {
		if ls := ks.find(l); ls != nil {
			return ls.st
		}
	}
	return state{}
}

// decide evaluates l on the stored state of key, or a fresh one, and
// returns the state to store if admitted.
func (sh *memoryShard) decide(key string, l Limit, now, n int64) (state, outcome) {
	st := sh.get(key, l)
	p := paramsOf(l)
	o := decide(&p, &st, now, n, &st)
	return st, o
}

// put stores st as the state of key under l.
func (sh *memoryShard) put(key string, l Limit, st state) {
	ks := sh.m[key]
	if ks == nil {
		sh.m[key] = &keyState{first: limitState{limit: l, params: paramsOf(l), st: st}}
		return
	}
	if ls := ks.find(l); ls != nil {
		ls.st = st
		return
	}
	ks.more = append(ks.more, limitState{limit: l, params: paramsOf(l), st: st})
}

// MemoryOption configures a MemoryStore.
type MemoryOption func(*MemoryStore)

// WithClock makes the store read time from now instead of the system clock;
// tests pass a fake clock. The default is the wall clock at construction
// advanced by the monotonic clock, so a stepped system clock changes nothing.
// A clock that steps back is handled per key as the algorithms document: a
// key's time never runs backwards, and no client is locked out by a step.
func WithClock(now func() time.Time) MemoryOption {
	return func(s *MemoryStore) { s.now = func() int64 { return now().UnixMicro() } }
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	base := time.Now()
	s := &MemoryStore{
		now:  func() int64 { return base.UnixMicro() + time.Since(base).Microseconds() },
		seed: maphash.MakeSeed(),
	}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*keyState)
	}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

func (s *MemoryStore) shard(key string) *memoryShard {
	return &s.shards[maphash.String(s.seed, key)%memoryShards]
}

// AllowN implements Limiter. It never returns a store error.
func (s *MemoryStore) AllowN(_ context.Context, key string, n int64, limits ...Limit) (Decision, error) {
	if n < 1 {
		return Decision{}, CheckRequest(n, limits)
	}
	now := s.now()
	if len(limits) == 1 { // the hot path, inlined: one lookup, an update in place
		sh := s.shard(key)
		sh.mu.Lock()
		// Only limits that passed CheckRequest are ever stored, so a known
		// one needs no validation.
		if ks := sh.m[key]; ks != nil && ks.first.limit == limits[0] && n <= ks.first.params.capacity {
			ls := &ks.first
			o := decide(&ls.params, &ls.st, now, n, &ls.st)
			sh.mu.Unlock()
			return NewDecision(limits[0], o.allowed, o.remaining, o.resetAfter, o.retryAfter, o.delay), nil
		}
		sh.mu.Unlock()
	}
	return s.decideAt(key, n, now, limits)
}

// AllowNAt is AllowN at time t instead of the store's clock.
func (s *MemoryStore) AllowNAt(key string, n int64, t time.Time, limits ...Limit) (Decision, error) {
	if n < 1 {
		return Decision{}, CheckRequest(n, limits)
	}
	return s.decideAt(key, n, t.UnixMicro(), limits)
}

// Peek implements Limiter.
func (s *MemoryStore) Peek(_ context.Context, key string, limits ...Limit) (Decision, error) {
	return s.decideAt(key, 0, s.now(), limits)
}

// Reset implements Limiter.
func (s *MemoryStore) Reset(_ context.Context, key string, limits ...Limit) error {
	if err := CheckRequest(1, limits); err != nil {
		return err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if ks := sh.m[key]; ks != nil {
		if _, empty := ks.drop(func(ls limitState) bool { return slices.Contains(limits, ls.limit) }); empty {
			delete(sh.m, key)
		}
	}
	return nil
}

// decideAt takes the decision for cost n (0 = peek) at now, all-or-nothing
// over limits: states are written only when every limit admits. AllowN
// takes the common case (one known limit) before it, without validating a
// limit that was validated when its state was stored.
func (s *MemoryStore) decideAt(key string, n, now int64, limits []Limit) (Decision, error) {
	sh := s.shard(key)
	if len(limits) == 1 {
		l := &limits[0]
		if err := CheckRequest(max(n, 1), limits); err != nil {
			return Decision{}, err
		}
		sh.mu.Lock()
		next, o := sh.decide(key, *l, now, n)
		if (o.allowed || o.stepped) && n > 0 { // a stepped state is stored even on a rejection
			sh.put(key, *l, next)
		}
		sh.mu.Unlock()
		return o.decision(l), nil
	}
	if err := CheckRequest(max(n, 1), limits); err != nil {
		return Decision{}, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var (
		decisions [4]Decision
		states    [4]state
		ds        = decisions[:0]
		next      = states[:0]
		allowed   = true
	)
	for _, l := range limits {
		st, o := sh.decide(key, l, now, n)
		ds, next = append(ds, o.decision(&l)), append(next, st)
		allowed = allowed && o.allowed
	}
	if allowed && n > 0 {
		for i, l := range limits {
			sh.put(key, l, next[i])
		}
	}
	if !allowed && n > 0 { // nothing is charged, but states the clock stepped behind are moved
		for _, l := range limits {
			if st := sh.get(key, l); st.seen > now {
				p := paramsOf(l)
				sh.put(key, l, stepBack(&p, &st, now))
			}
		}
	}
	if !allowed { // nothing was charged: report the admitting limits as they stand
		for i, l := range limits {
			if ds[i].Allowed {
				_, o := sh.decide(key, l, now, 0)
				ds[i] = o.decision(&l)
			}
		}
	}
	return Combine(ds), nil
}

// SweepAt drops every key whose state at t equals a fresh key's and reports
// how many it dropped. Decisions at t and later are unchanged by it; a key
// it dropped is a fresh key even if the clock later steps back before t, as
// a Redis key is once its TTL has fired.
func (s *MemoryStore) SweepAt(t time.Time) int {
	now, dropped := t.UnixMicro(), 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for key, ks := range sh.m {
			n, empty := ks.drop(func(ls limitState) bool { return fresh(&ls.params, &ls.st, now) })
			dropped += n
			if empty {
				delete(sh.m, key)
			}
		}
		sh.mu.Unlock()
	}
	return dropped
}

// Sweep runs SweepAt on the store's clock every interval until ctx is done.
func (s *MemoryStore) Sweep(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.SweepAt(time.UnixMicro(s.now()))
		}
	}
}

// Len reports the number of key and limit pairs the store holds.
func (s *MemoryStore) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, ks := range sh.m {
			n += 1 + len(ks.more)
		}
		sh.mu.Unlock()
	}
	return n
}
