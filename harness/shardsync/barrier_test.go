//go:build unix

package shardsync

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// newRedis starts a redis-server for t (its cleanup fails t for any key
// left without a TTL) and returns a client of it.
func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	srv := redistest.StartForTest(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// meetAll runs Meet for every barrier in bs, each in its own goroutine,
// and returns their starts and errors by position.
func meetAll(ctx context.Context, bs []*Barrier) ([]time.Time, []error) {
	starts, errs := make([]time.Time, len(bs)), make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Go(func() { starts[i], errs[i] = b.Meet(ctx) })
	}
	wg.Wait()
	return starts, errs
}

func barriers(rdb Redis, key string, count int, indices []int, lead, timeout time.Duration) []*Barrier {
	var bs []*Barrier
	for _, i := range indices {
		bs = append(bs, &Barrier{Redis: rdb, Key: key, Shard: history.Shard{Index: i, Count: count}, Lead: lead, Timeout: timeout})
	}
	return bs
}

func TestKey(t *testing.T) {
	if got, want := Key("0a1b2c3d", "gcra-basic"), "rlbench:{0a1b2c3d}:barrier:gcra-basic"; got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
}

func TestMeetThreeShards(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	const lead = time.Second
	key := Key("0a1b2c3d", "meet")
	before, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	bs := barriers(rdb, key, 3, []int{0, 1, 2}, lead, 10*time.Second)
	// The shards arrive 0, 1, 2, each 50 ms after the one before: the last
	// arrival fixes the start.
	starts, errs := make([]time.Time, 3), make([]error, 3)
	var wg sync.WaitGroup
	for i, b := range bs {
		time.Sleep(50 * time.Millisecond)
		wg.Go(func() { starts[i], errs[i] = b.Meet(ctx) })
	}
	wg.Wait()
	after, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/3: Meet: %v", i, err)
		}
	}
	for i, s := range starts {
		if !s.Equal(starts[0]) {
			t.Errorf("shard %d/3 start = %v, want shard 0/3's %v", i, s, starts[0])
		}
	}
	// Redis TIME of the last arrival plus the lead: after the first
	// arrival's TIME plus the 100 ms until the last and the lead.
	if lo := before.Add(100*time.Millisecond + lead); starts[0].Before(lo) {
		t.Errorf("start = %v, want at least %v (the first reading, the arrivals' spacing and the lead)", starts[0], lo)
	}
	if hi := after.Add(lead); starts[0].After(hi) {
		t.Errorf("start = %v, want at most %v (Redis TIME after the meeting plus the lead)", starts[0], hi)
	}
	// Every shard waits for the same start on its clock; here one clock.
	for i := range 3 {
		if err := Wait(ctx, time.Now, starts[i], DefaultTolerance); err != nil {
			t.Errorf("shard %d/3: Wait: %v", i, err)
		}
	}
}

func TestMeetTimesOut(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	key := Key("0a1b2c3d", "timeout")
	const timeout = 300 * time.Millisecond
	_, errs := meetAll(ctx, barriers(rdb, key, 3, []int{0, 1}, 0, timeout))
	// The first to time out gives the barrier up; the other may see that
	// before its own timeout, and says so.
	timedOut := 0
	for i, err := range errs {
		var te *TimeoutError
		var ae *AbandonedError
		switch {
		case errors.As(err, &te):
			timedOut++
			if got, want := len(te.Arrived), 2; got != want {
				t.Errorf("shard %d/3: %d arrived, want %d", i, got, want)
			}
			for _, want := range []string{"2 of 3 shards arrived", key, "missing: 2/3", "arrived: 0/3, 1/3"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("shard %d/3: error %q does not say %q", i, err, want)
				}
			}
		case errors.As(err, &ae):
			if !strings.Contains(ae.Reason, "waited 300ms for 3 shards and 2 arrived") {
				t.Errorf("shard %d/3: error %q does not give the abandoning shard's account", i, err)
			}
		default:
			t.Fatalf("shard %d/3: Meet error = %v, want a *TimeoutError or an *AbandonedError", i, err)
		}
	}
	if timedOut == 0 {
		t.Errorf("no shard timed out: %v", errs)
	}
	// The missing shard, arriving after the others gave up, does not
	// start alone.
	_, err := barriers(rdb, key, 3, []int{2}, 0, timeout)[0].Meet(ctx)
	var ae *AbandonedError
	if !errors.As(err, &ae) {
		t.Fatalf("late shard 2/3: Meet error = %v, want an *AbandonedError", err)
	}
	if !strings.Contains(err.Error(), "waited 300ms for 3 shards and 2 arrived") {
		t.Errorf("late shard 2/3: error %q does not give the abandoning shard's account", err)
	}
}

