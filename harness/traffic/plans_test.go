package traffic

import (
	"context"
	"strings"
	"testing"
)

const planGroups = `  count: 2
  groups:
    - {name: free, count: 3, policies: ["gcra:60/1m,burst=10"]}
    - {name: pro, count: 2, policies: ["gcra:600/1m,burst=100"]}`

// TestPlannerGroups: a phase sends from its groups' identities alone,
// spread by the scenario's distribution over them (the first named is
// the hot one), and a phase without groups from every identity.
func TestPlannerGroups(t *testing.T) {
	tests := []struct {
		name    string
		ids     string
		phase   string
		want    map[int]bool // the identity indexes the phase may use
		hot     int          // the hot identity, or -1
		hotMin  float64
		spare   int
		wantLab string // the label of the spare identity
	}{
		{"every identity", planGroups, "  - {kind: constant, rate: 1/1s, duration: 1s}",
			map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true}, -1, 0, 7, "key-0002"},
		{"pro only", planGroups, "  - {kind: constant, rate: 1/1s, duration: 1s, groups: [pro]}",
			map[int]bool{5: true, 6: true}, -1, 0, 9, "pro-0002"},
		{"pro, then free", planGroups, "  - {kind: constant, rate: 1/1s, duration: 1s, groups: [pro, free]}",
			map[int]bool{2: true, 3: true, 4: true, 5: true, 6: true}, -1, 0, 9, "pro-0002"},
		{"hot within free", strings.Replace(planGroups, "  count: 2", "  count: 2\n  distribution: hot\n  share: 0.9", 1),
			"  - {kind: constant, rate: 1/1s, duration: 1s, groups: [free]}",
			map[int]bool{2: true, 3: true, 4: true}, 2, 0.88, 8, "free-0003"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := scenario(t, 1, oneRoute, tt.ids, tt.phase)
			e, err := newEngine(Config{Scenario: sc, BaseURLs: []string{"http://a"}})
			if err != nil {
				t.Fatal(err)
			}
			p := newPlanner(sc, sc.Phases[0], newRand(sc.Seed, 0), 0)
			seen := map[int]int{}
			const n = 20000
			for _, it := range p.plan(n) {
				if !tt.want[it.identity] {
					t.Fatalf("identity %d (%s) is not one the phase sends from (%v)", it.identity, e.identity(it.identity).Label, tt.want)
				}
				seen[it.identity]++
			}
			if len(seen) != len(tt.want) {
				t.Errorf("the phase used identities %v, want every one of %v", seen, tt.want)
			}
			if tt.hot >= 0 {
				if share := float64(seen[tt.hot]) / n; share < tt.hotMin {
					t.Errorf("hot identity %d got %.3f of requests, want at least %v", tt.hot, share, tt.hotMin)
				}
			}
			if got := p.spare(); got != tt.spare {
				t.Errorf("spare() = %d, want %d", got, tt.spare)
			}
			if got := e.identity(p.spare()).Label; got != tt.wantLab {
				t.Errorf("spare label = %q, want %q", got, tt.wantLab)
			}
		})
	}
}

// TestRunGroups sends a group's burst and a probe from the group, and
// checks what the target saw: only the group's keys, each carrying its
// group's name, and the probe on the group's spare key.
func TestRunGroups(t *testing.T) {
	tgt, srv := newTestTarget(t, "X-API-Key", "gcra:1/1s,burst=3")
	sc := scenario(t, 1, oneRoute, planGroups+"\n  fixed: true",
		"  - {kind: burst, requests: 20, groups: [pro]}\n  - {kind: retry_after_probe, requests: 10, groups: [free]}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}, RunID: "3f9a1c07"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		want := "pro-000"
		if r.Phase == sc.Phases[1].Name {
			want = "free-0003" // free's spare: free-0000 to free-0002 are the phases'
		}
		if !strings.HasPrefix(r.Identity, want) {
			t.Errorf("request %d of %s sent as %s, want %s…", r.ID, r.Phase, r.Identity, want)
		}
	}
	tgt.mu.Lock()
	defer tgt.mu.Unlock()
	for id, s := range tgt.seen {
		if !strings.HasPrefix(s.identity, "pro-") && s.identity != "free-0003" {
			t.Errorf("request %s reached the target as %q", id, s.identity)
		}
	}
	if ps := stats.Phases[1]; !ps.ProbeRejected || !ps.ProbeAdmitted {
		t.Errorf("probe: rejected %v, admitted %v; want both", ps.ProbeRejected, ps.ProbeAdmitted)
	}
}
