package redisstore

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/limitertest"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestBatchSend sends one batch, to a Redis whose script cache is empty,
// holding a request whose key has the wrong type, a request whose caller
// has gone and two good requests, in both the
// merged (one evaluation) and the grouped form (one per identity): each request gets its own
// outcome, the failed one writes nothing and the abandoned one is not sent.
func TestBatchSend(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer client.Close()
	ctx := context.Background()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Second, Burst: 5}
	for _, merge := range []bool{true, false} {
		name := map[bool]string{true: "merged", false: "grouped"}[merge]
		t.Run(name, func(t *testing.T) {
			clock := limitertest.NewClock(limitertest.T0)
			st := New(client, WithTestClock(clock.Now), WithPrefix("batch-"+name+":"))
			st.batch.merge = merge
			bad := st.StorageKey("bad", l)
			if err := client.HSet(ctx, bad, "not", "a string").Err(); err != nil {
				t.Fatal(err)
			}
			if err := client.Expire(ctx, bad, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			var calls []*call
			for _, req := range []struct {
				key string
				ctx context.Context
			}{{"good", ctx}, {"bad", ctx}, {"abandoned", gone}, {"good", ctx}} {
				prog, keys, args := st.request(req.key, 1, []limiter.Limit{l})
				calls = append(calls, &call{ctx: req.ctx, prog: prog, tag: st.hashTag(keys[0]), keys: keys, args: args, width: replyFields * len(keys), done: make(chan struct{}, 1)})
			}
			if got, want := len(st.batch.group(calls)), 3; got != want {
				t.Fatalf("%d groups of one identity, want %d", got, want)
			}
			// An empty script cache, as after a restart: NOSCRIPT is
			// answered by running the script with EVAL.
			if err := client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			st.batch.send(calls)
			for i, c := range calls {
				select {
				case <-c.done:
				default:
					t.Fatalf("call %d not signalled", i)
				}
			}
			for i, wantRemaining := range map[int]int64{0: 4, 3: 3} {
				if calls[i].err != nil {
					t.Fatalf("call %d: %v", i, calls[i].err)
				}
				d, err := parseReply(calls[i].reply, []limiter.Limit{l})
				if err != nil || !d.Allowed || d.Remaining != wantRemaining {
					t.Fatalf("call %d = %+v, %v; want admitted with remaining %d", i, d, err, wantRemaining)
				}
			}
			if err := calls[1].err; err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Fatalf("call on a wrong-type key: error %v, want WRONGTYPE", err)
			}
			if typ := client.Type(ctx, bad).Val(); typ != "hash" {
				t.Fatalf("wrong-type key is now a %s: the failed request wrote", typ)
			}
			if !errors.Is(calls[2].err, context.Canceled) {
				t.Fatalf("abandoned call: error %v, want context.Canceled", calls[2].err)
			}
			if n := client.Exists(ctx, st.StorageKey("abandoned", l)).Val(); n != 0 {
				t.Fatal("the abandoned request was sent: its key exists")
			}
			client.Del(ctx, bad)
		})
	}
}

