//go:build unix

package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
)

const redisPassword = "s3cret-pw"

// passwordRedis is a redis-server the test starts itself, requiring
// redisPassword, so that its PID is the test's to stop and continue.
type passwordRedis struct {
	addr string
	cmd  *exec.Cmd
}

func startPasswordRedis(t *testing.T) *passwordRedis {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a scenario end to end on real processes")
	}
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
	r := &passwordRedis{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--requirepass", redisPassword, "--dir", t.TempDir())
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGCONT) // never leave it stopped
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	})
	rdb := r.client(0)
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer within 10 s", r.addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
}

func (r *passwordRedis) client(db int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: r.addr, Password: redisPassword, DB: db, DisableIdentity: true})
}

// serveTarget serves the sample API in this process on ln, as someone
// else's API would run: its limiter uses redisURL (the address the user
// points it at: rlbench's proxy) with the given failure mode and the
// routes of sc. It stops the API at cleanup.
func serveTarget(t *testing.T, ln net.Listener, sc *scenarios.Scenario, redisURL string, mode scenarios.FailureMode) {
	t.Helper()
	cfg := InstanceConfig(sc, 0, redisURL, "")
	cfg.Instance, cfg.FailureMode = "user-api", string(mode)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sampleapi.Run(ctx, cfg, ln, nil, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("external target: %v", err)
		}
	})
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// externalScenario writes the scenario to dir and loads it: an external
// target declaring mode, reached by the test's Redis through rlbench's
// proxy at proxy, with the given faults.
func externalScenario(t *testing.T, dir, name string, r *passwordRedis, proxy, target string, mode scenarios.FailureMode, duration time.Duration, faultsYAML string) *scenarios.Scenario {
	t.Helper()
	src := fmt.Sprintf(`name: %s
description: An external API's limiter, on a password-protected Redis in database 3, meets a slow link and a stopped Redis.
seed: 7
redis: {provider: external, url: "redis://:%s@%s/3", proxy: "%s"}
target:
  external: ["%s"]
  failure_mode: %s
  store_timeout: 50ms
  routes:
    - path: /api/items
      policies: ["gcra:10/1s,burst=5"]
identities:
  count: 4
traffic:
  - {kind: constant, name: steady, rate: 80/1s, duration: %v}
faults:
%s
checks:
  budget: {max_excess: 0}
  faults: {slack: 500ms, recovery: 1s}
  load_delivered: 0.5
`, name, redisPassword, r.addr, proxy, target, mode, duration, faultsYAML)
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// keyspace counts the keyspace events of a Redis by database. It is safe
// for concurrent use.
type keyspace struct {
	mu   sync.Mutex
	seen map[string]int
}

func (k *keyspace) byDB() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.seen)
}

// watchKeyspace turns on r's keyspace notifications and counts them by
// database until the test ends: where the limiter's keys were written.
func watchKeyspace(t *testing.T, r *passwordRedis) *keyspace {
	t.Helper()
	ctx := context.Background()
	rdb := r.client(0)
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.ConfigSet(ctx, "notify-keyspace-events", "KA").Err(); err != nil {
		t.Fatal(err)
	}
	sub := rdb.PSubscribe(ctx, "__keyspace@*__:*")
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	k := &keyspace{seen: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range sub.Channel() {
			db, _, _ := strings.Cut(strings.TrimPrefix(m.Channel, "__keyspace@"), "__:")
			k.mu.Lock()
			k.seen[db]++
			k.mu.Unlock()
		}
	}()
	t.Cleanup(func() { sub.Close(); <-done })
	return k
}

// results indexes a report's results by "name scope".
func results(rep *checker.Report) map[string]checker.Result {
	out := map[string]checker.Result{}
	for _, r := range rep.Results {
		out[strings.TrimSpace(r.Name+" "+r.Scope)] = r
	}
	return out
}