func TestMeetLateShard(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	key := Key("0a1b2c3d", "late")
	const lead = 100 * time.Millisecond
	starts, errs := meetAll(ctx, barriers(rdb, key, 2, []int{0, 1}, lead, 10*time.Second))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// Shard 1/2 started again (its pod restarted), 300 ms after the start.
	time.Sleep(time.Until(starts[0]) + 300*time.Millisecond)
	start, err := barriers(rdb, key, 2, []int{1}, lead, 10*time.Second)[0].Meet(ctx)
	if err != nil {
		t.Fatalf("restarted shard 1/2: Meet: %v", err)
	}
	if !start.Equal(starts[0]) {
		t.Fatalf("restarted shard 1/2: start = %v, want the start fixed before, %v", start, starts[0])
	}
	err = Wait(ctx, time.Now, start, DefaultTolerance)
	var le *LateError
	if !errors.As(err, &le) {
		t.Fatalf("restarted shard 1/2: Wait error = %v, want a *LateError", err)
	}
	if le.Late < 300*time.Millisecond {
		t.Errorf("Late = %v, want at least 300ms", le.Late)
	}
}

func TestMeetKeyTTL(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	key := Key("0a1b2c3d", "ttl")
	b := barriers(rdb, key, 2, []int{0}, time.Second, time.Minute)[0]
	if got, want := b.TTL(), 2*time.Minute+time.Second; got != want {
		t.Fatalf("TTL() = %v, want %v", got, want)
	}
	// One of two shards arrives; its wait is cut short so that the key's
	// TTL can be read.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Meet(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Meet error = %v, want the context's deadline", err)
	}
	ttl, err := rdb.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= b.TTL()-10*time.Second || ttl > b.TTL() {
		t.Errorf("PTTL %s = %v, want just under %v", key, ttl, b.TTL())
	}
	// The shard that stopped waiting abandoned the barrier: the other is
	// told at once, with the reason.
	_, err = barriers(rdb, key, 2, []int{1}, time.Second, time.Minute)[0].Meet(ctx)
	var ae *AbandonedError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "shard 0/2 stopped waiting") {
		t.Errorf("Meet after an abandon: error %v, want an *AbandonedError with the abandoning shard's account", err)
	}
	ttl2, err := rdb.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl2 <= 0 {
		t.Errorf("PTTL %s after the abandon = %v, want a TTL", key, ttl2)
	}
}

func TestMeetCountMismatch(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	key := Key("0a1b2c3d", "count")
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, _ = barriers(rdb, key, 3, []int{0}, 0, time.Minute)[0].Meet(cctx)
	_, err := barriers(rdb, key, 2, []int{1}, 0, time.Minute)[0].Meet(ctx)
	if err == nil || !strings.Contains(err.Error(), "is for 3 shards, not 2") {
		t.Fatalf("Meet with another count: error %v, want one saying the barrier is for 3 shards", err)
	}
}

func TestMeetInvalid(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	for _, tc := range []struct {
		name string
		b    Barrier
		want string
	}{
		{"no redis", Barrier{Key: "k", Shard: history.Shard{Count: 1}}, "no Redis"},
		{"no key", Barrier{Redis: rdb, Shard: history.Shard{Count: 1}}, "no key"},
		{"bad shard", Barrier{Redis: rdb, Key: "k", Shard: history.Shard{Index: 3, Count: 3}}, "shard index 3 of 3"},
		{"negative lead", Barrier{Redis: rdb, Key: "k", Shard: history.Shard{Count: 1}, Lead: -time.Second}, "lead -1s is negative"},
		{"negative timeout", Barrier{Redis: rdb, Key: "k", Shard: history.Shard{Count: 1}, Timeout: -time.Second}, "timeout -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.b.Meet(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Meet error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParseReplies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply []any
		want  string
	}{
		{"short", []any{int64(1)}, "reply of 1 values"},
		{"arrivals not integer", []any{"1", nil, nil}, "arrivals string"},
		{"start not string", []any{int64(1), int64(5), nil}, "start int64"},
		{"start not micros", []any{int64(1), "soon", nil}, `start "soon"`},
		{"abandoned not string", []any{int64(1), nil, int64(0)}, "abandoned int64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := arrival(tc.reply); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("arrival(%v) error = %v, want %q", tc.reply, err, tc.want)
			}
		})
	}
	st, err := parseState(map[string]string{"count": "3", "arrived": "2", "s2": "1", "s0": "1", "start": "1700000000000001"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.shards, []int{0, 2}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("shards = %v, want %v", got, want)
	}
	if got, want := st.start, time.UnixMicro(1700000000000001).UTC(); !st.started || !got.Equal(want) {
		t.Errorf("start = %v (started %v), want %v", got, st.started, want)
	}
	if _, err := parseState(map[string]string{"sx": "1"}); err == nil {
		t.Error("parseState of field sx: no error")
	}
}
