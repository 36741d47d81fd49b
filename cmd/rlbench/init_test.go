//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
	"github.com/rlbench/rlbench/scenarios"
)

// limitedAPI is an API that keeps the policy spec per key of header on
// GET path: the reference limiter's middleware on a memory store.
func limitedAPI(t *testing.T, path, spec, header string) *httptest.Server {
	t.Helper()
	l, err := limiter.ParseLimit(spec)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := httplimit.New(limiter.NewMemoryStore(),
		httplimit.WithRoutes(httplimit.Route{Pattern: "GET " + path, Limits: []limiter.Limit{l}}),
		httplimit.WithAuthenticator(func(r *http.Request) (httplimit.Identity, error) {
			key := r.Header.Get(header)
			if key == "" {
				return httplimit.Identity{}, fmt.Errorf("%w: no %s", httplimit.ErrUnauthenticated, header)
			}
			return httplimit.Identity{Key: key}, nil
		}),
		httplimit.WithMetrics(prometheus.NewRegistry()),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})))
	t.Cleanup(srv.Close)
	return srv
}

// TestInitValidateRun: the scenario init writes from a few flags is one
// validate accepts, and it runs as written against an API that keeps the
// policy: every check passes, exit 0.
func TestInitValidateRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario end to end")
	}
	srv := limitedAPI(t, "/v1/orders", "gcra:10/1s,burst=10", "X-Tenant-Key")
	dir := t.TempDir()
	file := filepath.Join(dir, "my-api.yaml")
	var out strings.Builder
	ctx := context.Background()
	if err := (&initCommand{stdout: &out}).Run(ctx, []string{"--url", srv.URL, "--route", "/v1/orders", "--policy", "gcra:10/1s,burst=10",
		"--header", "X-Tenant-Key", "--name", "my-api", "--duration", "3s", "--out", file}); err != nil {
		t.Fatal(err)
	}
	if err := (&validateCommand{stdout: &out}).Run(ctx, []string{file}); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if !strings.Contains(out.String(), "my-api.yaml: valid (my-api, 3 phases") {
		t.Errorf("validate printed %q", out.String())
	}
	var stdout, stderr strings.Builder
	err := (&runCommand{stdout: &stdout, stderr: &stderr}).Run(ctx, []string{"--out", filepath.Join(dir, "out"), file})
	if err != nil {
		t.Fatalf("run: %v (exit %d)\n%s\n%s", err, exitCode(err), stdout.String(), stderr.String())
	}
	for _, want := range []string{"retry-after-probe", "budget", "Verdict: pass"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run output lacks %q:\n%s", want, stdout.String())
		}
	}
	// And a stricter claim than the API keeps fails: the scenario judges.
	err = (&runCommand{stdout: io.Discard, stderr: io.Discard}).Run(ctx, []string{"--out", filepath.Join(dir, "out2"),
		"--claim", "/v1/orders=gcra:5/1s,burst=5", file})
	if !errors.Is(err, errChecksFailed) {
		t.Errorf("run with a stricter claim: %v, want failed checks", err)
	}
}

// exitCode is the code main gives err.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errChecksFailed):
		return exitCheckFailed
	case errors.As(err, &ue):
		return exitInvalid
	}
	return exitInvalid
}