// TestInline: a caller sends its own request only when its context cannot
// outlast what the client enforces: no end at all, or a deadline on a
// client that bounds commands by it.
func TestInline(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	defer cancel()
	timed, cancelTimed := context.WithTimeout(context.Background(), time.Minute)
	defer cancelTimed()
	tests := []struct {
		name      string
		ctx       context.Context
		deadlines bool
		want      bool
	}{
		{"no end", context.Background(), false, true},
		{"cancel only", cancelled, true, false},
		{"deadline enforced", timed, true, true},
		{"deadline not enforced", timed, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &batcher{deadlines: tt.deadlines}
			if got := b.inline(tt.ctx); got != tt.want {
				t.Fatalf("inline = %v, want %v", got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		opts *redis.Options
		want bool
	}{{&redis.Options{}, false}, {&redis.Options{ContextTimeoutEnabled: true}, true}} {
		c := redis.NewClient(tt.opts)
		if got := New(c).batch.deadlines; got != tt.want {
			t.Errorf("ContextTimeoutEnabled %v: deadlines = %v, want %v", tt.opts.ContextTimeoutEnabled, got, tt.want)
		}
		c.Close()
	}
}

// TestSendOwnThenFlush: a caller on the fast path that finds requests
// queued behind it when its round trip ends hands them to a flusher, and
// every request gets its decision.
func TestSendOwnThenFlush(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, ContextTimeoutEnabled: true})
	defer client.Close()
	clock := limitertest.NewClock(limitertest.T0)
	st := New(client, WithTestClock(clock.Now), WithPrefix("own:"), WithBatching(DefaultMaxBatch, 1))
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Second, Burst: 100}
	// Hold the only round trip as the fast path does, queue three requests
	// behind it, then finish the round trip.
	st.batch.mu.Lock()
	st.batch.active = 1
	st.batch.mu.Unlock()
	type result struct {
		d   limiter.Decision
		err error
	}
	results := make(chan result, 3)
	for range 3 {
		go func() {
			d, err := st.Allow(context.Background(), "queued", l)
			results <- result{d, err}
		}()
	}
	for {
		st.batch.mu.Lock()
		n := len(st.batch.queue)
		st.batch.mu.Unlock()
		if n == 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	prog, keys, args := st.request("own", 1, []limiter.Limit{l})
	c := &call{ctx: context.Background(), prog: prog, tag: st.hashTag(keys[0]), keys: keys, args: args, width: replyFields * len(keys), done: make(chan struct{}, 1)}
	reply, err := st.batch.sendOwn(c)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := parseReply(reply, []limiter.Limit{l}); err != nil || !d.Allowed || d.Remaining != 99 {
		t.Fatalf("own request = %+v, %v; want admitted with remaining 99", d, err)
	}
	remaining := map[int64]bool{}
	for range 3 {
		r := <-results
		if r.err != nil || !r.d.Allowed {
			t.Fatalf("queued request = %+v, %v; want admitted", r.d, r.err)
		}
		remaining[r.d.Remaining] = true
	}
	if got, want := len(remaining), 3; got != want {
		t.Fatalf("queued requests saw %d distinct remainders, want %d (each charged once)", got, want)
	}
	// The flusher gives its round trip back once it finds the queue empty,
	// after it has delivered the replies.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		st.batch.mu.Lock()
		active, queued := st.batch.active, len(st.batch.queue)
		st.batch.mu.Unlock()
		if active == 0 && queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flush: %d round trips held, %d queued; want 0 and 0", active, queued)
		}
	}
}

// TestScriptChoice: a request, and an evaluation of several, runs its
// algorithm's own script when every limit in it has that algorithm, and
// the script of every algorithm otherwise.
func TestScriptChoice(t *testing.T) {
	st := New(redis.NewClient(&redis.Options{}))
	gcra := limiter.Limit{Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 10}
	leaky := limiter.Limit{Algorithm: limiter.LeakyBucket, Rate: 10, Period: time.Second, Burst: 10}
	window := limiter.Window(limiter.FixedWindow, 100, time.Hour)
	tests := []struct {
		name   string
		limits [][]limiter.Limit // one request per element
		want   *program
	}{
		{"one gcra limit", [][]limiter.Limit{{gcra}}, algorithmPrograms[limiter.GCRA]},
		{"two limits of one algorithm", [][]limiter.Limit{{window, limiter.Window(limiter.FixedWindow, 10, time.Minute)}}, algorithmPrograms[limiter.FixedWindow]},
		{"two algorithms in one request", [][]limiter.Limit{{gcra, window}}, decideProgram},
		{"leaky bucket, which is gcra with waits", [][]limiter.Limit{{leaky}}, algorithmPrograms[limiter.LeakyBucket]},
		{"two requests of one algorithm", [][]limiter.Limit{{gcra}, {gcra}}, algorithmPrograms[limiter.GCRA]},
		{"two requests of two algorithms", [][]limiter.Limit{{gcra}, {leaky}}, decideProgram},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g []*call
			for _, limits := range tt.limits {
				prog, _, _ := st.request("key", 1, limits)
				g = append(g, &call{prog: prog})
			}
			if got := groupProgram(g); got != tt.want {
				t.Fatalf("program %s, want %s", got.name, tt.want.name)
			}
		})
	}
	if len(algorithmPrograms) != len(limiter.Algorithms) {
		t.Fatalf("%d algorithm scripts for %d algorithms", len(algorithmPrograms), len(limiter.Algorithms))
	}
}

