package runrecord

import (
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/harness/history"
)

// TestWidenWindow moves drill windows onto the merged clock: the window a
// request may have met the fault in widens by the shard's uncertainty, the
// part the fault was surely in effect narrows by it, and vanishes (no
// request fits) when the uncertainty outgrows it.
func TestWidenWindow(t *testing.T) {
	const shift, u = 1_000, 100
	tests := []struct {
		name string
		in   FaultWindow
		want FaultWindow // FromNs, ToNs, InjectedNs, HealNs
	}{
		{"healed", FaultWindow{FromNs: 10_000, ToNs: 20_000, InjectedNs: 10_500, HealNs: 19_500},
			FaultWindow{FromNs: 10_900, ToNs: 21_100, InjectedNs: 11_600, HealNs: 20_400}},
		{"never healed", FaultWindow{FromNs: 10_000, InjectedNs: 10_500},
			FaultWindow{FromNs: 10_900, InjectedNs: 11_600}},
		{"recorded before the in-effect times", FaultWindow{FromNs: 10_000, ToNs: 20_000},
			FaultWindow{FromNs: 10_900, ToNs: 21_100, InjectedNs: 11_100, HealNs: 20_900}},
		{"shorter than the uncertainty", FaultWindow{FromNs: 10_000, ToNs: 10_150, InjectedNs: 10_050, HealNs: 10_100},
			FaultWindow{FromNs: 10_900, ToNs: 11_250, InjectedNs: 11_001, HealNs: 11_000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := widenWindow(tt.in, shift, u)
			if got.FromNs != tt.want.FromNs || got.ToNs != tt.want.ToNs || got.InjectedNs != tt.want.InjectedNs || got.HealNs != tt.want.HealNs {
				t.Errorf("widenWindow = from %d to %d, in effect %d to %d; want %d to %d, %d to %d", got.FromNs, got.ToNs, got.InjectedNs, got.HealNs,
					tt.want.FromNs, tt.want.ToNs, tt.want.InjectedNs, tt.want.HealNs)
			}
			from, to := got.InEffect()
			inFrom, inTo := tt.in.InEffect()
			if to != 0 && from <= to && (from < inFrom+shift || to > inTo+shift) {
				t.Errorf("in effect [%d, %d], beyond the shard's [%d, %d] moved by %d", from, to, inFrom, inTo, shift)
			}
		})
	}
}

func snapshot(values ...int64) *hdrhistogram.Snapshot {
	h := hdrhistogram.New(1, 60_000_000, 3)
	for _, v := range values {
		h.RecordValue(v)
	}
	return h.Export()
}

