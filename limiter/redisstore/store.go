// Package redisstore is the Redis store of rlbench's reference limiter: a
// limiter.Limiter whose state lives in Redis (a single server or Redis
// Cluster), so that every instance of a service shares one budget per key.
//
// Each decision is taken inside one evaluation of one Lua program, atomic
// in Redis: the program reads the time from Redis TIME, decides under every
// limit of the request, writes the new states only when all of them admit
// it, and sets every written key's TTL in the same step. On Redis 7 and
// later, on a single server, the store loads each program once as a
// function library (FUNCTION LOAD, named FunctionPrefix + its SHA-1) and
// calls it with FCALL, so Redis creates the program's functions once
// instead of on every evaluation; it loads the library again when Redis has
// lost it, and where FUNCTION is refused (Redis before 7, an ACL, a proxy),
// on a cluster, or with WithoutFunctions it runs the program as a script
// (EVALSHA, with EVAL on NOSCRIPT). On Redis 7 and later, a request under
// one gcra or token_bucket limit writes its key's new state as if the key
// were fresh with SET NX GET, which writes only when the key holds no state
// and otherwise returns it to be decided as usual: one command instead of a
// GET and a SET for the key of an identity far below its limit.
//
// A program is one .lua file per algorithm under lua/, joined at build time
// behind a shared prelude and in front of a dispatcher, so a request under
// limits of several algorithms is still one evaluation; a request whose
// limits share one algorithm runs the program of that algorithm's file
// alone, which Redis evaluates faster.
// The algorithms mirror limiter/algorithms.go line for line, in the same
// integer microseconds, so the Redis store and limiter.MemoryStore take the
// same decisions.
//
// By default concurrent decisions share round trips (see WithBatching):
// one evaluation may decide several callers' requests one after the other,
// each as if it were alone.
//
// Time comes from Redis TIME, so instances with skewed clocks share one
// timeline; only WithTestClock, for tests, sends a time. Every state records
// the time of its write, so when Redis's clock steps back (a failover to a
// replica whose clock is behind) each key is decided as at its last write
// and then runs on from the new time, as the limiter package documents: no
// client is locked out, and every key written keeps a TTL that ends when its
// state is fresh on the new clock.
//
// Keys are "<prefix>{<identity hash>}:<policy ID>": the identity is hashed
// with SHA-256 before it reaches Redis, so no raw API key is ever stored, and
// the braces put every key of one identity in one cluster hash slot, so a
// request under several limits never meets a CROSSSLOT error.
package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
)

const (
	// DefaultPrefix starts every key the store writes.
	DefaultPrefix = "rl:"
	// TestClockTTLSlack is added to every TTL in test-clock mode: Redis
	// expires keys on its own clock, which runs on while a test's fake clock
	// stands still, and state must not vanish before the fake clock says it
	// is fresh again.
	TestClockTTLSlack = 5 * time.Minute
	// hashBytes is how much of the identity's SHA-256 the key keeps: 128
	// bits, hex-encoded to 32 characters.
	hashBytes = 16
)

// ErrUnexpectedReply is wrapped by the error a decision returns when Redis
// answers something the script cannot have sent, such as a reply of the
// wrong shape from a proxy or an incompatible server.
var ErrUnexpectedReply = errors.New("unexpected reply from the rate-limit script")

// Store is a limiter.Limiter backed by Redis. It is safe for concurrent use
// by multiple goroutines and holds no state of its own besides the batching
// queue; any number of Stores, in any number of processes, may share one
// Redis. The zero value is not usable; call New.
type Store struct {
	client   redis.UniversalClient
	prefix   string
	clock    func() time.Time // nil: Redis TIME decides
	ttlSlack int64            // milliseconds added to every TTL
	maxBatch int              // ≤ 1: no batching
	flushers int
	batch    *batcher // nil: one round trip per call
	run      *runner
	scripts  bool // WithoutFunctions

	limits sync.Map     // limiter.Limit → *limitArgs, formatted once
	cached atomic.Int64 // entries in limits, bounded by maxCachedLimits
}

// maxCachedLimits bounds the limits a Store remembers, so that limits made
// per request (a custom rate per customer) cannot grow it without end.
const maxCachedLimits = 4096

