package faulty

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
)

// goStore is a Redis store that decides in Go instead of in a Lua script:
// it reads a key's state, decides, and writes the state back. Configured
// with every fault off it decides exactly as the reference limiter (the
// tests hold it to limiter.MemoryStore on a fixed timeline): each decision
// is one optimistic transaction (WATCH, GET, MULTI/SET/EXEC, retried when
// another client wrote first), on Redis TIME, with every key written under
// a TTL. Each field below switches on one fault.
//
// It decides GCRA (the sample API's default), token bucket and fixed window
// limits, those its scenarios use; other algorithms are rejected with
// limiter.ErrInvalidLimit. State: GCRA "TAT", token bucket "tokens last",
// fixed window "start count", in microseconds on the store's clock, under
// the reference store's keys. Its clock runs forward (Redis TIME, or a
// test's clock): unlike the reference it makes no provision for a clock
// that steps back.
type goStore struct {
	client redis.UniversalClient
	keys   *redisstore.Store // names keys as the reference store does

	// clock, when set, decides instead of Redis TIME (the ClientClock fault).
	clock func() time.Time
	// racy reads and writes in separate round trips, outside any
	// transaction, pausing delay in between (the NonAtomic fault).
	racy  bool
	delay time.Duration
	// chargeRejected writes the state of a rejected request as if it had
	// been admitted (the RejectedConsumes fault).
	chargeRejected bool
	// halfToken admits when the tokens left, rounded to the nearest whole
	// number, cover the cost (the HalfToken fault).
	halfToken bool
	// chargeAdmittingTiers, on a request one limit rejects, writes the
	// state of every limit that admitted it as if it had been admitted
	// there (the TierChargedOnReject fault).
	chargeAdmittingTiers bool
	// ttlSecondsAsMillis gives each key a TTL of the right number in the
	// wrong unit: the seconds to keep it, as milliseconds (the TTLWrongUnit
	// fault).
	ttlSecondsAsMillis bool
	// staleNow reads the clock once, before the transaction, and decides
	// every attempt on that reading; rewind then lets a token bucket's
	// refill time move back to a now older than it, and writes the state
	// of rejected requests too (the TimeRewind fault).
	staleNow, rewind bool

	// afterRead, when set, runs between reading the state and writing it
	// back: tests interleave another decision there.
	afterRead func()
}

// maxTxAttempts bounds the optimistic transaction's retries under contention.
const maxTxAttempts = 200

// errContention is returned when maxTxAttempts transactions all lost a race.
var errContention = errors.New("redis state kept changing under the transaction")

func newGoStore(client redis.UniversalClient) *goStore {
	return &goStore{client: client, keys: redisstore.New(client, redisstore.WithBatching(1, 1))}
}

// AllowN implements limiter.Limiter.
func (s *goStore) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	if err := s.check(n, limits); err != nil {
		return limiter.Decision{}, err
	}
	return s.decide(ctx, key, n, limits)
}

// Peek implements limiter.Limiter.
func (s *goStore) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	if err := s.check(1, limits); err != nil {
		return limiter.Decision{}, err
	}
	return s.decide(ctx, key, 0, limits)
}

// Reset implements limiter.Limiter.
func (s *goStore) Reset(ctx context.Context, key string, limits ...limiter.Limit) error {
	if err := s.check(1, limits); err != nil {
		return err
	}
	return s.client.Del(ctx, s.storageKeys(key, limits)...).Err()
}

func (s *goStore) check(n int64, limits []limiter.Limit) error {
	if err := limiter.CheckRequest(n, limits); err != nil {
		return err
	}
	for _, l := range limits {
		switch l.Algorithm {
		case limiter.GCRA, limiter.TokenBucket, limiter.FixedWindow:
		default:
			return fmt.Errorf("%w: %s: this store decides gcra, token_bucket and fixed_window only", limiter.ErrInvalidLimit, l.Algorithm)
		}
	}
	return nil
}

func (s *goStore) storageKeys(key string, limits []limiter.Limit) []string {
	ks := make([]string, len(limits))
	for i, l := range limits {
		ks[i] = s.keys.StorageKey(key, l)
	}
	return ks
}

// write is one state to store: its value and TTL.
type write struct {
	key, value string
	ttl        time.Duration
}

