// Package shardsync starts the shards of a sharded run together: either at
// a start time given to every shard (Wait), or at a start the shards agree
// on at a barrier in the run's Redis (Barrier.Meet), the Redis whose TIME is
// the limiter's clock. Either way a shard maps the start onto its own clock
// through its measured offset to the limiter's clock and waits for it, and
// a shard that reaches the start point later than a tolerance after the
// start fails (LateError) rather than running late: shards that did not
// start together cannot be merged into one history of one load.
package shardsync

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/history"
)

// Defaults for a Barrier's zero fields.
const (
	// DefaultLead is how long after the last arrival the shards start:
	// time for every shard to read the start (DefaultPoll) and for the
	// reading to reach it, with room to spare on a loaded host.
	DefaultLead = 2 * time.Second
	// DefaultTimeout is how long a shard waits for the others to arrive.
	DefaultTimeout = 2 * time.Minute
	// DefaultPoll is how often a waiting shard reads the barrier.
	DefaultPoll = 20 * time.Millisecond
)

// KeyPrefix starts every barrier's key.
const KeyPrefix = "rlbench:"

var (
	//go:embed lua/arrive.lua
	arriveLua string
	//go:embed lua/abandon.lua
	abandonLua string

	arriveScript  = redis.NewScript(arriveLua)
	abandonScript = redis.NewScript(abandonLua)
)

// Redis is the part of a go-redis client a Barrier uses: its scripts run
// with Script.Run (EVALSHA, EVAL on NOSCRIPT) and a waiting shard reads the
// barrier with HGETALL. *redis.Client, *redis.ClusterClient and
// redis.UniversalClient satisfy it.
type Redis interface {
	redis.Scripter
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
}

// Key returns the key of the barrier the shards of run runID meet at before
// scenario: "rlbench:{<runID>}:barrier:<scenario>". The run id is the hash
// tag, so that every key of one run lands in one Redis Cluster slot.
func Key(runID, scenario string) string {
	return KeyPrefix + "{" + runID + "}:barrier:" + scenario
}

// Barrier is where the Count shards of one run meet before a scenario. Each
// shard registers under Key in one atomic step (a Lua script) that also
// sets the key's TTL; the arrival that completes the count fixes the start
// as Redis TIME plus Lead, in the same step, so that every shard reads one
// start on one clock. The zero values of Lead, Timeout and Poll mean their
// Default constants.
//
// A Barrier is used by one shard; its fields must not change during Meet.
type Barrier struct {
	// Redis is the run's Redis, the one whose TIME is the limiter's clock.
	Redis Redis
	// Key is the barrier's key; see Key.
	Key string
	// Shard is the shard that arrives: Index of Count.
	Shard history.Shard
	// Lead is the time from the last arrival to the start.
	Lead time.Duration
	// Timeout bounds the wait for the other shards to arrive.
	Timeout time.Duration
	// Poll is how often a waiting shard reads the barrier.
	Poll time.Duration
}

// TTL is the key's time to live, set on every arrival: twice the timeout
// and the lead, long enough for the first shard's wait, the lead, and a
// shard arriving after the start to be told it is late rather than to find
// a new barrier.
func (b *Barrier) TTL() time.Duration {
	b2 := b.withDefaults()
	return 2*b2.Timeout + b2.Lead
}

