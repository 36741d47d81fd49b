package sampleapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redistest"
)

const proKey = "keys:\n  - key: demo-pro-key\n    rate_limit_per_minute: 600\n    rate_limit_burst: 100\n"

// TestHealthLiveAndReady: /livez is 200 whatever the store; /readyz and
// its alias /healthz are 503 with the reason when the store fails and
// requests get 503, and 200 "degraded" when the failure mode serves them.
func TestHealthLiveAndReady(t *testing.T) {
	down := func(context.Context) error { return errors.New("redis unreachable: connection refused") }
	up := func(context.Context) error { return nil }
	tests := []struct {
		name, mode string
		check      StoreCheck
		status     int
		want       Health
	}{
		{"memory store", "", nil, 200, Health{Status: StatusReady, Store: StoreMemory}},
		{"store answers", "", up, 200, Health{Status: StatusReady, Store: StoreMemory}},
		{"store down, no failure mode", "", down, 503, Health{Status: StatusNotReady, Store: StoreMemory, Reason: "redis unreachable: connection refused"}},
		{"store down, fail-closed", "closed", down, 503, Health{Status: StatusNotReady, Store: StoreMemory, FailureMode: "closed", Reason: "redis unreachable: connection refused"}},
		{"store down, fail-open", "open", down, 200, Health{Status: StatusDegraded, Store: StoreMemory, FailureMode: "open", Reason: "redis unreachable: connection refused"}},
		{"store down, fallback", "fallback", down, 200, Health{Status: StatusDegraded, Store: StoreMemory, FailureMode: "fallback", Reason: "redis unreachable: connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig(t, "failure_mode: "+tt.mode+"\n")
			srv, err := NewServer(cfg, limiter.NewMemoryStore(), NewStaticKeys(nil), tt.check, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &apiFixture{srv: srv}
			if w := f.do("GET", "/livez"); w.Code != 200 || !strings.Contains(w.Body.String(), `"status":"live"`) {
				t.Errorf("/livez: %d %s, want 200 live", w.Code, w.Body)
			}
			for _, path := range []string{"/readyz", "/healthz"} {
				w := f.do("GET", path)
				if w.Code != tt.status {
					t.Errorf("%s: status = %d, want %d", path, w.Code, tt.status)
				}
				var got Health
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
					t.Fatalf("%s: body %q: %v", path, w.Body, err)
				}
				if got != tt.want {
					t.Errorf("%s: body = %+v, want %+v", path, got, tt.want)
				}
				if ra := w.Header().Get("Retry-After"); (tt.status == 503) != (ra == "1") {
					t.Errorf("%s: Retry-After = %q on %d", path, ra, w.Code)
				}
			}
		})
	}
}

