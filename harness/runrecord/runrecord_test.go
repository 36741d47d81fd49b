package runrecord

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	in := &RunRecord{Schema: Schema, Meta: NewMeta("v1.2.3", "abc123", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Scenarios: []ScenarioRecord{{
			Name: "drill", Faults: []FaultWindow{{Kind: "redis_kill", FromNs: 3e9, ToNs: 5e9}},
			Phases: []PhaseRecord{{Name: "hundred", Kind: "burst", Planned: 100, Sent: 100, Spread: 5 * time.Millisecond, AchievedSpread: 7 * time.Millisecond,
				Bursts: []BurstRecord{{Requests: 100, Sent: 100, Written: 100, SentSpread: 6 * time.Millisecond, WrittenSpread: 7 * time.Millisecond, Achieved: 7 * time.Millisecond, Late: time.Millisecond, MaxIdle: 120 * time.Millisecond}}}},
			Drill: &Drill{Mode: "open", Instances: 3, Timeout: 50 * time.Millisecond, Windows: []DrillWindow{{Kind: "redis_kill", FromNs: 3e9, ToNs: 5e9, Unavailable: true, LosesState: true}}},
		}}}
	var buf bytes.Buffer
	if err := in.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"schema": "rlbench-run/v1"`, `"rlbench_commit": "abc123"`, `"store_timeout_ns": 50000000`, `"loses_state": true`,
		`"spread_ns": 5000000`, `"achieved_spread_ns": 7000000`, `"written_spread_ns": 7000000`, `"max_idle_ns": 120000000`} {
		if !strings.Contains(buf.String(), field) {
			t.Errorf("run.json lacks %s:\n%s", field, buf.String())
		}
	}
	out, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Scenarios[0].Drill.Windows[0]; !got.LosesState || got.ToNs != 5e9 || out.Meta.Commit != "abc123" {
		t.Fatalf("read back %+v", out)
	}
	if got, want := out.Scenarios[0].Phases[0].Bursts[0], in.Scenarios[0].Phases[0].Bursts[0]; got != want {
		t.Errorf("burst read back as %+v, want %+v", got, want)
	}
}

func TestReadRejectsOtherSchemas(t *testing.T) {
	if _, err := Read(strings.NewReader(`{"schema":"rlbench-run/v9"}`)); err == nil || !strings.Contains(err.Error(), "rlbench-run/v9") {
		t.Fatalf("Read of another schema: %v", err)
	}
}
