package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter/httplimit"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// instance is one `rlbench serve` process.
type instance struct {
	name, addr string
	cmd        *exec.Cmd
	stderr     *syncBuffer
	exited     chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe starts `rlbench serve` with args and returns once it printed
// the address it listens on. The process is stopped at cleanup.
func startServe(t *testing.T, bin, name string, args ...string) *instance {
	t.Helper()
	in := &instance{name: name, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	in.cmd = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--instance", name, "--log-level", "warn"}, args...)...)
	in.cmd.Stderr = in.stderr
	stdout, err := in.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				addrc <- a
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { in.exited <- in.cmd.Wait() }()
	t.Cleanup(func() {
		if in.cmd.ProcessState == nil {
			_ = in.cmd.Process.Kill()
			<-in.exited
		}
	})
	select {
	case in.addr = <-addrc:
	case err := <-in.exited:
		t.Fatalf("%s exited before listening: %v\n%s", name, err, in.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not print its address within 30 s\n%s", name, in.stderr)
	}
	return in
}

// stop sends SIGTERM and waits for a clean exit.
func (in *instance) stop(t *testing.T) {
	t.Helper()
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("%s: SIGTERM: %v", in.name, err)
	}
	select {
	case err := <-in.exited:
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM\n%s", in.name, err, in.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit within 30 s of SIGTERM", in.name)
	}
}

// TestMultiInstanceBudget runs three `rlbench serve` processes on one
// redis-server and sends 1,000 concurrent requests for one key spread over
// them: the number admitted must equal the key's budget exactly. The
// refill rate is negligible (one unit per 1,000 minutes), so the budget is
// the burst. Three rounds, each on a fresh key, show it on every run.
func TestMultiInstanceBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rlbench and starts processes")
	}
	const (
		burst    = 100
		requests = 1000
		rounds   = 3
	)
	redis := redistest.StartForTest(t)
	bin := buildRlbench(t)
	cfg := filepath.Join(t.TempDir(), "multi.yaml")
	var keys strings.Builder
	for r := range rounds {
		fmt.Fprintf(&keys, "  - name: round %d\n    key: multi-key-%d\n    rate_limit_per_minute: 0.001\n    rate_limit_burst: %d\n", r, r, burst)
	}
	writeFile(t, cfg, "algorithm: gcra\nheaders: ietf\ndecision_time_header: true\nkeys:\n"+keys.String())

	var instances []*instance
	for i := range 3 {
		instances = append(instances, startServe(t, bin, fmt.Sprintf("api-%d", i+1), "--store", "redis", "--redis", redis.URL(), "--config", cfg))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: requests, MaxConnsPerHost: 0}, Timeout: 60 * time.Second}
	defer client.CloseIdleConnections()

	for round := range rounds {
		type result struct {
			instance string
			status   int
			retry    string
			decided  string
			err      error
		}
		results := make([]result, requests)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range requests {
			in := instances[i%len(instances)]
			wg.Go(func() {
				<-start
				req, _ := http.NewRequest("GET", "http://"+in.addr+"/v1/data", nil)
				req.Header.Set("Authorization", "Bearer multi-key-"+strconv.Itoa(round))
				resp, err := client.Do(req)
				if err != nil {
					results[i].err = err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				results[i] = result{resp.Header.Get("X-Instance"), resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get(httplimit.DecisionTimeHeader), nil}
			})
		}
		close(start)
		wg.Wait()
		admitted, rejected := 0, 0
		perInstance := map[string]int{}
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("round %d request %d: %v", round, i, r.err)
			}
			if want := instances[i%len(instances)].name; r.instance != want {
				t.Fatalf("round %d request %d: X-Instance = %q, want %q", round, i, r.instance, want)
			}
			if r.decided == "" {
				t.Fatalf("round %d request %d: no %s", round, i, httplimit.DecisionTimeHeader)
			}
			switch r.status {
			case http.StatusOK:
				admitted++
				perInstance[r.instance]++
			case http.StatusTooManyRequests:
				rejected++
				if n, err := strconv.Atoi(r.retry); err != nil || n < 1 {
					t.Fatalf("round %d request %d: Retry-After = %q, want whole seconds >= 1", round, i, r.retry)
				}
			default:
				t.Fatalf("round %d request %d: status %d", round, i, r.status)
			}
		}
		t.Logf("round %d: admitted %d (per instance %v), rejected %d", round, admitted, perInstance, rejected)
		if admitted != burst {
			t.Fatalf("round %d: admitted = %d, want exactly the budget %d", round, admitted, burst)
		}
		if rejected != requests-burst {
			t.Fatalf("round %d: rejected = %d, want %d", round, rejected, requests-burst)
		}
	}
	for _, in := range instances {
		in.stop(t)
	}
}

