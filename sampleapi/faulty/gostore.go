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
// It decides GCRA (the sample API's default) and fixed window limits, the
// two its scenarios use; other algorithms are rejected with
// limiter.ErrInvalidLimit. State: GCRA "TAT", fixed window "start count",
// in microseconds on the store's clock, under the reference store's keys.
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
		if l.Algorithm != limiter.GCRA && l.Algorithm != limiter.FixedWindow {
			return fmt.Errorf("%w: %s: this store decides gcra and fixed_window only", limiter.ErrInvalidLimit, l.Algorithm)
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
	if s.racy {
		d, writes, err := s.read(ctx, s.client, ks, n, limits)
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
			if d, writes, err = s.read(ctx, tx, ks, n, limits); err != nil || len(writes) == 0 {
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

// read reads the states of ks, decides, and returns the decision with the
// states to write (none when nothing is charged).
func (s *goStore) read(ctx context.Context, r redis.Cmdable, ks []string, n int64, limits []limiter.Limit) (limiter.Decision, []write, error) {
	vals, err := r.MGet(ctx, ks...).Result()
	if err != nil {
		return limiter.Decision{}, nil, fmt.Errorf("redis read: %w", err)
	}
	now, err := s.now(ctx)
	if err != nil {
		return limiter.Decision{}, nil, err
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
		case limiter.FixedWindow:
			ds[i], next, ttl = fixedWindow(l, st, now, n)
		}
		admitted = admitted && ds[i].Allowed
		value := strconv.FormatInt(next[0], 10)
		if l.Algorithm == limiter.FixedWindow {
			value += " " + strconv.FormatInt(next[1], 10)
		}
		writes = append(writes, write{key: ks[i], value: value, ttl: ttlOf(ttl)})
	}
	d := limiter.Combine(ds)
	if n == 0 || (!admitted && !s.chargeRejected) {
		return d, nil, nil
	}
	return d, writes, nil
}

// ttlOf is a TTL of us microseconds rounded up to whole milliseconds, at least 1 ms.
func ttlOf(us int64) time.Duration {
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
