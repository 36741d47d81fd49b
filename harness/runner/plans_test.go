package runner

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
)

func TestMonthPeriodIsTheSampleAPIs(t *testing.T) {
	if scenarios.MonthPeriod != sampleapi.MonthPeriod {
		t.Fatalf("scenarios.MonthPeriod = %v, sampleapi.MonthPeriod = %v; a plan's monthly quota must mean one window", scenarios.MonthPeriod, sampleapi.MonthPeriod)
	}
}

// TestApplyPlans: the plans scenario's instance configuration lists every
// key of every group (spares included) with its group's plan, gives the
// keys of no group the route's policy as any_key's plan, takes the
// limits off the route, and the sample API that reads the file back
// holds each key to its own plan.
func TestApplyPlans(t *testing.T) {
	sc, err := scenarios.Lookup("plans")
	if err != nil {
		t.Fatal(err)
	}
	const run = scenarios.RunID("3f9a1c07")
	cfg := InstanceConfig(sc, 0, "redis://127.0.0.1:1/0", "")
	if err := ApplyPlans(&cfg, sc, run); err != nil {
		t.Fatal(err)
	}
	plan := map[string]int64{} // key → burst
	for _, k := range cfg.Keys {
		plan[k.Key] = k.RateLimitBurst
		if k.Name != k.Key {
			t.Errorf("generated key %s is named %q, want its label", k.Key, k.Name)
		}
	}
	for _, s := range sc.Identities.Sets() {
		want := map[string]int64{"": 0, "free": 10, "pro": 100}[s.Group]
		for _, idx := range append(indexes(s.First, s.Count), s.Spare) {
			key := sc.Identities.Identity(run, idx).Value
			if got, listed := plan[key]; listed != (s.Group != "") || got != want {
				t.Errorf("key %s (set %q): listed %v with burst %d; want listed %v, burst %d", key, s.Group, listed, got, s.Group != "", want)
			}
		}
	}
	if got, want := len(cfg.Keys), (5+1)+(2+1); got != want {
		t.Errorf("%d keys listed, want %d", got, want)
	}
	if !cfg.AnyKey || cfg.AnyKeyPlan == nil || cfg.AnyKeyPlan.RateLimitPerMinute != 120 || cfg.AnyKeyPlan.RateLimitBurst != 20 {
		t.Errorf("AnyKey %v, AnyKeyPlan %+v; want any key on 120/min, burst 20", cfg.AnyKey, cfg.AnyKeyPlan)
	}
	if cfg.Algorithm != limiter.GCRA {
		t.Errorf("Algorithm = %q, want gcra", cfg.Algorithm)
	}
	for _, r := range cfg.ExtraRoutes {
		if len(r.Limits) != 0 || r.Baseline {
			t.Errorf("route %s keeps limits %v (baseline %v); the plans replace them", r.Path, r.Limits, r.Baseline)
		}
	}

	// The file the instance reads, and what it does with it.
	path := filepath.Join(t.TempDir(), "instance-1.yaml")
	if err := WriteInstanceConfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := sampleapi.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	got.Store, got.Redis = sampleapi.StoreMemory, ""
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	srv, err := sampleapi.NewServer(got, limiter.NewMemoryStore(), sampleapi.NewStaticKeys(got.Keys), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	admitted := func(key string, n int) int {
		ok := 0
		for range n {
			req := httptest.NewRequest(http.MethodGet, "/api/items", nil)
			req.Header.Set("X-API-Key", key)
			w := httptest.NewRecorder()
			srv.Handler().ServeHTTP(w, req)
			if w.Code == http.StatusOK {
				ok++
			}
		}
		return ok
	}
	for _, tt := range []struct {
		key  string
		want int
	}{
		{sc.Identities.Identity(run, 2).Value, 10},  // free: burst 10
		{sc.Identities.Identity(run, 7).Value, 100}, // pro: burst 100
		{sc.Identities.Identity(run, 0).Value, 20},  // no group: the route's burst 20
	} {
		// Sent back to back, well within a second: at most one more unit
		// can have refilled (pro's 10/s).
		if got := admitted(tt.key, 150); got < tt.want || got > tt.want+1 {
			t.Errorf("key %s: %d of 150 admitted, want its burst %d", tt.key, got, tt.want)
		}
	}
}

func indexes(first, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// TestApplyPlansAllGrouped: with every identity in a group, unknown keys
// are refused, and a keys file's keys are listed by their place.
func TestApplyPlansAllGrouped(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pro.txt"), "pk_live_a\npk_live_b\n")
	sc := parseScenario(t, filepath.Join(dir, "s.yaml"), `name: grouped
description: every key in a group
target:
  instances: 1
  routes:
    - path: /api/items
      policies: ["gcra:10/1s,burst=10"]
identities:
  groups:
    - {name: free, count: 2, policies: ["token_bucket:1/1s,burst=5", "fixed_window:1000/30d"]}
    - {name: pro, keys_file: pro.txt, policies: ["token_bucket:10/1s,burst=50"]}
traffic:
  - {kind: burst, requests: 10}
`)
	cfg := InstanceConfig(sc, 0, "redis://127.0.0.1:1/0", "")
	if err := ApplyPlans(&cfg, sc, "3f9a1c07"); err != nil {
		t.Fatal(err)
	}
	if cfg.AnyKey || cfg.AnyKeyPlan != nil {
		t.Errorf("AnyKey %v, AnyKeyPlan %v; want unknown keys refused", cfg.AnyKey, cfg.AnyKeyPlan)
	}
	var names []string
	for _, k := range cfg.Keys {
		names = append(names, k.Name)
	}
	if want := []string{"free-3f9a1c07-0000", "free-3f9a1c07-0001", "free-3f9a1c07-0002", "pro#1", "pro#2"}; !slices.Equal(names, want) {
		t.Errorf("keys %v, want %v", names, want)
	}
	if k := cfg.Keys[0]; k.RateLimitPerMinute != 60 || k.RateLimitBurst != 5 || k.MonthlyQuota != 1000 {
		t.Errorf("free's plan %+v, want 60/min, burst 5, 1000 a month", k.PlanConfig)
	}
	if k := cfg.Keys[3]; k.Key != "pk_live_a" || k.RateLimitPerMinute != 600 {
		t.Errorf("pro#1 = %+v", k)
	}
	if cfg.Algorithm != limiter.TokenBucket {
		t.Errorf("Algorithm = %q, want token_bucket", cfg.Algorithm)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the sample API rejects the configuration: %v", err)
	}
}

// TestHeaderPolicies: the history header holds each group's policies for
// its keys ahead of the routes' own, claims replace them, and the checker
// reads them back as rules that judge each key by its group's.
func TestHeaderPolicies(t *testing.T) {
	sc, err := scenarios.Lookup("plans")
	if err != nil {
		t.Fatal(err)
	}
	r := New(Options{})
	want := []history.RoutePolicy{
		{Route: "/api/items", Key: "free-*", Limits: []string{"gcra:60/1m,burst=10"}},
		{Route: "/api/items", Key: "pro-*", Limits: []string{"gcra:600/1m,burst=100"}},
		{Route: "/api/items", Limits: []string{"gcra:120/1m,burst=20"}},
	}
	got := r.headerPolicies(sc)
	if !slices.EqualFunc(got, want, func(a, b history.RoutePolicy) bool {
		return a.Route == b.Route && a.Key == b.Key && slices.Equal(a.Limits, b.Limits)
	}) {
		t.Fatalf("headerPolicies = %+v, want %+v", got, want)
	}
	pro, _ := limiter.ParseLimit("gcra:600/1m,burst=100")
	claimed := New(Options{GroupClaims: map[string][]limiter.Limit{"free": {pro}}}).headerPolicies(sc)
	if got := claimed[0].Limits; !slices.Equal(got, []string{"gcra:600/1m,burst=100"}) || claimed[0].Key != "free-*" {
		t.Errorf("claimed free = %+v, want pro's policy", claimed[0])
	}

	hdr := history.NewHeader(time.Now())
	hdr.Policies = got
	p, err := checker.PolicyFromHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 3 || p.Rules[0].Key != "free-*" || p.Rules[1].Key != "pro-*" || p.Rules[2].Key != "" {
		t.Fatalf("rules %+v; want free's, pro's, then the route's", p.Rules)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// parseScenario writes src to path and loads it, so that the files it
// names are read beside it.
func parseScenario(t *testing.T, path, src string) *scenarios.Scenario {
	t.Helper()
	writeFile(t, path, src)
	sc, err := scenarios.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