// TestJoinRuns: a batch's ARGV holds each stretch of consecutive requests
// of the same cost and limits once, behind its length (and, in test-clock
// mode, its requests' times), and its KEYS every request's keys in order.
func TestJoinRuns(t *testing.T) {
	gcra := limiter.Limit{Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 10}
	window := limiter.Window(limiter.FixedWindow, 100, time.Hour)
	g, w := "gcra 100000 10", "fixed_window 3600000000 100"
	type req struct {
		key    string
		n      int64
		limits []limiter.Limit
	}
	one := func(key string) req { return req{key, 1, []limiter.Limit{gcra}} }
	tests := []struct {
		name     string
		clock    bool
		requests []req
		wantArgs []any // after the header
	}{
		{"one run", false, []req{one("a"), one("b"), one("c")},
			[]any{3, int64(1), 1, g}},
		{"a cost between runs", false, []req{one("a"), {"b", 2, []limiter.Limit{gcra}}, one("c"), one("d")},
			[]any{1, int64(1), 1, g, 1, int64(2), 1, g, 2, int64(1), 1, g}},
		{"a peek and two limits", false, []req{{"a", 0, []limiter.Limit{gcra}}, {"b", 1, []limiter.Limit{gcra, window}}, {"c", 1, []limiter.Limit{gcra, window}}},
			[]any{1, int64(0), 1, g, 2, int64(1), 2, g, w}},
		{"the same limits in another order", false, []req{{"a", 1, []limiter.Limit{gcra, window}}, {"b", 1, []limiter.Limit{window, gcra}}},
			[]any{1, int64(1), 2, g, w, 1, int64(1), 2, w, g}},
		{"test clock: each request's time", true, []req{one("a"), one("b"), {"c", 3, []limiter.Limit{gcra}}},
			[]any{2, int64(1000), int64(1001), int64(1), 1, g, 1, int64(1002), int64(3), 1, g}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			micros := int64(999)
			if tt.clock {
				opts = append(opts, WithTestClock(func() time.Time { micros++; return time.UnixMicro(micros) }))
			}
			st := New(redis.NewClient(&redis.Options{}), opts...)
			var calls []*call
			var wantKeys []string
			for _, r := range tt.requests {
				_, keys, args := st.request(r.key, r.n, r.limits)
				calls = append(calls, &call{keys: keys, args: args})
				wantKeys = append(wantKeys, keys...)
			}
			keys, args := st.batch.join(calls)
			h := st.header()
			if want := append(h[:], tt.wantArgs...); !reflect.DeepEqual(args, want) {
				t.Errorf("ARGV\n got %v\nwant %v", args, want)
			}
			if !reflect.DeepEqual(keys, wantKeys) {
				t.Errorf("KEYS\n got %v\nwant %v", keys, wantKeys)
			}
		})
	}
}

// TestBatchRunsMatchAlone decides, in test-clock mode, a batch of runs
// (requests of one limit, a cost of 2, a peek, two limits, a rejection,
// one failing request inside a run, times that differ per request) in one
// evaluation, and the same requests one by one on a second store: every
// request gets the same decision both ways, and the failing request's
// error does not disturb those around it in its run.
func TestBatchRunsMatchAlone(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer client.Close()
	ctx := context.Background()
	gcra := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Second, Burst: 3}
	bucket := limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 2, Period: time.Second, Burst: 2}
	requests := []struct {
		key    string
		n      int64
		limits []limiter.Limit
	}{
		{"a", 1, []limiter.Limit{gcra}}, {"b", 1, []limiter.Limit{gcra}}, {"a", 1, []limiter.Limit{gcra}},
		{"bad", 1, []limiter.Limit{gcra}}, {"a", 1, []limiter.Limit{gcra}}, {"a", 1, []limiter.Limit{gcra}},
		{"b", 2, []limiter.Limit{gcra}}, {"b", 0, []limiter.Limit{gcra}},
		{"c", 1, []limiter.Limit{gcra, bucket}}, {"c", 1, []limiter.Limit{gcra, bucket}}, {"c", 1, []limiter.Limit{gcra, bucket}},
		{"d", 1, []limiter.Limit{bucket}}, {"d", 1, []limiter.Limit{bucket}},
	}
	clock := limitertest.NewClock(limitertest.T0)
	tick := func() time.Time { clock.Advance(137 * time.Millisecond); return clock.Now() }
	batched := New(client, WithTestClock(tick), WithPrefix("runs-batched:"))
	bad := batched.StorageKey("bad", gcra)
	if err := client.HSet(ctx, bad, "not", "a string").Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.Expire(ctx, bad, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	var calls []*call
	for _, r := range requests {
		prog, keys, args := batched.request(r.key, r.n, r.limits)
		calls = append(calls, &call{ctx: ctx, prog: prog, tag: batched.hashTag(keys[0]), keys: keys, args: args, width: replyFields * len(keys), done: make(chan struct{}, 1)})
	}
	if _, args := batched.batch.join(calls); len(args) >= 2+4*len(requests) {
		t.Fatalf("%d ARGV for %d requests: the runs were not merged", len(args), len(requests))
	}
	batched.batch.merge = true
	batched.batch.send(calls)

	clock2 := limitertest.NewClock(limitertest.T0)
	alone := New(client, WithTestClock(clock2.Now), WithPrefix("runs-alone:"), WithBatching(0, 0))
	rejected := 0
	for i, r := range requests {
		<-calls[i].done
		clock2.Advance(137 * time.Millisecond)
		want, wantErr := alone.AllowN(ctx, r.key, r.n, r.limits...)
		if r.n == 0 {
			want, wantErr = alone.Peek(ctx, r.key, r.limits...)
		}
		if r.key == "bad" {
			if err := calls[i].err; err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Fatalf("request %d on a wrong-type key: error %v, want WRONGTYPE", i, err)
			}
			continue
		}
		if calls[i].err != nil || wantErr != nil {
			t.Fatalf("request %d: errors %v (batched), %v (alone)", i, calls[i].err, wantErr)
		}
		got, err := parseReply(calls[i].reply, r.limits)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got != want {
			t.Fatalf("request %d (%s, cost %d, %d limits):\n batched %+v\n alone   %+v", i, r.key, r.n, len(r.limits), got, want)
		}
		if !got.Allowed {
			rejected++
		}
	}
	if rejected == 0 {
		t.Fatal("no request was rejected: the batch must hold rejections beside admissions")
	}
}

