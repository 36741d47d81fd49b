package traffic

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios"
)

// plannedKey is what a planned request is, its place in the plan aside.
type plannedKey struct {
	intended                  time.Duration
	identity, route, instance int
}

func keyOf(p Planned) plannedKey {
	return plannedKey{p.Intended, p.Identity, p.Route, p.Instance}
}

// everyScenario returns every scenario in the tree: the shipped ones and
// those under bench/, peers/ and mutation/.
func everyScenario(t *testing.T) []*scenarios.Scenario {
	t.Helper()
	var out []*scenarios.Scenario
	for _, dir := range []string{"", "bench", "peers", "mutation"} {
		scs, err := scenarios.Load(filepath.Join("../../scenarios", dir))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, scs...)
	}
	if len(out) < 50 {
		t.Fatalf("found %d scenarios, want every one in the tree", len(out))
	}
	return out
}

// onSharedRedis is sc as a sharded run can run it: a target rlbench
// starts keeps its budget in an external Redis every shard reaches (the
// plan does not depend on where the budget is kept).
func onSharedRedis(sc *scenarios.Scenario) *scenarios.Scenario {
	c := *sc
	if len(c.Target.External) == 0 {
		c.Redis.Provider, c.Redis.URL = scenarios.ProviderExternal, "redis://127.0.0.1:6379/0"
	}
	return &c
}

// withSpread returns sc, and when it has a hot identity or groups, sc
// with every one of them spread (shards.spread) as well.
func withSpread(sc *scenarios.Scenario) []*scenarios.Scenario {
	var spread []string
	if sc.Identities.Distribution == scenarios.Hot {
		spread = append(spread, scenarios.SpreadHot)
	}
	for _, g := range sc.Identities.Groups {
		spread = append(spread, g.Name)
	}
	if len(spread) == 0 || slices.Equal(sc.Shards.Spread, spread) {
		return []*scenarios.Scenario{sc}
	}
	c := *sc
	c.Shards.Spread = spread
	return []*scenarios.Scenario{sc, &c}
}

// TestPlanShardsPartition: for every scenario in the tree that a sharded
// run can fire, on its shared Redis, as it is and with its hot identity
// and groups spread over the shards, the plans of shards 0 to N−1 of N
// together are the unsharded plan, request for request (the same
// multiset of intended time, identity, route and instance), each request
// in exactly one shard; and shard 0 of 1 is the unsharded plan.
func TestPlanShardsPartition(t *testing.T) {
	sharded, refused, spread := 0, 0, 0
	for _, base := range everyScenario(t) {
		for _, sc := range withSpread(onSharedRedis(base)) {
			t.Run(base.Name+"/spread="+strings.Join(sc.Shards.Spread, ","), func(t *testing.T) {
				switch {
				case !testPartition(t, sc):
					refused++
				case len(sc.Shards.Spread) > 0:
					spread++
					fallthrough
				default:
					sharded++
				}
			})
		}
	}
	if sharded < 30 || refused < 10 || spread < 2 {
		t.Errorf("%d scenarios sharded (%d with spread identities), %d refused; want most sharded, some spread and the drills refused", sharded, spread, refused)
	}
}

