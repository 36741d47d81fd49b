// The scenarios of this directory are measurements rather than gates:
// `rlbench run scenarios/bench/`. Their bounds are goals that a loaded
// machine may miss, so they are not among the shipped scenarios every run
// must pass.
package bench_test

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// TestOverheadVersusRedisRate: the comparison runs both limiters under one
// policy in one process, alternating rounds of one limited route each
// beside the baseline, and bounds the ratio of their overheads.
func TestOverheadVersusRedisRate(t *testing.T) {
	sc, err := scenarios.LoadFile("overhead-vs-redis-rate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ov := sc.Checks.Overhead
	if ov == nil || ov.Versus == "" || ov.RatioP50 <= 0 || ov.RatioP99 <= 0 {
		t.Fatalf("overhead check %+v: want p50 and p99 ratio bounds against another route", ov)
	}
	routes := map[string]scenarios.Route{}
	for _, rt := range sc.Target.Routes {
		routes[rt.Path] = rt
	}
	ref, peer := routes[ov.Route], routes[ov.Versus]
	if ref.Limiter != "" || peer.Limiter != scenarios.RouteRedisRate {
		t.Fatalf("limiters %q and %q, want the reference's and %s", ref.Limiter, peer.Limiter, scenarios.RouteRedisRate)
	}
	if len(ref.Policies) != 1 || len(peer.Policies) != 1 {
		t.Fatalf("policies %v and %v, want one each", ref.Policies, peer.Policies)
	}
	// The reference leases; otherwise both routes keep one and the same policy.
	unleased := ref.Policies[0]
	unleased.LeaseTokens, unleased.LeaseFor = 0, 0
	if !ref.Policies[0].Leased() || unleased != peer.Policies[0] {
		t.Fatalf("policies %v and %v, want the same but for the reference's lease", ref.Policies, peer.Policies)
	}
	if sc.Target.Instances != 1 {
		t.Fatalf("%d instances, want 1: both limiters in one process", sc.Target.Instances)
	}
	var last string
	for i, ph := range sc.Phases {
		if len(ph.Routes) != 2 || ph.Routes[1].Path != ov.Baseline {
			t.Fatalf("phase %s: routes %v, want one limited route and the baseline", ph.Name, ph.Routes)
		}
		limited := ph.Routes[0].Path
		if limited != ov.Route && limited != ov.Versus {
			t.Fatalf("phase %s: limited route %s, want %s or %s", ph.Name, limited, ov.Route, ov.Versus)
		}
		if i > 0 && limited == last {
			t.Fatalf("phase %s: %s twice in a row, want alternating rounds", ph.Name, limited)
		}
		last = limited
	}
}

// TestBurst1000: the burst measurement sends 1,000 requests planned within
// 5 ms over three instances.
func TestBurst1000(t *testing.T) {
	sc, err := scenarios.LoadFile("burst-1000.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.Target.Instances, 3; got != want {
		t.Errorf("%d instances, want %d", got, want)
	}
	if got, want := len(sc.Phases), 1; got != want {
		t.Fatalf("%d phases, want %d", got, want)
	}
	ph := sc.Phases[0]
	if ph.Kind != scenarios.Burst || ph.Requests != 1000 || ph.Spread != 5*time.Millisecond {
		t.Errorf("phase %s: %s of %d within %v, want a burst of 1000 within 5ms", ph.Name, ph.Kind, ph.Requests, ph.Spread)
	}
}
