package redisstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// DefaultMaxBatch is the most requests one round trip carries.
	DefaultMaxBatch = 128
	// DefaultFlushers is the most round trips in flight at once: while one
	// waits for Redis, the next gathers the requests that arrived meanwhile.
	DefaultFlushers = 2
)

// batcher lets concurrent decisions share round trips. A caller enqueues its
// request and waits for its reply or its context; a flusher goroutine,
// started on demand and gone when the queue is empty, sends what is waiting
// in one round trip: a pipeline of one script evaluation per group of
// requests that may share one, each evaluation deciding its requests in
// order. On a single server (merge) every waiting request is in one group;
// on other clients, where keys of different identities may live on
// different nodes or slots, a group is the requests of one hash tag, that
// is of one identity. Requests whose caller has already given up are not
// sent, so they charge nothing.
//
// When no round trip is in flight, a caller sends its own request at once
// from its own goroutine (the fast path), so that a lightly loaded store
// pays no hand-off to a flusher and back: it is then exactly one call
// round trip, as the unbatched store is. Requests that arrive meanwhile
// queue for a flusher as usual. Under load a round trip is nearly always
// in flight, and a caller that found the queue just emptied would
// otherwise hold one of the flushers' round trips for its request alone. The fast path is taken only when
// the caller's context cannot end before its deadline is enforced by the
// client (deadlines), or cannot end at all, so a call still returns when its
// context ends.
type batcher struct {
	client   redis.UniversalClient
	run      *runner
	header   [2]any // the ARGV every evaluation starts with
	maxBatch int
	flushers int
	merge    bool
	// deadlines reports whether the client bounds each command by its
	// context's deadline (ContextTimeoutEnabled).
	deadlines bool

	mu     sync.Mutex
	queue  []*call
	active int // flusher goroutines running
}

// call is one request waiting in the queue: its program, its keys, the ARGV
// of an evaluation deciding it alone (Store.request), the hash tag its
// keys share and the number of values its part of the reply holds; then
// that part, or its error.
type call struct {
	ctx   context.Context
	prog  *program
	tag   string
	keys  []string
	args  []any
	width int
	reply []any
	err   error
	done  chan struct{} // receives once reply and err are set
	alone [1]*call      // the batch of this call alone (the fast path)
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// do sends one request in the next round trip and returns its part of the
// program's reply, width values, or ctx's error if ctx ends first.
func (b *batcher) do(ctx context.Context, prog *program, tag string, keys []string, args []any, width int) ([]any, error) {
	c, _ := callPool.Get().(*call)
	if c == nil {
		c = &call{done: make(chan struct{}, 1)}
	}
	c.ctx, c.prog, c.tag, c.keys, c.args, c.width = ctx, prog, tag, keys, args, width
	b.mu.Lock()
	if b.active == 0 && b.inline(ctx) {
		b.active++
		b.mu.Unlock()
		return b.sendOwn(c)
	}
	b.queue = append(b.queue, c)
	if b.active < b.flushers {
		b.active++
		go b.flush()
	}
	b.mu.Unlock()
	if done := ctx.Done(); done != nil {
		select {
		case <-c.done:
		case <-done:
			// The flusher still owns c and will signal it; c is not reused.
			return nil, ctx.Err()
		}
	} else {
		<-c.done // a context that never ends: no select needed
	}
	return b.release(c)
}

// inline reports whether a caller with ctx may send its own request: its
// context never ends, or it ends at a deadline the client enforces.
func (b *batcher) inline(ctx context.Context) bool {
	if ctx.Done() == nil {
		return true
	}
	_, ok := ctx.Deadline()
	return ok && b.deadlines
}

// sendOwn is the fast path: the caller, holding one of the round trips,
// sends c alone, then hands anything that queued meanwhile to a flusher.
func (b *batcher) sendOwn(c *call) ([]any, error) {
	c.alone[0] = c
	b.send(c.alone[:])
	<-c.done // send signals every call it was given
	b.mu.Lock()
	if len(b.queue) > 0 {
		go b.flush() // keeps the round trip this caller held
	} else {
		b.active--
	}
	b.mu.Unlock()
	if c.err != nil && c.ctx.Err() != nil {
		c.err = c.ctx.Err() // the client's timeout was the caller's deadline
	}
	return b.release(c)
}

// release returns c's outcome and puts c back in the pool.
func (b *batcher) release(c *call) ([]any, error) {
	reply, err := c.reply, c.err
	*c = call{done: c.done} // drops every reference, alone's too
	callPool.Put(c)
	return reply, err
}

// flush sends batches until the queue is empty, then exits.
func (b *batcher) flush() {
	batch := make([]*call, 0, b.maxBatch)
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.active--
			b.mu.Unlock()
			return
		}
		k := min(len(b.queue), b.maxBatch)
		batch = append(batch[:0], b.queue[:k]...)
		rest := copy(b.queue, b.queue[k:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		b.send(batch)
	}
}

// send sends one batch and delivers every reply.
func (b *batcher) send(batch []*call) {
	live := batch // copied only when a caller has gone
	for i, c := range batch {
		if err := c.ctx.Err(); err != nil {
			if len(live) == len(batch) {
				live = append(make([]*call, 0, len(batch)), batch[:i]...)
			}
			c.err = err
			c.done <- struct{}{}
			continue
		}
		if len(live) < len(batch) {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx := live[0].ctx // one caller: the round trip is its own
	if len(live) > 1 {
		var cancel context.CancelFunc
		ctx, cancel = batchContext(live)
		defer cancel()
	}
	var one [1][]*call
	groups := one[:]
	if b.merge {
		one[0] = live
	} else {
		groups = b.group(live)
	}
	for i, cmd := range b.eval(ctx, groups) {
		g := groups[i]
		reply, err := cmd.Result()
		if err == nil {
			err = replies(reply, len(g), func(j int) int { return g[j].width }, func(j int, vals []any, err error) {
				g[j].reply, g[j].err = vals, err
			})
		}
		for _, c := range g {
			if err != nil {
				c.err = err
			}
			c.done <- struct{}{}
		}
	}
}

// group splits calls into the groups of one hash tag, that is of one
// identity, keeping their order.
func (b *batcher) group(calls []*call) [][]*call {
	var groups [][]*call
	index := make(map[string]int, len(calls))
	for _, c := range calls {
		i, ok := index[c.tag]
		if !ok {
			i = len(groups)
			index[c.tag] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], c)
	}
	return groups
}

// eval runs one evaluation per group, of the group's program (see
// groupProgram), and returns their commands, each carrying its own result
// or error. One group is one call, as an unbatched request sends (FCALL or
// EVALSHA, see runner); several, on a cluster, are one pipeline of
// EVALSHA. A NOSCRIPT (Redis restarted, or its script cache was flushed) is
// answered with EVAL, which runs the script and caches it again for the
// next batch.
func (b *batcher) eval(ctx context.Context, groups [][]*call) []*redis.Cmd {
	if len(groups) == 1 {
		keys, args := b.join(groups[0])
		return []*redis.Cmd{b.run.run(ctx, groupProgram(groups[0]), keys, args)}
	}
	cmds := b.pipeline(ctx, groups, func(p redis.Pipeliner, g []*call, keys []string, args []any) *redis.Cmd {
		return p.EvalSha(ctx, groupProgram(g).script.Hash(), keys, args...)
	})
	var retry [][]*call
	var retryAt []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			retry, retryAt = append(retry, groups[i]), append(retryAt, i)
		}
	}
	if len(retry) > 0 {
		again := b.pipeline(ctx, retry, func(p redis.Pipeliner, g []*call, keys []string, args []any) *redis.Cmd {
			return groupProgram(g).script.Eval(ctx, p, keys, args...)
		})
		for j, i := range retryAt {
			cmds[i] = again[j]
		}
	}
	return cmds
}

