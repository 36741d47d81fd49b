package scenarios

import (
	"strings"
	"testing"
	"time"
)

// TestExternalDrill: an external target declares its failure mode, store
// timeout and the instances a fallback splits the budget among; its Redis
// is reached through the proxy address the scenario names; a command fault
// keeps its commands, timeout and effect.
func TestExternalDrill(t *testing.T) {
	const src = `
name: ext
description: a drill on an API rlbench does not start
redis: {provider: external, url: "redis://:pw@127.0.0.1:6380/3", proxy: "127.0.0.1:16379"}
target:
  external: ["http://127.0.0.1:8080", "http://127.0.0.1:8081"]
  failure_mode: fallback
  store_timeout: 50ms
  instances: 3
  routes:
    - path: /api/items
      policies: ["gcra:10/1s,burst=10"]
traffic:
  - {kind: constant, rate: 10/1s, duration: 6s}
faults:
  - {kind: redis_latency, latency: 200ms, at: 1s, duration: 1s}
  - {kind: command, inject: "docker pause redis", heal: "docker unpause redis", timeout: 5s, effect: unavailable, at: 3s, duration: 1s}
  - {kind: command, inject: "docker restart redis", effect: loses_state, at: 5s, duration: 500ms}
`
	s, err := Parse("ext.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Redis.Proxy", s.Redis.Proxy, "127.0.0.1:16379"},
		{"Redis.Provider", s.Redis.Provider, ProviderExternal},
		{"Target.FailureMode", s.Target.FailureMode, FailFallback},
		{"Target.StoreTimeout", s.Target.StoreTimeout, 50 * time.Millisecond},
		{"Target.Instances", s.Target.Instances, 0},
		{"Target.ExternalInstances", s.Target.ExternalInstances, 3},
		{"SharingInstances", s.Target.SharingInstances(), 3},
		{"Faults[0].Kind", s.Faults[0].Kind, FaultRedisLatency},
		{"Faults[1].Inject", s.Faults[1].Inject, "docker pause redis"},
		{"Faults[1].Heal", s.Faults[1].Heal, "docker unpause redis"},
		{"Faults[1].Timeout", s.Faults[1].Timeout, 5 * time.Second},
		{"Faults[1].Effect", s.Faults[1].Effect, EffectUnavailable},
		{"Faults[2].Heal", s.Faults[2].Heal, ""},
		{"Faults[2].Timeout", s.Faults[2].Timeout, DefaultCommandTimeout},
		{"Faults[2].Effect", s.Faults[2].Effect, EffectLosesState},
		{"Checks.Faults set", s.Checks.Faults != nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// Without instances, a fallback's share is one per URL; without a
	// declared mode, the target declares none.
	plain := strings.NewReplacer("  instances: 3\n", "", "failure_mode: fallback", "failure_mode: closed").Replace(src)
	s, err = Parse("ext.yaml", []byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Target.SharingInstances(), 2; got != want {
		t.Errorf("SharingInstances without instances = %d, want %d (one per URL)", got, want)
	}
}

// TestSampleAPIDrillKeepsOwnFaults: the sample API's drills need no proxy
// address (a free port is picked), and a command fault works there too.
func TestSampleAPIDrillKeepsOwnFaults(t *testing.T) {
	const src = `
name: own
description: the sample API's own drill with a command fault
target:
  instances: 2
  failure_mode: closed
  store_timeout: 50ms
  routes:
    - path: /api/items
      policies: ["gcra:10/1s,burst=10"]
traffic:
  - {kind: constant, rate: 10/1s, duration: 6s}
faults:
  - {kind: redis_blackhole, at: 1s, duration: 1s}
  - {kind: command, inject: "true", effect: none, at: 3s, duration: 1s}
`
	s, err := Parse("own.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Redis.Proxy != "" || s.Target.SharingInstances() != 2 || s.Faults[1].Effect != EffectNone {
		t.Fatalf("Redis %+v, sharing %d, fault %+v", s.Redis, s.Target.SharingInstances(), s.Faults[1])
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"redis://:s3cret@127.0.0.1:6379/2", "redis://:xxxxx@127.0.0.1:6379/2"},
		{"rediss://user:s3cret@redis.example:6380/0?dial_timeout=1s", "rediss://user:xxxxx@redis.example:6380/0?dial_timeout=1s"},
		{"redis://user:s3%cret@127.0.0.1:6379", "redis://xxxxx@127.0.0.1:6379"},
	}
	for _, tc := range tests {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestClockStepAndFailover: clock_step takes a signed step and a target
// (redis or an instance) but no duration; redis_failover needs a sentinel
// topology, which may give the replica a clock of its own.
func TestClockStepAndFailover(t *testing.T) {
	const src = `
name: steps
description: clock steps and a failover
redis: {topology: sentinel, replica_clock: -1500ms}
target:
  instances: 2
  store_timeout: 50ms
  routes:
    - path: /api/items
      policies: ["gcra:10/1s,burst=10"]
traffic:
  - {kind: constant, rate: 10/1s, duration: 8s}
faults:
  - {kind: clock_step, target: instance-2, step: 2s, at: 1s}
  - {kind: redis_failover, at: 3s, duration: 1s}
`
	s, err := Parse("steps.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Redis.Topology", s.Redis.Topology, TopologySentinel},
		{"Redis.ReplicaClock", *s.Redis.ReplicaClock, -1500 * time.Millisecond},
		{"NeedsFakeClock", s.NeedsFakeClock(), true},
		{"Faults[0].Kind", s.Faults[0].Kind, FaultClockStep},
		{"Faults[0].Target", s.Faults[0].Target, "instance-2"},
		{"Faults[0].Step", s.Faults[0].Step, 2 * time.Second},
		{"Faults[0].Duration", s.Faults[0].Duration, time.Duration(0)},
		{"Faults[1].Kind", s.Faults[1].Kind, FaultRedisFailover},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	single := `
name: step
description: a step of the limiter's clock
target:
  instances: 1
  routes:
    - path: /api/items
      policies: ["gcra:10/1s,burst=10"]
traffic:
  - {kind: constant, rate: 10/1s, duration: 8s}
faults:
  - {kind: clock_step, target: redis, step: -2s, at: 3s}
`
	s, err = Parse("step.yaml", []byte(single))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Faults[0].Step, -2*time.Second; got != want || !s.NeedsFakeClock() || s.Redis.Topology != TopologySingle {
		t.Errorf("Step = %v (want %v), NeedsFakeClock %v, Topology %q", got, want, s.NeedsFakeClock(), s.Redis.Topology)
	}

	rejected := []struct{ name, from, to, field string }{
		{"step without a step", "step: -2s, ", "", "faults[0].step"},
		{"zero step", "step: -2s", "step: 0s", "faults[0].step"},
		{"step with a duration", "at: 3s}", "at: 3s, duration: 1s}", "faults[0].duration"},
		{"step without a target", "target: redis, ", "", "faults[0].target"},
		{"step of an unknown clock", "target: redis", "target: instance-4", "faults[0].target"},
		{"step of an embedded Redis", "target:\n  instances: 1", "redis: {provider: embedded}\ntarget:\n  instances: 1", "faults[0].target"},
		{"failover without sentinel", "{kind: clock_step, target: redis, step: -2s, at: 3s}", "{kind: redis_failover, at: 3s, duration: 1s}", "faults[0].kind"},
		{"replica clock without sentinel", "target:\n  instances: 1", "redis: {replica_clock: -1s}\ntarget:\n  instances: 1", "redis.replica_clock"},
		{"step on a sentinel's Redis", "target:\n  instances: 1", "redis: {topology: sentinel}\ntarget:\n  instances: 1", "faults[0].kind"},
		{"unknown topology", "target:\n  instances: 1", "redis: {topology: ring}\ntarget:\n  instances: 1", "redis.topology"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(single, tc.from, tc.to, 1)
			if src == single {
				t.Fatalf("replacement %q not found", tc.from)
			}
			_, err := Parse("step.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Parse = %v, want an error naming %s", err, tc.field)
			}
		})
	}
}
