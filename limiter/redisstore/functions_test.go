package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// commandStats is INFO commandstats as calls and failed calls per command,
// "function|load" for a subcommand; both count rejected calls (refused
// before they ran, by an ACL or OOM).
type commandStats map[string][2]int

func readCommandStats(t *testing.T, client *redis.Client) commandStats {
	t.Helper()
	info, err := client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	stats := commandStats{}
	for _, line := range strings.Split(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var counts [2]int
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.Atoi(v)
			switch k {
			case "calls":
				counts[0] += n
			case "failed_calls":
				counts[1] += n
			case "rejected_calls":
				counts[0] += n
				counts[1] += n
			}
		}
		stats[name] = counts
	}
	return stats
}

// libraries lists the function libraries the server holds.
func libraries(t *testing.T, client *redis.Client) []string {
	t.Helper()
	libs, err := client.FunctionList(context.Background(), redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	return names
}

// TestFunctions: on Redis 7 the store loads its program's library once, on
// the first call, even when 64 callers arrive together, and decides with
// FCALL; where FUNCTION is refused (an ACL user without it) or with
// WithoutFunctions it decides with EVALSHA and loads nothing. After
// FUNCTION FLUSH the next call is decided by the script and the one after
// it loads the library again. The decisions are the same in every case:
// 64 concurrent requests against a burst of 100 leave 36.
func TestFunctions(t *testing.T) {
	srv := redistest.StartForTest(t)
	ctx := context.Background()
	admin := newClient(t, srv.Addr())
	if err := admin.Do(ctx, "ACL", "SETUSER", "nofunction", "on", ">pw", "~*", "+@all", "-function").Err(); err != nil {
		t.Fatal(err)
	}
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Hour, Burst: 100}
	cases := []struct {
		name      string
		user      string
		opts      []redisstore.Option
		functions bool // FCALL, and one library loaded per loss
	}{
		{"batched", "", nil, true},
		{"unbatched", "", []redisstore.Option{redisstore.WithBatching(0, 0)}, true},
		{"without functions", "", []redisstore.Option{redisstore.WithoutFunctions()}, false},
		{"ACL refuses FUNCTION", "nofunction", []redisstore.Option{redisstore.WithBatching(0, 0)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range [][]any{{"FUNCTION", "FLUSH"}, {"SCRIPT", "FLUSH"}, {"CONFIG", "RESETSTAT"}} {
				if err := admin.Do(ctx, cmd...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			opts := &redis.Options{Addr: srv.Addr(), DisableIdentity: true, PoolSize: 64}
			if tc.user != "" {
				opts.Username, opts.Password = tc.user, "pw"
			}
			client := redis.NewClient(opts)
			defer client.Close()
			st := redisstore.New(client, append([]redisstore.Option{redisstore.WithPrefix("functions-" + tc.name + ":")}, tc.opts...)...)

			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for range 64 {
				wg.Go(func() {
					if d, err := st.Allow(ctx, "k", l); err != nil || !d.Allowed {
						errs <- fmt.Errorf("Allow = %+v, %v; want admitted", d, err)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			wantRemaining := func(want int64) {
				t.Helper()
				if d, err := st.Peek(ctx, "k", l); err != nil || d.Remaining != want {
					t.Fatalf("Peek = %+v, %v; want remaining %d", d, err, want)
				}
			}
			wantRemaining(36)
			stats := readCommandStats(t, admin)
			load := stats["function|load"]
			if tc.functions {
				if load != [2]int{1, 0} || stats["fcall"][0] == 0 {
					t.Fatalf("FUNCTION LOAD calls, failures %v, FCALL %v; want one load, then FCALL", load, stats["fcall"])
				}
				if got := libraries(t, admin); len(got) != 1 || !strings.HasPrefix(got[0], redisstore.FunctionPrefix) {
					t.Fatalf("libraries %v, want one named %s…", got, redisstore.FunctionPrefix)
				}
			} else {
				if stats["fcall"][0] != 0 || stats["evalsha"][0] == 0 || load[0] != load[1] || load[0] > 1 {
					t.Fatalf("FCALL %v, EVALSHA %v, FUNCTION LOAD %v; want EVALSHA only, at most one refused load", stats["fcall"], stats["evalsha"], load)
				}
				if got := libraries(t, admin); len(got) != 0 {
					t.Fatalf("libraries %v, want none", got)
				}
			}

			// The library is lost, as when Redis restarts without
			// persistence.
			if err := admin.FunctionFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if d, err := st.Allow(ctx, "k", l); err != nil || !d.Allowed || d.Remaining != int64(35-i) {
					t.Fatalf("request %d after FUNCTION FLUSH = %+v, %v; want admitted with remaining %d", i+1, d, err, 35-i)
				}
			}
			after := readCommandStats(t, admin)["function|load"]
			if tc.functions && (after[0] != load[0]+1 || len(libraries(t, admin)) != 1) {
				t.Fatalf("FUNCTION LOAD %v before FUNCTION FLUSH, %v after it; want one more load", load, after)
			}
			if !tc.functions && after != load {
				t.Fatalf("FUNCTION LOAD %v before FUNCTION FLUSH, %v after it; want no more", load, after)
			}
		})
	}
}

// TestFunctionLoadBackoff: a library load that fails for a reason that may
// pass (here OOM, maxmemory below what Redis uses) is tried again only
// after a second, not with every call; once it succeeds the store decides
// with FCALL.
func TestFunctionLoadBackoff(t *testing.T) {
	srv := redistest.StartForTest(t)
	ctx := context.Background()
	client := newClient(t, srv.Addr())
	st := redisstore.New(client, redisstore.WithBatching(0, 0), redisstore.WithPrefix("backoff:"))
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Hour, Burst: 100}
	if err := client.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 20 {
		if _, err := st.Allow(ctx, "k", l); err == nil || !strings.Contains(err.Error(), "OOM") {
			t.Fatalf("Allow under OOM: error %v, want OOM", err)
		}
	}
	if err := client.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := st.Allow(ctx, "k", l); err != nil || !d.Allowed {
		t.Fatalf("Allow after OOM = %+v, %v; want admitted", d, err)
	}
	loads := readCommandStats(t, client)["function|load"]
	if time.Since(start) < time.Second && loads != [2]int{1, 1} {
		t.Fatalf("FUNCTION LOAD calls, failures = %v within a second of the first; want one, refused", loads)
	}
	time.Sleep(time.Until(start.Add(1100 * time.Millisecond)))
	if d, err := st.Allow(ctx, "k", l); err != nil || !d.Allowed || d.Remaining != 98 {
		t.Fatalf("Allow a second later = %+v, %v; want admitted with remaining 98", d, err)
	}
	stats := readCommandStats(t, client)
	if stats["function|load"][0] != loads[0]+1 || stats["fcall"][0] != 1 {
		t.Fatalf("FUNCTION LOAD %v, FCALL %v; want one more load, then FCALL", stats["function|load"], stats["fcall"])
	}
}

// TestFunctionsUnsupported: a server without FUNCTION (miniredis, as Redis
// before 7) is asked once, and never again, not even after the second a
// failed load waits; it gets EVALSHA, and decisions go on.
func TestFunctionsUnsupported(t *testing.T) {
	mr := miniredis.RunT(t)
	client := newClient(t, mr.Addr())
	var mu sync.Mutex
	var evals []string
	client.AddHook(argvHook(func(args []any) {
		mu.Lock()
		evals = append(evals, fmt.Sprint(args[0]))
		mu.Unlock()
	}))
	var loads atomic.Int64
	client.AddHook(functionHook(func() { loads.Add(1) }))
	st := redisstore.New(client, redisstore.WithBatching(0, 0))
	l := limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 1, Period: time.Hour, Burst: 3}
	for i := range 3 {
		if d, err := st.Allow(context.Background(), "k", l); err != nil || !d.Allowed || d.Remaining != int64(2-i) {
			t.Fatalf("request %d = %+v, %v; want admitted with remaining %d", i+1, d, err, 2-i)
		}
	}
	if d, err := st.Allow(context.Background(), "k", l); err != nil || d.Allowed {
		t.Fatalf("request 4 = %+v, %v; want rejected", d, err)
	}
	time.Sleep(1100 * time.Millisecond)
	if d, err := st.Peek(context.Background(), "k", l); err != nil || d.Remaining != 0 {
		t.Fatalf("Peek a second later = %+v, %v; want remaining 0", d, err)
	}
	// The first EVALSHA meets NOSCRIPT and is followed by EVAL.
	if got, want := strings.Join(evals, " "), "evalsha eval evalsha evalsha evalsha evalsha"; loads.Load() != 1 || got != want {
		t.Fatalf("%d FUNCTION commands and evaluations %q; want one FUNCTION LOAD, then %q", loads.Load(), got, want)
	}
}

// functionHook calls fn for every FUNCTION command.
type functionHook func()

func (h functionHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h functionHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "function" {
			h()
		}
		return next(ctx, cmd)
	}
}

func (h functionHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFunctionLostJustAfterLoad: the library vanishes between its load and
// the first FCALL (a hook flushes it as soon as FUNCTION LOAD returns): no
// caller sees "Function not found"; each request is decided, by the script
// where the function was gone, and the budget stays exact.
func TestFunctionLostJustAfterLoad(t *testing.T) {
	srv := redistest.StartForTest(t)
	ctx := context.Background()
	admin := newClient(t, srv.Addr())
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Hour, Burst: 100}
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			client := newClient(t, srv.Addr())
			client.AddHook(afterFunctionLoad(func() {
				if err := admin.FunctionFlush(ctx).Err(); err != nil {
					t.Error(err)
				}
			}))
			st := redisstore.New(client, append([]redisstore.Option{redisstore.WithPrefix("lost-" + m.name + ":")}, m.opts...)...)
			for i := range 5 {
				if d, err := st.Allow(ctx, "k", l); err != nil || !d.Allowed || d.Remaining != int64(99-i) {
					t.Fatalf("request %d = %+v, %v; want admitted with remaining %d", i+1, d, err, 99-i)
				}
				time.Sleep(1100 * time.Millisecond / 5) // past the load's retry wait by the last
			}
		})
	}
}

