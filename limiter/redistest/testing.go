//go:build unix

package redistest

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// cleanupTimeout bounds the TTL scan a test helper runs at cleanup.
const cleanupTimeout = 10 * time.Second

// TB is the part of testing.TB that StartForTest and StartClusterForTest
// use; *testing.T and *testing.B satisfy it. It is declared here so that a
// program linking this package, as rlbench does for its "process" Redis
// provider, does not link package testing.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Skipped() bool
}

// StartForTest starts a server for t and registers its cleanup: first a scan
// that fails t if any key was left without a TTL (field case C6), then Stop.
// When redis-server is not installed the test is skipped with the install
// instructions, or fails when the environment variable CI is "true".
func StartForTest(t TB) *Server {
	t.Helper()
	s, err := Start(context.Background(), Options{})
	if err != nil {
		skipOrFail(t, err)
	}
	t.Cleanup(func() {
		checkTTLs(t, s.Running() && !s.Paused(), func() redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: s.Addr(), DisableIdentity: true})
		})
		if err := s.Stop(); err != nil {
			t.Errorf("stop redis-server: %v", err)
		}
	})
	return s
}

// StartClusterForTest starts a cluster of masters nodes for t and registers
// its cleanup, a TTL scan of every master and Stop, as StartForTest does.
func StartClusterForTest(t TB, masters int) *Cluster {
	t.Helper()
	c, err := StartCluster(context.Background(), masters)
	if err != nil {
		skipOrFail(t, err)
	}
	t.Cleanup(func() {
		healthy := true
		for _, s := range c.nodes {
			healthy = healthy && s.Running() && !s.Paused()
		}
		checkTTLs(t, healthy, func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DisableIdentity: true})
		})
		if err := c.Stop(); err != nil {
			t.Errorf("stop redis cluster: %v", err)
		}
	})
	return c
}

// checkTTLs fails t for every key without a TTL, when the server can answer.
func checkTTLs(t TB, healthy bool, newClient func() redis.UniversalClient) {
	if !healthy || t.Skipped() {
		return
	}
	client := newClient()
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	missing, err := KeysWithoutTTL(ctx, client)
	if err != nil {
		t.Errorf("scan for keys without a TTL: %v", err)
		return
	}
	if len(missing) > 0 {
		t.Errorf("%d keys left without a TTL (field case C6): %s", len(missing), strings.Join(missing, ", "))
	}
}

// skipOrFail skips t when redis-server is missing outside CI, else fails it.
func skipOrFail(t TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	t.Fatalf("start redis-server: %v", err)
}