// testPartition checks the shards' plans of sc against its whole plan, and
// reports whether sc is shardable at all.
func testPartition(t *testing.T, sc *scenarios.Scenario) bool {
	if err := sc.Shardable(); err != nil {
		if !errors.Is(err, scenarios.ErrNotShardable) {
			t.Fatalf("Shardable() = %v, want an error wrapping ErrNotShardable", err)
		}
		if len(sc.Faults) == 0 && sc.Target.Store == scenarios.StoreRedis {
			t.Fatalf("Shardable() = %v for a scenario without faults on a shared Redis", err)
		}
		return false
	}
	for i, ph := range sc.Phases {
		whole, err := Plan(sc, i, Whole)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(whole), ph.PlannedRequests(); got != want {
			t.Fatalf("phase %s: whole plan holds %d requests, the scenario plans %d", ph.Name, got, want)
		}
		for _, n := range []int{1, 2, 3, 5} {
			owner := map[int]int{} // Seq → shard
			var union []plannedKey
			for k := range n {
				part, err := Plan(sc, i, history.Shard{Index: k, Count: n})
				if err != nil {
					t.Fatal(err)
				}
				for j, p := range part {
					if prev, ok := owner[p.Seq]; ok {
						t.Fatalf("phase %s, %d shards: request %d is in shards %d and %d", ph.Name, n, p.Seq, prev, k)
					}
					owner[p.Seq] = k
					if got := Owner(sc, i, p, n); got != k {
						t.Fatalf("phase %s: request %d is in shard %d's plan, Owner says %d", ph.Name, p.Seq, k, got)
					}
					if j > 0 && p.Seq <= part[j-1].Seq {
						t.Fatalf("phase %s: shard %d/%d's plan is not in plan order at %d", ph.Name, k, n, j)
					}
					union = append(union, keyOf(p))
				}
			}
			if len(owner) != len(whole) {
				t.Fatalf("phase %s, %d shards: %d requests in the shards, %d in the whole plan", ph.Name, n, len(owner), len(whole))
			}
			if !sameRequests(union, whole) {
				t.Fatalf("phase %s, %d shards: the shards' plans are not the whole plan", ph.Name, n)
			}
		}
		one, err := Plan(sc, i, history.Shard{Index: 0, Count: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(one, whole) {
			t.Fatalf("phase %s: shard 0/1 differs from the whole plan", ph.Name)
		}
	}
	return true
}

// sameRequests reports whether got holds exactly the requests of want,
// each as often.
func sameRequests(got []plannedKey, want []Planned) bool {
	count := map[plannedKey]int{}
	for _, p := range want {
		count[keyOf(p)]++
	}
	for _, k := range got {
		count[k]--
	}
	for _, c := range count {
		if c != 0 {
			return false
		}
	}
	return len(got) == len(want)
}

// TestPlanWhole pins the unsharded plan to the schedules and the planner:
// a constant phase's requests are due at the schedule's times, a burst's
// at its bursts' offsets, an edge burst's around the edge, and the round
// robin over the instances runs on across phases.
func TestPlanWhole(t *testing.T) {
	sc := scenario(t, 3, oneRoute, "  count: 4", `  - {kind: constant, rate: 10/1s, duration: 1s}
  - {kind: burst, requests: 3, spread: 2ms, repeat: 2, gap: 10ms}
  - {kind: edge_burst, requests: 2, offset: 100ms, spread: 4ms, window: 1s}
  - {kind: idle, duration: 1s}
  - {kind: retry_after_probe, requests: 2}`)
	type want struct {
		intended []time.Duration
		bursts   []int
		instance []int
	}
	ms := time.Millisecond
	for i, w := range []want{
		{[]time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms, 600 * ms, 700 * ms, 800 * ms, 900 * ms},
			[]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}},
		{[]time.Duration{0, 1 * ms, 2 * ms, 12 * ms, 13 * ms, 14 * ms}, []int{0, 0, 0, 1, 1, 1}, []int{1, 2, 0, 1, 2, 0}},
		{[]time.Duration{-100 * ms, -96 * ms, 100 * ms, 104 * ms}, []int{0, 0, 1, 1}, []int{1, 2, 0, 1}},
		{nil, nil, nil},
		{[]time.Duration{0, 0, 0}, []int{0, 0, 0}, []int{2, 0, 1}},
	} {
		plan, err := Plan(sc, i, Whole)
		if err != nil {
			t.Fatal(err)
		}
		var intended []time.Duration
		var bursts, instances []int
		for k, p := range plan {
			if p.Seq != k {
				t.Fatalf("phase %d: request %d has Seq %d", i, k, p.Seq)
			}
			intended, bursts, instances = append(intended, p.Intended), append(bursts, p.Burst), append(instances, p.Instance)
		}
		if !slices.Equal(intended, w.intended) || !slices.Equal(bursts, w.bursts) || !slices.Equal(instances, w.instance) {
			t.Errorf("phase %d: intended %v, bursts %v, instances %v; want %v, %v, %v", i, intended, bursts, instances, w.intended, w.bursts, w.instance)
		}
		if sc.Phases[i].Kind == scenarios.RetryAfterProbe {
			for _, p := range plan {
				if p.Identity != sc.Identities.Count {
					t.Errorf("probe request %d from identity %d, want the spare %d", p.Seq, p.Identity, sc.Identities.Count)
				}
			}
		}
	}
	for _, bad := range []struct {
		phase int
		shard history.Shard
	}{{-1, Whole}, {5, Whole}, {0, history.Shard{Index: 2, Count: 2}}, {0, history.Shard{}}} {
		if _, err := Plan(sc, bad.phase, bad.shard); !errors.Is(err, ErrConfig) {
			t.Errorf("Plan(phase %d, shard %v) error = %v, want ErrConfig", bad.phase, bad.shard, err)
		}
	}
}

