//go:build unix

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestDrillOnPasswordRedis runs the shipped drill-redis-slow on an external
// Redis that requires a password, in database 2: the instances reach it
// through the fault proxy with the URL's password and database kept, so the
// drill passes, and the password appears in no output or record.
func TestDrillOnPasswordRedis(t *testing.T) {
	needRunPrerequisites(t)
	bin := buildRlbench(t)
	const password = "drill-pw-7"
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	srv := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--requirepass", password, "--dir", t.TempDir())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, DisableIdentity: true})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); rdb.Ping(context.Background()).Err() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer within 10 s", addr)
		}
	}

	out := t.TempDir()
	url := "redis://:" + password + "@" + addr + "/2"
	code, stdout, stderr := exitOf(t, bin, "run", "--out", out, "--redis-provider", "external", "--redis-url", url, "drill-redis-slow")
	if code != 0 {
		t.Fatalf("rlbench run exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	record, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"stdout": stdout, "stderr": stderr, "run.json": string(record)} {
		if strings.Contains(text, password) {
			t.Errorf("%s shows the Redis password:\n%s", what, text)
		}
	}
}