// TestInitWritesValidScenarios: every carry, window and bucket policies,
// several URLs and the drill give a scenario the parser accepts, with the
// fields the flags asked for.
func TestInitWritesValidScenarios(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, sc *scenarios.Scenario, text string)
	}{
		{"api key header", []string{"--header", "X-Tenant-Key"}, func(t *testing.T, sc *scenarios.Scenario, text string) {
			if sc.Identities.Carry != scenarios.APIKey || sc.Identities.Header != "X-Tenant-Key" || sc.Identities.Count != 4 {
				t.Errorf("identities %+v", sc.Identities)
			}
			if got, want := sc.Phases[0].Rate, 80.0; got != want {
				t.Errorf("steady rate %v, want %v (twice 10/s for 4 identities)", got, want)
			}
			if got := sc.Phases[2].Kind; got != scenarios.RetryAfterProbe {
				t.Errorf("third phase %s, want the probe", got)
			}
			if len(sc.Faults) != 0 || sc.Redis.Provider != scenarios.ProviderNone {
				t.Errorf("faults %v, redis %+v: want the drill commented out", sc.Faults, sc.Redis)
			}
			for _, want := range []string{"# redis:", "#   proxy: 127.0.0.1:16379", "redis_latency", "# failure_mode: closed", "kind: command"} {
				if !strings.Contains(text, want) {
					t.Errorf("the commented drill lacks %q", want)
				}
			}
		}},
		{"bearer, two URLs", []string{"--carry", "bearer", "--url", "http://127.0.0.1:2"}, func(t *testing.T, sc *scenarios.Scenario, _ string) {
			if sc.Identities.Carry != scenarios.Bearer || len(sc.Target.External) != 2 {
				t.Errorf("carry %s, external %v", sc.Identities.Carry, sc.Target.External)
			}
		}},
		{"query", []string{"--carry", "query"}, func(t *testing.T, sc *scenarios.Scenario, _ string) {
			if sc.Identities.Name != "api_key" {
				t.Errorf("query name %q", sc.Identities.Name)
			}
		}},
		{"cookie", []string{"--carry", "cookie"}, nil},
		{"client address", []string{"--carry", "client_ip", "--identities", "10"}, func(t *testing.T, sc *scenarios.Scenario, text string) {
			if sc.Identities.Header != "X-Forwarded-For" || strings.Contains(text, "keys_file") {
				t.Errorf("header %q; keys_file offered: %v", sc.Identities.Header, strings.Contains(text, "keys_file"))
			}
		}},
		{"hourly window: no probe", []string{"--policy", "fixed_window:100/1h"}, func(t *testing.T, sc *scenarios.Scenario, text string) {
			if len(sc.Phases) != 2 || !strings.Contains(text, "left out: a rejected client may have to wait") {
				t.Errorf("%d phases; want the probe left out, saying why", len(sc.Phases))
			}
		}},
		{"two policies", []string{"--policy", "fixed_window:1000/1h", "--method", "post"}, func(t *testing.T, sc *scenarios.Scenario, _ string) {
			if rt := sc.Target.Routes[0]; len(rt.Policies) != 2 || rt.Method != "POST" {
				t.Errorf("route %+v", rt)
			}
		}},
		{"drill", []string{"--redis", "redis://:pw@127.0.0.1:6390/2", "--proxy", "127.0.0.1:16400", "--failure-mode", "open", "--store-timeout", "100ms", "--duration", "8s"},
			func(t *testing.T, sc *scenarios.Scenario, _ string) {
				if sc.Redis.Provider != scenarios.ProviderExternal || sc.Redis.Proxy != "127.0.0.1:16400" || sc.Redis.URL != "redis://:pw@127.0.0.1:6390/2" {
					t.Errorf("redis %+v", sc.Redis)
				}
				if sc.Target.FailureMode != scenarios.FailOpen || sc.Target.StoreTimeout != 100*time.Millisecond {
					t.Errorf("failure mode %s, store timeout %v", sc.Target.FailureMode, sc.Target.StoreTimeout)
				}
				if len(sc.Faults) != 1 || sc.Faults[0].Kind != scenarios.FaultRedisLatency || sc.Faults[0].Latency != 400*time.Millisecond ||
					sc.Faults[0].At+sc.Faults[0].Duration > 8*time.Second {
					t.Errorf("faults %+v: want one redis_latency of 4 store timeouts within the steady phase", sc.Faults)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--url", "http://127.0.0.1:1", "--route", "/v1/orders", "--policy", "gcra:10/1s,burst=10"}, tt.args...)
			var out strings.Builder
			if err := (&initCommand{stdout: &out}).Run(context.Background(), args); err != nil {
				t.Fatal(err)
			}
			sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "s.yaml"), []byte(out.String()))
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if tt.check != nil {
				tt.check(t, sc, out.String())
			}
		})
	}
}

func TestInitErrors(t *testing.T) {
	base := []string{"--url", "http://127.0.0.1:1", "--route", "/v1/orders", "--policy", "gcra:10/1s,burst=10"}
	exists := filepath.Join(t.TempDir(), "taken.yaml")
	if err := os.WriteFile(exists, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no url", []string{"--route", "/a", "--policy", "gcra:1/1s"}, "--url is required"},
		{"bad url", []string{"--url", "http://u:p@h:1", "--route", "/a", "--policy", "gcra:1/1s"}, "without credentials"},
		{"no route", []string{"--url", "http://h:1", "--policy", "gcra:1/1s"}, "--route is required"},
		{"no policy", []string{"--url", "http://h:1", "--route", "/a"}, "--policy is required"},
		{"bad policy", append(base, "--policy", "gcra:0/1s"), `--policy "gcra:0/1s"`},
		{"bad name", append(base, "--name", "My API"), `--name "My API"`},
		{"header with bearer", append(base, "--carry", "bearer", "--header", "X-Key"), "carry bearer has its own place"},
		{"unknown carry", append(base, "--carry", "jwt"), `--carry "jwt"`},
		{"drill without mode", append(base, "--redis", "redis://127.0.0.1:6379/0"), "--redis needs --failure-mode"},
		{"mode without drill", append(base, "--failure-mode", "closed"), "give --redis too"},
		{"bad method", append(base, "--method", "BREW"), `these flags make an invalid scenario`},
		{"exists", append(base, "--out", exists), "the file exists"},
		{"argument", append(base, "my-api.yaml"), "init takes flags only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := (&initCommand{stdout: &out}).Run(context.Background(), tt.args)
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want a usage error containing %q", err, tt.want)
			}
		})
	}
	if data, _ := os.ReadFile(exists); string(data) != "mine\n" {
		t.Errorf("init overwrote %s: %q", exists, data)
	}
}
