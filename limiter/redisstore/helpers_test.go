package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// newClient returns a client of its own (its own connection pool) for addr,
// closed at the end of t.
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	return c
}

// newClusterClient returns a cluster client for addrs, closed at the end of t.
func newClusterClient(t testing.TB, addrs []string) *redis.ClusterClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DisableIdentity: true, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	return c
}