// TestBatchMixedAlgorithms sends one batch of requests under different
// algorithms, merged and grouped, to a Redis whose script cache is empty:
// each request is decided as it is alone, whichever script decides it.
func TestBatchMixedAlgorithms(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer client.Close()
	ctx := context.Background()
	gcra := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Second, Burst: 5}
	bucket := limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 1, Period: time.Second, Burst: 3}
	requests := []struct {
		key           string
		limits        []limiter.Limit
		wantRemaining int64
	}{
		{"a", []limiter.Limit{gcra}, 4},
		{"b", []limiter.Limit{bucket}, 2},
		{"a", []limiter.Limit{gcra}, 3},
		{"c", []limiter.Limit{gcra, bucket}, 2},
		{"b", []limiter.Limit{bucket}, 1},
	}
	for _, merge := range []bool{true, false} {
		name := map[bool]string{true: "merged", false: "grouped"}[merge]
		t.Run(name, func(t *testing.T) {
			clock := limitertest.NewClock(limitertest.T0)
			st := New(client, WithTestClock(clock.Now), WithPrefix("mixed-"+name+":"))
			st.batch.merge = merge
			var calls []*call
			for _, req := range requests {
				prog, keys, args := st.request(req.key, 1, req.limits)
				calls = append(calls, &call{ctx: ctx, prog: prog, tag: st.hashTag(keys[0]), keys: keys, args: args, width: replyFields * len(keys), done: make(chan struct{}, 1)})
			}
			if err := client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			st.batch.send(calls)
			for i, req := range requests {
				<-calls[i].done
				if calls[i].err != nil {
					t.Fatalf("request %d: %v", i, calls[i].err)
				}
				d, err := parseReply(calls[i].reply, req.limits)
				if err != nil || !d.Allowed || d.Remaining != req.wantRemaining {
					t.Fatalf("request %d (%s) = %+v, %v; want admitted with remaining %d", i, req.key, d, err, req.wantRemaining)
				}
			}
		})
	}
}

// TestBatchLeaseBesidePlain sends a lease between plain requests in one
// batch: the lease's part of the flat reply is two values wider than a
// plain one's, and every request still gets its own part.
func TestBatchLeaseBesidePlain(t *testing.T) {
	srv := redistest.StartForTest(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer client.Close()
	ctx := context.Background()
	plain := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Second, Burst: 5}
	leased := limiter.Limit{Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 10, LeaseTokens: 2, LeaseFor: 100 * time.Millisecond}
	clock := limitertest.NewClock(limitertest.T0)
	st := New(client, WithTestClock(clock.Now), WithPrefix("lease-batch:"))
	var calls []*call
	for _, key := range []string{"a", "leased", "a"} {
		l, width := plain, replyFields
		if key == "leased" {
			l, width = leased, leaseReplyFields
		}
		prog, keys, args := st.request(key, 1, []limiter.Limit{l})
		if l.Leased() {
			args[len(args)-1] = leaseSpec(l)
		}
		calls = append(calls, &call{ctx: ctx, prog: prog, tag: st.hashTag(keys[0]), keys: keys, args: args, width: width, done: make(chan struct{}, 1)})
	}
	st.batch.merge = true
	st.batch.send(calls)
	for i, c := range calls {
		<-c.done
		if c.err != nil {
			t.Fatalf("request %d: %v", i, c.err)
		}
	}
	for i, want := range []int64{4, 3} {
		c := calls[2*i]
		if d, err := parseReply(c.reply, []limiter.Limit{plain}); err != nil || !d.Allowed || d.Remaining != want {
			t.Fatalf("plain request %d = %+v, %v; want admitted with remaining %d", 2*i, d, err, want)
		}
	}
	d, g, err := parseLeaseReply(calls[1].reply, leased)
	if err != nil || !d.Allowed || g.Tokens != 2 || g.Shift != 100*time.Millisecond {
		t.Fatalf("lease = %+v, %+v, %v; want admitted with a grant of 2 units shifted 100ms", d, g, err)
	}
}
