package sampleapi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

func TestDefaultConfig(t *testing.T) {
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Store, StoreMemory; got != want {
		t.Errorf("Store = %q, want %q", got, want)
	}
	if got, want := len(cfg.Keys), 3; got != want {
		t.Fatalf("keys = %d, want %d", got, want)
	}
	if got, want := cfg.PlanRefresh, DefaultPlanRefresh; got != want {
		t.Errorf("PlanRefresh = %v, want %v", got, want)
	}
	if got, want := cfg.Routes["export"].Cost, int64(10); got != want {
		t.Errorf("export cost = %d, want %d", got, want)
	}
}

func TestShippedConfigsAreValid(t *testing.T) {
	files, err := filepath.Glob("config/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("config examples = %v (%v), want at least 3", files, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "-scenario.yaml") { // an rlbench scenario, checked by cmd/rlbench's compose test
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := LoadConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the whole error message
	}{
		{
			name: "unknown top-level key with suggestion",
			yaml: "algorithm: gcra\nheader: ietf\n",
			want: `test.yaml:2: header: invalid configuration: unknown key; did you mean "headers"?`,
		},
		{
			name: "unknown key inside a key entry",
			yaml: "keys:\n  - key: a\n    rate_limit_per_minute: 1\n    rate_limit_brust: 2\n",
			want: `test.yaml:4: rate_limit_brust: invalid configuration: unknown key; did you mean "rate_limit_burst"?`,
		},
		{
			name: "bad burst names its line",
			yaml: "keys:\n  - key: a\n    rate_limit_per_minute: 1\n    rate_limit_burst: 2\n  - key: b\n    rate_limit_per_minute: 1\n    rate_limit_burst: 0\n",
			want: `test.yaml:7: keys[1].rate_limit_burst: invalid configuration: 0 must be at least 1`,
		},
		{
			name: "duplicate key",
			yaml: "keys:\n  - key: a\n    rate_limit_per_minute: 1\n    rate_limit_burst: 2\n  - key: a\n    rate_limit_per_minute: 1\n    rate_limit_burst: 2\n",
			want: `test.yaml:5: keys[1].key: invalid configuration: the same key as keys[0]`,
		},
		{
			name: "redis store without URL",
			yaml: "store: redis\n",
			want: `test.yaml: redis: invalid configuration: the redis store needs a Redis URL; set redis: redis://HOST:6379/0 or pass --redis`,
		},
		{
			name: "unknown store",
			yaml: "store: disk\n",
			want: `test.yaml:1: store: invalid configuration: unknown store "disk"; use redis or memory`,
		},
		{
			name: "unknown route",
			yaml: "routes:\n  reports:\n    cost: 3\n",
			want: `test.yaml:2: routes.reports: invalid configuration: unknown route; valid routes are data, search and export`,
		},
		{
			name: "bad route limit",
			yaml: "routes:\n  search:\n    limits:\n      - \"gcra:10/1s\"\n      - \"gcra:ten/1s\"\n",
			want: `test.yaml:5: routes.search.limits[1]: invalid configuration: invalid limit: rate "ten" in "gcra:ten/1s" is not a number`,
		},
		{
			name: "bad header style",
			yaml: "headers: ietf,x\n",
			want: `test.yaml:1: headers: invalid configuration: unknown header style "x"; use ietf, draft06, legacy or none`,
		},
		{
			name: "bad trusted proxy",
			yaml: "trusted_proxies: [10.0.0.0/8, proxy.local]\n",
			want: `test.yaml:1: trusted_proxies: invalid configuration: trusted proxy "proxy.local": want a CIDR prefix such as 10.0.0.0/8 or an address`,
		},
		{
			name: "window algorithm for the per-minute tier",
			yaml: "algorithm: fixed_window\n",
			want: `test.yaml:1: algorithm: invalid configuration: "fixed_window"; use gcra or token_bucket`,
		},
		{
			name: "anonymous plan without rate",
			yaml: "anonymous:\n  rate_limit_burst: 5\n",
			want: `test.yaml:1: anonymous.rate_limit_per_minute: invalid configuration: 0 must be positive (units per minute, fractions allowed)`,
		},
		{
			name: "instance name unfit for a header",
			yaml: "instance: \"api 1\"\n",
			want: `test.yaml:1: instance: invalid configuration: "api 1": use printable ASCII without spaces; it is sent in the X-Instance header`,
		},
		{
			name: "wrong type",
			yaml: "shadow: maybe\n",
			want: "test.yaml:1: invalid configuration: cannot unmarshal !!str `maybe` into bool",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig("test.yaml", []byte(tt.yaml))
			if err == nil {
				err = cfg.Validate()
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := err.Error(); got != tt.want {
				t.Fatalf("error = %q\nwant    %q", got, tt.want)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %T is not a *ConfigError wrapping ErrInvalidConfig", err)
			}
		})
	}
}

func TestEmptyConfigIsDefaults(t *testing.T) {
	cfg, err := ParseConfig("empty.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != DefaultAddr || cfg.Algorithm != DefaultAlgorithm || cfg.ShutdownTimeout != DefaultShutdownTimeout {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error = %v, want os.ErrNotExist", err)
	}
}

func TestPlanLimits(t *testing.T) {
	p := Plan{PerMinute: 600, Burst: 100, MonthlyQuota: 5000}
	got := p.Limits(limiter.GCRA, "")
	want := []limiter.Limit{
		{Name: "minute", Algorithm: limiter.GCRA, Rate: 600, Period: time.Minute, Burst: 100},
		{Name: "month", Algorithm: limiter.FixedWindow, Rate: 5000, Period: 30 * 24 * time.Hour, Burst: 5000},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Limits = %+v, want %+v", got, want)
	}
	if got := (Plan{PerMinute: 1, Burst: 1}).Limits(limiter.TokenBucket, "anon-"); len(got) != 1 || got[0].Name != "anon-minute" {
		t.Fatalf("Limits without quota = %+v, want one anon-minute tier", got)
	}
	if !strings.HasPrefix(HashAPIKey("k"), "8254c329") {
		t.Fatalf("HashAPIKey(k) = %s, want the SHA-256 of k", HashAPIKey("k"))
	}
}
