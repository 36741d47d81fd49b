package runrecord

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	window := FaultWindow{Kind: "redis_kill", At: 3 * time.Second, Duration: 2 * time.Second, FromNs: 3e9, ToNs: 5e9, Unavailable: true, LosesState: true}
	in := &RunRecord{Schema: Schema, Meta: NewMeta("v1.2.3", "abc123", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Scenarios: []ScenarioRecord{{
			Name: "drill", FailureMode: FailOpen, Faults: []FaultWindow{window},
			Drill: &Drill{Mode: FailOpen, Instances: 3, Timeout: 50 * time.Millisecond, Windows: []FaultWindow{window,
				{Kind: KindStoreStall, FromNs: 1_950_000_000, ToNs: 2_130_000_000, Unavailable: true, Observed: true}}},
			Checks:  &CheckSettings{LoadDelivered: 0.95, LagTolerance: 50 * time.Millisecond, MaxLatency: time.Second, Overhead: &OverheadBounds{Route: "/a", Baseline: "/b", P99: 10 * time.Millisecond}},
			KeyScan: &KeyScan{AtNs: 7e9, WithoutTTL: 1, Examples: []string{"rl:{x}:gcra"}},
			Phases: []PhaseRecord{{Name: "probe", Kind: PhaseRetryAfterProbe, Probe: &ProbeRecord{Rejected: true, Retried: true, Admitted: true, Wait: time.Second}},
				{Name: "hundred", Kind: "burst", Planned: 100, Sent: 100, Spread: 5 * time.Millisecond, AchievedSpread: 7 * time.Millisecond,
					Bursts: []BurstRecord{{Requests: 100, Sent: 100, Written: 100, SentSpread: 6 * time.Millisecond, WrittenSpread: 7 * time.Millisecond, Achieved: 7 * time.Millisecond, Late: time.Millisecond, MaxIdle: 120 * time.Millisecond}}}},
		}}}
	var buf bytes.Buffer
	if err := in.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"schema": "rlbench-run/v1"`, `"rlbench_commit": "abc123"`, `"store_timeout_ns": 50000000`, `"loses_state": true`,
		`"failure_mode": "open"`, `"lag_tolerance_ns": 50000000`, `"without_ttl": 1`, `"at_ns": 3000000000`, `"spread_ns": 5000000`, `"achieved_spread_ns": 7000000`, `"written_spread_ns": 7000000`, `"max_idle_ns": 120000000`, `"kind": "store_stall"`, `"observed": true`} {
		if !strings.Contains(buf.String(), field) {
			t.Errorf("run.json lacks %s:\n%s", field, buf.String())
		}
	}
	out, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.Scenarios[0], in.Scenarios[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
	}
}

// TestReadsEarlierV1Records: a record written before the fault windows
// were one type (a drill's windows named their instance "instance") and
// before check settings were recorded still reads, to the same meaning.
func TestReadsEarlierV1Records(t *testing.T) {
	const old = `{"schema":"rlbench-run/v1","meta":{},"scenarios":[{"name":"kill",
	  "faults":[{"kind":"instance_kill","target":"instance-2","from_ns":3,"to_ns":5}],
	  "drill":{"failure_mode":"open","instances":3,"store_timeout_ns":50,"slack_ns":1,"recovery_ns":2,
	    "windows":[{"kind":"instance_kill","from_ns":3,"to_ns":5,"store_unavailable":false,"loses_state":false,"instance":"instance-2"}]}}]}`
	rec, err := Read(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	sc := rec.Scenarios[0]
	if got, want := sc.Drill.Windows[0], (FaultWindow{Kind: "instance_kill", FromNs: 3, ToNs: 5, Instance: "instance-2"}); got != want {
		t.Errorf("drill window = %+v, want %+v", got, want)
	}
	if got, want := sc.Faults[0].Target, "instance-2"; got != want {
		t.Errorf("fault target = %q, want %q", got, want)
	}
	if sc.Drill.Mode != FailOpen || sc.Checks != nil || sc.KeyScan != nil {
		t.Errorf("drill mode %q, checks %v, key scan %v: want open, nil, nil", sc.Drill.Mode, sc.Checks, sc.KeyScan)
	}
}

func TestReadRejectsOtherSchemas(t *testing.T) {
	if _, err := Read(strings.NewReader(`{"schema":"rlbench-run/v9"}`)); err == nil || !strings.Contains(err.Error(), "rlbench-run/v9") {
		t.Fatalf("Read of another schema: %v", err)
	}
}
