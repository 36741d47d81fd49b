package scenarios

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// planIdentities is two ungrouped identities, three of group free
// (generated) and two of group pro (from a file of three keys).
func planIdentities() Identities {
	return Identities{Carry: APIKey, Count: 7, Groups: []Group{
		{Name: "free", Count: 3},
		{Name: "pro", Count: 2, KeysFile: "pro.txt", Keys: []Secret{NewSecret("pk_a"), NewSecret("pk_b"), NewSecret("pk_c")}},
	}}
}

func TestGroupIdentities(t *testing.T) {
	id := planIdentities()
	tests := []struct {
		i                    int
		wantLabel, wantValue string
		wantGroup            string
		wantSecret           bool
	}{
		{0, "key-3f9a1c07-0000", "key-3f9a1c07-0000", "", false},
		{1, "key-3f9a1c07-0001", "key-3f9a1c07-0001", "", false},
		{2, "free-3f9a1c07-0000", "free-3f9a1c07-0000", "free", false},
		{4, "free-3f9a1c07-0002", "free-3f9a1c07-0002", "free", false},
		{5, "pro#1", "pk_a", "pro", true},
		{6, "pro#2", "pk_b", "pro", true},
		{7, "key-3f9a1c07-0002", "key-3f9a1c07-0002", "", false},       // the spare of no group
		{8, "free-3f9a1c07-0003", "free-3f9a1c07-0003", "free", false}, // free's spare
		{9, "pro#3", "pk_c", "pro", true},                              // pro's spare: the key no other phase uses
	}
	for _, tt := range tests {
		got := id.Identity("3f9a1c07", tt.i)
		if got.Label != tt.wantLabel || got.Value != tt.wantValue || got.Group != tt.wantGroup || got.Secret != tt.wantSecret || got.Index != tt.i {
			t.Errorf("Identity(%d) = %+v; want label %q, value %q, group %q, secret %v", tt.i, got, tt.wantLabel, tt.wantValue, tt.wantGroup, tt.wantSecret)
		}
	}
	id.Fixed = true
	if got, want := id.Identity("3f9a1c07", 3).Label, "free-0001"; got != want {
		t.Errorf("fixed: Identity(3).Label = %q, want %q", got, want)
	}
}

func TestIdentitySets(t *testing.T) {
	id := planIdentities()
	want := []IdentitySet{{"", 0, 2, 7}, {"free", 2, 3, 8}, {"pro", 5, 2, 9}}
	if got := id.Sets(); !slices.Equal(got, want) {
		t.Fatalf("Sets() = %v, want %v", got, want)
	}
	if got, want := id.SetsOf([]string{"pro", "free"}), []IdentitySet{want[2], want[1]}; !slices.Equal(got, want) {
		t.Errorf("SetsOf(pro, free) = %v, want %v (in the order named)", got, want)
	}
	if got := id.SetsOf(nil); len(got) != 3 {
		t.Errorf("SetsOf(nil) = %v, want every set", got)
	}
	// Every identity of every set, and every spare, has its set's group
	// and a label its group's pattern matches, and no other's.
	labels := map[string]bool{}
	for _, s := range id.Sets() {
		for i := s.First; i <= s.First+s.Count; i++ {
			idx := i
			if i == s.First+s.Count {
				idx = s.Spare
			}
			idn := id.Identity("3f9a1c07", idx)
			if idn.Group != s.Group {
				t.Errorf("identity %d: group %q, want %q", idx, idn.Group, s.Group)
			}
			if labels[idn.Label] {
				t.Errorf("identity %d repeats label %q", idx, idn.Label)
			}
			labels[idn.Label] = true
			for _, g := range id.Groups {
				if got, want := matchKey(g.KeyPattern(), idn.Label), g.Name == s.Group; got != want {
					t.Errorf("pattern %s matches %q: %v, want %v", g.KeyPattern(), idn.Label, got, want)
				}
			}
		}
	}
	// Without groups, the one set is every identity and its spare index
	// Count, as the probe has always used.
	plain := Identities{Carry: APIKey, Count: 4}
	if got, want := plain.Sets(), []IdentitySet{{"", 0, 4, 4}}; !slices.Equal(got, want) {
		t.Errorf("Sets() without groups = %v, want %v", got, want)
	}
	if got, want := plain.Identity("", 4).Label, "key-0004"; got != want {
		t.Errorf("spare without groups = %q, want %q", got, want)
	}
}

// matchKey is checker.Rule's key matching: equal, or by prefix with a
// trailing "*".
func matchKey(pattern, s string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(s, p)
	}
	return pattern == s
}

