//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/sampleapi"
)

// TestServeSecretRedacted: a URL or DSN with a password that serve cannot
// use is named in its error with the password redacted, whether it came
// from a flag, the environment or the file.
func TestServeSecretRedacted(t *testing.T) {
	const pw = "hunter2-c0ffee"
	cfgPath := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, cfgPath, "redis: redis://:"+pw+"@127.0.0.1:bad/0\n")
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"malformed --redis", []string{"--redis", "redis://:" + pw + "@127.0.0.1:bad/0"}, nil, "redis://:xxxxx@127.0.0.1:bad/0"},
		{"malformed URL in the environment", nil, map[string]string{sampleapi.RedisURLEnv: "redis://u:" + pw + "@[::1/0"}, "redis://u:xxxxx@"},
		{"malformed URL in the file", []string{"--config", cfgPath}, nil, "redis://:xxxxx@127.0.0.1:bad/0"},
		{"unreachable PostgreSQL", []string{"--postgres", "postgres://api:" + pw + "@127.0.0.1:1/keys?sslmode=disable&connect_timeout=2"}, nil, "connect to postgres"},
		{"unreachable PostgreSQL from the environment", nil, map[string]string{sampleapi.PostgresURLEnv: "host=127.0.0.1 port=1 user=api password=" + pw + " connect_timeout=2"}, "connect to postgres"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(sampleapi.RedisURLEnv, "")
			t.Setenv(sampleapi.PostgresURLEnv, "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			c := &serveCommand{stdout: &stdout, stderr: &stderr}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := c.Run(ctx, append([]string{"--addr", "127.0.0.1:0", "--log-level", "debug"}, tc.args...))
			if err == nil {
				t.Fatal("serve ran; want an error")
			}
			for name, text := range map[string]string{"error": err.Error(), "stdout": stdout.String(), "stderr": stderr.String()} {
				if strings.Contains(text, pw) {
					t.Errorf("%s holds the password: %s", name, text)
				}
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q, want it to name %q", err, tc.want)
			}
		})
	}
}

// TestServeSecretsOffCommandLine runs a scenario with rlbench run on an
// external Redis that requires a password, and reads every sample API
// instance's command line and environment in /proc while it runs: the URL
// with its password reaches the instances in their configuration files
// (mode 0600), never in their argv, which every user of the host can read.
func TestServeSecretsOffCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rlbench and runs a scenario end to end")
	}
	bin := buildRlbench(t)
	srv := redistest.StartForTest(t)
	const pw = "pw-5e1f-only-in-files"
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	if err := admin.ConfigSet(ctx, "requirepass", pw).Err(); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: pw, DisableIdentity: true})
		defer c.Close()
		if err := c.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
			t.Errorf("lift requirepass: %v", err)
		}
	})
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "run", "--out", out, "--redis-provider", "external", "--redis-url", "redis://:"+pw+"@"+srv.Addr()+"/0", "multi-instance-budget")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	seen := map[int]string{} // instance PID → its command line
	timeout := time.After(2 * time.Minute)
	var runErr error
poll:
	for {
		for pid, argv := range childArgs(cmd.Process.Pid) {
			if len(argv) < 2 || argv[1] != "serve" {
				continue
			}
			if _, ok := seen[pid]; ok {
				continue
			}
			environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
			seen[pid] = strings.Join(argv, " ")
			if strings.Contains(seen[pid], pw) {
				t.Errorf("instance %d: its command line holds the password: %s", pid, seen[pid])
			}
			if bytes.Contains(environ, []byte(pw)) {
				t.Errorf("instance %d: its environment holds the password", pid)
			}
		}
		select {
		case runErr = <-exited:
			break poll
		case <-timeout:
			cmd.Process.Kill()
			<-exited
			t.Fatalf("rlbench run did not end within 2 minutes\n%s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Exit 1 or 3 is a check that failed or a harness error, as a busy
	// machine's load generator can make one; what matters here is that the instances decided
	// on the Redis that wants the password: they rejected, and no request
	// met an error.
	if code := cmd.ProcessState.ExitCode(); code != exitOK && code != exitCheckFailed && code != exitHarnessError {
		t.Fatalf("rlbench run: %v\n%s\n%s", runErr, stdout.String(), stderr.String())
	}
	done := regexp.MustCompile(`done: .* rejected ([0-9]+), unknown ([0-9]+)`).FindStringSubmatch(stderr.String() + stdout.String())
	if done == nil || done[1] == "0" || done[2] != "0" {
		t.Fatalf("the instances did not decide on the Redis (want rejections and no request of unknown outcome):\n%s\n%s", stdout.String(), stderr.String())
	}
	if len(seen) < 3 {
		t.Fatalf("saw %d instances, want the scenario's 3: %v", len(seen), seen)
	}
	for _, argv := range seen {
		if !strings.Contains(argv, " --config ") {
			t.Errorf("instance command line %q: no --config", argv)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "multi-instance-budget", "instance-*.yaml"))
	if len(files) != 3 {
		t.Fatalf("instance configuration files = %v, want 3", files)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s: mode %v, want 0600: it holds the Redis password", f, mode)
		}
	}
}

// childArgs returns the argv of every process whose parent is ppid.
func childArgs(ppid int) map[int][]string {
	out := map[int][]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(ppid) {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(raw) == 0 {
			continue
		}
		out[pid] = strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	}
	return out
}