// pipeline queues one evaluation per group and executes them together;
// every command carries its own result or error.
func (b *batcher) pipeline(ctx context.Context, groups [][]*call, eval func(p redis.Pipeliner, g []*call, keys []string, args []any) *redis.Cmd) []*redis.Cmd {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(groups))
	for i, g := range groups {
		keys, args := b.join(g)
		cmds[i] = eval(pipe, g, keys, args)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		// Errors are read per command; but a failure before any command
		// was sent (a refused AUTH on a new connection, a dial error)
		// leaves commands without a reply or an error of their own.
		for _, cmd := range cmds {
			if cmd.Err() == nil && cmd.Val() == nil {
				cmd.SetErr(err)
			}
		}
	}
	return cmds
}

// groupProgram is the program of one evaluation deciding the calls of g:
// their own when they share one, else decideProgram, which defines every
// algorithm.
func groupProgram(g []*call) *program {
	p := g[0].prog
	for _, c := range g[1:] {
		if c.prog != p {
			return decideProgram
		}
	}
	return p
}

// join is the KEYS and ARGV of one evaluation deciding the calls of g in
// order: their keys, and behind one header their runs (see decide.lua),
// each the longest stretch of consecutive calls of the same cost and
// limits, sent once with the stretch's length and, in test-clock mode, its
// calls' times.
func (b *batcher) join(g []*call) ([]string, []any) {
	if len(g) == 1 {
		return g[0].keys, g[0].args
	}
	h, timed := len(b.header), 0 // a call's ARGV: header, 1, [time], cost, k, specs
	if b.header[1] == "t" {
		timed = 1
	}
	shared := h + 1 + timed // where a call's cost and limits start
	nkeys, nargs := 0, h
	for _, c := range g {
		nkeys, nargs = nkeys+len(c.keys), nargs+len(c.args)-h
	}
	keys, args := make([]string, 0, nkeys), append(make([]any, 0, nargs), b.header[:]...)
	for i := 0; i < len(g); {
		j := i + 1
		for j < len(g) && sameRun(g[i].args[shared:], g[j].args[shared:]) {
			j++
		}
		args = append(args, j-i)
		for _, c := range g[i:j] {
			keys = append(keys, c.keys...)
			if timed == 1 {
				args = append(args, c.args[h+1])
			}
		}
		args = append(args, g[i].args[shared:]...)
		i = j
	}
	return keys, args
}

// sameRun reports whether two requests' costs and limits, as their ARGV
// holds them, are the same, so that they may share a run.
func sameRun(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// batchContext bounds a round trip by its callers' deadlines: the latest of
// them when every caller has one, none otherwise (the client's own timeouts
// then apply). Cancellation of one caller does not cancel the others.
func batchContext(calls []*call) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.Background(), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// isNoScript reports whether err is Redis's NOSCRIPT: the script cache does
// not hold the digest.
func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
