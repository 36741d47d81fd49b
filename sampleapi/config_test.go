package sampleapi

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios/yamlstrict"
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
			want: `test.yaml:2: header: unknown key "header"; did you mean "headers"?`,
		},
		{
			name: "unknown key inside a key entry",
			yaml: "keys:\n  - key: a\n    rate_limit_per_minute: 1\n    rate_limit_brust: 2\n",
			want: `test.yaml:4: keys[0].rate_limit_brust: unknown key "rate_limit_brust"; did you mean "rate_limit_burst"?`,
		},
		{
			name: "bad burst names its line",
			yaml: "keys:\n  - key: a\n    rate_limit_per_minute: 1\n    rate_limit_burst: 2\n  - key: b\n    rate_limit_per_minute: 1\n    rate_limit_burst: 0\n",
			want: `test.yaml:7: keys[1].rate_limit_burst: 0 must be at least 1`,
		},
		{
			name: "duplicate key",
			yaml: "keys:\n  - key: a\n    rate_limit_per_minute: 1\n    rate_limit_burst: 2\n  - key: a\n    rate_limit_per_minute: 1\n    rate_limit_burst: 2\n",
			want: `test.yaml:5: keys[1].key: the same key as keys[0]`,
		},
		{
			name: "redis store without URL",
			yaml: "store: redis\n",
			want: `test.yaml:1: redis: the redis store needs a Redis URL; set redis: redis://HOST:6379/0 or pass --redis`,
		},
		{
			name: "sentinel without a master name",
			yaml: "redis: redis://127.0.0.1:6379/0\nredis_sentinel:\n  addrs: [127.0.0.1:26379]\n",
			want: `test.yaml:2: redis_sentinel.master: missing; give the name the Sentinels monitor the master under, such as mymaster`,
		},
		{
			name: "sentinel address without a port",
			yaml: "redis: redis://127.0.0.1:6379/0\nredis_sentinel:\n  master: mymaster\n  addrs: [127.0.0.1:26379, localhost]\n",
			want: `test.yaml:4: redis_sentinel.addrs[1]: "localhost" is not host:port`,
		},
		{
			name: "sentinel without the redis store",
			yaml: "store: memory\nredis_sentinel:\n  master: mymaster\n  addrs: [127.0.0.1:26379]\n",
			want: `test.yaml:2: redis_sentinel: the Sentinel names the master of the Redis store; set redis: too`,
		},
		{
			name: "negative pool",
			yaml: "redis: redis://127.0.0.1:6379/0\nredis_pool_size: -1\n",
			want: `test.yaml:2: redis_pool_size: -1: give the most connections to Redis, above 0, or leave it out for ` + strconv.Itoa(DefaultRedisPoolSize()),
		},
		{
			name: "unknown store",
			yaml: "store: disk\n",
			want: `test.yaml:1: store: unknown store "disk"; use redis or memory`,
		},
		{
			name: "unknown route",
			yaml: "routes:\n  reports:\n    cost: 3\n",
			want: `test.yaml:2: routes.reports: unknown route; valid routes are data, search and export`,
		},
		{
			name: "bad route limit",
			yaml: "routes:\n  search:\n    limits:\n      - \"gcra:10/1s\"\n      - \"gcra:ten/1s\"\n",
			want: `test.yaml:5: routes.search.limits[1]: invalid limit: "gcra:ten/1s": rate "ten" is not a number`,
		},
		{
			name: "bad header style",
			yaml: "headers: ietf,x\n",
			want: `test.yaml:1: headers: unknown header style "x"; use ietf, draft06, legacy or none`,
		},
		{
			name: "bad trusted proxy",
			yaml: "trusted_proxies: [10.0.0.0/8, proxy.local]\n",
			want: `test.yaml:1: trusted_proxies: trusted proxy "proxy.local": want a CIDR prefix such as 10.0.0.0/8 or an address`,
		},
		{
			name: "window algorithm for the per-minute tier",
			yaml: "algorithm: fixed_window\n",
			want: `test.yaml:1: algorithm: "fixed_window"; use gcra or token_bucket`,
		},
		{
			name: "anonymous plan without rate",
			yaml: "anonymous:\n  rate_limit_burst: 5\n",
			want: `test.yaml:1: anonymous.rate_limit_per_minute: 0 must be positive (units per minute, fractions allowed)`,
		},
		{
			name: "instance name unfit for a header",
			yaml: "instance: \"api 1\"\n",
			want: `test.yaml:1: instance: "api 1": use printable ASCII without spaces; it is sent in the X-Instance header`,
		},
		{
			name: "baseline route without baseline_routes",
			yaml: "extra_routes:\n  - path: /api/items-baseline\n    baseline: true\n",
			want: `test.yaml:3: extra_routes[0].baseline: a baseline route serves any caller with the limiter bypassed; ` +
				`set baseline_routes: true to serve it (for overhead measurement), or remove it`,
		},
		{
			name: "malformed Redis URL, password redacted",
			yaml: "redis: redis://:hunter2@127.0.0.1:bad/0\n",
			want: `test.yaml:1: redis: redis://:xxxxx@127.0.0.1:bad/0: parse "redis://:xxxxx@127.0.0.1:bad/0": ` +
				`invalid port ":bad" after host; write it as redis://[:PASSWORD@]HOST:PORT/DB`,
		},
		{
			name: "read timeout shorter than the header timeout",
			yaml: "read_header_timeout: 5s\nread_timeout: 2s\n",
			want: `test.yaml:2: read_timeout: 2s is shorter than read_header_timeout 5s: a request's body would have no time left; ` +
				`make it longer, or shorten read_header_timeout`,
		},
		{
			name: "negative concurrency cap",
			yaml: "max_concurrent_requests: -1\n",
			want: `test.yaml:1: max_concurrent_requests: -1 is negative`,
		},
		{
			name: "lease beside a route's other limit",
			yaml: "store: memory\nroutes:\n  data:\n    limits: [\"fixed_window:1000/1m\", \"gcra:50/1s,burst=20,lease=5/200ms\"]\n",
			want: `test.yaml:4: routes.data.limits[1]: invalid limit: lease: lease=5/200ms: a lease applies to a rule of one limit, and this one has 2; remove lease= or split the route's policies`,
		},
		{
			name: "lease beside the callers' plans",
			yaml: "store: memory\nkeys:\n  - {key: k1, rate_limit_per_minute: 60, rate_limit_burst: 10}\nextra_routes:\n  - path: /api/items\n    limits: [\"gcra:50/1s,burst=20,lease=5/200ms\"]\n",
			want: `test.yaml:6: extra_routes[0].limits[0]: invalid limit: lease: lease=5/200ms: a lease applies to a rule of one limit, and callers with a plan (keys) are held to its limits beside the route's; remove lease= or the plans`,
		},
		{
			name: "lease of one token",
			yaml: "store: memory\nany_key: true\nextra_routes:\n  - path: /api/items\n    limits: [\"gcra:50/1s,burst=20,lease=1/200ms\"]\n",
			want: `test.yaml:5: extra_routes[0].limits[0]: invalid limit: lease: lease=1/200ms never grants: a store grants a lease only when it holds more units than the request's cost, so a lease needs at least 2 tokens; write lease=N/DURATION with N of 2 or more, as in lease=10/900ms, or remove it`,
		},
		{
			name: "wrong type",
			yaml: "shadow: maybe\n",
			want: "test.yaml:1: shadow: cannot unmarshal !!str `maybe` into true or false",
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
			var ce *yamlstrict.Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %T is not a *yamlstrict.Error wrapping ErrInvalidConfig", err)
			}
		})
	}
}