// limitArgs is what the program receives for one limit: the key suffix
// ":" + ID and the spec "ALGORITHM INTERVAL CAPACITY", kept as an ARGV value;
// and the program of its algorithm.
type limitArgs struct {
	suffix  string
	spec    any
	program *program
}

// Option configures a Store.
type Option func(*Store)

// WithPrefix makes the store's keys start with prefix instead of
// DefaultPrefix, to keep several applications or test runs apart on one Redis.
// The prefix may not contain braces, which would move the hash tag.
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// WithTestClock makes the scripts decide at now() instead of Redis TIME; for
// tests that walk a fake timeline. Every TTL is then lengthened by
// TestClockTTLSlack. Never use it in production: instances with different
// clocks would no longer share one timeline.
func WithTestClock(now func() time.Time) Option {
	return func(s *Store) {
		s.clock = now
		s.ttlSlack = TestClockTTLSlack.Milliseconds()
	}
}

// WithBatching sets how decisions are sent. With maxBatch > 1 (the default
// is DefaultMaxBatch with DefaultFlushers), concurrent decisions share round
// trips: callers enqueue their request, and up to flushers goroutines each
// send whatever is waiting, at most maxBatch requests, as one pipeline,
// handing every caller its own decision. On a *redis.Client (one server,
// not a cluster node) the whole batch goes to one evaluation of the script,
// which decides the requests one after the other; on other clients (a cluster, whose keys of
// different identities live in different slots) the requests of one
// identity share an evaluation. Either way each decision is atomic and
// exactly what it would be alone; only the round trip and the script's
// fixed cost are shared.
//
// A caller that finds no round trip in flight sends its own request at
// once, from its own goroutine, so that light load pays no hand-off; it
// does so only when its context has no end or a deadline the client
// enforces (ContextTimeoutEnabled). A batched call returns when its context
// ends even if Redis does not answer, and a request whose caller has gone
// before it is sent is never sent, so it charges nothing. With maxBatch ≤ 1
// every call is its own FCALL or EVALSHA, which honours the caller's
// context only if the client was made with ContextTimeoutEnabled.
func WithBatching(maxBatch, flushers int) Option {
	return func(s *Store) { s.maxBatch, s.flushers = maxBatch, max(flushers, 1) }
}

// WithoutFunctions makes the store evaluate its programs as scripts
// (EVALSHA) only, never loading a function library into Redis (see
// FunctionPrefix); for a Redis whose operators allow no libraries. It costs
// Redis more per evaluation.
func WithoutFunctions() Option {
	return func(s *Store) { s.scripts = true }
}

// New returns a Store that keeps its state in the Redis behind client, a
// *redis.Client, a *redis.ClusterClient or any other UniversalClient whose
// pipelines route by key. New does not contact Redis.
func New(client redis.UniversalClient, opts ...Option) *Store {
	s := &Store{
		client:   client,
		prefix:   DefaultPrefix,
		maxBatch: DefaultMaxBatch,
		flushers: DefaultFlushers,
	}
	for _, opt := range opts {
		opt(s)
	}
	s.run = newRunner(client, !s.scripts)
	if s.maxBatch > 1 {
		_, single := client.(*redis.Client)
		s.batch = &batcher{client: client, run: s.run, header: s.header(), maxBatch: s.maxBatch, flushers: s.flushers, merge: single, deadlines: enforcesDeadlines(client)}
	}
	return s
}

// enforcesDeadlines reports whether client bounds every command by its
// context's deadline (ContextTimeoutEnabled); false when it cannot tell.
func enforcesDeadlines(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// AllowN implements limiter.Limiter: it reports whether a request of cost n
// for key may happen now on Redis's clock and, if so, charges n to every
// limit, all-or-nothing. Errors: those of limiter.CheckRequest, before Redis
// is contacted; a Redis or network error wrapped with context (one wrapping
// ErrAuth when Redis refuses the credentials); an error wrapping
// ErrUnexpectedReply; ctx's error when it ends first.
func (s *Store) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	if err := limiter.CheckRequest(n, limits); err != nil {
		return limiter.Decision{}, err
	}
	return s.decide(ctx, key, n, limits)
}

// Allow is shorthand for AllowN(ctx, key, 1, limits...).
func (s *Store) Allow(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	return s.AllowN(ctx, key, 1, limits...)
}

// Peek implements limiter.Limiter: the key's budget now, charging nothing.
// Errors are those of AllowN.
func (s *Store) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	if err := limiter.CheckRequest(1, limits); err != nil {
		return limiter.Decision{}, err
	}
	return s.decide(ctx, key, 0, limits)
}

