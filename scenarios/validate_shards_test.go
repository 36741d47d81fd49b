package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// shardScenario is a scenario file with the target, identities, traffic
// and extra sections given.
func shardScenario(target, identities, traffic, extra string) string {
	return "name: s\ndescription: sharding\ntarget:\n" + target + `
  routes:
    - path: /api/items
      policies: ["gcra:10/1s,burst=10"]
identities:
` + identities + "\ntraffic:\n" + traffic + "\n" + extra
}

const (
	external  = "  external: [http://127.0.0.1:8080]"
	hotIDs    = "  count: 10\n  distribution: hot\n  share: 0.8"
	groupIDs  = "  count: 2\n  groups:\n    - {name: free, count: 3, policies: [\"gcra:60/1m,burst=10\"]}\n    - {name: pro, count: 2, policies: [\"gcra:600/1m,burst=100\"]}"
	steady    = "  - {kind: constant, rate: 10/1s, duration: 1s}"
	honouring = "  - {kind: constant, rate: 10/1s, duration: 1s, honor_retry_after: true}"
)

// TestShardable runs Shardable over a scenario of each kind: the error
// names the file, the field, the reason and the fix, or there is none.
func TestShardable(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // "" when shardable
	}{
		{"external target", shardScenario(external, hotIDs, steady, "shards: {count: 3, spread: [hot]}"), ""},
		{"instances on an external Redis", shardScenario("  instances: 2", hotIDs, steady, "redis: {provider: external, url: \"redis://127.0.0.1:6390/0\"}"), ""},
		{"honouring by identity", shardScenario(external, hotIDs, honouring, "shards: {count: 3}"), ""},
		{"honouring another group than the spread one", shardScenario(external, groupIDs, strings.TrimSuffix(honouring, "}")+", groups: [pro]}", "shards: {spread: [free]}"), ""},
		{"faults", shardScenario("  instances: 2\n  store_timeout: 50ms", "  count: 1", steady,
			"redis: {provider: external, url: \"redis://127.0.0.1:6390/0\"}\nfaults:\n  - {kind: instance_kill, target: instance-2, at: 200ms, duration: 300ms}"),
			"s.yaml: not shardable: faults: a drill's faults act on one Redis or instance, injected by one run, which the shards could not share; run the drill unsharded"},
		{"instances on their own Redis", shardScenario("  instances: 2", "  count: 1", steady, ""),
			"s.yaml: not shardable: target.instances: every shard would start its own sample API instances on its own Redis, and no two would share a budget; " +
				"point target.external at a running API, keep the budget in a Redis every shard reaches (redis: {provider: external, url: ...}, " +
				"or rlbench run --redis-provider external --redis-url URL), or run it unsharded"},
		{"memory store", shardScenario("  instances: 2\n  store: memory", "  count: 1", steady, ""),
			"s.yaml: not shardable: target.store: memory: every shard would start its own sample API instances, each with a budget of its own; use store: redis on a Redis every shard reaches (redis: {provider: external, url: ...}), or run it unsharded"},
		{"honouring the spread hot identity", shardScenario(external, hotIDs, steady+"\n"+honouring, "shards: {spread: [hot]}"),
			"s.yaml: not shardable: traffic[1].honor_retry_after: the clients of phase phase-2 wait out the Retry-After of their own requests, " +
				"but every shard sends identity key-0000's (shards.spread: hot) and sees its own answers alone; remove the identity from shards.spread, or honor_retry_after from the phase"},
		{"honouring a spread group", shardScenario(external, groupIDs, honouring, "shards: {spread: [pro]}"),
			"s.yaml: not shardable: traffic[0].honor_retry_after: the clients of phase phase-1 wait out the Retry-After of their own requests, " +
				"but every shard sends identity pro-0000's (shards.spread: pro) and sees its own answers alone; remove the identity from shards.spread, or honor_retry_after from the phase"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Parse("s.yaml", []byte(tt.src))
			if err != nil {
				t.Fatalf("%v\n%s", err, tt.src)
			}
			err = sc.Shardable()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Shardable() = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("Shardable() =\n  %v\nwant\n  %s", err, tt.want)
			case tt.want != "" && !errors.Is(err, ErrNotShardable):
				t.Errorf("Shardable() = %v, does not wrap ErrNotShardable", err)
			}
		})
	}
}

// TestSpreadSets: the hot identity is the first of each phase's sets, a
// group is spread whole, and nothing is spread without shards.spread.
func TestSpreadSets(t *testing.T) {
	ids := groupIDs + "\n  distribution: hot\n  share: 0.5"
	traffic := steady + "\n" + strings.TrimSuffix(steady, "}") + ", groups: [pro, free]}"
	tests := []struct {
		spread string
		phase  int
		want   []int // the spread identities
	}{
		{"", 0, nil},
		{"shards: {spread: [hot]}", 0, []int{0}},
		{"shards: {spread: [hot]}", 1, []int{5}},
		{"shards: {spread: [free]}", 0, []int{2, 3, 4}},
		{"shards: {spread: [free, hot]}", 1, []int{2, 3, 4, 5}},
	}
	for _, tt := range tests {
		sc, err := Parse("s.yaml", []byte(shardScenario(external, ids, traffic, tt.spread)))
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for i := range sc.Identities.Count {
			if sc.SpreadIdentity(sc.Phases[tt.phase], i) {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q, phase %d: spread identities %v, want %v", tt.spread, tt.phase, got, tt.want)
		}
	}
}

// TestShardsParsed: the shipped hot-key scenario spreads its hot key over
// the shards of its sharded runs.
func TestShardsParsed(t *testing.T) {
	sc, err := Lookup("hot-key")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.Shards, (Shards{Count: 2, Spread: []string{SpreadHot}}); got.Count != want.Count || !slices.Equal(got.Spread, want.Spread) {
		t.Errorf("Shards = %+v, want %+v", got, want)
	}
}