// A lease alone on a route, with no plan beside it, is served.
func TestConfigLeaseAlone(t *testing.T) {
	cfg, err := ParseConfig("test.yaml", []byte("store: memory\nany_key: true\nextra_routes:\n  - path: /api/items\n    limits: [\"gcra:50/1s,burst=20,lease=5/200ms\"]\n"))
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
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

// TestConfigRoundTrip: a configuration written by Marshal reads back with
// ParseConfig as the same typed values; limits cross as their spec text,
// once.
func TestConfigRoundTrip(t *testing.T) {
	gcra := limiter.Limit{Name: "items", Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 5}
	fixed := limiter.Window(limiter.FixedWindow, 100, time.Minute)
	want := Config{
		Instance: "instance-2", LogLevel: slog.LevelWarn, Limiter: LimiterReference,
		Store: StoreRedis, Redis: "redis://:pw@127.0.0.1:7000/0", FailureMode: "fallback",
		StoreTimeout: 50 * time.Millisecond, Instances: 3, ClockOffset: -90 * time.Minute, Faulty: "non-atomic:5ms",
		AnyKey: true, DecisionTimeHeader: true, TrustedProxies: []string{"127.0.0.0/8"}, BaselineRoutes: true,
		ReadTimeout: 15 * time.Second, MaxConcurrentRequests: 64, MaxBodyBytes: 4096,
		Routes: map[string]RouteConfig{"search": {Cost: 2, Limits: []limiter.Limit{fixed}}},
		ExtraRoutes: []ExtraRoute{
			{Method: "GET", Path: "/api/items", Cost: 1, Limits: []limiter.Limit{gcra, fixed}},
			{Method: "GET", Path: "/api/items-baseline", Cost: 1, Baseline: true},
		},
		Keys: []KeyConfig{{Name: "k", Key: "secret", PlanConfig: PlanConfig{RateLimitPerMinute: 60, RateLimitBurst: 10}}},
	}
	data, err := want.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "- gcra:10/1s,burst=5,name=items\n") || !strings.Contains(string(data), "store_timeout: 50ms\n") {
		t.Fatalf("Marshal does not write limits and durations as a person would:\n%s", data)
	}
	got, err := ParseConfig("rt.yaml", data)
	if err != nil {
		t.Fatalf("ParseConfig of Marshal's output: %v\n%s", err, data)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Instance", got.Instance, want.Instance},
		{"LogLevel", got.LogLevel, want.LogLevel},
		{"Limiter", got.Limiter, want.Limiter},
		{"Redis", got.Redis, want.Redis},
		{"FailureMode", got.FailureMode, want.FailureMode},
		{"StoreTimeout", got.StoreTimeout, want.StoreTimeout},
		{"Instances", got.Instances, want.Instances},
		{"ClockOffset", got.ClockOffset, want.ClockOffset},
		{"Faulty", got.Faulty, want.Faulty},
		{"Routes.search.Limits[0]", got.Routes["search"].Limits[0], fixed},
		{"ExtraRoutes[0].Limits[0]", got.ExtraRoutes[0].Limits[0], gcra},
		{"ExtraRoutes[0].Limits[1]", got.ExtraRoutes[0].Limits[1], fixed},
		{"ExtraRoutes[1].Baseline", got.ExtraRoutes[1].Baseline, true},
		{"BaselineRoutes", got.BaselineRoutes, true},
		{"ReadTimeout", got.ReadTimeout, 15 * time.Second},
		{"ReadHeaderTimeout", got.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"MaxConcurrentRequests", got.MaxConcurrentRequests, 64},
		{"MaxBodyBytes", got.MaxBodyBytes, int64(4096)},
		{"Keys[0].RateLimitBurst", got.Keys[0].RateLimitBurst, int64(10)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestLimiterConfig(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"limiter: redis_rate\nredis: redis://127.0.0.1:7000/0\n", ""},
		{"limiter: reference\n", ""},
		{"limiter: envoy\n", `test.yaml:1: limiter: unknown limiter "envoy"; use reference or redis_rate`},
		{"limiter: redis_rate\n", `test.yaml:1: limiter: redis_rate keeps its state in Redis`},
		{"limiter: redis_rate\nredis: redis://127.0.0.1:7000/0\nfaulty: no-ttl\n", `test.yaml:3: faulty: a faulty variant replaces the reference limiter`},
		{"log_level: loud\n", `test.yaml:1: log_level: slog: level string "loud": unknown name`},
		{"extra_routes:\n  - path: /a\n    limits: [{rate: 1}]\n", `test.yaml:3: extra_routes[0].limits[0]: want a single value, not a mapping`},
	}
	for _, tt := range tests {
		cfg, err := ParseConfig("test.yaml", []byte(tt.yaml))
		if err == nil {
			err = cfg.Validate()
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("config %q: %v", tt.yaml, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("config %q: error = %v\nwant prefix %q", tt.yaml, err, tt.want)
		}
	}
}

// TestConfigBuiltInGo: a configuration that did not come from a file still
// has its limits validated, and its errors name "(config)".
func TestConfigBuiltInGo(t *testing.T) {
	cfg := Config{ExtraRoutes: []ExtraRoute{{Path: "/a", Limits: []limiter.Limit{{Algorithm: limiter.GCRA}}}}}
	err := cfg.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "(config): extra_routes[0].limits[0]: invalid limit") || !errors.Is(err, limiter.ErrInvalidLimit) {
		t.Fatalf("Validate = %v, want an invalid limit at (config): extra_routes[0].limits[0]", err)
	}
}
