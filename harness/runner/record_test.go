package runner

import (
	"reflect"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/traffic"
	"github.com/rlbench/rlbench/scenarios"
)

// TestRecordHoldsWhatTheChecksRead: the run record carries the drill, the
// failure mode and the bounds of the checks on the run itself, so that a
// re-check needs nothing but the run directory.
func TestRecordHoldsWhatTheChecksRead(t *testing.T) {
	sc, err := scenarios.Lookup("drill-redis-kill-closed")
	if err != nil {
		t.Fatal(err)
	}
	sc.Checks.MaxLatency = time.Second
	sc.Checks.Overhead = &scenarios.Overhead{Route: "/a", Baseline: "/b", P99: 10 * time.Millisecond, Versus: "/v", RatioP50: 0.6}
	sc.Checks.MaxExcess, sc.Checks.FalseRejections = 2, &scenarios.FalseRejections{MaxRate: 0.01}
	injected := runrecord.FaultWindow{Kind: "redis_kill", At: 3 * time.Second, FromNs: 3e9, ToNs: 5e9}
	never := runrecord.FaultWindow{Kind: "redis_kill", At: time.Hour}
	stall := runrecord.FaultWindow{Kind: runrecord.KindStoreStall, FromNs: 1_950_000_000, ToNs: 2_130_000_000, Unavailable: true, Observed: true}
	o := &Outcome{
		Scenario: sc, HistoryPath: "x/history.jsonl.gz", ClockOffset: time.Millisecond,
		Faults: []runrecord.FaultWindow{classify(injected, sc.Faults[0], sc.Target.StoreTimeout, nil), never},
		Stalls: []runrecord.FaultWindow{stall},
		Stats: &traffic.Stats{LagTolerance: 50 * time.Millisecond, Dropped: 2, Phases: []*traffic.PhaseStats{
			{Name: "steady", Kind: scenarios.Constant, Planned: 10, OnTime: 9},
			{Name: "probe", Kind: scenarios.RetryAfterProbe, Planned: 3},
		}},
	}
	rec := o.Record()
	if got, want := rec.FailureMode, runrecord.FailClosed; got != want {
		t.Errorf("FailureMode = %q, want %q", got, want)
	}
	wantDrill := &runrecord.Drill{Mode: runrecord.FailClosed, Instances: sc.Target.Instances, Timeout: sc.Target.StoreTimeout,
		Slack: sc.Checks.Faults.Slack, Recovery: sc.Checks.Faults.Recovery,
		Windows: []runrecord.FaultWindow{{Kind: "redis_kill", At: 3 * time.Second, FromNs: 3e9, ToNs: 5e9, Unavailable: true, LosesState: true}, stall}}
	if !reflect.DeepEqual(rec.Drill, wantDrill) {
		t.Errorf("Drill = %+v, want %+v (the fault never injected left out, the observed stall after the faults)", rec.Drill, wantDrill)
	}
	if len(rec.Faults) != 2 {
		t.Errorf("Faults = %+v, want the two declared faults alone", rec.Faults)
	}
	headers, rate := true, 0.01 // the drill leaves checks.headers at its default
	wantChecks := &runrecord.CheckSettings{LoadDelivered: sc.Checks.LoadDelivered, LagTolerance: 50 * time.Millisecond, MaxLatency: time.Second,
		Overhead:  &runrecord.OverheadBounds{Route: "/a", Baseline: "/b", P99: 10 * time.Millisecond, Versus: "/v", RatioP50: 0.6},
		MaxExcess: 2, FalseRejectionsMaxRate: &rate, Headers: &headers}
	if !reflect.DeepEqual(rec.Checks, wantChecks) {
		t.Errorf("Checks = %+v, want %+v", rec.Checks, wantChecks)
	}
	if got, want := rec.Dropped, 2; got != want {
		t.Errorf("Dropped = %d, want %d", got, want)
	}
	// A probe never rejected is still recorded as a probe: its check says unknown.
	if rec.Phases[0].Probe != nil || rec.Phases[1].Probe == nil || rec.Phases[1].Probe.Rejected {
		t.Errorf("phases = %+v: want a probe record on the probe phase only", rec.Phases)
	}
}

// TestProbesStore: which runs watch their store for stalls.
func TestProbesStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"drill-redis-slow", true},
		{"drill-redis-kill-fallback", true},
		{"drill-instance-kill", true},
		{"quickstart", false}, // no fault, so no failure mode to excuse
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenarios.Lookup(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := probesStore(sc); got != tc.want {
				t.Errorf("probesStore = %v, want %v", got, tc.want)
			}
		})
	}
	sc, err := scenarios.Lookup("drill-redis-slow")
	if err != nil {
		t.Fatal(err)
	}
	sc.Target.Store = scenarios.StoreMemory
	if probesStore(sc) {
		t.Errorf("probesStore = true for an in-memory store")
	}
}