func (s *goStore) decide(ctx context.Context, key string, n int64, limits []limiter.Limit) (limiter.Decision, error) {
	ks := s.storageKeys(key, limits)
	var before int64 // the clock read before the transaction (staleNow); 0: read within it
	if s.staleNow {
		var err error
		if before, err = s.now(ctx); err != nil {
			return limiter.Decision{}, err
		}
	}
	if s.racy {
		d, writes, err := s.read(ctx, s.client, ks, n, limits, before)
		if err != nil || len(writes) == 0 {
			return d, err
		}
		if s.afterRead != nil {
			s.afterRead()
		}
		if s.delay > 0 {
			t := time.NewTimer(s.delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return limiter.Decision{}, ctx.Err()
			}
		}
		_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			setAll(ctx, p, writes)
			return nil
		})
		if err != nil {
			return limiter.Decision{}, fmt.Errorf("redis write: %w", err)
		}
		return d, nil
	}
	for range maxTxAttempts {
		var d limiter.Decision
		err := s.client.Watch(ctx, func(tx *redis.Tx) error {
			var writes []write
			var err error
			if d, writes, err = s.read(ctx, tx, ks, n, limits, before); err != nil || len(writes) == 0 {
				return err
			}
			if s.afterRead != nil {
				s.afterRead()
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				setAll(ctx, p, writes)
				return nil
			})
			return err
		}, ks...)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return limiter.Decision{}, fmt.Errorf("redis decide: %w", err)
		}
		return d, nil
	}
	return limiter.Decision{}, errContention
}

func setAll(ctx context.Context, p redis.Pipeliner, writes []write) {
	for _, w := range writes {
		p.Set(ctx, w.key, w.value, w.ttl)
	}
}

// read reads the states of ks, decides at now (or, when now is 0, on the
// clock read after the states), and returns the decision with the states to
// write (none when nothing is charged).
func (s *goStore) read(ctx context.Context, r redis.Cmdable, ks []string, n int64, limits []limiter.Limit, now int64) (limiter.Decision, []write, error) {
	vals, err := r.MGet(ctx, ks...).Result()
	if err != nil {
		return limiter.Decision{}, nil, fmt.Errorf("redis read: %w", err)
	}
	if now == 0 {
		if now, err = s.now(ctx); err != nil {
			return limiter.Decision{}, nil, err
		}
	}
	ds := make([]limiter.Decision, len(limits))
	writes := make([]write, 0, len(limits))
	admitted := true
	for i, l := range limits {
		st, err := parseState(vals[i])
		if err != nil {
			return limiter.Decision{}, nil, fmt.Errorf("redis state of %s: %w", ks[i], err)
		}
		var next [2]int64
		var ttl int64
		switch l.Algorithm {
		case limiter.GCRA:
			ds[i], next[0], ttl = s.gcra(l, st[0], now, n)
		case limiter.TokenBucket:
			ds[i], next, ttl = tokenBucket(l, st, now, n, s.rewind)
		case limiter.FixedWindow:
			ds[i], next, ttl = fixedWindow(l, st, now, n)
		}
		admitted = admitted && ds[i].Allowed
		value := strconv.FormatInt(next[0], 10)
		if l.Algorithm != limiter.GCRA {
			value += " " + strconv.FormatInt(next[1], 10)
		}
		writes = append(writes, write{key: ks[i], value: value, ttl: s.ttlOf(ttl)})
	}
	d := limiter.Combine(ds)
	switch {
	case n == 0:
		return d, nil, nil
	case admitted, s.chargeRejected:
		return d, writes, nil
	case s.chargeAdmittingTiers:
		charged := writes[:0]
		for i, w := range writes {
			if ds[i].Allowed {
				charged = append(charged, w)
			}
		}
		return d, charged, nil
	case s.rewind:
		// The rejected request's refill, and its rewound time, are stored too.
		var stored []write
		for i, w := range writes {
			if limits[i].Algorithm == limiter.TokenBucket {
				stored = append(stored, w)
			}
		}
		return d, stored, nil
	}
	return d, nil, nil
}

// ttlOf is a TTL of us microseconds rounded up to whole milliseconds, at
// least 1 ms; with ttlSecondsAsMillis, us rounded up to whole seconds, at
// least 1, taken as milliseconds.
func (s *goStore) ttlOf(us int64) time.Duration {
	if s.ttlSecondsAsMillis {
		return time.Duration(max((us+999_999)/1_000_000, 1)) * time.Millisecond
	}
	return time.Duration(max((us+999)/1000, 1)) * time.Millisecond
}

