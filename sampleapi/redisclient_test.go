//go:build unix

package sampleapi

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestRedisClientOptions: the pool size is explicit, and the failover
// client takes the URL's credentials, database, timeouts and pool.
func TestRedisClientOptions(t *testing.T) {
	cfg := Config{Store: StoreRedis, Redis: "redis://:pw@127.0.0.1:6390/3?read_timeout=2s", RedisPoolSize: 7,
		RedisSentinel: &SentinelConfig{Master: "mymaster", Addrs: []string{"127.0.0.1:26379"}}}
	opts, err := redisOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fo := failoverOptions(cfg, opts)
	checks := []struct {
		name      string
		got, want any
	}{
		{"PoolSize", opts.PoolSize, 7},
		{"failover PoolSize", fo.PoolSize, 7},
		{"failover Password", fo.Password, "pw"},
		{"failover DB", fo.DB, 3},
		{"failover ReadTimeout", fo.ReadTimeout, 2 * time.Second},
		{"failover DialTimeout", fo.DialTimeout, DefaultRedisDialTimeout},
		{"failover MaxRetries", fo.MaxRetries, DefaultRedisMaxRetries},
		{"failover ContextTimeoutEnabled", fo.ContextTimeoutEnabled, true},
		{"failover MasterName", fo.MasterName, "mymaster"},
		{"default pool", Config{}.PoolSize(), DefaultRedisPoolSize()},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestLimiterFollowsSentinel: an instance configured with redis_sentinel
// decides on the master the Sentinel names, before a switchover and after.
func TestLimiterFollowsSentinel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := redistest.StartSentinel(ctx, redistest.SentinelOptions{})
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	defer g.Stop()
	cfg := Config{Store: StoreRedis, Redis: g.Master().URL(), RedisSentinel: &SentinelConfig{Master: g.MasterName(), Addrs: g.SentinelAddrs()}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	lim, closeLim, err := OpenLimiter(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeLim()
	l, err := limiter.ParseLimit("gcra:1/1h,burst=2")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := lim.AllowN(ctx, "k", 1, l); err != nil || !d.Allowed || d.Remaining != 1 {
		t.Fatalf("before the switchover: %+v, %v; want admitted with 1 left", d, err)
	}
	waitReplicated(ctx, t, g)
	if err := g.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.AwaitMaster(ctx, g.Master().Addr(), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The replicated state carries on: one unit left, then none.
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := lim.AllowN(ctx, "k", 1, l)
		if err == nil {
			if !d.Allowed || d.Remaining != 0 {
				t.Fatalf("after the switchover: %+v; want admitted with none left (the state replicated)", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the switchover: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if addr, err := g.MasterAddr(ctx); err != nil || addr != g.Replica().Addr() {
		t.Fatalf("master = %s, %v; want the former replica %s", addr, err, g.Replica().Addr())
	}
}

// waitReplicated waits until the replica has every write of the master.
func waitReplicated(ctx context.Context, t *testing.T, g *redistest.SentinelGroup) {
	t.Helper()
	offset := func(addr, field string) int64 {
		c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		defer c.Close()
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return -1
	}
	want := offset(g.Master().Addr(), "master_repl_offset")
	for offset(g.Replica().Addr(), "slave_repl_offset") < want {
		if ctx.Err() != nil {
			t.Fatal("the replica never caught up")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