func (b *Barrier) withDefaults() Barrier {
	c := *b
	if c.Lead == 0 {
		c.Lead = DefaultLead
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	return c
}

func (b *Barrier) validate() error {
	switch {
	case b.Redis == nil:
		return errors.New("barrier: no Redis")
	case b.Key == "":
		return errors.New("barrier: no key")
	case b.Lead < 0:
		return fmt.Errorf("barrier: lead %v is negative", b.Lead)
	case b.Timeout < 0:
		return fmt.Errorf("barrier: timeout %v is negative", b.Timeout)
	case b.Poll < 0:
		return fmt.Errorf("barrier: poll interval %v is negative", b.Poll)
	}
	if err := b.Shard.Validate(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// Meet registers the shard at the barrier and waits until every shard of
// the run has registered, then returns the start on Redis's clock: the
// last arrival's Redis TIME plus Lead. A shard arriving after the start was
// fixed (a shard started again) gets that start at once, which its wait
// then finds past.
//
// Errors: a *TimeoutError when not every shard arrived within Timeout (the
// barrier is then abandoned, so that a shard arriving later fails too
// instead of starting alone); an *AbandonedError when another shard gave
// the barrier up first; an error for a barrier of another count of shards,
// a key that vanished while waiting, an invalid Barrier, Redis's errors,
// and ctx's error when ctx ends first (the barrier is then abandoned as
// well).
func (b *Barrier) Meet(ctx context.Context) (time.Time, error) {
	if err := b.validate(); err != nil {
		return time.Time{}, err
	}
	c := b.withDefaults()
	deadline := time.Now().Add(c.Timeout)
	reply, err := arriveScript.Run(ctx, c.Redis, []string{c.Key},
		c.Shard.Index, c.Shard.Count, c.Lead.Microseconds(), c.TTL().Milliseconds()).Slice()
	if err != nil {
		return time.Time{}, fmt.Errorf("shard %s: arrive at barrier %s: %w", c.Shard, c.Key, err)
	}
	st, err := arrival(reply)
	if err != nil {
		return time.Time{}, fmt.Errorf("shard %s: arrive at barrier %s: %w", c.Shard, c.Key, err)
	}
	read := false // whether st lists the shards that arrived
	for {
		switch {
		case st.started:
			return st.start, nil
		case st.abandoned != "":
			return time.Time{}, &AbandonedError{Key: c.Key, Shard: c.Shard, Reason: st.abandoned}
		case read && !time.Now().Before(deadline):
			return c.giveUp(ctx, fmt.Sprintf("shard %s waited %v for %d shards and %d arrived", c.Shard, c.Timeout, c.Shard.Count, st.arrived), func() error {
				return &TimeoutError{Key: c.Key, Shard: c.Shard, Arrived: st.shards, Timeout: c.Timeout}
			})
		}
		t := time.NewTimer(max(0, min(c.Poll, time.Until(deadline))))
		select {
		case <-ctx.Done():
			t.Stop()
			return c.giveUp(ctx, fmt.Sprintf("shard %s stopped waiting: %v", c.Shard, context.Cause(ctx)), func() error {
				return fmt.Errorf("shard %s: wait at barrier %s: %w", c.Shard, c.Key, context.Cause(ctx))
			})
		case <-t.C:
		}
		fields, err := c.Redis.HGetAll(ctx, c.Key).Result()
		if err != nil {
			if ctx.Err() != nil {
				continue // the select above reports it
			}
			return time.Time{}, fmt.Errorf("shard %s: read barrier %s: %w", c.Shard, c.Key, err)
		}
		if len(fields) == 0 {
			return time.Time{}, fmt.Errorf("shard %s: barrier %s vanished while waiting (expired or deleted; its TTL was %v)", c.Shard, c.Key, c.TTL())
		}
		if st, err = parseState(fields); err != nil {
			return time.Time{}, fmt.Errorf("shard %s: read barrier %s: %w", c.Shard, c.Key, err)
		}
		read = true
	}
}

// giveUp abandons the barrier with reason, unless every shard arrived in
// the meantime: it returns the start then, and fail's error otherwise.
func (b *Barrier) giveUp(ctx context.Context, reason string, fail func() error) (time.Time, error) {
	// The barrier is abandoned also when ctx ended: the other shards are
	// told at once rather than when their own timeouts run out.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	v, err := abandonScript.Run(actx, b.Redis, []string{b.Key}, reason).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return time.Time{}, fail()
	case err != nil:
		return time.Time{}, errors.Join(fail(), fmt.Errorf("abandon barrier %s: %w", b.Key, err))
	}
	s, ok := v.(string)
	if !ok {
		return time.Time{}, errors.Join(fail(), fmt.Errorf("abandon barrier %s: reply %T, want the start as a string", b.Key, v))
	}
	start, err := parseMicros(s)
	if err != nil {
		return time.Time{}, errors.Join(fail(), fmt.Errorf("abandon barrier %s: %w", b.Key, err))
	}
	return start, nil
}

// state is what a barrier holds.
type state struct {
	// arrived counts the shards registered, shards lists their indices
	// (from HGETALL; nil from an arrival's reply).
	arrived int
	shards  []int
	// start, when started, is the start on Redis's clock.
	started bool
	start   time.Time
	// abandoned is why the barrier was given up, or "".
	abandoned string
}

// arrival parses arrive.lua's reply {arrived, start or nil, abandoned or nil}.
func arrival(reply []any) (state, error) {
	var st state
	if len(reply) != 3 {
		return st, fmt.Errorf("reply of %d values, want 3", len(reply))
	}
	n, ok := reply[0].(int64)
	if !ok {
		return st, fmt.Errorf("arrivals %T, want an integer", reply[0])
	}
	st.arrived = int(n)
	if reply[1] != nil {
		s, ok := reply[1].(string)
		if !ok {
			return st, fmt.Errorf("start %T, want a string", reply[1])
		}
		start, err := parseMicros(s)
		if err != nil {
			return st, err
		}
		st.started, st.start = true, start
	}
	if reply[2] != nil {
		s, ok := reply[2].(string)
		if !ok {
			return st, fmt.Errorf("abandoned %T, want a string", reply[2])
		}
		st.abandoned = s
	}
	return st, nil
}

// parseState parses the barrier's hash (see arrive.lua).
func parseState(fields map[string]string) (state, error) {
	var st state
	for f, v := range fields {
		switch {
		case f == "arrived":
			n, err := strconv.Atoi(v)
			if err != nil {
				return st, fmt.Errorf("field arrived %q is not an integer", v)
			}
			st.arrived = n
		case f == "start":
			start, err := parseMicros(v)
			if err != nil {
				return st, err
			}
			st.started, st.start = true, start
		case f == "abandoned":
			st.abandoned = v
		case strings.HasPrefix(f, "s"):
			i, err := strconv.Atoi(f[1:])
			if err != nil {
				return st, fmt.Errorf("field %q is not s<shard index>", f)
			}
			st.shards = append(st.shards, i)
		}
	}
	slices.Sort(st.shards)
	return st, nil
}

// parseMicros parses a start in µs since the Unix epoch.
func parseMicros(s string) (time.Time, error) {
	us, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("start %q is not an integer of µs", s)
	}
	return time.UnixMicro(us).UTC(), nil
}

// TimeoutError is returned by Meet when not every shard arrived within the
// timeout.
type TimeoutError struct {
	Key   string
	Shard history.Shard
	// Arrived lists the indices of the shards that arrived, this one too.
	Arrived []int
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	var arrived, missing []string
	for i := range e.Shard.Count {
		s := history.Shard{Index: i, Count: e.Shard.Count}.String()
		if slices.Contains(e.Arrived, i) {
			arrived = append(arrived, s)
		} else {
			missing = append(missing, s)
		}
	}
	return fmt.Sprintf("shard %s: %d of %d shards arrived at barrier %s within %v (arrived: %s; missing: %s): "+
		"start every shard of the run with the same run id and scenarios, within the timeout of each other",
		e.Shard, len(e.Arrived), e.Shard.Count, e.Key, e.Timeout, strings.Join(arrived, ", "), strings.Join(missing, ", "))
}

// AbandonedError is returned by Meet when another shard gave the barrier up
// before every shard arrived: it timed out or was stopped.
type AbandonedError struct {
	Key   string
	Shard history.Shard
	// Reason is the abandoning shard's own account.
	Reason string
}

func (e *AbandonedError) Error() string {
	return fmt.Sprintf("shard %s: barrier %s was given up before every shard arrived (%s): start the run again with a new run id", e.Shard, e.Key, e.Reason)
}