// TestOwner holds the ownership rule to its documented form on a hot
// distribution: by identity, the spread hot identity by Seq, the probe to
// shard 0; and checks what spreading buys, a balanced load.
func TestOwner(t *testing.T) {
	const ids = "  count: 10\n  distribution: hot\n  share: 0.8"
	traffic := "  - {kind: constant, rate: 1000/1s, duration: 2s}\n  - {kind: retry_after_probe, requests: 5}"
	tests := []struct {
		name   string
		spread []string
		// share is the least and most of the constant phase's requests
		// shard 0 of 2 sends.
		shareMin, shareMax float64
	}{
		{"by identity", nil, 0.85, 0.95}, // the hot identity 0 and half the rest
		{"hot spread", []string{scenarios.SpreadHot}, 0.47, 0.53},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := scenario(t, 2, oneRoute, ids, traffic)
			sc.Shards.Spread = tt.spread
			whole, err := Plan(sc, 0, Whole)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range whole {
				want := p.Identity % 3
				if p.Identity == 0 && len(tt.spread) > 0 {
					want = p.Seq % 3
				}
				if got := Owner(sc, 0, p, 3); got != want {
					t.Fatalf("Owner(request %d of identity %d, 3 shards) = %d, want %d", p.Seq, p.Identity, got, want)
				}
			}
			mine, err := Plan(sc, 0, history.Shard{Index: 0, Count: 2})
			if err != nil {
				t.Fatal(err)
			}
			if share := float64(len(mine)) / float64(len(whole)); share < tt.shareMin || share > tt.shareMax {
				t.Errorf("shard 0 of 2 sends %.3f of the requests, want [%v, %v]", share, tt.shareMin, tt.shareMax)
			}
			for k, want := range []int{6, 0, 0} {
				probe, err := Plan(sc, 1, history.Shard{Index: k, Count: 3})
				if err != nil {
					t.Fatal(err)
				}
				if len(probe) != want {
					t.Errorf("shard %d of 3 plans %d probe requests, want %d", k, len(probe), want)
				}
			}
		})
	}
}

// TestOwnSchedule: a shard's schedule holds its requests at the whole
// schedule's times, and a plan of every request leaves the schedule whole.
func TestOwnSchedule(t *testing.T) {
	sched := NewRampSchedule(10, 30, 2*time.Second)
	plan := []Planned{{Seq: 1, Intended: sched.At(1)}, {Seq: 4, Intended: sched.At(4)}, {Seq: 9, Intended: sched.At(9)}}
	own := ownSchedule(sched, plan)
	if got, want := own.N(), 3; got != want {
		t.Fatalf("N() = %d, want %d", got, want)
	}
	for i, p := range plan {
		if got, want := own.At(i), sched.At(p.Seq); got != want {
			t.Errorf("At(%d) = %v, want the whole schedule's At(%d) = %v", i, got, p.Seq, want)
		}
	}
	if got, want := own.Rate(time.Second), 20*3/float64(sched.N()); got != want {
		t.Errorf("Rate(1s) = %v, want %v", got, want)
	}
	if got, want := own.Duration(), 2*time.Second; got != want {
		t.Errorf("Duration() = %v, want %v", got, want)
	}
	all := make([]Planned, sched.N())
	for i := range all {
		all[i] = Planned{Seq: i, Intended: sched.At(i)}
	}
	if _, whole := ownSchedule(sched, all).(RampSchedule); !whole {
		t.Errorf("ownSchedule of the whole plan is not the schedule itself")
	}
}