// TestExternalTargetDrill runs drills on an API rlbench does not start:
// its limiter uses a password-protected Redis (database 3) through the
// proxy rlbench listens with at redis.proxy; a redis_latency fault slows
// that link, and a command fault stops and continues the Redis process by
// its PID. A target that fails closed as declared passes every check; one
// that fails open while closed is declared fails the failure-mode check,
// and a heal command that exits non-zero fails fault-injected with its
// output.
func TestExternalTargetDrill(t *testing.T) {
	red := startPasswordRedis(t)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	proxy := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	limiterURL := fmt.Sprintf("redis://:%s@%s/3", redisPassword, proxy) // what the user configures
	dir, out := t.TempDir(), t.TempDir()
	pid := red.cmd.Process.Pid
	var log bytes.Buffer
	rn := New(Options{OutDir: out, Log: &log})
	ctx := context.Background()

	keyEvents := watchKeyspace(t, red)

	t.Run("declared mode honoured", func(t *testing.T) {
		ln := listen(t)
		sc := externalScenario(t, dir, "ext-closed", red, proxy, "http://"+ln.Addr().String(), scenarios.FailClosed, 6*time.Second, fmt.Sprintf(
			"  - {kind: redis_latency, latency: 200ms, at: 1s, duration: 1s}\n"+
				"  - {kind: command, inject: \"kill -STOP %d && echo stopped %d\", heal: \"kill -CONT %d && echo continued >&2\", timeout: 5s, effect: unavailable, at: 3500ms, duration: 1s}",
			pid, pid, pid))
		serveTarget(t, ln, sc, limiterURL, scenarios.FailClosed)
		o, err := rn.Run(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Faults) != 2 {
			t.Fatalf("%d fault windows, want 2", len(o.Faults))
		}
		for i, w := range o.Faults {
			if w.Err != "" || !(w.FromNs > 0 && w.FromNs <= w.InjectedNs && w.InjectedNs <= w.HealNs && w.HealNs <= w.ToNs) || !w.Unavailable || w.LosesState {
				t.Errorf("window %d = %+v: want no error, stamps in order, the store unavailable and its state kept", i+1, w)
			}
			if got, want := time.Duration(w.HealNs-w.InjectedNs), time.Second; got < want {
				t.Errorf("window %d lasted %v once injected, want at least %v", i+1, got, want)
			}
		}
		cmd := o.Faults[1]
		checks := []struct {
			name      string
			got, want any
		}{
			{"kinds", o.Faults[0].Kind + "," + cmd.Kind, "redis_latency,command"},
			{"inject stdout", cmd.Inject.Stdout, fmt.Sprintf("stopped %d\n", pid)},
			{"inject exit code", cmd.Inject.ExitCode, 0},
			{"inject dir", cmd.Inject.Dir, dir},
			{"heal stderr", cmd.Heal.Stderr, "continued\n"},
			{"log", cmd.Log, filepath.Join("ext-closed", "fault-2-command.log")},
			{"verdict", o.Report.Verdict(), checker.Pass},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		logged, err := os.ReadFile(filepath.Join(out, cmd.Log))
		if err != nil || !strings.Contains(string(logged), fmt.Sprintf("## inject: kill -STOP %d", pid)) || !strings.Contains(string(logged), "continued") {
			t.Errorf("command log: %v\n%s", err, logged)
		}
		res := results(o.Report)
		for _, name := range []string{
			"fault-injected redis_latency #1", "fault-injected command #2",
			"fault-latency redis_latency #1", "fault-latency command #2",
			"failure-mode redis_latency #1 closed", "failure-mode command #2 closed",
		} {
			if r, ok := res[name]; !ok || r.Verdict != checker.Pass {
				t.Errorf("%s: %+v, want a pass", name, r)
			}
		}
		if t.Failed() {
			for _, r := range o.Report.Results {
				t.Logf("%s %s: %s %s", r.Name, r.Scope, r.Verdict, r.Explanation)
			}
		}
		// Enforced on the shared Redis outside the faults, through the proxy
		// with the password and in database 3 (the limiter's connections
		// there selected it).
		if o.Report.Admitted == 0 || o.Report.Rejected == 0 {
			t.Errorf("admitted %d, rejected %d: want the limiter to have enforced through the proxy", o.Report.Admitted, o.Report.Rejected)
		}
		if got := keyEvents.byDB(); got["3"] == 0 || len(got) != 1 {
			t.Errorf("keyspace events by database %v: want the limiter's keys written in database 3 alone", got)
		}
		// The password appears nowhere rlbench writes.
		rec, err := json.Marshal(o.Record())
		if err != nil {
			t.Fatal(err)
		}
		for what, text := range map[string]string{"run record": string(rec), "log": log.String(), "command log": string(logged)} {
			if strings.Contains(text, redisPassword) {
				t.Errorf("the %s shows the Redis password:\n%s", what, text)
			}
		}
		if want := "Redis proxy on " + proxy; !strings.Contains(log.String(), want) {
			t.Errorf("log %q lacks %q", log.String(), want)
		}
	})

	t.Run("declared mode not honoured", func(t *testing.T) {
		ln := listen(t)
		sc := externalScenario(t, dir, "ext-open-declared-closed", red, proxy, "http://"+ln.Addr().String(), scenarios.FailClosed, 3*time.Second, fmt.Sprintf(
			"  - {kind: command, inject: \"kill -STOP %d\", heal: \"kill -CONT %d && echo the heal says no >&2 && exit 4\", timeout: 5s, effect: unavailable, at: 1s, duration: 1s}",
			pid, pid))
		serveTarget(t, ln, sc, limiterURL, scenarios.FailOpen) // fails open, declared closed
		o, err := rn.Run(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		res := results(o.Report)
		if r := res["failure-mode command #1 closed"]; r.Verdict != checker.Fail || r.Observed < 1 || !strings.Contains(r.Explanation, "status 200") {
			t.Errorf("failure-mode: %+v, want a failure naming admitted requests", r)
		}
		r := res["fault-injected command #1"]
		for _, want := range []string{fmt.Sprintf("heal command \"kill -CONT %d && echo the heal says no >&2 && exit 4\" exited 4", pid), "stderr: the heal says no"} {
			if r.Verdict != checker.Fail || !strings.Contains(r.Explanation, want) {
				t.Errorf("fault-injected: %+v, want a failure quoting %q", r, want)
			}
		}
		if w := o.Faults[0]; w.Heal == nil || w.Heal.ExitCode != 4 || w.ToNs == 0 {
			t.Errorf("window %+v: want the heal's exit code 4 and its end recorded", w)
		}
	})
}
