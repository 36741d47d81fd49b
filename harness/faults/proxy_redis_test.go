//go:build unix

package faults

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter/redistest"
)

// startPasswordRedis starts a redis-server on a free loopback port that
// requires password, and stops it at cleanup. It skips t when redis-server
// is missing (fails it in CI).
func startPasswordRedis(t *testing.T, password string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(redistest.ErrNotInstalled)
		}
		t.Skip(redistest.ErrNotInstalled)
	}
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--requirepass", password, "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, DisableIdentity: true})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer within 10 s", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr
}

// TestProxyKeepsCredentialsAndDB: a limiter given URLThrough's URL reaches
// a password-protected Redis through the proxy, in the database the URL
// names, also while a fault is active; the URL it was given keeps every
// part but the address.
func TestProxyKeepsCredentialsAndDB(t *testing.T) {
	addr := startPasswordRedis(t, "s3cret")
	upstream := "redis://:s3cret@" + addr + "/3?dial_timeout=2s"
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p, err := StartProxy(listen, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if got := p.Addr(); got != listen {
		t.Fatalf("Addr = %q, want the address asked for, %q", got, listen)
	}
	through, err := URLThrough(upstream, p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if want := "redis://:s3cret@" + listen + "/3?dial_timeout=2s"; through != want {
		t.Fatalf("URLThrough = %q, want %q", through, want)
	}
	opts, err := redis.ParseURL(through)
	if err != nil {
		t.Fatal(err)
	}
	opts.DisableIdentity = true
	viaProxy := redis.NewClient(opts)
	defer viaProxy.Close()
	direct := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret", DB: 3, DisableIdentity: true})
	defer direct.Close()
	ctx := context.Background()

	if err := viaProxy.Set(ctx, "rl:{proxy}:k", "1", time.Minute).Err(); err != nil {
		t.Fatalf("SET through the proxy: %v", err)
	}
	if got, err := direct.Get(ctx, "rl:{proxy}:k").Result(); err != nil || got != "1" {
		t.Fatalf("the key in DB 3 read directly: %q, %v; want it written there through the proxy", got, err)
	}
	if err := p.AddLatency(150*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := viaProxy.Incr(ctx, "rl:{proxy}:k").Err(); err != nil {
		t.Fatalf("INCR through the slowed proxy: %v", err)
	}
	if took := time.Since(began); took < 150*time.Millisecond {
		t.Fatalf("INCR through a 150 ms latency took %v", took)
	}
	p.Clear()
	if got, err := direct.Get(ctx, "rl:{proxy}:k").Result(); err != nil || got != "2" {
		t.Fatalf("after INCR through the proxy: %q, %v; want 2", got, err)
	}
	// Disconnect and reconnect on the same address.
	p.Disconnect()
	if err := viaProxy.Ping(ctx).Err(); err == nil {
		t.Fatal("PING through a disconnected proxy succeeded")
	}
	if err := p.Reconnect(); err != nil {
		t.Fatal(err)
	}
	if err := viaProxy.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Reconnect: %v", err)
	}
}

func TestURLThrough(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:16379", ""},
		{"redis://user:pw@10.0.0.5:6379/2", "redis://user:pw@127.0.0.1:16379/2", ""},
		{"rediss://:pw@redis.example:6380/0?skip_verify=true&read_timeout=1s", "rediss://:pw@127.0.0.1:16379/0?skip_verify=true&read_timeout=1s", ""},
		{"unix://:pw@/run/redis.sock", "", "unix://:xxxxx@/run/redis.sock: the proxy carries TCP"},
		{"redis://:p%w@127.0.0.1:6379", "", "redis://xxxxx@127.0.0.1:6379 does not parse"},
	}
	for _, tc := range tests {
		got, err := URLThrough(tc.in, "127.0.0.1:16379")
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("URLThrough(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("URLThrough(%q) error = %v, want one containing %q", tc.in, err, tc.err)
		case err != nil && strings.Contains(err.Error(), "pw"):
			t.Errorf("URLThrough(%q) error %q shows the password", tc.in, err)
		}
	}
}