// TestRunShardFiresPlan runs two shards of one scenario against loopback
// targets and checks that each sent exactly its plan: the same requests
// (identity, route, instance), due at the same times relative to each
// other within a phase, counted as the phase statistics' plan.
func TestRunShardFiresPlan(t *testing.T) {
	sc := scenario(t, 2, oneRoute+"\n    - path: /api/other\n      policies: [\"gcra:10/1s,burst=10\"]", "  count: 5\n  distribution: hot\n  share: 0.5", `  - {kind: constant, name: steady, rate: 100/1s, duration: 600ms}
  - {kind: burst, name: bursts, requests: 8, spread: 4ms, repeat: 2, gap: 20ms}
  - {kind: retry_after_probe, name: probe, requests: 3}`)
	sc.Shards.Spread = []string{scenarios.SpreadHot}
	total := 0
	for k := range 2 {
		// Targets of its own for each shard: result IDs count within a
		// shard, as they do within a run.
		t1, s1 := newTestTarget(t, "X-API-Key", "")
		t2, s2 := newTestTarget(t, "X-API-Key", "")
		shard := history.Shard{Index: k, Count: 2}
		results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{s1.URL, s2.URL}, Shard: &shard})
		if err != nil {
			t.Fatal(err)
		}
		total += len(results)
		if got, want := t1.count()+t2.count(), len(results); got != want {
			t.Errorf("shard %v: the targets saw %d requests, the shard reported %d", shard, got, want)
		}
		for i, ph := range sc.Phases {
			plan, err := Plan(sc, i, shard)
			if err != nil {
				t.Fatal(err)
			}
			var got []Result
			for _, r := range results {
				if r.PhaseIndex == i {
					got = append(got, *r)
				}
			}
			if ph.Kind == scenarios.RetryAfterProbe && len(plan) > 0 {
				plan = plan[:ph.Requests] // never rejected, it sends Requests and no retry
			}
			if ps := stats.Phases[i]; ps.Planned != len(plan) || ps.Sent != len(plan) || len(got) != len(plan) {
				t.Fatalf("shard %v, phase %s: Planned %d, Sent %d, results %d; the shard's plan holds %d", shard, ph.Name, ps.Planned, ps.Sent, len(got), len(plan))
			}
			if err := sameSent(sc, got, plan, ph.Kind != scenarios.RetryAfterProbe); err != nil {
				t.Errorf("shard %v, phase %s: %v", shard, ph.Name, err)
			}
		}
	}
	whole := 0
	for i := range sc.Phases[:2] {
		plan, _ := Plan(sc, i, Whole)
		whole += len(plan)
	}
	if got, want := total, whole+3; got != want { // the probe sends 3, never rejected
		t.Errorf("the shards sent %d requests together, the scenario plans %d", got, want)
	}
}

// sameSent reports how results differ from plan: in the requests (the
// identities, routes and instances), or in their intended times relative
// to the phase's first when timed (a probe's follow its answers). The two
// are compared apart, since vegeta numbers
// its hits in the order its workers take them, which may pair a request
// with its neighbour's intended time.
func sameSent(sc *scenarios.Scenario, results []Result, plan []Planned, timed bool) error {
	if len(results) != len(plan) {
		return fmt.Errorf("%d results for %d planned requests", len(results), len(plan))
	}
	if len(plan) == 0 {
		return nil
	}
	type request struct{ identity, route, instance int }
	requests, times := map[request]int{}, map[time.Duration]int{}
	for _, p := range plan {
		requests[request{p.Identity, p.Route, p.Instance}]++
		times[p.Intended-plan[0].Intended]++
	}
	first := results[0].Intended
	for _, r := range results {
		if r.Intended.Before(first) {
			first = r.Intended
		}
	}
	for _, r := range results {
		route := slices.IndexFunc(sc.Target.Routes, func(rt scenarios.Route) bool { return rt.Path == r.Route })
		requests[request{r.IdentityIndex, route, r.Instance}]--
		times[r.Intended.Sub(first)]--
	}
	for k, c := range requests {
		if c != 0 {
			return fmt.Errorf("identity %d, route %d, instance %d: %d more planned than sent", k.identity, k.route, k.instance, c)
		}
	}
	for at, c := range times {
		if c != 0 && timed {
			return fmt.Errorf("%d more planned than sent at %v from the first", c, at)
		}
	}
	return nil
}
