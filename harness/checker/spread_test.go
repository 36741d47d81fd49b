package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

func TestSpreadBound(t *testing.T) {
	tests := []struct{ spread, want time.Duration }{
		{0, 5 * time.Millisecond},
		{2 * time.Millisecond, 7 * time.Millisecond},
		{5 * time.Millisecond, 10 * time.Millisecond},
		{time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		if got := SpreadBound(tt.spread); got != tt.want {
			t.Errorf("SpreadBound(%v) = %v, want %v", tt.spread, got, tt.want)
		}
	}
}

func TestBurstSpreadResults(t *testing.T) {
	burst := func(n, sent int, achieved time.Duration) runrecord.BurstRecord {
		return runrecord.BurstRecord{Requests: n, Sent: sent, Written: sent, SentSpread: achieved, WrittenSpread: achieved / 2, Achieved: achieved}
	}
	phase := func(spread time.Duration, bursts ...runrecord.BurstRecord) runrecord.PhaseRecord {
		p := runrecord.PhaseRecord{Name: "b", Kind: "burst", Spread: spread, Bursts: bursts}
		for _, b := range bursts {
			p.AchievedSpread = max(p.AchievedSpread, b.Achieved)
		}
		return p
	}
	raised := func(b runrecord.BurstRecord) runrecord.BurstRecord { b.Raised = true; return b }
	redialled := func(b runrecord.BurstRecord, n int) runrecord.BurstRecord { b.Redialled = n; return b }
	tests := []struct {
		name     string
		phase    runrecord.PhaseRecord
		verdict  Verdict
		observed float64
		bound    float64
		explain  string
	}{
		{"tight", phase(5*time.Millisecond, burst(1000, 1000, 8*time.Millisecond)), Pass, 8, 10, "1000 requests sent within 8ms"},
		{"at the bound", phase(5*time.Millisecond, burst(100, 100, 10*time.Millisecond)), Pass, 10, 10, "at most 10ms passes"},
		{"not a burst", phase(5*time.Millisecond, burst(1000, 1000, 158700*time.Microsecond)), Fail, 158.7, 10, "did not release it as a burst"},
		{"all at once", phase(0, burst(50, 50, 6*time.Millisecond)), Fail, 6, 5, "planned 0s"},
		{"the widest of repeats", phase(time.Millisecond, burst(10, 10, time.Millisecond), burst(10, 10, 9*time.Millisecond), burst(10, 10, 2*time.Millisecond)), Fail, 9, 6, "burst 2 of 3"},
		{"not a burst, at the generator's priority", phase(5*time.Millisecond, burst(1000, 1000, 20*time.Millisecond)), Fail, 20, 10, "CAP_SYS_NICE"},
		{"not a burst, at a raised priority", phase(5*time.Millisecond, raised(burst(1000, 1000, 20*time.Millisecond))), Fail, 20, 10, "did not release it as a burst, so the scenario did not test the concurrency it claims"},
		{"redialled", phase(5*time.Millisecond, redialled(burst(10, 10, 300*time.Millisecond), 2)), Fail, 300, 10, "2 requests sent again, late, on a new connection"},
		{"a burst short of requests", phase(5*time.Millisecond, burst(10, 10, time.Millisecond), burst(10, 4, time.Millisecond)), Unknown, 1, 10, "burst 2 sent 4 of its 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := burstSpreadResults([]runrecord.PhaseRecord{{Name: "steady", Kind: "constant"}, tt.phase}, false)
			if len(got) != 1 {
				t.Fatalf("%d results, want 1 (none for a phase without bursts)", len(got))
			}
			r := got[0]
			if r.Name != CheckLoadDelivered || r.Scope != "b spread" {
				t.Errorf("Name, Scope = %q, %q; want %q, %q", r.Name, r.Scope, CheckLoadDelivered, "b spread")
			}
			if r.Verdict != tt.verdict {
				t.Errorf("Verdict = %s, want %s (%s)", r.Verdict, tt.verdict, r.Explanation)
			}
			if r.Observed != tt.observed || r.Bound != tt.bound {
				t.Errorf("Observed, Bound = %v, %v; want %v, %v", r.Observed, r.Bound, tt.observed, tt.bound)
			}
			if !strings.Contains(r.Explanation, tt.explain) {
				t.Errorf("Explanation %q lacks %q", r.Explanation, tt.explain)
			}
			if raised := tt.phase.Bursts[0].Raised; raised && strings.Contains(r.Explanation, "CAP_SYS_NICE") {
				t.Errorf("Explanation %q of a burst released at a raised priority suggests raising it", r.Explanation)
			}
		})
	}
}

// TestLoadDeliveredNothingPlanned: a shard that owns no request of a phase
// passes load-delivered saying so, and shows no fraction or spread of
// nothing as if it had been measured.
func TestLoadDeliveredNothingPlanned(t *testing.T) {
	shard := &history.Shard{Index: 1, Count: 2}
	open := runrecord.PhaseRecord{Name: "steady", Kind: "constant", Planned: 40, Sent: 40, OnTime: 40}
	emptyOpen := runrecord.PhaseRecord{Name: "steady", Kind: "constant"}
	emptyBurst := runrecord.PhaseRecord{Name: "hundred", Kind: "burst", Spread: 5 * time.Millisecond, Bursts: []runrecord.BurstRecord{{}}}
	burst := runrecord.PhaseRecord{Name: "hundred", Kind: "burst", Planned: 100, Sent: 100, Spread: 5 * time.Millisecond,
		Bursts: []runrecord.BurstRecord{{Requests: 100, Sent: 100, Written: 100, Achieved: 3 * time.Millisecond}}, AchievedSpread: 3 * time.Millisecond}
	tests := []struct {
		name   string
		shard  *history.Shard
		phases []runrecord.PhaseRecord
		want   []string // each load-delivered result's explanation, in order
	}{
		{"an empty shard", shard, []runrecord.PhaseRecord{emptyOpen, emptyBurst},
			[]string{"no request planned for this shard", "no request planned for this shard"}},
		{"a shard with bursts only", shard, []runrecord.PhaseRecord{emptyOpen, burst},
			[]string{"no request of an open-model phase planned for this shard", "the widest burst: 100 requests sent within 0s"}},
		{"a shard with an open-model phase only", shard, []runrecord.PhaseRecord{open, emptyBurst},
			[]string{"the generator sent 0.0% of the open-model requests", "no request planned for this shard"}},
		{"an unsharded run of bursts", nil, []runrecord.PhaseRecord{burst},
			[]string{"no request of an open-model phase planned", "the widest burst"}},
		{"an unsharded run of empty bursts", nil, []runrecord.PhaseRecord{emptyBurst},
			[]string{"no request of an open-model phase planned", "no request of its bursts planned"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &runrecord.ScenarioRecord{Shard: tt.shard, Phases: tt.phases,
				Checks: &runrecord.CheckSettings{LoadDelivered: 0.98, LagTolerance: 50 * time.Millisecond}}
			var got []Result
			for _, r := range newTimings(rec).results(rec) {
				if r.Name == CheckLoadDelivered {
					got = append(got, r)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d load-delivered results, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, r := range got {
				if !strings.HasPrefix(r.Explanation, tt.want[i]) {
					t.Errorf("result %d (%s): Explanation %q, want it to start %q", i, r.Scope, r.Explanation, tt.want[i])
				}
				if nothing := strings.HasPrefix(tt.want[i], "no request"); nothing && r.Verdict != Pass {
					t.Errorf("result %d (%s): Verdict = %s, want %s", i, r.Scope, r.Verdict, Pass)
				}
			}
		})
	}
}
