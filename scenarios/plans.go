package scenarios

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// Group is a set of identities that share a plan, as rows of an api_keys
// table give each key its own (free: 60/min with a burst of 10; pro:
// 600/min with a burst of 100). Its Policies replace the routes' policies
// for its keys, on every limited route: a key of a group is held to its
// group's policies, a key of no group to each route's. A route without
// policies stays a baseline for every key.
type Group struct {
	// Name names the group in its identities' labels (free-3f9a1c07-0003,
	// free#2), in a phase's groups and in `rlbench run --claim
	// GROUP=SPEC`: lowercase letters, digits and '_'.
	Name string
	// Count is the number of identities of the group; 1 when the file
	// does not say, or the number of keys in KeysFile (one fewer when a
	// retry_after_probe sends from the group).
	Count int
	// Policies are the limits applied together to every request of the
	// group's keys, pooled over every limited route, as a plan is.
	Policies []limiter.Limit
	// KeysFile is the file of the group's real keys or tokens, as the
	// scenario names it, and Keys its keys in file order (one a line,
	// blank lines and # comments skipped). Histories name them
	// <group>#1, <group>#2, ... by their place in Keys. Empty: the keys
	// are generated, <group>-<run>-0000 (or <group>-0000 when fixed).
	KeysFile string
	Keys     []Secret
}

// KeyPattern matches the labels of the group's identities, and those
// alone, as checker.Rule.Key reads a pattern: "free-*" for generated
// keys, "free#*" for keys from a file. Group names hold no '-' or '#',
// so no other group's labels and no identity of no group (key-..., key#N)
// match it.
func (g Group) KeyPattern() string {
	if len(g.Keys) > 0 || g.KeysFile != "" {
		return g.Name + "#*"
	}
	return g.Name + "-*"
}

// IdentitySet is a range of identity indexes: those of no group (Group
// empty) or those of one group. Identities.Sets lists them.
type IdentitySet struct {
	// Group is the group's name; empty for the identities of no group.
	Group string
	// First and Count bound the set's indexes: First to First+Count-1.
	First, Count int
	// Spare is the index of the set's spare identity, at or beyond
	// Identities.Count, which only a retry_after_probe sends from, so that
	// it begins with a full budget.
	Spare int
}

// Ungrouped is the number of identities of no group: Count without the
// groups' identities.
func (id Identities) Ungrouped() int {
	n := id.Count
	for _, g := range id.Groups {
		n -= g.Count
	}
	return n
}

// Sets lists the identities by group: those of no group first (when there
// are any), then each group's in the order of Groups. Indexes 0 to
// Ungrouped()-1 are of no group, and each group's follow the previous
// group's. The spare identity of the ungrouped set is index Count, that of
// group g index Count+1+g.
func (id Identities) Sets() []IdentitySet {
	var out []IdentitySet
	u := id.Ungrouped()
	if u > 0 || len(id.Groups) == 0 {
		out = append(out, IdentitySet{First: 0, Count: u, Spare: id.Count})
	}
	first := u
	for g, grp := range id.Groups {
		out = append(out, IdentitySet{Group: grp.Name, First: first, Count: grp.Count, Spare: id.Count + 1 + g})
		first += grp.Count
	}
	return out
}

// SetsOf returns the sets of the named groups, in the order named; with
// no names, every set (Sets). Unknown names are skipped (validation
// rejects them).
func (id Identities) SetsOf(groups []string) []IdentitySet {
	all := id.Sets()
	if len(groups) == 0 {
		return all
	}
	var out []IdentitySet
	for _, name := range groups {
		for _, s := range all {
			if s.Group == name && name != "" {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// GroupIndex returns the index in Groups of the named group, or -1.
func (id Identities) GroupIndex(name string) int {
	for i, g := range id.Groups {
		if g.Name == name {
			return i
		}
	}
	return -1
}

// locate maps identity index i to its group (-1: none) and its index
// within the set; spare identities (i ≥ Count) take the index after the
// set's last.
func (id Identities) locate(i int) (group, j int) {
	u := id.Ungrouped()
	switch {
	case i < u:
		return -1, i
	case i < id.Count:
		j = i - u
		for g, grp := range id.Groups {
			if j < grp.Count {
				return g, j
			}
			j -= grp.Count
		}
	}
	if g := i - id.Count - 1; g >= 0 && g < len(id.Groups) {
		return g, id.Groups[g].Count
	}
	return -1, u + i - id.Count
}

// groupIdentity is identity j of group g of the run named run (empty:
// fixed names).
func (id Identities) groupIdentity(run RunID, index, g, j int) Identity {
	grp := id.Groups[g]
	out := Identity{Index: index, Group: grp.Name}
	if len(grp.Keys) > 0 {
		k := j % len(grp.Keys)
		out.Value, out.Secret = grp.Keys[k].Reveal(), true
		out.Label = grp.Name + "#" + strconv.Itoa(k+1)
		return out
	}
	out.Value = grp.Name + "-" + numbered(run, j)
	out.Label = out.Value
	return out
}

// numbered is "0007" for j = 7, or "<run>-0007" when run is set.
func numbered(run RunID, j int) string {
	s := fmt.Sprintf("%04d", j)
	if run != "" {
		s = string(run) + "-" + s
	}
	return s
}

// MonthPeriod is the window of a sample API plan's monthly quota:
// sampleapi.MonthPeriod, 30 days (a test holds the two equal).
const MonthPeriod = 30 * 24 * time.Hour

// SamplePlan is a set of policies in the form the sample API keeps a key's
// plan in (a row of its api_keys table, or a key of its configuration): a
// per-minute tier under one algorithm, and an optional monthly quota.
type SamplePlan struct {
	// Algorithm is the tier's: GCRA or token bucket.
	Algorithm limiter.Algorithm
	// PerMinute is the tier's rate in units per minute; Burst its burst.
	PerMinute float64
	Burst     int64
	// MonthlyQuota is the units per MonthPeriod window; 0 for none.
	MonthlyQuota int64
}

// SamplePlanOf returns limits as a sample API plan: one gcra or
// token_bucket limit (at any period; "gcra:10/1s,burst=10" is 600 a
// minute), and optionally one fixed_window limit over 30 days
// ("fixed_window:10000/30d"), neither with a lease. The error says what
// does not fit.
func SamplePlanOf(limits []limiter.Limit) (SamplePlan, error) {
	var p SamplePlan
	tier, month := false, false
	for _, l := range limits {
		switch {
		case l.Leased():
			return SamplePlan{}, fmt.Errorf("%s declares a lease, and a sample API plan takes none (its keys would be decided without one); remove lease=", l.Spec())
		case (l.Algorithm == limiter.GCRA || l.Algorithm == limiter.TokenBucket) && !tier:
			tier = true
			p.Algorithm, p.Burst = l.Algorithm, l.Burst
			p.PerMinute = l.Rate * float64(time.Minute) / float64(l.Period)
		case l.Algorithm == limiter.FixedWindow && l.Period == MonthPeriod && !month:
			month = true
			p.MonthlyQuota = l.Capacity()
		default:
			return SamplePlan{}, fmt.Errorf("%s does not fit a sample API plan: one gcra or token_bucket limit and at most one fixed_window over 30d", l.Spec())
		}
	}
	if !tier {
		return SamplePlan{}, fmt.Errorf("a sample API plan needs a gcra or token_bucket limit, such as gcra:60/1m,burst=10")
	}
	return p, nil
}
