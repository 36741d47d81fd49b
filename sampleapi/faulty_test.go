package sampleapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios/yamlstrict"
)

func TestFaultyConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown variant", "faulty: atomic\n", "faulty: unknown faulty variant"},
		{"needs redis", "store: memory\nfaulty: non-atomic\n", "keeps its state in Redis"},
		{"bad parameter", "redis: redis://127.0.0.1:7000/0\nfaulty: non-atomic:soon\n", "want a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig("c.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Validate()
			var ce *yamlstrict.Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want a *ConfigError containing %q", err, tc.want)
			}
			if ce.Line != 1 && tc.name == "unknown variant" {
				t.Errorf("line = %d, want 1", ce.Line)
			}
		})
	}
	cfg, err := ParseConfig("c.yaml", []byte("redis: redis://127.0.0.1:7000/0\nfaulty: no-timeout\nfailure_mode: open\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

// TestOpenFaulty: the variant replaces the reference; a private bucket per
// instance is a memory store, wrapped like the reference in the declared
// failure mode; the leftmost-xff variant wraps the handler only.
func TestOpenFaulty(t *testing.T) {
	cfg := Config{Store: StoreMemory, Faulty: "private-bucket", FailureMode: "open"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	lim, closeLim, err := OpenLimiter(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLim()
	l := limiter.PerMinute(1, 1)
	if d, err := lim.AllowN(context.Background(), "k", 1, l); err != nil || !d.Allowed {
		t.Fatalf("first: %+v, %v", d, err)
	}
	if d, err := lim.AllowN(context.Background(), "k", 1, l); err != nil || d.Allowed {
		t.Fatalf("second: %+v, %v; want rejected", d, err)
	}

	var remote string
	inner := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { remote = r.RemoteAddr })
	for _, tc := range []struct{ faulty, want string }{{"", "127.0.0.1:5555"}, {"leftmost-xff", "203.0.113.66:0"}} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "127.0.0.1:5555"
		r.Header.Set("X-Forwarded-For", "203.0.113.66, 10.0.0.1")
		faultyHandler(Config{Faulty: tc.faulty}, inner).ServeHTTP(httptest.NewRecorder(), r)
		if remote != tc.want {
			t.Errorf("faulty %q: RemoteAddr = %s, want %s", tc.faulty, remote, tc.want)
		}
	}
}