func TestFreshWithGroups(t *testing.T) {
	id := Identities{Carry: APIKey, Count: 2, Groups: []Group{{Name: "free", Count: 2}}}
	if !id.Fresh() {
		t.Error("generated group keys: Fresh() = false, want true")
	}
	id.Groups = append(id.Groups, Group{Name: "pro", Count: 1, Keys: []Secret{NewSecret("k")}})
	if id.Fresh() {
		t.Error("a group's keys from a file: Fresh() = true, want false")
	}
}

func TestSamplePlanOf(t *testing.T) {
	parse := func(specs ...string) []limiter.Limit {
		var out []limiter.Limit
		for _, s := range specs {
			l, err := limiter.ParseLimit(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, l)
		}
		return out
	}
	tests := []struct {
		name    string
		limits  []limiter.Limit
		want    SamplePlan
		wantErr string
	}{
		{"free", parse("gcra:60/1m,burst=10"), SamplePlan{limiter.GCRA, 60, 10, 0}, ""},
		{"per second", parse("token_bucket:10/1s,burst=20"), SamplePlan{limiter.TokenBucket, 600, 20, 0}, ""},
		{"with a month", parse("fixed_window:10000/30d", "gcra:600/1m,burst=100"), SamplePlan{limiter.GCRA, 600, 100, 10000}, ""},
		{"no tier", parse("fixed_window:10000/30d"), SamplePlan{}, "needs a gcra or token_bucket limit"},
		{"two tiers", parse("gcra:60/1m,burst=10", "gcra:1000/1h,burst=10"), SamplePlan{}, "gcra:1000/1h,burst=10 does not fit"},
		{"a day window", parse("gcra:60/1m,burst=10", "fixed_window:100/1d"), SamplePlan{}, "fixed_window:100/24h,burst=100 does not fit"},
		{"sliding window", parse("sliding_window_log:60/1m"), SamplePlan{}, "does not fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SamplePlanOf(tt.limits)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("SamplePlanOf = %+v, %v; want an error with %q", got, err, tt.wantErr)
			case tt.wantErr == "" && err != nil:
				t.Fatalf("SamplePlanOf: %v", err)
			case got != tt.want:
				t.Fatalf("SamplePlanOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestParseGroups parses a scenario with groups: counts, policies, keys,
// the probe's spare key and the phases' groups.
func TestParseGroups(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pro.txt"), []byte("# pro keys\npk_a\npk_b\npk_c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "plans.yaml")
	src := `name: plans
description: free and pro keys against one external API
target:
  external: [http://127.0.0.1:8080]
  routes:
    - path: /v1/data
      policies: ["gcra:10/1s,burst=10"]
    - path: /v1/data-baseline
identities:
  carry: bearer
  count: 1
  groups:
    - {name: free, count: 4, policies: ["gcra:60/1m,burst=10"]}
    - {name: pro, keys_file: pro.txt, policies: ["gcra:600/1m,burst=100", "fixed_window:100000/30d"]}
traffic:
  - {kind: constant, rate: 10/1s, duration: 2s}
  - {kind: burst, requests: 50, groups: [pro]}
  - {kind: retry_after_probe, requests: 120, groups: [pro, free]}
`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	id := sc.Identities
	if got, want := id.Count, 1+4+2; got != want {
		t.Errorf("Count = %d, want %d (one of no group, four free, pro's three keys less the probe's)", got, want)
	}
	if got, want := id.Ungrouped(), 1; got != want {
		t.Errorf("Ungrouped() = %d, want %d", got, want)
	}
	if len(id.Groups) != 2 {
		t.Fatalf("%d groups, want 2", len(id.Groups))
	}
	free, pro := id.Groups[0], id.Groups[1]
	if free.Name != "free" || free.Count != 4 || len(free.Policies) != 1 || free.Policies[0].Burst != 10 || free.KeyPattern() != "free-*" {
		t.Errorf("free = %+v (pattern %s)", free, free.KeyPattern())
	}
	if pro.Count != 2 || len(pro.Keys) != 3 || len(pro.Policies) != 2 || pro.Policies[1].Period != 30*24*time.Hour || pro.KeyPattern() != "pro#*" {
		t.Errorf("pro = %+v (pattern %s)", pro, pro.KeyPattern())
	}
	if got := sc.Phases[0].Groups; got != nil {
		t.Errorf("phase 0 groups = %v, want none (every identity)", got)
	}
	if got, want := sc.Phases[2].Groups, []string{"pro", "free"}; !slices.Equal(got, want) {
		t.Errorf("phase 2 groups = %v, want %v", got, want)
	}
	if got, want := probeSets(sc), map[string]bool{"pro": true}; len(got) != 1 || !got["pro"] {
		t.Errorf("probeSets = %v, want %v", got, want)
	}
	if got, want := id.Identity("", id.SetsOf([]string{"pro"})[0].Spare).Label, "pro#3"; got != want {
		t.Errorf("the probe sends as %q, want %q", got, want)
	}
	if id.Fresh() {
		t.Error("Fresh() = true with pro's keys from a file")
	}
}