// Reset implements limiter.Limiter: it deletes the key's state under the
// limits in one DEL. Errors are those of AllowN.
func (s *Store) Reset(ctx context.Context, key string, limits ...limiter.Limit) error {
	if err := limiter.CheckRequest(1, limits); err != nil {
		return err
	}
	if err := s.client.Del(ctx, s.keys(key, limits)...).Err(); err != nil {
		return fmt.Errorf("redis reset: %w", CheckAuth(err))
	}
	return nil
}

// StorageKey is the Redis key holding key's state under l:
// "<prefix>{<hex SHA-256 of key, 128 bits>}:<l.StateID()>".
func (s *Store) StorageKey(key string, l limiter.Limit) string {
	return s.keys(key, []limiter.Limit{l})[0]
}

// decide runs the script for cost n (0 = peek) and turns its reply into the
// decision; the arguments are already checked.
func (s *Store) decide(ctx context.Context, key string, n int64, limits []limiter.Limit) (limiter.Decision, error) {
	if err := ctx.Err(); err != nil {
		return limiter.Decision{}, err
	}
	var (
		reply []any
		err   error
	)
	prog, keys, args := s.request(key, n, limits)
	if s.batch != nil {
		reply, err = s.batch.do(ctx, prog, s.hashTag(keys[0]), keys, args, replyFields*len(keys))
	} else {
		var res any
		res, err = s.run.run(ctx, prog, keys, args).Result()
		if err == nil {
			reply, err = onlyReply(res, replyFields*len(keys))
		}
	}
	if err != nil {
		return limiter.Decision{}, fmt.Errorf("redis decide: %w", CheckAuth(err))
	}
	return parseReply(reply, limits)
}

// request returns the program of one request (its algorithm's when every
// limit has the same, else decideProgram), its keys and the ARGV of an
// evaluation deciding it alone (see decide.lua): the header, then a run of
// one request: 1, its time in test-clock mode, its cost, its number of
// limits and their specs, the last spec last. A batch joins requests' ARGV
// without their headers, merging consecutive requests of the same cost and
// limits into one run (batcher.join).
func (s *Store) request(key string, n int64, limits []limiter.Limit) (*program, []string, []any) {
	h := s.header()
	args := make([]any, 0, len(h)+4+len(limits))
	args = append(args, h[:]...)
	args = append(args, 1)
	if s.clock != nil {
		args = append(args, s.clock().UnixMicro())
	}
	args = append(args, n, len(limits))
	tag := identityTag(key)
	keys := make([]string, len(limits))
	var prog *program
	for i, l := range limits {
		la := s.limitArgs(l)
		args = append(args, la.spec)
		keys[i] = s.storageKey(&tag, la.suffix)
		if prog == nil {
			prog = la.program
		} else if prog != la.program {
			prog = decideProgram
		}
	}
	return prog, keys, args
}

// header is the ARGV every evaluation starts with: the TTL slack and the
// clock mode, "" for Redis TIME or "t" for a time per request.
func (s *Store) header() [2]any {
	if s.clock != nil {
		return [2]any{s.ttlSlack, "t"}
	}
	return [2]any{s.ttlSlack, ""}
}

// keys returns the storage key of each limit for key, all in one hash slot.
func (s *Store) keys(key string, limits []limiter.Limit) []string {
	tag := identityTag(key)
	keys := make([]string, len(limits))
	for i, l := range limits {
		keys[i] = s.storageKey(&tag, s.limitArgs(l).suffix)
	}
	return keys
}

// tagLen is the length of an identity's hash tag: braces around the hex of
// hashBytes bytes of its SHA-256.
const tagLen = 2*hashBytes + 2

// identityTag is the hash tag of an identity: "{" + hex(SHA-256(key)[:16]) + "}".
func identityTag(key string) [tagLen]byte {
	var buf [64]byte // keys up to 64 bytes are hashed without an allocation
	sum := sha256.Sum256(append(buf[:0], key...))
	var tag [tagLen]byte
	tag[0] = '{'
	hex.Encode(tag[1:], sum[:hashBytes])
	tag[tagLen-1] = '}'
	return tag
}

