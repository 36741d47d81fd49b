package main

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/sampleapi"
)

// TestServeConfigFileAlone: the file rlbench run writes for an instance is
// all `rlbench serve --config FILE` needs; no flag repeats a setting.
func TestServeConfigFileAlone(t *testing.T) {
	t.Setenv(sampleapi.RedisURLEnv, "")
	cfgPath := filepath.Join(t.TempDir(), "instance-2.yaml")
	writeFile(t, cfgPath, `instance: instance-2
log_level: warn
store: redis
redis: redis://:secret@127.0.0.1:7000/0
failure_mode: fallback
store_timeout: 75ms
instances: 3
clock_offset: 1h
faulty: non-atomic:5ms
any_key: true
extra_routes:
  - path: /api/items
    limits: ["gcra:10/1s,burst=5"]
`)
	c := &serveCommand{}
	f, set, err := c.parse([]string{"--config", cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.configure(set)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Instance", cfg.Instance, "instance-2"},
		{"LogLevel", cfg.LogLevel, slog.LevelWarn},
		{"Limiter", cfg.Limiter, sampleapi.LimiterReference},
		{"Store", cfg.Store, "redis"},
		{"Redis", cfg.Redis, "redis://:secret@127.0.0.1:7000/0"},
		{"FailureMode", cfg.FailureMode, "fallback"},
		{"StoreTimeout", cfg.StoreTimeout, 75 * time.Millisecond},
		{"Instances", cfg.Instances, 3},
		{"ClockOffset", cfg.ClockOffset, time.Hour},
		{"Faulty", cfg.Faulty, "non-atomic:5ms"},
		{"ExtraRoutes[0].Limits[0]", cfg.ExtraRoutes[0].Limits[0], limiter.Limit{Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 5}},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Flags still override the file, as for a person running serve by hand.
	f, set, err = c.parse([]string{"--config", cfgPath, "--store-timeout", "20ms", "--log-level", "debug", "--limiter", "reference", "--faulty", "no-ttl"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = f.configure(set); err != nil {
		t.Fatal(err)
	}
	if cfg.StoreTimeout != 20*time.Millisecond || cfg.LogLevel != slog.LevelDebug || cfg.Faulty != "no-ttl" {
		t.Errorf("flags lost: store timeout %v, log level %v, faulty %q", cfg.StoreTimeout, cfg.LogLevel, cfg.Faulty)
	}
}

// TestServeRedisURLFromEnv: the Redis URL can stay off the command line;
// the file and the flag take precedence over the environment.
func TestServeRedisURLFromEnv(t *testing.T) {
	t.Setenv(sampleapi.RedisURLEnv, "redis://:env@127.0.0.1:7001/0")
	c := &serveCommand{}
	f, set, err := c.parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.configure(set)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Redis != "redis://:env@127.0.0.1:7001/0" || cfg.Store != sampleapi.StoreRedis {
		t.Fatalf("from the environment: redis %q store %q, want the env URL and the redis store", cfg.Redis, cfg.Store)
	}
	cfgPath := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, cfgPath, "redis: redis://127.0.0.1:7002/0\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", cfgPath}, "redis://127.0.0.1:7002/0"},
		{[]string{"--config", cfgPath, "--redis", "redis://127.0.0.1:7003/0"}, "redis://127.0.0.1:7003/0"},
	} {
		f, set, err := c.parse(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if cfg, err = f.configure(set); err != nil {
			t.Fatal(err)
		}
		if cfg.Redis != tc.want {
			t.Errorf("%q: Redis = %q, want %q", tc.args, cfg.Redis, tc.want)
		}
	}
}
