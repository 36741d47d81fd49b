//go:build unix

package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestFailoverStaleConnections is field case C17: the master is demoted
// while the store's pooled connections still point at it, so each of them
// answers the next script READONLY. Through go-redis's failover client
// (Sentinel) a READONLY connection is dropped and the decision retried on
// the new master: no decision may fail, across the switchover and after.
func TestFailoverStaleConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := redistest.StartSentinel(ctx, redistest.SentinelOptions{})
	if err != nil {
		t.Skipf("skipping: %v", err) // redis-server missing: the other tests say so
	}
	defer g.Stop()
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: g.MasterName(), SentinelAddrs: g.SentinelAddrs(), DisableIdentity: true, PoolSize: 8, MaxRetries: 1,
	})
	defer client.Close()
	store := redisstore.New(client)
	lim := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1000, Burst: 1000, Period: time.Second}

	// Fill the pool: eight decisions at once hold eight connections.
	decide := func(i int) error {
		_, err := store.AllowN(ctx, fmt.Sprintf("key-%d", i%8), 1, lim)
		return err
	}
	errs := make(chan error, 8)
	for i := range 8 {
		go func() { errs <- decide(i) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	old := g.Master().Addr()
	if err := g.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var n, failed int
	var firstErr error
	switched := false
	for time.Now().Before(deadline) {
		if err := decide(n); err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		}
		n++
		if !switched {
			if addr, err := g.MasterAddr(ctx); err == nil && addr != old {
				switched = true
				deadline = time.Now().Add(2 * time.Second) // and decide on for a while
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	if !switched {
		t.Fatal("the sentinel never switched masters")
	}
	if failed > 0 {
		t.Errorf("%d of %d decisions across the switchover failed; first: %v", failed, n, firstErr)
	}
	if err := redistest.AwaitRole(ctx, g.Master(), "slave", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}