// storageKey is prefix + tag + suffix, built with one allocation.
func (s *Store) storageKey(tag *[tagLen]byte, suffix string) string {
	var b strings.Builder
	b.Grow(len(s.prefix) + tagLen + len(suffix))
	b.WriteString(s.prefix)
	b.Write(tag[:])
	b.WriteString(suffix)
	return b.String()
}

// hashTag is the "{...}" part of a storage key the store made, shared by
// every key of one identity.
func (s *Store) hashTag(key string) string {
	return key[len(s.prefix) : len(s.prefix)+tagLen]
}

// limitArgs returns l's key suffix and ARGV values, from the cache when
// l was seen before.
func (s *Store) limitArgs(l limiter.Limit) *limitArgs {
	if v, ok := s.limits.Load(l); ok {
		if la, ok := v.(*limitArgs); ok {
			return la
		}
	}
	la := &limitArgs{
		suffix:  ":" + l.StateID(),
		spec:    fmt.Sprintf("%s %d %d", l.Algorithm, l.IntervalMicros(), l.Capacity()),
		program: programOf(l.Algorithm),
	}
	if s.cached.Load() < maxCachedLimits {
		if _, loaded := s.limits.LoadOrStore(l, la); !loaded {
			s.cached.Add(1)
		}
	}
	return la
}

// replyFields is the number of integers the script returns per limit.
const replyFields = 5

// replies splits the flat reply of one script evaluation (see decide.lua)
// into its requests' parts, calling part(i, vals, err) for the i-th request
// in order, whose part holds width(i) values: vals holds them (five
// integers per limit; two more for a lease, see lease.lua), or err the
// error Redis reported for it. A reply of another
// shape or length wraps ErrUnexpectedReply, and part is then called for no
// request.
func replies(reply any, requests int, width func(i int) int, part func(i int, vals []any, err error)) error {
	vals, ok := reply.([]any)
	if !ok {
		return fmt.Errorf("%w: %T for %d requests", ErrUnexpectedReply, reply, requests)
	}
	// Check the shape first, so that no caller gets a part of a reply that
	// turns out to be wrong.
	at := 0
	for i := range requests {
		if at < len(vals) {
			if _, failed := vals[at].(error); failed {
				at++
				continue
			}
		}
		at += width(i)
	}
	if at != len(vals) {
		return fmt.Errorf("%w: %d values for %d requests", ErrUnexpectedReply, len(vals), requests)
	}
	at = 0
	for i := range requests {
		if err, failed := vals[at].(error); failed {
			part(i, nil, err)
			at++
			continue
		}
		next := at + width(i)
		part(i, vals[at:next:next], nil)
		at = next
	}
	return nil
}

// onlyReply is the part of an evaluation that decided one request, width
// values, or the error Redis reported for it.
func onlyReply(reply any, width int) ([]any, error) {
	var (
		vals []any
		err  error
	)
	if rerr := replies(reply, 1, func(int) int { return width }, func(_ int, v []any, e error) { vals, err = v, e }); rerr != nil {
		return nil, rerr
	}
	return vals, err
}

// parseReply is the one place a request's reply becomes a decision: five
// integers per limit (allowed, remaining, reset_after, retry_after and delay,
// in units and microseconds), combined with limiter.Combine. Every type is
// checked; a reply of another shape wraps ErrUnexpectedReply.
func parseReply(vals []any, limits []limiter.Limit) (limiter.Decision, error) {
	if len(vals) != replyFields*len(limits) {
		return limiter.Decision{}, fmt.Errorf("%w: %d values for %d limits", ErrUnexpectedReply, len(vals), len(limits))
	}
	var (
		buf [4]limiter.Decision
		ds  = buf[:0]
	)
	for i, l := range limits {
		var f [replyFields]int64
		for j := range f {
			v, ok := vals[i*replyFields+j].(int64)
			if !ok {
				return limiter.Decision{}, fmt.Errorf("%w: value %d is %T, want an integer", ErrUnexpectedReply, i*replyFields+j, vals[i*replyFields+j])
			}
			f[j] = v
		}
		if f[0] != 0 && f[0] != 1 {
			return limiter.Decision{}, fmt.Errorf("%w: allowed flag %d", ErrUnexpectedReply, f[0])
		}
		ds = append(ds, limiter.NewDecision(l, f[0] == 1, f[1], f[2], f[3], f[4]))
	}
	return limiter.Combine(ds), nil
}
