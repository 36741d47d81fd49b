package provider

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/scenarios"
)

func client(t *testing.T, r Redis) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries = -1
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// waitDown polls until the Redis at addr stops answering, for at most 10 s.
func waitDown(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis at %s still answers", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func needRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on the PATH; install it with `make deps`")
	}
}

// processForTest starts a redis-server for t (skipping t without one) and
// closes it when t ends.
func processForTest(t *testing.T) *Process {
	t.Helper()
	needRedisServer(t)
	p, err := StartProcess(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// exerciseFaults runs the faults every Faulty provider must honour: data
// survives nothing, Kill stops answers, Restart brings an empty server back
// at the same address.
func exerciseFaults(t *testing.T, r Redis) {
	t.Helper()
	ctx := context.Background()
	f, ok := r.(Faulty)
	if !ok {
		t.Fatalf("%T does not implement Faulty", r)
	}
	c := client(t, r)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if err := f.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Restart = %v, want redis.Nil (an empty server)", err)
	}
}

func TestProcess(t *testing.T) {
	ctx := context.Background()
	p := processForTest(t)
	if p.Provider() != scenarios.ProviderProcess || !strings.HasPrefix(p.URL(), "redis://127.0.0.1:") {
		t.Fatalf("Provider, URL = %s, %s", p.Provider(), p.URL())
	}
	exerciseFaults(t, p)

	c := client(t, p)
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := c.Ping(short).Err()
	cancel()
	if err == nil {
		t.Fatal("PING answered while paused")
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	waitDown(t, p.Addr())
}

func TestCancelCleansUp(t *testing.T) {
	starts := map[string]func(ctx context.Context) (Redis, error){
		"process":  func(ctx context.Context) (Redis, error) { return StartProcess(ctx) },
		"embedded": func(ctx context.Context) (Redis, error) { return StartEmbedded(ctx, nil) },
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			if name == "process" {
				needRedisServer(t)
			}
			ctx, cancel := context.WithCancel(context.Background())
			r, err := start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := client(t, r).Ping(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			cancel()
			waitDown(t, r.Addr())
			if err := r.Close(); err != nil {
				t.Errorf("Close after cancel: %v", err)
			}
		})
	}
}

func TestEmbedded(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded(ctx, limiter.Algorithms)
	if err != nil {
		t.Fatalf("the embedded Redis refused an algorithm: %v", err)
	}
	defer e.Close()
	for _, a := range limiter.Algorithms {
		if err := e.Supports(a); err != nil {
			t.Errorf("Supports(%s) = %v", a, err)
		}
	}
	if err := e.Supports("bogus"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Supports(bogus) = %v, want ErrUnsupported", err)
	}
	c := client(t, e)

	// Keys expire in real time, although miniredis only expires on demand.
	if err := c.Set(ctx, "short", "1", 150*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Exists(ctx, "short").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 150ms TTL still exists after 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The limiter's store works against it from a client, as the sample API
	// processes use it: exactly the burst is admitted.
	store := redisstore.New(c)
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1, Period: time.Hour, Burst: 3}
	admitted := 0
	for range 5 {
		d, err := store.AllowN(ctx, "user", 1, l)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 3 {
		t.Errorf("admitted %d of 5, want the burst of 3", admitted)
	}

	sha, err := c.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		t.Fatal(err)
	}
	exerciseFaults(t, e)
	if exists, err := c.ScriptExists(ctx, sha).Result(); err != nil || exists[0] {
		t.Errorf("SCRIPT EXISTS after Restart = %v, %v; want the script cache flushed", exists, err)
	}
	if err := e.Pause(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Pause = %v, want ErrUnsupported", err)
	}
	if err := e.Resume(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Resume = %v, want ErrUnsupported", err)
	}
	e.Close()
	waitDown(t, e.Addr())
	if err := e.Kill(); !errors.Is(err, ErrClosed) {
		t.Errorf("Kill after Close = %v, want ErrClosed", err)
	}
}

func TestExternal(t *testing.T) {
	ctx := context.Background()
	p := processForTest(t)
	c := client(t, p)
	if err := c.Set(ctx, "user-data", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ext, err := Start(ctx, scenarios.ProviderExternal, Options{URL: p.URL() + "/0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ext.(Faulty); ok {
		t.Error("an external Redis offers faults")
	}
	if ext.Addr() != p.Addr() || ext.Provider() != scenarios.ProviderExternal {
		t.Errorf("Addr, Provider = %s, %s", ext.Addr(), ext.Provider())
	}
	if err := ext.Close(); err != nil {
		t.Fatal(err)
	}
	if got := c.Get(ctx, "user-data").Val(); got != "kept" {
		t.Errorf("after Close the external Redis holds %q, want its data untouched", got)
	}

	tests := []struct{ name, url string }{
		{"empty", ""},
		{"not a redis URL", "http://127.0.0.1:1"},
		{"nothing listening", "redis://127.0.0.1:1"},
	}
	for _, tt := range tests {
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := StartExternal(short, tt.url)
		cancel()
		if err == nil {
			t.Errorf("%s: StartExternal(%q) succeeded", tt.name, tt.url)
		}
	}
}

func TestStartAuto(t *testing.T) {
	needRedisServer(t)
	r, err := Start(context.Background(), scenarios.ProviderAuto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Provider() != scenarios.ProviderProcess {
		t.Errorf("auto chose %s with redis-server on the PATH, want process", r.Provider())
	}
}

func TestStartAutoFallsBackToEmbedded(t *testing.T) {
	if DockerAvailable(context.Background()) == nil {
		t.Skip("a Docker engine answers; auto would choose docker")
	}
	t.Setenv("PATH", t.TempDir())
	var warnings []string
	r, err := Start(context.Background(), scenarios.ProviderAuto, Options{Logf: func(format string, args ...any) {
		warnings = append(warnings, fmt.Sprintf(format, args...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Provider() != scenarios.ProviderEmbedded {
		t.Errorf("auto chose %s without redis-server or Docker, want embedded", r.Provider())
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "embedded Redis") {
		t.Errorf("warnings = %q, want one about the embedded Redis", warnings)
	}
	if _, err := StartProcess(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("StartProcess without redis-server = %v, want ErrUnavailable", err)
	}
}

func TestDocker(t *testing.T) {
	if err := DockerAvailable(context.Background()); err != nil {
		t.Skipf("skipping the docker provider: %v", err)
	}
	d, err := StartDocker(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	exerciseFaults(t, d)
	if err := d.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := d.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := client(t, d).Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestStartInvalid(t *testing.T) {
	for _, p := range []scenarios.Provider{scenarios.ProviderNone, "floppy"} {
		if _, err := Start(context.Background(), p, Options{}); err == nil {
			t.Errorf("Start(%q) succeeded", p)
		}
	}
	if r, err := Start(context.Background(), scenarios.ProviderDocker, Options{}); err == nil {
		r.Close()
	} else if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Start(docker) without an engine = %v, want ErrUnavailable", err)
	}
}

// TestExternalLoginRefused: an external Redis that refuses the login, with
// no password or a wrong one, fails StartExternal at once with an error
// wrapping redisstore.ErrAuth that says which, not after the wait for a
// Redis that is starting.
func TestExternalLoginRefused(t *testing.T) {
	ctx := context.Background()
	p := processForTest(t)
	if err := client(t, p).ConfigSet(ctx, "requirepass", "right-password").Err(); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(p.URL(), "redis://")
	for _, tc := range []struct{ url, want string }{
		{"redis://" + host, "NOAUTH"},
		{"redis://:wrong-password@" + host, "WRONGPASS"},
	} {
		start := time.Now()
		_, err := StartExternal(ctx, tc.url)
		if !errors.Is(err, redisstore.ErrAuth) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("StartExternal(%s) = %v, want an error wrapping ErrAuth that says %s", tc.url, err, tc.want)
		}
		if took := time.Since(start); took > readyTimeout/2 {
			t.Errorf("StartExternal(%s) took %v: a refused login was waited on", tc.url, took)
		}
	}
}
