package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
	"github.com/rlbench/rlbench/scenarios/mutation"
)

// preflight does for sc, under out, what Runner.Run does before the first
// request, short of starting processes: it makes the scenario's output
// directory and history file; for sample API instances it writes each
// instance's configuration file, reads it back and validates it as
// `rlbench serve --config` does, builds the server and sends every route
// one request through its router, which must reach the route (no redirect,
// 404 or 405); and it builds every request URL as the load generator does,
// which must parse and carry the route's path as written.
func preflight(ctx context.Context, sc *scenarios.Scenario, out string) error {
	dir := filepath.Join(out, sc.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl.gz"))
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	f.Close()
	bases := sc.Target.External
	sampleAPI := sc.Target.Peer == "" || sc.Target.Peer == scenarios.PeerRedisRate
	if sc.Target.Instances > 0 {
		bases = []string{"http://127.0.0.1:8080"}
	}
	if sc.Target.Instances > 0 && sampleAPI {
		for i := range sc.Target.Instances {
			path := filepath.Join(dir, scenarios.InstanceName(i)+".yaml")
			if err := WriteInstanceConfig(path, InstanceConfig(sc, i, "redis://127.0.0.1:1/0", "")); err != nil {
				return err
			}
			cfg, err := sampleapi.LoadConfig(path)
			if err != nil {
				return fmt.Errorf("instance config: %w", err)
			}
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("instance config: %w", err)
			}
			if err := routeAll(ctx, sc, cfg); err != nil {
				return err
			}
		}
	}
	for _, base := range bases {
		bu, err := url.Parse(base)
		if err != nil {
			return fmt.Errorf("base URL %q: %w", base, err)
		}
		for _, rt := range sc.Target.Routes {
			u := base + rt.Path
			if rt.Query != "" {
				u += "?" + rt.Query
			}
			req, err := http.NewRequestWithContext(ctx, rt.Method, u, nil)
			if err != nil {
				return fmt.Errorf("route %s: request: %w", rt.Path, err)
			}
			if got, want := req.URL.EscapedPath(), bu.EscapedPath()+rt.Path; got != want {
				return fmt.Errorf("route %s: the request goes to path %q, not %q", rt.Path, got, want)
			}
			if req.URL.RawQuery != rt.Query || req.URL.Host != bu.Host {
				return fmt.Errorf("route %s: the request URL %s has query %q and host %q", rt.Path, u, req.URL.RawQuery, req.URL.Host)
			}
		}
	}
	return nil
}