// afterFunctionLoad is a go-redis hook that calls fn after every FUNCTION
// command returns.
type afterFunctionLoad func()

func (h afterFunctionLoad) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h afterFunctionLoad) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "function" {
			h()
		}
		return err
	}
}

func (h afterFunctionLoad) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFunctionCallRefused: an ACL user that may load libraries but not call
// them (-fcall) gets NOPERM on its first FCALL; that request and every one
// after it is decided by the script, no FCALL or load is tried again, even
// after the library is lost, and the budget stays exact.
func TestFunctionCallRefused(t *testing.T) {
	srv := redistest.StartForTest(t)
	ctx := context.Background()
	admin := newClient(t, srv.Addr())
	if err := admin.Do(ctx, "ACL", "SETUSER", "nofcall", "on", ">pw", "~*", "+@all", "-fcall").Err(); err != nil {
		t.Fatal(err)
	}
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Hour, Burst: 100}
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			for _, cmd := range [][]any{{"FUNCTION", "FLUSH"}, {"CONFIG", "RESETSTAT"}} {
				if err := admin.Do(ctx, cmd...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, Username: "nofcall", Password: "pw"})
			defer client.Close()
			st := redisstore.New(client, append([]redisstore.Option{redisstore.WithPrefix("nofcall-" + m.name + ":")}, m.opts...)...)
			for i := range 6 {
				if i == 3 {
					if err := admin.FunctionFlush(ctx).Err(); err != nil {
						t.Fatal(err)
					}
				}
				if d, err := st.Allow(ctx, "k", l); err != nil || !d.Allowed || d.Remaining != int64(99-i) {
					t.Fatalf("request %d = %+v, %v; want admitted with remaining %d", i+1, d, err, 99-i)
				}
			}
			stats := readCommandStats(t, admin)
			if load, fcall := stats["function|load"], stats["fcall"]; load != [2]int{1, 0} || fcall != [2]int{1, 1} {
				t.Errorf("FUNCTION LOAD %v, FCALL %v (calls, failures); want one load and one refused FCALL", load, fcall)
			}
			if evals := stats["evalsha"][0] + stats["eval"][0]; evals < 6 {
				t.Errorf("%d EVALSHA and EVAL calls, want the 6 requests decided by the script", evals)
			}
		})
	}
}
