package sampleapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

type fakeClock struct{ us atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.UnixMicro(c.us.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.us.Add(d.Microseconds()) }

type apiFixture struct {
	clock *fakeClock
	srv   *Server
}

func newAPI(t *testing.T, yamlText string) *apiFixture {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	if yamlText == "" {
		if cfg, err = LoadConfig(""); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Instance = "api-test"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	f := &apiFixture{clock: &fakeClock{}}
	f.clock.us.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	store := limiter.NewMemoryStore(limiter.WithClock(f.clock.Now))
	if f.srv, err = NewServer(cfg, store, NewStaticKeys(cfg.Keys), nil, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// do sends a request; header pairs are name, value.
func (f *apiFixture) do(method, path string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = "203.0.113.9:4000"
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(w, r)
	return w
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

func TestInstanceHeaderOnEveryResponse(t *testing.T) {
	f := newAPI(t, "")
	cases := []struct {
		method, path string
		header       []string
		status       int
	}{
		{"GET", "/v1/data", bearer("demo-pro-key"), 200},
		{"GET", "/v1/search?q=a", []string{"X-API-Key", "demo-pro-key"}, 200},
		{"POST", "/v1/reports/export", bearer("demo-pro-key"), 200},
		{"GET", "/v1/limits", bearer("demo-pro-key"), 200},
		{"GET", "/v1/data", nil, 401},
		{"GET", "/v1/data", bearer("not-a-key"), 401},
		{"GET", "/baseline/v1/data", bearer("demo-pro-key"), 404}, // baseline_routes is off
		{"GET", "/livez", nil, 200},
		{"GET", "/readyz", nil, 200},
		{"GET", "/healthz", nil, 200},
		{"GET", "/metrics", nil, 200},
		{"GET", "/nowhere", nil, 404},
		{"DELETE", "/v1/data", bearer("demo-pro-key"), 405},
	}
	for _, c := range cases {
		w := f.do(c.method, c.path, c.header...)
		if w.Code != c.status {
			t.Errorf("%s %s: status = %d, want %d", c.method, c.path, w.Code, c.status)
		}
		if got, want := w.Header().Get(InstanceHeader), "api-test"; got != want {
			t.Errorf("%s %s: %s = %q, want %q", c.method, c.path, InstanceHeader, got, want)
		}
	}
}

func TestBudgetEndpointDoesNotConsume(t *testing.T) {
	f := newAPI(t, "")
	for range 3 {
		if w := f.do("GET", "/v1/data", bearer("demo-pro-key")...); w.Code != 200 {
			t.Fatalf("data: status = %d", w.Code)
		}
	}
	want := Budget{Policy: "minute", Limit: 600, Remaining: 97, ResetSeconds: 1, Burst: 100,
		Monthly: &Quota{Limit: 1000000, Remaining: 999997}}
	for i := range 3 { // asking repeatedly changes nothing
		w := f.do("GET", "/v1/limits", bearer("demo-pro-key")...)
		var got Budget
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatalf("body %q: %v", w.Body, err)
		}
		if got.Monthly == nil {
			t.Fatalf("call %d: no monthlyQuota in %s", i, w.Body)
		}
		want.Monthly.ResetSeconds = got.Monthly.ResetSeconds // depends on the epoch alignment
		if got.Policy != want.Policy || got.Limit != want.Limit || got.Remaining != want.Remaining ||
			got.ResetSeconds != want.ResetSeconds || got.Burst != want.Burst || *got.Monthly != *want.Monthly {
			t.Fatalf("call %d: budget = %s, want %+v %+v", i, w.Body, want, *want.Monthly)
		}
		if w.Header().Get("RateLimit") != "" {
			t.Fatalf("call %d: the budget endpoint wrote RateLimit; it is not limited", i)
		}
	}
	if w := f.do("GET", "/v1/limits", bearer("wrong")...); w.Code != 401 {
		t.Fatalf("budget with a bad key: status = %d, want 401", w.Code)
	}
}

func TestRouteCostsAndLimits(t *testing.T) {
	f := newAPI(t, "")
	// free plan: burst 10. An export costs 10.
	steps := []struct {
		method, path string
		key          string
		status       int
		policy       string // deciding policy in RateLimit
	}{
		{"POST", "/v1/reports/export", "demo-free-key", 200, "minute"},
		{"GET", "/v1/data", "demo-free-key", 429, "minute"},
		{"GET", "/healthz", "", 200, ""},
		{"GET", "/v1/data", "demo-pro-key", 200, "minute"},
	}
	for i, s := range steps {
		w := f.do(s.method, s.path, bearer(s.key)...)
		if w.Code != s.status {
			t.Fatalf("step %d %s %s: status = %d, want %d", i, s.method, s.path, w.Code, s.status)
		}
		if got := w.Header().Get("RateLimit"); !strings.HasPrefix(got, policyPrefix(s.policy)) {
			t.Fatalf("step %d: RateLimit = %q, want policy %q", i, got, s.policy)
		}
	}
	// search: its own limit of 10 per second (burst 10) on top of the plan.
	for i := range 10 {
		if w := f.do("GET", "/v1/search", bearer("demo-pro-key")...); w.Code != 200 {
			t.Fatalf("search %d: status = %d, want 200", i, w.Code)
		}
	}
	w := f.do("GET", "/v1/search", bearer("demo-pro-key")...)
	if w.Code != 429 || !strings.HasPrefix(w.Header().Get("RateLimit"), `"search";`) {
		t.Fatalf("11th search: %d %q, want 429 by policy search", w.Code, w.Header().Get("RateLimit"))
	}
	if w := f.do("GET", "/v1/data", bearer("demo-pro-key")...); w.Code != 200 {
		t.Fatalf("data after the search limit: status = %d, want 200", w.Code)
	}
	f.clock.Advance(100 * time.Millisecond)
	if w := f.do("GET", "/v1/search", bearer("demo-pro-key")...); w.Code != 200 {
		t.Fatalf("search 100 ms later: status = %d, want 200", w.Code)
	}
}

func policyPrefix(p string) string {
	if p == "" {
		return ""
	}
	return `"` + p + `";`
}

func TestAnonymousByClientIP(t *testing.T) {
	f := newAPI(t, `
trusted_proxies: ["10.0.0.0/8"]
anonymous:
  rate_limit_per_minute: 0.001
  rate_limit_burst: 2
`)
	send := func(peer, xff string) int {
		r := httptest.NewRequest("GET", "/v1/data", nil)
		r.RemoteAddr = peer
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		w := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(w, r)
		return w.Code
	}
	steps := []struct {
		peer, xff string
		want      int
	}{
		{"10.0.0.1:1", "198.51.100.1", 200},
		{"10.0.0.1:1", "198.51.100.1", 200},
		{"10.0.0.1:1", "198.51.100.1", 429},
		{"10.0.0.1:1", "6.6.6.6, 198.51.100.1", 429}, // its own XFF gains it nothing
		{"10.0.0.2:1", "198.51.100.2", 200},          // another client behind the proxy
		{"198.51.100.1:7", "", 429},                  // the same client, direct
		{"203.0.113.5:7", "198.51.100.9", 200},       // untrusted peer: keyed by the peer
		{"203.0.113.5:7", "198.51.100.10", 200},
		{"203.0.113.5:7", "198.51.100.11", 429},
	}
	for i, s := range steps {
		if got := send(s.peer, s.xff); got != s.want {
			t.Fatalf("step %d (%s, XFF %q): status = %d, want %d", i, s.peer, s.xff, got, s.want)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	f := newAPI(t, "")
	f.do("GET", "/v1/data", bearer("demo-pro-key")...)
	body := f.do("GET", "/metrics").Body.String()
	for _, want := range []string{
		`rlbench_httplimit_admitted_total{policy="minute",route="data"} 1`,
		`rlbench_httplimit_decision_duration_seconds_count{route="data"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestExtraRoutesAndAnyKey(t *testing.T) {
	// The shape of a scenario's target: generated keys, routes with their
	// own policies, a baseline route, and client-IP identities.
	f := newAPI(t, `
any_key: true
allow_anonymous: true
baseline_routes: true
trusted_proxies: ["127.0.0.1"]
extra_routes:
  - path: /api/items
    limits: ["sliding_window_log:3/1s"]
  - method: POST
    path: /api/reports
    cost: 2
    limits: ["gcra:1/1m,burst=4,name=reports"]
  - path: /baseline/api/items
    baseline: true
`)
	steps := []struct {
		method, path string
		header       []string
		want         int
	}{
		{"GET", "/api/items", bearer("key-0001"), 200},
		{"GET", "/api/items", bearer("key-0001"), 200},
		{"GET", "/api/items", bearer("key-0001"), 200},
		{"GET", "/api/items", bearer("key-0001"), 429},
		{"GET", "/api/items", bearer("key-0002"), 200}, // another identity
		{"GET", "/baseline/api/items", bearer("key-0001"), 200},
		{"POST", "/api/reports", bearer("key-0001"), 200},
		{"POST", "/api/reports", bearer("key-0001"), 200},
		{"POST", "/api/reports", bearer("key-0001"), 429},
		{"GET", "/api/items", []string{"X-Forwarded-For", "10.0.0.7"}, 200}, // peer 203.0.113.9 is not trusted
		{"GET", "/v1/limits", bearer("key-0001"), 404},                      // no plan
		{"GET", "/v1/data", bearer("key-0001"), 200},                        // no plan, no route limit
	}
	for i, s := range steps {
		if w := f.do(s.method, s.path, s.header...); w.Code != s.want {
			t.Fatalf("step %d %s %s: status = %d, want %d (%s)", i, s.method, s.path, w.Code, s.want, w.Body)
		}
	}
	f.clock.Advance(time.Second)
	if w := f.do("GET", "/api/items", bearer("key-0001")...); w.Code != 200 {
		t.Fatalf("a second later: status = %d, want 200", w.Code)
	}
	// A configured key keeps its plan under any_key.
	cfgKeys := newAPI(t, "any_key: true\nkeys:\n  - key: planned\n    rate_limit_per_minute: 0.001\n    rate_limit_burst: 1\n")
	if w := cfgKeys.do("GET", "/v1/data", bearer("planned")...); w.Code != 200 {
		t.Fatalf("planned key: status = %d, want 200", w.Code)
	}
	if w := cfgKeys.do("GET", "/v1/data", bearer("planned")...); w.Code != 429 {
		t.Fatalf("planned key, second request: status = %d, want 429", w.Code)
	}
}

func TestExtraRouteConfigErrors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"extra_routes:\n  - path: /v1/data\n", `test.yaml:2: extra_routes[0].path: GET /v1/data is already a route`},
		{"extra_routes:\n  - path: /a\n  - path: /a\n", `test.yaml:3: extra_routes[1].path: GET /a is already a route`},
		{"extra_routes:\n  - path: /a/{id}\n", `test.yaml:2: extra_routes[0].path: "/a/{id}": want an absolute path`},
		{"extra_routes:\n  - method: get\n    path: /a\n", `test.yaml:2: extra_routes[0].method: "get" is not an HTTP method`},
		{"extra_routes:\n  - path: /a\n    baseline: true\n    limits: [\"gcra:1/1s\"]\n", `test.yaml:4: extra_routes[0].limits: a baseline route bypasses the limiter`},
		{"extra_routes:\n  - path: /a\n    limits: [\"gcra:0/1s\"]\n", `test.yaml:3: extra_routes[0].limits[0]: invalid limit: rate: 0 must be a positive number`},
	}
	for _, tt := range tests {
		cfg, err := ParseConfig("test.yaml", []byte(tt.yaml))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("config %q: error = %v\nwant prefix %q", tt.yaml, err, tt.want)
		}
	}
}

// BenchmarkRoutes compares a limited route with its baseline twin, the
// overhead the limiter adds in one process with the in-memory store.
func BenchmarkRoutes(b *testing.B) {
	cfg, err := LoadConfig("")
	if err != nil {
		b.Fatal(err)
	}
	cfg.Instance = "bench"
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(cfg, limiter.NewMemoryStore(), NewStaticKeys(cfg.Keys), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"/v1/data", "/baseline/v1/data"} {
		b.Run(strings.TrimPrefix(path, "/"), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", path, nil)
				r.Header.Set("Authorization", "Bearer demo-bench-key")
				for pb.Next() {
					srv.Handler().ServeHTTP(httptest.NewRecorder(), r)
				}
			})
		})
	}
}