func (s *goStore) now(ctx context.Context) (int64, error) {
	if s.clock != nil {
		return s.clock().UnixMicro(), nil
	}
	t, err := s.client.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("redis time: %w", err)
	}
	return t.UnixMicro(), nil
}

// parseState parses a stored "a [b]"; a missing key is the zero state.
func parseState(v any) ([2]int64, error) {
	var st [2]int64
	str, ok := v.(string)
	if !ok {
		if v == nil {
			return st, nil
		}
		return st, fmt.Errorf("unexpected reply %T", v)
	}
	for i, f := range strings.Fields(str) {
		if i >= len(st) {
			return st, fmt.Errorf("%q: more than two fields", str)
		}
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return st, fmt.Errorf("%q: %w", str, err)
		}
		st[i] = x
	}
	return st, nil
}

// gcra is limiter's GCRA (algorithms.go): it returns the decision, the new
// TAT and its TTL. n = 0 peeks.
func (s *goStore) gcra(l limiter.Limit, stored, now, n int64) (limiter.Decision, int64, int64) {
	t, burst := l.IntervalMicros(), l.Capacity()
	tat := max(stored, now)
	capacity := burst * t
	remaining := func(at int64) int64 { return (capacity - (at - now)) / t }
	newTAT := tat + max(n, 1)*t
	allowance := capacity
	if s.halfToken {
		allowance += t / 2 // the tokens left, rounded half up
	}
	if newTAT-now > allowance {
		return limiter.NewDecision(l, false, remaining(tat), tat-now, newTAT-capacity-now, 0), newTAT, newTAT - now
	}
	if n == 0 {
		return limiter.NewDecision(l, true, remaining(tat), tat-now, 0, 0), tat, tat - now
	}
	return limiter.NewDecision(l, true, remaining(newTAT), newTAT-now, 0, 0), newTAT, newTAT - now
}

// tokenBucket is limiter's token bucket (algorithms.go) on a clock that runs
// forward: it returns the decision, the new state (tokens, time of the last
// whole refill) and its TTL, the time to refill. n = 0 peeks. With rewind, a
// now before the last refill moves the refill time back to it, so the time
// between them is refilled a second time later.
func tokenBucket(l limiter.Limit, st [2]int64, now, n int64, rewind bool) (limiter.Decision, [2]int64, int64) {
	t, burst := l.IntervalMicros(), l.Capacity()
	tokens, last := st[0], st[1]
	if last == 0 { // fresh key: a full bucket
		tokens, last = burst, now
	}
	if elapsed := now - last; elapsed > 0 {
		if elapsed >= (burst-tokens)*t {
			tokens, last = burst, now
		} else {
			refill := elapsed / t
			tokens, last = tokens+refill, last+refill*t // keep the partial interval
		}
	} else if rewind {
		last = now
	}
	resetAfter := func(tok int64) int64 {
		if tok >= burst {
			return 0
		}
		return last + (burst-tok)*t - now
	}
	ttl := func(tok int64) int64 { return max(resetAfter(tok), 1) }
	if tokens < max(n, 1) {
		return limiter.NewDecision(l, false, tokens, resetAfter(tokens), last+(max(n, 1)-tokens)*t-now, 0), [2]int64{tokens, last}, ttl(tokens)
	}
	tokens -= n
	return limiter.NewDecision(l, true, tokens, resetAfter(tokens), 0, 0), [2]int64{tokens, last}, ttl(tokens)
}

// fixedWindow is limiter's fixed window (algorithms.go), on windows aligned
// on the store's clock: it returns the decision, the new state (start,
// count) and its TTL, the rest of the window. n = 0 peeks.
func fixedWindow(l limiter.Limit, st [2]int64, now, n int64) (limiter.Decision, [2]int64, int64) {
	w, limit := l.IntervalMicros(), l.Capacity()
	start, count := now-now%w, st[1]
	switch {
	case st[0] < start:
		count = 0
	case st[0] > start:
		start = st[0]
	}
	end := start + w - now
	if count+max(n, 1) > limit {
		return limiter.NewDecision(l, false, limit-count, end, end, 0), [2]int64{start, count + n}, end
	}
	count += n
	reset := end
	if count == 0 {
		reset = 0
	}
	return limiter.NewDecision(l, true, limit-count, reset, 0, 0), [2]int64{start, count}, end
}
