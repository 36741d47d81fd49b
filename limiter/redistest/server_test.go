//go:build unix

package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: addr, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestStartMissingBinary(t *testing.T) {
	_, err := Start(context.Background(), Options{Binary: "no-such-redis-server-binary"})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Start = %v, want ErrNotInstalled", err)
	}
}

// TestStartRelativePaths starts a server whose binary and temporary
// directory are given as relative paths: the server runs in its own
// directory, where a relative path would point elsewhere.
func TestStartRelativePaths(t *testing.T) {
	bin, err := exec.LookPath(DefaultBinary)
	if err != nil {
		t.Skipf("%v", err)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	if err := os.Mkdir("tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, "redis-server"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", "tmp")
	s, err := Start(context.Background(), Options{Binary: "./redis-server"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if err := newClient(t, s.Addr()).Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
}

func TestServerLifecycle(t *testing.T) {
	ctx := context.Background()
	s := StartForTest(t)
	c := newClient(t, s.Addr())
	if got, want := s.URL(), fmt.Sprintf("redis://127.0.0.1:%d", s.Port()); got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
	if err := c.Set(ctx, "k", "v", time.Hour).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	for _, cfg := range []struct{ name, want string }{{"save", ""}, {"appendonly", "no"}} {
		got, err := c.ConfigGet(ctx, cfg.name).Result()
		if err != nil {
			t.Fatalf("CONFIG GET %s: %v", cfg.name, err)
		}
		if got[cfg.name] != cfg.want {
			t.Errorf("%s = %q, want %q", cfg.name, got[cfg.name], cfg.want)
		}
	}

	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if s.Running() {
		t.Fatal("Running after Kill")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Kill")
	}
	port := s.Port()
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if got := s.Port(); got != port {
		t.Fatalf("port after Restart = %d, want %d", got, port)
	}
	n, err := c.DBSize(ctx).Result()
	if err != nil {
		t.Fatalf("DBSIZE after Restart: %v", err)
	}
	if n != 0 {
		t.Fatalf("DBSIZE after Restart = %d, want 0 (restarted empty)", n)
	}

	if err := s.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if !s.Paused() {
		t.Fatal("Paused = false after Pause")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered while paused")
	}
	if err := s.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := s.Pause(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Pause after Stop = %v, want ErrStopped", err)
	}
	if err := s.Restart(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("Restart after Stop = %v, want ErrStopped", err)
	}
	if s.Logs() == "" {
		t.Fatal("Logs empty")
	}
}

func TestStopPaused(t *testing.T) {
	s := StartForTest(t)
	if err := s.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if s.Running() {
		t.Fatal("Running after Stop of a paused server")
	}
}

func TestKeysWithoutTTL(t *testing.T) {
	ctx := context.Background()
	s := StartForTest(t)
	c := newClient(t, s.Addr())
	c.Set(ctx, "with-ttl", 1, time.Hour)
	c.Set(ctx, "without-ttl-a", 1, 0)
	c.Set(ctx, "without-ttl-b", 1, 0)
	got, err := KeysWithoutTTL(ctx, c)
	if err != nil {
		t.Fatalf("KeysWithoutTTL: %v", err)
	}
	if want := "[without-ttl-a without-ttl-b]"; fmt.Sprint(got) != want {
		t.Fatalf("KeysWithoutTTL = %v, want %s", got, want)
	}
	all, err := Keys(ctx, c)
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	if got, want := len(all), 3; got != want {
		t.Fatalf("len(Keys) = %d, want %d", got, want)
	}
	c.Del(ctx, "without-ttl-a", "without-ttl-b") // leave the cleanup's C6 scan clean
}

func TestCluster(t *testing.T) {
	ctx := context.Background()
	cl := StartClusterForTest(t, 3)
	if got, want := len(cl.Addrs()), 3; got != want {
		t.Fatalf("len(Addrs) = %d, want %d", got, want)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), DisableIdentity: true})
	defer c.Close()
	// Keys spread over the slots land on every master.
	for i := range 60 {
		if err := c.Set(ctx, fmt.Sprintf("key-%d", i), i, time.Hour).Err(); err != nil {
			t.Fatalf("SET key-%d: %v", i, err)
		}
	}
	for _, n := range cl.Nodes() {
		size, err := newClient(t, n.Addr()).DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE %s: %v", n.Addr(), err)
		}
		if size == 0 {
			t.Errorf("node %s holds no key; slots not spread", n.Addr())
		}
	}
	c.Set(ctx, "{tag}:persistent", 1, 0)
	got, err := KeysWithoutTTL(ctx, c)
	if err != nil {
		t.Fatalf("KeysWithoutTTL: %v", err)
	}
	if want := "[{tag}:persistent]"; fmt.Sprint(got) != want {
		t.Fatalf("KeysWithoutTTL = %v, want %s", got, want)
	}
	all, err := Keys(ctx, c)
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	if got, want := len(all), 61; got != want {
		t.Fatalf("len(Keys) = %d, want %d", got, want)
	}
	c.Del(ctx, "{tag}:persistent")

	// A node killed and restarted comes back empty with its slots.
	node := cl.Nodes()[0]
	if err := node.Restart(ctx); err != nil {
		t.Fatalf("Restart node: %v", err)
	}
	if err := cl.WaitReady(ctx, DefaultClusterReadyTimeout); err != nil {
		t.Fatalf("WaitReady after a restart: %v", err)
	}
	size, err := newClient(t, node.Addr()).DBSize(ctx).Result()
	if err != nil || size != 0 {
		t.Fatalf("DBSIZE of the restarted node = %d, %v; want 0", size, err)
	}
	if err := c.Set(ctx, "key-after-restart", 1, time.Hour).Err(); err != nil {
		t.Fatalf("SET after restart: %v", err)
	}
}

func TestStartClusterInvalid(t *testing.T) {
	if _, err := StartCluster(context.Background(), 0); err == nil {
		t.Fatal("StartCluster(0) succeeded")
	}
}

// *testing.T and *testing.B are what StartForTest is given.
var _, _ TB = (*testing.T)(nil), (*testing.B)(nil)

// TestLinksNoTesting holds the promise of the package doc: rlbench links
// this package for its process provider, and must not link package testing
// with it.
func TestLinksNoTesting(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "testing" {
			t.Fatal("package redistest depends on package testing; take a TB instead")
		}
	}
}