// routeAll builds the sample API of cfg on a memory store (the router is
// the same whatever the store) and sends every route of sc one request.
func routeAll(ctx context.Context, sc *scenarios.Scenario, cfg sampleapi.Config) (err error) {
	cfg.Store, cfg.Redis, cfg.Limiter, cfg.Faulty = sampleapi.StoreMemory, "", sampleapi.LimiterReference, ""
	cfg.ExtraRoutes = slices.Clone(cfg.ExtraRoutes)
	for i := range cfg.ExtraRoutes {
		cfg.ExtraRoutes[i].Limiter = "" // a route on redis_rate needs Redis; the router is the same
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("memory copy of the instance config: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lim, closeLim, err := sampleapi.OpenLimiter(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer closeLim()
	keys, closeKeys, err := sampleapi.OpenKeys(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer closeKeys()
	defer func() {
		if p := recover(); p != nil { // http.ServeMux panics on patterns it cannot take
			err = fmt.Errorf("sample API server: %v", p)
		}
	}()
	srv, err := sampleapi.NewServer(cfg, lim, keys, nil, nil)
	if err != nil {
		return fmt.Errorf("sample API server: %w", err)
	}
	for _, rt := range sc.Target.Routes {
		u := "http://127.0.0.1:8080" + rt.Path
		if rt.Query != "" {
			u += "?" + rt.Query
		}
		req := httptest.NewRequestWithContext(ctx, rt.Method, u, nil)
		req.Header.Set(scenarios.DefaultAPIKeyHeader, "key-0")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusMovedPermanently, http.StatusPermanentRedirect, http.StatusNotFound, http.StatusMethodNotAllowed:
			return fmt.Errorf("route %s %s: the sample API answers %d, not the route", rt.Method, rt.Path, rec.Code)
		}
	}
	return nil
}

// TestAcceptedScenariosStart: every scenario file validation accepts (the
// shipped ones, the mutation and peer scenarios, and every fixture under
// scenarios/testdata) passes the runner's pre-flight: whatever `rlbench
// validate` accepts, `rlbench run` can start.
func TestAcceptedScenariosStart(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../../scenarios", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	accepted, refused := 0, 0
	for _, file := range files {
		sc, err := scenarios.LoadFile(file)
		if err != nil {
			if !errors.Is(err, scenarios.ErrInvalidScenario) {
				t.Errorf("%s: %v", file, err)
			}
			refused++
			continue
		}
		accepted++
		t.Run(strings.TrimPrefix(file, "../../scenarios/"), func(t *testing.T) {
			if err := preflight(t.Context(), sc, filepath.Join(out, strconv.Itoa(accepted))); err != nil {
				t.Fatalf("validation accepted %s, but it cannot start: %v", file, err)
			}
		})
	}
	for _, variant := range []string{"no-ttl", "leftmost-xff", "client-clock"} {
		sc, err := mutation.Scenario(variant)
		if err != nil {
			t.Fatal(err)
		}
		if err := preflight(t.Context(), sc, filepath.Join(out, "mutation")); err != nil {
			t.Errorf("embedded mutation scenario %s cannot start: %v", variant, err)
		}
	}
	// The tree holds both: shipped scenarios and edge cases that pass,
	// fixtures that are refused.
	if accepted < 40 || refused < 80 {
		t.Fatalf("%d files accepted and %d refused; want at least 40 and 80", accepted, refused)
	}
}

// generatedScenario is a scenario of one started or external target whose
// name and route are those given, as YAML.
func generatedScenario(name, path, method string, external bool) []byte {
	target := "instances: 2\n  store: memory"
	redis := "redis: {provider: none}\n"
	if external {
		target, redis = "external: [http://127.0.0.1:8080]", ""
	}
	return fmt.Appendf(nil, "name: %s\ndescription: generated\n%starget:\n  %s\n  routes:\n    - {path: %s, method: %s, policies: [\"gcra:10/1s,burst=10\"]}\ntraffic:\n  - {kind: burst, requests: 2}\n",
		strconv.Quote(name), redis, target, strconv.Quote(path), strconv.Quote(method))
}

// checkGenerated parses the generated scenario and, when validation
// accepts it, runs the pre-flight; it reports whether it was accepted.
func checkGenerated(t *testing.T, name, path, method string, external bool) bool {
	t.Helper()
	data := generatedScenario(name, path, method, external)
	sc, err := scenarios.Parse("gen.yaml", data)
	if err != nil {
		var se *scenarios.ScenarioError
		if !errors.As(err, &se) {
			t.Fatalf("error %v (%T) is not a *ScenarioError", err, err)
		}
		return false
	}
	if err := preflight(t.Context(), sc, t.TempDir()); err != nil {
		t.Fatalf("validation accepted name %q, %s path %q (external %v), but it cannot start: %v\n%s", name, method, path, external, err, data)
	}
	return true
}

// TestGeneratedNamesAndPathsStart draws names and route paths from an
// alphabet of the characters that break runs (separators, dots, percent
// signs, spaces, controls, non-ASCII) at lengths around the bounds: every
// one validation accepts passes the pre-flight, and both kinds occur.
func TestGeneratedNamesAndPathsStart(t *testing.T) {
	const (
		safe    = "abz09-_"
		hostile = "A./%?#: ~;@&=+\t\x7f{}*$\\"
	)
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(prefix, more string) string {
		n := rng.IntN(12)
		if rng.IntN(10) == 0 {
			n = scenarios.MaxNameLength - 2 + rng.IntN(5)
		}
		var b strings.Builder
		b.WriteString(prefix)
		for range n {
			switch r := rng.IntN(100); {
			case r < 2:
				b.WriteString("é")
			case r < 8:
				b.WriteByte(hostile[rng.IntN(len(hostile))])
			default:
				alphabet := safe + more
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
		}
		return b.String()
	}
	methods := []string{"GET", "HEAD", "POST", "get"}
	reserved := []string{"/healthz", "/metrics", "/v1/limits", "/v1/data", "/v1/search", "/v1/reports/export", "/baseline/v1/data"}
	accepted, refused := 0, 0
	for i := range 1500 {
		name, path := draw("", ""), draw("/", "/")
		if i%5 == 0 {
			path = reserved[rng.IntN(len(reserved))]
		}
		if checkGenerated(t, name, path, methods[rng.IntN(len(methods))], i%3 == 0) {
			accepted++
		} else {
			refused++
		}
	}
	t.Logf("%d generated scenarios accepted, %d refused", accepted, refused)
	if accepted < 50 || refused < 50 {
		t.Fatalf("%d generated scenarios accepted, %d refused; want at least 50 of each", accepted, refused)
	}
}

// FuzzAcceptedIsStartable: for any name, path and method, a scenario
// validation accepts passes the pre-flight.
func FuzzAcceptedIsStartable(f *testing.F) {
	for _, s := range []struct {
		name, path, method string
		external           bool
	}{
		{"quickstart", "/api/items", "GET", false},
		{strings.Repeat("a", 100), "/", "POST", false},
		{strings.Repeat("a", 101), "/a b", "GET", true},
		{"x", "/caf%C3%A9", "GET", true},
		{"x", "//host/a", "GET", true},
		{"x", "/a/../b", "GET", false},
		{"x", "/healthz", "HEAD", false},
		{"x", "/a%2Fb", "PUT", false},
	} {
		f.Add(s.name, s.path, s.method, s.external)
	}
	f.Fuzz(func(t *testing.T, name, path, method string, external bool) {
		checkGenerated(t, name, path, method, external)
	})
}
