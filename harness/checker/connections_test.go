package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

func TestConnections(t *testing.T) {
	samples := func(cs ...int) []runrecord.ConnectionSample {
		out := make([]runrecord.ConnectionSample, len(cs))
		for i, c := range cs {
			out[i] = runrecord.ConnectionSample{AtNs: int64(i) * int64(100*time.Millisecond), Clients: c}
		}
		return out
	}
	tests := []struct {
		name     string
		rec      runrecord.Connections
		verdict  Verdict
		observed float64
		peakAt   int64
		explain  string
	}{
		{"within the pools", runrecord.Connections{PoolSize: 20, Instances: 3, Monitor: 3, Samples: samples(5, 40, 63, 12)},
			Pass, 63, int64(200 * time.Millisecond), "at most 63"},
		{"one over", runrecord.Connections{PoolSize: 20, Instances: 3, Monitor: 3, Samples: samples(5, 64, 64)},
			Fail, 64, int64(100 * time.Millisecond), "beyond 63"},
		{"no sample", runrecord.Connections{PoolSize: 20, Instances: 3, Monitor: 3, Err: "sampling connected_clients: refused"},
			Unknown, 0, 0, "refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := connections(&tc.rec)
			if got.Name != CheckConnections || got.Verdict != tc.verdict || got.Observed != tc.observed || got.Bound != 63 {
				t.Fatalf("connections = %+v, want %s with observed %v of bound 63", got, tc.verdict, tc.observed)
			}
			if !strings.Contains(got.Explanation, tc.explain) {
				t.Errorf("explanation %q lacks %q", got.Explanation, tc.explain)
			}
			if tc.verdict != Unknown && (got.Proof == nil || got.Proof.FromNs != tc.peakAt) {
				t.Errorf("proof %+v, want the peak at %d", got.Proof, tc.peakAt)
			}
		})
	}
}

// TestConnectionsFromRecord: CheckRun adds the check when the record holds
// samples, and not otherwise.
func TestConnectionsFromRecord(t *testing.T) {
	h := &hist{}
	h.add("k", 0, time.Millisecond, history.Admitted)
	rec := &runrecord.ScenarioRecord{Name: "", Connections: &runrecord.Connections{PoolSize: 1, Instances: 1, Monitor: 1, Samples: []runrecord.ConnectionSample{{AtNs: 5, Clients: 3}}}}
	rep, err := CheckRun(h.source(), rec, Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, "gcra:10/1s,burst=10")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := result(t, rep, CheckConnections); got.Verdict != Fail || got.Observed != 3 || got.Bound != 2 {
		t.Errorf("redis-connections = %+v, want a failure, 3 seen of 2 allowed", got)
	}
	rec.Connections = nil
	h.recs[0].ID = 1
	rep, err = CheckRun(h.source(), rec, Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, "gcra:10/1s,burst=10")}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Name == CheckConnections {
			t.Errorf("redis-connections ran without samples: %+v", r)
		}
	}
}