func validConfig(t *testing.T, yamlText string) Config {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Instance = "api-test"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestHealthBudgetUnknown: while the store cannot answer, GET /v1/limits
// says the budget is unknown (503, Retry-After, problem+json) instead of
// answering "remaining: 0" with 200, whatever the failure mode.
func TestHealthBudgetUnknown(t *testing.T) {
	for _, mode := range []string{"", "open", "closed", "fallback"} {
		t.Run("mode "+mode, func(t *testing.T) {
			cfg := validConfig(t, proKey+"failure_mode: "+mode+"\n")
			var lim limiter.Limiter = downStore{}
			if mode != "" {
				r, err := Resilient(lim, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				lim = r
			}
			srv, err := NewServer(cfg, lim, NewStaticKeys(cfg.Keys), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			w := (&apiFixture{srv: srv}).do("GET", "/v1/limits", bearer("demo-pro-key")...)
			if w.Code != 503 || w.Header().Get("Retry-After") != "1" || w.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("budget: %d, Retry-After %q, %s; want 503, 1, application/problem+json",
					w.Code, w.Header().Get("Retry-After"), w.Header().Get("Content-Type"))
			}
			if !strings.Contains(w.Body.String(), "the budget is unknown") || strings.Contains(w.Body.String(), "remaining") {
				t.Fatalf("budget body = %s, want the budget unknown", w.Body)
			}
		})
	}
}

// TestServeBaselineRoutes: the baseline routes, which bypass the limiter
// for any key, exist only with baseline_routes: true.
func TestServeBaselineRoutes(t *testing.T) {
	const plan = "keys:\n  - key: k\n    rate_limit_per_minute: 0.001\n    rate_limit_burst: 1\n"
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("baseline_routes %v", on), func(t *testing.T) {
			cfg := validConfig(t, plan+fmt.Sprintf("baseline_routes: %v\n", on))
			srv, err := NewServer(cfg, limiter.NewMemoryStore(), NewStaticKeys(cfg.Keys), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &apiFixture{srv: srv}
			if w := f.do("GET", "/v1/data", bearer("k")...); w.Code != 200 {
				t.Fatalf("first request: %d, want 200", w.Code)
			}
			if w := f.do("GET", "/v1/data", bearer("k")...); w.Code != 429 {
				t.Fatalf("second request: %d, want 429 (the key is exhausted)", w.Code)
			}
			want := 404
			if on {
				want = 200
			}
			for _, r := range []struct{ method, path string }{{"GET", "/baseline/v1/data"}, {"GET", "/baseline/v1/search"}, {"POST", "/baseline/v1/reports/export"}} {
				if w := f.do(r.method, r.path, bearer("k")...); w.Code != want {
					t.Errorf("%s %s for an exhausted key: %d, want %d", r.method, r.path, w.Code, want)
				}
			}
		})
	}
}

// TestServeConcurrencyCap: past max_concurrent_requests requests in flight,
// one more is answered 503 with Retry-After at once, the health routes
// still answer, and the cap frees as requests end.
func TestServeConcurrencyCap(t *testing.T) {
	addr, _, _ := startRun(t, proKey+"max_concurrent_requests: 2\n")
	var pipes []*io.PipeWriter
	var statuses []<-chan int
	for range 2 {
		pw, status := inFlightExport(t, addr)
		pipes, statuses = append(pipes, pw), append(statuses, status)
	}
	resp := get(t, "http://"+addr+"/v1/data", "demo-pro-key")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("third request: %d, Retry-After %q; want 503, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, path := range []string{"/livez", "/readyz", "/metrics"} {
		if resp := get(t, "http://"+addr+path, ""); resp.StatusCode != 200 {
			t.Errorf("%s at the cap: %d, want 200", path, resp.StatusCode)
		}
	}
	for i, pw := range pipes {
		pw.Close()
		if got := <-statuses[i]; got != 200 {
			t.Fatalf("export %d: %d, want 200", i, got)
		}
	}
	if resp := get(t, "http://"+addr+"/v1/data", "demo-pro-key"); resp.StatusCode != 200 {
		t.Fatalf("after the exports ended: %d, want 200", resp.StatusCode)
	}
	body := getBody(t, "http://"+addr+"/metrics")
	if !strings.Contains(body, "rlbench_sampleapi_shed_requests_total 1\n") {
		t.Errorf("metrics lack rlbench_sampleapi_shed_requests_total 1")
	}
}

// TestServeBodyCap: a body past max_body_bytes is answered 413.
func TestServeBodyCap(t *testing.T) {
	addr, _, _ := startRun(t, proKey+"max_body_bytes: 100\n")
	for _, tc := range []struct {
		size, want int
	}{{100, 200}, {101, 413}, {1 << 20, 413}} {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/reports/export", strings.NewReader(strings.Repeat("x", tc.size)))
		req.Header.Set("Authorization", "Bearer demo-pro-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("body of %d bytes: %d, want %d", tc.size, resp.StatusCode, tc.want)
		}
	}
}

func get(t *testing.T, url, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// logBuffer collects what a logger writes; safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runOn runs the sample API with cfgText on a loopback listener, logging
// into the returned buffer; started is closed when Run calls back.
func runOn(t *testing.T, cfgText string) (addr string, logs *logBuffer, started <-chan struct{}, done <-chan error) {
	t.Helper()
	cfg := validConfig(t, cfgText)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs = &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	st, errc := make(chan struct{}), make(chan error, 1)
	go func() { errc <- Run(ctx, cfg, ln, logger, func() { close(st) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return ln.Addr().String(), logs, st, errc
}

// TestReadyWithRedis: on a real Redis, readiness follows the store: ready,
// then 503 with the reason while Redis is down (the budget endpoint says
// the budget is unknown, /livez still 200), ready again when it is back.
func TestReadyWithRedis(t *testing.T) {
	srv := redistest.StartForTest(t)
	addr, logs, started, _ := runOn(t, proKey+"redis: "+srv.URL()+"/0\n")
	<-started
	base := "http://" + addr
	if resp := get(t, base+"/readyz", ""); resp.StatusCode != 200 {
		t.Fatalf("/readyz with Redis up: %d, want 200", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "store reachable") {
		t.Errorf("no \"store reachable\" in the log:\n%s", logs)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	resp := get(t, base+"/readyz", "")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("/readyz with Redis down: %d, Retry-After %q; want 503, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if body := getBody(t, base+"/readyz"); !strings.Contains(body, `"reason":"redis unreachable`) {
		t.Errorf("/readyz body = %s, want the reason", body)
	}
	if resp := get(t, base+"/livez", ""); resp.StatusCode != 200 {
		t.Errorf("/livez with Redis down: %d, want 200", resp.StatusCode)
	}
	if resp := get(t, base+"/v1/limits", "demo-pro-key"); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("/v1/limits with Redis down: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	waitFor(t, 10*time.Second, "the watch logs the loss", func() bool { return strings.Contains(logs.String(), "store unreachable") })
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "/readyz answers 200 again", func() bool { return get(t, base+"/readyz", "").StatusCode == 200 })
	waitFor(t, 10*time.Second, "the watch logs the return", func() bool { return strings.Contains(logs.String(), "store reachable again") })
	if resp := get(t, base+"/v1/limits", "demo-pro-key"); resp.StatusCode != 200 {
		t.Errorf("/v1/limits with Redis back: %d, want 200", resp.StatusCode)
	}
}

// TestReadyStartWithoutRedis: an instance started while Redis is down
// still comes up (its listening callback within the start wait), says so
// in its log and on /readyz, and becomes ready when Redis appears.
func TestReadyStartWithoutRedis(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	addr, logs, started, _ := runOn(t, proKey+fmt.Sprintf("redis: redis://127.0.0.1:%d/0\n", port))
	select {
	case <-started:
	case <-time.After(DefaultStoreStartWait + 5*time.Second):
		t.Fatalf("not serving %v after start with Redis down:\n%s", time.Since(t0), logs)
	}
	if elapsed := time.Since(t0); elapsed < DefaultStoreStartWait-100*time.Millisecond {
		t.Errorf("serving after %v, before the start wait of %v ended", elapsed, DefaultStoreStartWait)
	}
	if !strings.Contains(logs.String(), "store unreachable: serving anyway") {
		t.Errorf("the log does not say the store is unreachable:\n%s", logs)
	}
	if resp := get(t, "http://"+addr+"/readyz", ""); resp.StatusCode != 503 {
		t.Fatalf("/readyz: %d, want 503", resp.StatusCode)
	}
	srv, err := redistest.Start(context.Background(), redistest.Options{Port: port})
	if err != nil {
		if errors.Is(err, redistest.ErrNotInstalled) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer srv.Stop()
	waitFor(t, 10*time.Second, "/readyz answers 200 once Redis is up", func() bool { return get(t, "http://"+addr+"/readyz", "").StatusCode == 200 })
}

// TestEvictionWarning: a Redis that may evict limiter state (maxmemory
// with allkeys-lru, field case C16) is warned about at start, with the fix,
// before the instance says it serves; and again when a reconnection finds
// a policy changed to one that evicts.
func TestEvictionWarning(t *testing.T) {
	t.Run("at start", func(t *testing.T) {
		srv, err := redistest.Start(context.Background(), redistest.Options{Args: []string{"--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru"}})
		if err != nil {
			if errors.Is(err, redistest.ErrNotInstalled) {
				t.Skip(err)
			}
			t.Fatal(err)
		}
		defer srv.Stop()
		_, logs, started, _ := runOn(t, proKey+"redis: "+srv.URL()+"/0\n")
		<-started
		log := logs.String()
		for _, want := range []string{"level=WARN", "redis may evict rate-limit state", "maxmemory-policy allkeys-lru", "CONFIG SET maxmemory-policy noeviction"} {
			if !strings.Contains(log, want) {
				t.Errorf("the log lacks %q:\n%s", want, log)
			}
		}
	})
	t.Run("on reconnect", func(t *testing.T) {
		srv := redistest.StartForTest(t)
		_, logs, started, _ := runOn(t, proKey+"redis: "+srv.URL()+"/0\n")
		<-started
		if strings.Contains(logs.String(), "may evict") {
			t.Fatalf("a warning with noeviction:\n%s", logs)
		}
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
		defer admin.Close()
		ctx := context.Background()
		defer admin.ConfigSet(ctx, "maxmemory", "0")
		if err := admin.ConfigSet(ctx, "maxmemory", "10mb").Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
			t.Fatal(err)
		}
		// Drop the instance's connections (not this one): it reconnects.
		if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "a warning after the reconnection", func() bool {
			return strings.Contains(logs.String(), "maxmemory-policy volatile-lru")
		})
	})
}

// TestSecretWrongPassword: a refused password reads as an authentication
// error, in the log and on /readyz, and the password appears in neither.
func TestSecretWrongPassword(t *testing.T) {
	srv := redistest.StartForTest(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	if err := admin.ConfigSet(ctx, "requirepass", "right-password").Err(); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "right-password", DisableIdentity: true})
		defer c.Close()
		c.ConfigSet(ctx, "requirepass", "")
	})
	const wrong = "wrong-pw-7d1e"
	addr, logs, started, _ := runOn(t, proKey+"redis: redis://:"+wrong+"@"+srv.Addr()+"/0\n")
	<-started
	const want = "redis: authentication failed (WRONGPASS): check the password in the URL"
	body := getBody(t, "http://"+addr+"/readyz")
	if !strings.Contains(body, want) {
		t.Errorf("/readyz = %s, want %q", body, want)
	}
	resp := get(t, "http://"+addr+"/v1/data", "demo-pro-key")
	if resp.StatusCode != 503 {
		t.Errorf("request with the wrong password: %d, want 503", resp.StatusCode)
	}
	log := logs.String()
	if !strings.Contains(log, want) {
		t.Errorf("the log lacks %q:\n%s", want, log)
	}
	for name, text := range map[string]string{"log": log, "/readyz": body} {
		if strings.Contains(text, wrong) {
			t.Errorf("%s holds the password", name)
		}
		if strings.Contains(text, "unexpected reply") {
			t.Errorf("%s speaks of an unexpected reply:\n%s", name, text)
		}
	}
}