// TestServeDrainsOnSIGTERM checks that SIGTERM lets an in-flight request
// finish: the export request's body is still being sent when the signal
// arrives, and is answered once the body completes. With "Expect:
// 100-continue" the client sends the body only once the handler reads it,
// so the first write returning proves the request is inside the handler.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rlbench and starts processes")
	}
	bin := buildRlbench(t)
	in := startServe(t, bin, "drain", "--store", "memory", "--shutdown-timeout", "30s")
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+in.addr+"/v1/reports/export", pr)
	req.Header.Set("Authorization", "Bearer demo-pro-key")
	type answer struct {
		status int
		err    error
	}
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	answered := make(chan answer, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		resp.Body.Close()
		answered <- answer{status: resp.StatusCode}
	}()
	if _, err := pw.Write([]byte("first half,")); err != nil { // the request is now in flight
		t.Fatal(err)
	}
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The server must not exit while the request is open: it still reads
	// the rest of the body and answers.
	if _, err := pw.Write([]byte("second half")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	a := <-answered
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("in-flight request: status %d, error %v; want 200 after SIGTERM\n%s", a.status, a.err, in.stderr)
	}
	select {
	case err := <-in.exited:
		if err != nil {
			t.Fatalf("exit after drain: %v\n%s", err, in.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s of the drain")
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestServeUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--port", "1"}, "--port: no such flag"},
		{"positional argument", []string{"extra"}, `unexpected argument "extra"`},
		{"bad duration", []string{"--plan-refresh", "soon"}, `--plan-refresh soon`},
		{"bad log level", []string{"--log-level", "loud"}, `--log-level "loud"`},
		{"bad store", []string{"--store", "disk"}, `unknown store "disk"`},
		{"redis store without URL", []string{"--store", "redis"}, "needs a Redis URL"},
		{"missing config", []string{"--config", "/nonexistent/rlbench.yaml"}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &serveCommand{stdout: io.Discard, stderr: io.Discard}
			err := c.Run(context.Background(), tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run error = %v, want one containing %q", err, tt.want)
			}
			var ue *usageError
			if strings.HasPrefix(tt.name, "unknown flag") && !errors.As(err, &ue) {
				t.Fatalf("Run error %T is not a usage error", err)
			}
		})
	}
}

func TestServeFlagsOverrideConfig(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, cfgPath, "store: memory\nheaders: legacy\nfailure_mode: open\n")
	// The flags `rlbench run` gives its instances, plus the launcher's.
	args := []string{"--addr", "127.0.0.1:0", "--instance", "instance-2", "--config", cfgPath, "--log-level", "warn",
		"--store", "redis", "--redis", "redis://127.0.0.1:7000/0", "--failure-mode", "fallback",
		"--store-timeout", "75ms", "--instances", "3", "--clock-offset", "1h", "--headers", "ietf,draft06"}
	c := &serveCommand{}
	f, set, err := c.parse(args)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.configure(set)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Addr", cfg.Addr, "127.0.0.1:0"},
		{"Instance", cfg.Instance, "instance-2"},
		{"Store", cfg.Store, "redis"},
		{"Redis", cfg.Redis, "redis://127.0.0.1:7000/0"},
		{"FailureMode", cfg.FailureMode, "fallback"},
		{"StoreTimeout", cfg.StoreTimeout, 75 * time.Millisecond},
		{"Instances", cfg.Instances, 3},
		{"ClockOffset", cfg.ClockOffset, time.Hour},
		{"Headers", cfg.Headers, "ietf,draft06"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Without flags the file's values stand.
	f, set, err = c.parse([]string{"--config", cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = f.configure(set); err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "memory" || cfg.Headers != "legacy" || cfg.FailureMode != "open" || cfg.Instances != 1 {
		t.Errorf("file values lost: store %q headers %q failure mode %q instances %d", cfg.Store, cfg.Headers, cfg.FailureMode, cfg.Instances)
	}
}

// TestServeStoreFaults runs `rlbench serve` on a test redis-server with a
// declared failure mode and injects faults: while Redis is paused, a
// fail-closed instance answers 503 with Retry-After (never hangs, never a
// 500) and a fail-open one admits; once Redis is back, and after it
// restarts empty (its scripts flushed), decisions are taken on it again.
func TestServeStoreFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rlbench and starts processes")
	}
	redis := redistest.StartForTest(t)
	bin := buildRlbench(t)
	closed := startServe(t, bin, "closed", "--redis", redis.URL(), "--failure-mode", "closed", "--store-timeout", "100ms")
	open := startServe(t, bin, "open", "--redis", redis.URL(), "--failure-mode", "open", "--store-timeout", "100ms")
	client := &http.Client{Timeout: 30 * time.Second} // a bound on a hang, not a speed assertion
	get := func(in *instance) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+in.addr+"/v1/data", nil)
		req.Header.Set("Authorization", "Bearer demo-pro-key")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	steps := []struct {
		name   string
		fault  func() error
		in     *instance
		status int
		shared bool // the decision came from Redis: RateLimit present
	}{
		{"healthy, closed", nil, closed, 200, true},
		{"healthy, open", nil, open, 200, true},
		{"paused, closed", redis.Pause, closed, 503, false},
		{"paused, open", nil, open, 200, false},
		{"resumed, closed", redis.Resume, closed, 200, true},
		{"restarted empty, closed", func() error { return redis.Restart(context.Background()) }, closed, 200, true},
		{"restarted empty, open", nil, open, 200, true},
	}
	for _, s := range steps {
		if s.fault != nil {
			if err := s.fault(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		resp := get(s.in)
		if resp.StatusCode != s.status {
			t.Fatalf("%s: status = %d, want %d\n%s", s.name, resp.StatusCode, s.status, s.in.stderr)
		}
		if s.status == 503 {
			if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || n < 1 {
				t.Fatalf("%s: Retry-After = %q, want whole seconds >= 1", s.name, resp.Header.Get("Retry-After"))
			}
		}
		if got := resp.Header.Get("RateLimit") != ""; got != s.shared {
			t.Fatalf("%s: RateLimit present = %v, want %v (decided on Redis)", s.name, got, s.shared)
		}
	}
	closed.stop(t)
	open.stop(t)
}