func TestMergeShards(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	yes, no := true, false
	rec := func(planned, sent int, lat []int64, fresh *bool, drill *Drill) *ScenarioRecord {
		return &ScenarioRecord{
			Name: "burst", Duration: time.Second, Instances: []string{"api-0"}, ClockSource: history.ClockRedisTime, IdentitiesFresh: fresh, Dropped: 1,
			Phases: []PhaseRecord{{Name: "steady", Kind: PhaseConstant, Planned: planned, Sent: sent, OnTime: sent, PlannedRate: 50, LagP99: time.Duration(planned) * time.Microsecond,
				Status: map[int]int{200: sent}}},
			Latency: map[string]LatencyRecord{"/v1": {FromSent: snapshot(lat...), FromIntended: snapshot(lat...)}},
			Faults:  []FaultWindow{{Kind: "redis_kill", FromNs: 100, ToNs: 200}},
			Drill:   drill,
		}
	}
	drill := &Drill{Mode: FailOpen, Instances: 2, Timeout: time.Millisecond, Windows: []FaultWindow{{Kind: "redis_kill", FromNs: 100, ToNs: 200, InjectedNs: 110, HealNs: 190}}}
	recs := []*ScenarioRecord{rec(100, 90, []int64{1000, 2000}, &yes, drill), rec(50, 50, []int64{3000}, &yes, nil)}
	recs[1].Instances = []string{"api-1", "api-0"}
	shards := []ShardRecord{
		{Shard: history.Shard{Index: 0, Count: 2}, Shift: 0, ClockUncertainty: 5},
		{Shard: history.Shard{Index: 1, Count: 2}, Shift: 2 * time.Second, ClockUncertainty: 7},
	}
	m, err := MergeShards(t0, recs, shards)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Phases[0]
	if p.Planned != 150 || p.Sent != 140 || p.OnTime != 140 || p.PlannedRate != 100 || p.Status[200] != 140 || p.LagP99 != 100*time.Microsecond {
		t.Errorf("merged phase = %+v", p)
	}
	if got, want := p.Delivered, 140.0/150; got != want {
		t.Errorf("delivered = %v, want %v", got, want)
	}
	if recs[0].Phases[0].Status[200] != 90 {
		t.Errorf("merging changed the first shard's record: status %v", recs[0].Phases[0].Status)
	}
	if h := hdrhistogram.Import(m.Latency["/v1"].FromSent); h.TotalCount() != 3 || h.Max() < 2999 {
		t.Errorf("merged latency: %d values, max %d; want 3, 3000", h.TotalCount(), h.Max())
	}
	if m.Duration != 3*time.Second || m.Dropped != 2 || strings.Join(m.Instances, ",") != "api-0,api-1" || !m.Start.Equal(t0) {
		t.Errorf("merged record = duration %v, dropped %d, instances %v, start %v", m.Duration, m.Dropped, m.Instances, m.Start)
	}
	if m.IdentitiesFresh == nil || !*m.IdentitiesFresh || m.ClockSource != history.ClockRedisTime || m.ClockOffset != 0 || m.ClockUncertainty != 0 {
		t.Errorf("merged clock and identities: %+v", m)
	}
	if len(m.Faults) != 2 || m.Faults[1].FromNs != 2e9+100 || m.Faults[1].ToNs != 2e9+200 {
		t.Errorf("merged faults = %+v, want shard 1's moved by 2 s", m.Faults)
	}
	if d := m.Drill; d == nil || d.Mode != FailOpen || len(d.Windows) != 1 || d.Windows[0].FromNs != 95 || d.Windows[0].ToNs != 205 {
		t.Errorf("merged drill = %+v, want shard 0's window widened by 5 ns", m.Drill)
	}
	if len(m.Shards) != 2 || m.Shards[1].Shift != 2*time.Second {
		t.Errorf("merged shards = %+v", m.Shards)
	}

	recs[1].IdentitiesFresh = &no
	recs[1].ClockSource = history.ClockHTTPDate
	m, err = MergeShards(t0, recs, shards)
	if err != nil {
		t.Fatal(err)
	}
	if m.IdentitiesFresh == nil || *m.IdentitiesFresh || m.ClockSource != ClockShards {
		t.Errorf("identities fresh %v, clock source %q; want false, %q", m.IdentitiesFresh, m.ClockSource, ClockShards)
	}

	recs[1].Phases[0].Name = "ramp"
	if _, err := MergeShards(t0, recs, shards); err == nil || !strings.Contains(err.Error(), "shard 1/2: phase 1 is ramp (constant), where the first shard's is steady (constant)") {
		t.Errorf("MergeShards of other phases = %v", err)
	}
	recs[1].Name = "edge"
	if _, err := MergeShards(t0, recs, shards); err == nil || !strings.Contains(err.Error(), `shard 1/2 of "edge"`) {
		t.Errorf("MergeShards of other scenarios = %v", err)
	}
}

func TestMergeMeta(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	m := MergeMeta([]Meta{
		{Version: "v1.2.0", Hostname: "node-a", CPUs: 4, Start: t0.Add(time.Second), Duration: 10 * time.Second, Generator: &GeneratorCeiling{Rate: 1}},
		{Version: "v1.2.0", Hostname: "node-b", CPUs: 8, Start: t0, Duration: 5 * time.Second},
		{Version: "v1.2.0", Hostname: "node-a", CPUs: 4, Start: t0.Add(2 * time.Second), Duration: 10 * time.Second},
	})
	if m.Hostname != "node-a, node-b" || m.CPUs != 16 || !m.Start.Equal(t0) || m.Duration != 12*time.Second || m.Generator != nil {
		t.Errorf("MergeMeta = %+v", m)
	}
}