// TestClassify: what each fault means for the checks.
func TestClassify(t *testing.T) {
	timeout := 50 * time.Millisecond
	tests := []struct {
		fault scenarios.Fault
		want  runrecord.FaultWindow
	}{
		{scenarios.Fault{Kind: scenarios.FaultRedisKill}, runrecord.FaultWindow{Unavailable: true, LosesState: true}},
		{scenarios.Fault{Kind: scenarios.FaultRedisPause}, runrecord.FaultWindow{Unavailable: true}},
		{scenarios.Fault{Kind: scenarios.FaultRedisLatency, Latency: 10 * time.Millisecond}, runrecord.FaultWindow{}},
		{scenarios.Fault{Kind: scenarios.FaultRedisLatency, Latency: timeout}, runrecord.FaultWindow{Unavailable: true}},
		{scenarios.Fault{Kind: scenarios.FaultInstanceKill, Target: "instance-2"}, runrecord.FaultWindow{Instance: "instance-2"}},
		{scenarios.Fault{Kind: scenarios.FaultClockStep, Target: "redis", Step: -2 * time.Second}, runrecord.FaultWindow{StepNs: int64(-2 * time.Second)}},
		{scenarios.Fault{Kind: scenarios.FaultClockStep, Target: "instance-1", Step: time.Second}, runrecord.FaultWindow{StepNs: int64(time.Second), Instance: "instance-1"}},
		{scenarios.Fault{Kind: scenarios.FaultRedisFailover}, runrecord.FaultWindow{Unavailable: true, LosesState: true, PartialState: true}},
	}
	for _, tc := range tests {
		if got := classify(runrecord.FaultWindow{}, tc.fault, timeout, nil); got != tc.want {
			t.Errorf("classify(%+v) = %+v, want %+v", tc.fault, got, tc.want)
		}
	}
}

// TestClassifyReplicaClock: a failover to a replica whose clock is behind
// steps the limiter's clock by it.
func TestClassifyReplicaClock(t *testing.T) {
	behind := -1500 * time.Millisecond
	got := classify(runrecord.FaultWindow{}, scenarios.Fault{Kind: scenarios.FaultRedisFailover}, time.Second, &behind)
	if want := int64(behind); got.StepNs != want || !got.LosesState || !got.PartialState {
		t.Errorf("classify = %+v, want StepNs %d with lost and partial state", got, want)
	}
}

// TestPhaseKindsAgree: the run record names phase kinds as scenarios do,
// so the checker can tell open-model phases and probes from the record.
func TestPhaseKindsAgree(t *testing.T) {
	for _, tc := range []struct {
		record string
		kind   scenarios.PhaseKind
	}{{runrecord.PhaseConstant, scenarios.Constant}, {runrecord.PhaseRamp, scenarios.Ramp}, {runrecord.PhaseRetryAfterProbe, scenarios.RetryAfterProbe}} {
		if tc.record != string(tc.kind) {
			t.Errorf("runrecord phase kind %q, scenarios %q", tc.record, tc.kind)
		}
	}
}

// TestIdentitiesFresh: a run against a limiter that outlives it starts
// fresh only with identities generated for it; a given run id sends an
// earlier run's identities again, whose budgets may be spent.
func TestIdentitiesFresh(t *testing.T) {
	external := &scenarios.Scenario{Target: scenarios.Target{External: []string{"http://127.0.0.1:8080"}}}
	fixed := &scenarios.Scenario{Target: scenarios.Target{External: []string{"http://127.0.0.1:8080"}}, Identities: scenarios.Identities{Fixed: true}}
	started := &scenarios.Scenario{Target: scenarios.Target{Instances: 2}, Identities: scenarios.Identities{Fixed: true}}
	tests := []struct {
		name       string
		sc         *scenarios.Scenario
		runIDGiven bool
		provider   string
		want       bool
	}{
		{"external, generated identities", external, false, "", true},
		{"external, run id given again", external, true, "", false},
		{"external, fixed identities", fixed, false, "", false},
		{"started target on its own Redis", started, true, "process", true},
		{"started target on an external Redis", started, false, string(scenarios.ProviderExternal), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := identitiesFresh(tt.sc, tt.runIDGiven, tt.provider); got != tt.want {
				t.Fatalf("identitiesFresh = %v, want %v", got, tt.want)
			}
		})
	}
}
