package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/scenarios"
)

// The limiter's Lua scripts (limiter/redisstore/lua) need from Redis:
// EVALSHA with a NOSCRIPT fallback to EVAL (SCRIPT LOAD); redis.call('TIME')
// inside a script, since every instance decides on Redis's clock;
// redis.replicate_commands; GET and SET with PX; the list commands RPUSH,
// LRANGE, LSET and LTRIM with PEXPIRE (sliding window log); and Lua's
// string.format('%.0f'), string.match and math. miniredis implements them
// in gopher-lua, but does not expire keys on its own: TTLs only run down
// when its clock is moved forward. Embedded therefore moves that clock with
// the wall clock, every ttlTick.
//
// Rather than trusting that list, StartEmbedded runs every algorithm's
// script against the server it started and compares the decisions with the
// in-memory store's; an algorithm whose decisions differ (or fail) is
// refused with the reason.

// ttlTick is how often an embedded Redis moves its TTL clock forward; keys
// expire at most this late.
const ttlTick = 100 * time.Millisecond

// Embedded is a miniredis served on a loopback port, so that sample API
// processes can reach it like any Redis. It emulates Redis inside this
// process: use it where no redis-server or Docker engine exists. It
// supports Kill and Restart (empty, with its script cache flushed, as a real
// restart); Pause and Resume return errors wrapping ErrUnsupported. It is
// safe for concurrent use; the zero value is not usable, call StartEmbedded.
type Embedded struct {
	m        *miniredis.Miniredis
	addr     string
	support  map[limiter.Algorithm]error
	stopTick chan struct{}
	stop     func() bool

	mu     sync.Mutex // serializes Kill, Restart and Close
	killed bool
	closed bool
}

var _ Faulty = (*Embedded)(nil)

// StartEmbedded starts miniredis on a free loopback port and checks that it
// serves every algorithm in algs (all of them are probed; see Supports).
// Errors wrap ErrUnsupported for an algorithm it cannot serve, naming the
// algorithm and the failure. The server stops when ctx ends or Close is
// called.
func StartEmbedded(ctx context.Context, algs []limiter.Algorithm) (*Embedded, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	e := &Embedded{m: m, addr: m.Addr(), stopTick: make(chan struct{})}
	go e.tick()
	e.stop = closeOnDone(ctx, func() { e.Close() })
	e.support = probeAlgorithms(ctx, e.addr)
	for _, a := range algs {
		if err := e.Supports(a); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// tick moves miniredis's TTL clock with the wall clock until Close.
func (e *Embedded) tick() {
	t := time.NewTicker(ttlTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case now := <-t.C:
			e.m.FastForward(now.Sub(last))
			last = now
		case <-e.stopTick:
			return
		}
	}
}

// Supports reports nil when the embedded Redis decides like the reference
// limiter for algorithm a, or an error wrapping ErrUnsupported that says
// why not.
func (e *Embedded) Supports(a limiter.Algorithm) error {
	err, ok := e.support[a]
	if !ok {
		return fmt.Errorf("%w: unknown algorithm %q", ErrUnsupported, a)
	}
	if err != nil {
		return fmt.Errorf("%w: the embedded Redis (miniredis) cannot serve %s: %v; use the process provider (redis-server, `make deps`) or docker", ErrUnsupported, a, err)
	}
	return nil
}

// probeAlgorithms runs each algorithm's script on the Redis at addr and
// compares four decisions with the in-memory store's.
func probeAlgorithms(ctx context.Context, addr string) map[limiter.Algorithm]error {
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	store := redisstore.New(client, redisstore.WithPrefix("rlbench-probe:"), redisstore.WithBatching(1, 1))
	out := map[limiter.Algorithm]error{}
	for _, a := range limiter.Algorithms {
		out[a] = probe(ctx, store, a)
	}
	return out
}

func probe(ctx context.Context, store *redisstore.Store, a limiter.Algorithm) error {
	l := limiter.Limit{Algorithm: a, Rate: 2, Period: time.Hour, Burst: 2}
	ref := limiter.NewMemoryStore()
	const key = "probe"
	defer store.Reset(context.WithoutCancel(ctx), key, l)
	for i := range 4 {
		got, err := store.AllowN(ctx, key, 1, l)
		if err != nil {
			return err
		}
		want, err := ref.AllowN(ctx, key, 1, l)
		if err != nil {
			return err
		}
		if got.Allowed != want.Allowed || got.Remaining != want.Remaining {
			return fmt.Errorf("request %d decided allowed=%v remaining=%d, the reference allowed=%v remaining=%d",
				i+1, got.Allowed, got.Remaining, want.Allowed, want.Remaining)
		}
	}
	return nil
}

// URL implements Redis.
func (e *Embedded) URL() string { return "redis://" + e.addr }

// Addr implements Redis.
func (e *Embedded) Addr() string { return e.addr }

// Provider implements Redis.
func (e *Embedded) Provider() scenarios.Provider { return scenarios.ProviderEmbedded }

// Miniredis returns the server, for tests that inspect its keys.
func (e *Embedded) Miniredis() *miniredis.Miniredis { return e.m }

// Close stops the server. It is idempotent.
func (e *Embedded) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.stop()
	close(e.stopTick)
	e.m.Close()
	return nil
}

// ErrClosed is returned by the faults of a closed Redis.
var ErrClosed = errors.New("redis closed")

// Kill implements Faulty: the server stops listening and its connections
// drop; Restart brings it back empty.
func (e *Embedded) Kill() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if !e.killed {
		e.m.Close()
		e.killed = true
	}
	return nil
}

// Restart implements Faulty: an empty server, script cache included, on
// the same address.
func (e *Embedded) Restart(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if !e.killed {
		e.m.Close()
	}
	e.m.FlushAll()
	if err := e.m.Restart(); err != nil {
		return fmt.Errorf("restart embedded redis: %w", err)
	}
	e.killed = false
	c := redis.NewClient(&redis.Options{Addr: e.addr})
	defer c.Close()
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		return fmt.Errorf("restart embedded redis: flush scripts: %w", err)
	}
	return nil
}

// Pause implements Faulty; miniredis cannot be frozen.
func (e *Embedded) Pause() error {
	return fmt.Errorf("pause: %w: miniredis runs inside rlbench and cannot be frozen; use the process provider", ErrUnsupported)
}

// Resume implements Faulty; see Pause.
func (e *Embedded) Resume() error {
	return fmt.Errorf("resume: %w: miniredis cannot be frozen", ErrUnsupported)
}
