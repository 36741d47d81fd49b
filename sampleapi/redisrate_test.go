package sampleapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestRedisRateRoute serves one route with the reference limiter and one
// with redis_rate, under the same policy on one Redis, beside a baseline:
// both limited routes admit the burst and reject the next request (429
// with Retry-After), each keeps its own budget, the baseline is never
// limited, and redis_rate's key holds the hashed identity, never the key.
func TestRedisRateRoute(t *testing.T) {
	srv := redistest.StartForTest(t)
	cfg, err := ParseConfig("test.yaml", []byte(`
any_key: true
baseline_routes: true
extra_routes:
  - path: /ref
    limits: ["gcra:2/1m,burst=2"]
  - path: /peer
    limits: ["gcra:2/1m,burst=2"]
    limiter: redis_rate
  - path: /base
    baseline: true
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Instance, cfg.Redis = "side-by-side", "redis://"+srv.Addr()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer client.Close()
	s, err := NewServer(cfg, redisstore.New(client), NewStaticKeys(nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	do := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("X-API-Key", "secret-key-1")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		return w
	}
	for _, path := range []string{"/ref", "/peer"} {
		for i, want := range []int{200, 200, 429} {
			w := do(path)
			if got := w.Code; got != want {
				t.Fatalf("%s request %d: status %d, want %d: %s", path, i+1, got, want, w.Body)
			}
			if want == 429 && w.Header().Get("Retry-After") != "30" {
				t.Errorf("%s 429: Retry-After %q, want 30", path, w.Header().Get("Retry-After"))
			}
			if want == 200 && !strings.Contains(w.Body.String(), `"items"`) {
				t.Errorf("%s: body %q, want the data route's", path, w.Body)
			}
		}
	}
	for i := range 3 {
		if w := do("/base"); w.Code != 200 {
			t.Fatalf("/base request %d: status %d, want 200", i+1, w.Code)
		}
	}
	keys := client.Keys(context.Background(), "rate:*").Val()
	if want := "rate:/peer:" + httplimit.HashKey("secret-key-1"); len(keys) != 1 || keys[0] != want {
		t.Fatalf("redis_rate keys %v, want [%s]", keys, want)
	}
}

func TestRedisRateRouteConfigErrors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"redis: redis://127.0.0.1:1\nextra_routes:\n  - path: /a\n    limits: [\"gcra:1/1s\"]\n    limiter: nginx\n", `test.yaml:5: extra_routes[0].limiter: unknown limiter "nginx"`},
		{"extra_routes:\n  - path: /a\n    limits: [\"gcra:1/1s\"]\n    limiter: redis_rate\n", `test.yaml:4: extra_routes[0].limiter: redis_rate keeps its state in Redis`},
		{"redis: redis://127.0.0.1:1\nextra_routes:\n  - path: /a\n    limits: [\"gcra:1/1s\", \"gcra:10/1m\"]\n    limiter: redis_rate\n", `test.yaml:4: extra_routes[0].limits: redis_rate applies one limit per route, not 2`},
		{"redis: redis://127.0.0.1:1\nextra_routes:\n  - path: /a\n    limits: [\"fixed_window:1/1s\"]\n    limiter: redis_rate\n", `test.yaml:4: extra_routes[0].limits[0]: redis_rate enforces GCRA, not fixed_window`},
		{"redis: redis://127.0.0.1:1\nextra_routes:\n  - path: /a\n    limits: [\"gcra:1.5/1s\"]\n    limiter: redis_rate\n", `test.yaml:4: extra_routes[0].limits[0]: redis_rate takes a whole rate`},
		{"redis: redis://127.0.0.1:1\nbaseline_routes: true\nextra_routes:\n  - path: /a\n    baseline: true\n    limiter: redis_rate\n", `test.yaml:6: extra_routes[0].limiter: a baseline route bypasses the limiter`},
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

func TestRedisRateLimit(t *testing.T) {
	got, err := RedisRateLimit(limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 20, Period: 60e9, Burst: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got.Rate != 20 || got.Burst != 5 || got.Period != 60e9 {
		t.Fatalf("RedisRateLimit = %+v, want 20 per minute, burst 5", got)
	}
}
