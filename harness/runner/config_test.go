package runner

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
)

// TestInstanceConfigIsAcceptedBySampleAPI: every shipped scenario's
// instance configurations, written to a file, parse strictly and validate
// in the sample API and read back as the typed values the runner wrote:
// policies, durations and names cross to the instance once, unchanged.
func TestInstanceConfigIsAcceptedBySampleAPI(t *testing.T) {
	infos, err := scenarios.List()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, in := range infos {
		t.Run(in.Name, func(t *testing.T) {
			sc, err := scenarios.Lookup(in.Name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Target.Instances == 0 {
				t.Skip("external target: no instance configuration")
			}
			for i := range sc.Target.Instances {
				want := InstanceConfig(sc, i, "redis://127.0.0.1:1/0", "")
				if err := ApplyPlans(&want, sc, "3f9a1c07"); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, in.Name+"-"+want.Instance+".yaml")
				if err := WriteInstanceConfig(path, want); err != nil {
					t.Fatal(err)
				}
				got, err := sampleapi.LoadConfig(path)
				if err != nil {
					data, _ := os.ReadFile(path)
					t.Fatalf("sample API rejects the generated configuration: %v\n%s", err, data)
				}
				if err := got.Validate(); err != nil {
					t.Fatalf("generated configuration is invalid: %v", err)
				}
				if got.Instance != scenarios.InstanceName(i) || got.StoreTimeout != sc.Target.StoreTimeout ||
					got.FailureMode != string(sc.Target.FailureMode) || got.Instances != sc.Target.Instances ||
					got.ClockOffset != sc.Target.ClockSkew[got.Instance] || got.Redis != want.Redis {
					t.Fatalf("read back %+v, want %+v", got, want)
				}
				if got, want := len(got.ExtraRoutes), len(sc.Target.Routes); got != want {
					t.Fatalf("%d routes in the configuration, want %d", got, want)
				}
				baseline := false
				for j, rt := range sc.Target.Routes {
					baseline = baseline || rt.Baseline()
					if len(sc.Identities.Groups) > 0 {
						rt.Policies = nil // the groups' plans replace them (ApplyPlans)
					}
					if !slices.Equal(got.ExtraRoutes[j].Limits, rt.Policies) {
						t.Fatalf("route %s: limits read back %v, want %v", rt.Path, got.ExtraRoutes[j].Limits, rt.Policies)
					}
				}
				if got.BaselineRoutes != baseline {
					t.Fatalf("baseline_routes = %v, want %v: on exactly when the scenario has a baseline route", got.BaselineRoutes, baseline)
				}
			}
		})
	}
}

// TestInstanceConfigRouteLimiter: a route a scenario gives to redis_rate is
// given to redis_rate in the instance's configuration, which the sample API
// accepts.
func TestInstanceConfigRouteLimiter(t *testing.T) {
	sc, err := scenarios.LoadFile("../../scenarios/bench/overhead-vs-redis-rate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := InstanceConfig(sc, 0, "redis://127.0.0.1:1/0", "")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, er := range cfg.ExtraRoutes {
		got[er.Path] = er.Limiter
	}
	want := map[string]string{"/api/reference": "", "/api/redis-rate": sampleapi.LimiterRedisRate, "/api/baseline": ""}
	if !maps.Equal(got, want) {
		t.Fatalf("route limiters %v, want %v", got, want)
	}
}

// TestInstanceConfigFields: what a drill's instances are told, and that the
// Redis URL stays out of reach of other users.
func TestInstanceConfigFields(t *testing.T) {
	sc, err := scenarios.Lookup("drill-clock-skew")
	if err != nil {
		t.Fatal(err)
	}
	cfg := InstanceConfig(sc, 1, "redis://:secret@127.0.0.1:7000/0", "no-ttl")
	checks := []struct {
		name      string
		got, want any
	}{
		{"Instance", cfg.Instance, "instance-2"},
		{"ClockOffset", cfg.ClockOffset, time.Hour},
		{"Store", cfg.Store, sampleapi.StoreRedis},
		{"Redis", cfg.Redis, "redis://:secret@127.0.0.1:7000/0"},
		{"Faulty", cfg.Faulty, "no-ttl"},
		{"Instances", cfg.Instances, sc.Target.Instances},
		{"LogLevel", cfg.LogLevel, slog.LevelWarn},
		{"Limiter", cfg.Limiter, ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got := InstanceConfig(sc, 0, "redis://127.0.0.1:7000/0", "").ClockOffset; got != 0 {
		t.Errorf("instance-1 ClockOffset = %v, want 0", got)
	}
	path := filepath.Join(t.TempDir(), "instance-2.yaml")
	if err := WriteInstanceConfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("config file mode = %v, want %v", got, want)
	}
	peer, err := scenarios.LoadFile("../../scenarios/peers/peer-redis-rate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pc := InstanceConfig(peer, 0, "redis://127.0.0.1:7000/0", "")
	if got := pc.Limiter; got != sampleapi.LimiterRedisRate {
		t.Errorf("peer redis_rate: Limiter = %q, want %q", got, sampleapi.LimiterRedisRate)
	}
	if err := pc.Validate(); err != nil {
		t.Errorf("peer redis_rate configuration is invalid: %v", err)
	}
}

// TestInstanceConfigTrustsTheHops: the sample API trusts the harness's
// loopback connection, and the proxies it appends only when the scenario
// declares more than one trusted hop.
func TestInstanceConfigTrustsTheHops(t *testing.T) {
	tests := []struct {
		scenario string
		want     string
	}{
		{"quickstart", ""},
		{"ipv6-prefix", "127.0.0.0/8 ::1/128 2001:db8::/32"},
	}
	for _, tt := range tests {
		sc, err := scenarios.Lookup(tt.scenario)
		if err != nil {
			t.Fatal(err)
		}
		cfg := InstanceConfig(sc, 0, "redis://127.0.0.1:7000/0", "")
		if got := strings.Join(cfg.TrustedProxies, " "); got != tt.want {
			t.Errorf("%s: TrustedProxies = %q, want %q", tt.scenario, got, tt.want)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", tt.scenario, err)
		}
	}
}
