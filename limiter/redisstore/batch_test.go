package redisstore

import (
	"context"
	"errors"
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
				keys, args := st.request(req.key, 1, []limiter.Limit{l})
				calls = append(calls, &call{ctx: req.ctx, tag: st.hashTag(keys[0]), keys: keys, args: args, done: make(chan struct{}, 1)})
			}
			if got, want := len(st.batch.group(calls)), map[bool]int{true: 1, false: 3}[merge]; got != want {
				t.Fatalf("%d groups, want %d", got, want)
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
			_, err := parseReply(calls[1].reply, []limiter.Limit{l})
			if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
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
