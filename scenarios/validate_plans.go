package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios/nearest"
)

type rawGroup struct {
	Name     string          `yaml:"name"`
	Count    *int            `yaml:"count"`
	Policies []limiter.Limit `yaml:"policies"`
	KeysFile string          `yaml:"keys_file"`
}

// groupName is a group's name: no '-' or '#', which separate it from the
// rest of its identities' labels (Group.KeyPattern).
var groupName = regexp.MustCompile(`^[a-z0-9][a-z0-9_]*$`)

// groups validates identities.groups into id: each group's name, count,
// policies and keys; Count becomes the identities of no group (none, when
// groups are given without count or keys_file) plus the groups'.
func (v *validator) groups(r *rawIdentities, id *Identities) {
	if len(r.Groups) == 0 {
		return
	}
	if id.Carry == ClientIP {
		v.fail("identities.groups", "a group is a plan for API keys or tokens; client addresses (carry: client_ip) have none")
		return
	}
	if r.Count == nil && r.KeysFile == "" {
		id.Count = 0 // every identity is in a group
	}
	seen := map[string]int{}
	keys := map[string]string{} // key → where it was first read
	for i, k := range id.Keys {
		keys[k.Reveal()] = fmt.Sprintf("identities.keys_file (key#%d)", i+1)
	}
	for i, rg := range r.Groups {
		field := fmt.Sprintf("identities.groups[%d]", i)
		g := Group{Name: rg.Name, Count: 1}
		switch {
		case rg.Name == "":
			v.fail(field+".name", "missing; name the group, such as free or pro")
		case !groupName.MatchString(rg.Name):
			v.fail(field+".name", "%q: use lowercase letters, digits and '_' (no '-': it separates the name in the keys' labels)", rg.Name)
		case rg.Name == "key":
			v.fail(field+".name", "\"key\" names the identities of no group (key-0001, key#1); choose another name")
		}
		if j, dup := seen[rg.Name]; dup && rg.Name != "" {
			v.fail(field+".name", "%q is also the name of identities.groups[%d]", rg.Name, j)
		}
		seen[rg.Name] = i
		if len(rg.Policies) == 0 {
			v.fail(field+".policies", "missing; a group is its plan: give the limits its keys are held to, such as [\"gcra:60/1m,burst=10\"]")
		}
		for j, l := range rg.Policies {
			if err := l.Validate(); err != nil {
				v.fail(fmt.Sprintf("%s.policies[%d]", field, j), "%w", err)
				continue
			}
			g.Policies = append(g.Policies, l)
		}
		if j, err := limiter.CheckLeaseAlone(g.Policies); err != nil {
			l := g.Policies[j]
			v.fail(fmt.Sprintf("%s.policies[%d]", field, j), "%w: lease: lease=%d/%v: a lease applies to a rule of one limit, and the group's keys are held to its %d policies at once; remove lease= or give the group one policy", limiter.ErrInvalidLimit, l.LeaseTokens, l.LeaseFor, len(g.Policies))
		}
		if rg.KeysFile != "" {
			if r.Fixed != nil && !*r.Fixed {
				v.fail("identities.fixed", "false, but the keys of %s from a file are the same in every run", field)
			}
			g.KeysFile = rg.KeysFile
			g.Keys = v.keysFile(field+".keys_file", rg.KeysFile, id.Carry)
			g.Count = len(g.Keys)
			for n, k := range g.Keys {
				if prev, ok := keys[k.Reveal()]; ok {
					v.fail(field+".keys_file", "%s: key %d is also %s; a key has one plan", rg.KeysFile, n+1, prev)
					break
				}
				keys[k.Reveal()] = fmt.Sprintf("%s (%s#%d)", field+".keys_file", rg.Name, n+1)
			}
		}
		if rg.Count != nil {
			g.Count = *rg.Count
			switch {
			case g.Count < 1 || g.Count > MaxIdentities:
				v.fail(field+".count", "%d: want 1 to %d", g.Count, MaxIdentities)
			case len(g.Keys) > 0 && g.Count > len(g.Keys):
				v.fail(field+".count", "%d, but %s holds %d keys", g.Count, rg.KeysFile, len(g.Keys))
			}
		}
		id.Groups = append(id.Groups, g)
		id.Count += g.Count
	}
	if id.Count > MaxIdentities {
		v.fail("identities.groups", "%d identities in all, above the %d a scenario may have", id.Count, MaxIdentities)
	}
}

// phaseGroups validates each phase's groups against identities.groups.
func (v *validator) phaseGroups(raw []rawPhase, s *Scenario) {
	id := &s.Identities
	var names []string
	for _, g := range id.Groups {
		names = append(names, g.Name)
	}
	for i := range raw {
		if i >= len(s.Phases) || len(raw[i].Groups) == 0 {
			continue
		}
		field := fmt.Sprintf("traffic[%d].groups", i)
		p := &s.Phases[i]
		switch {
		case p.Kind == Idle:
			v.fail(field, "an idle phase sends nothing; it takes no groups")
			continue
		case len(names) == 0:
			v.fail(field, "identities.groups defines no group; define them there, or remove groups")
			continue
		}
		for j, name := range raw[i].Groups {
			f := fmt.Sprintf("%s[%d]", field, j)
			switch {
			case !slices.Contains(names, name):
				if near := nearest.Word(name, names); near != "" {
					v.fail(f, "unknown group %q; did you mean %q?", name, near)
				} else {
					v.fail(f, "unknown group %q; the groups are %s", name, strings.Join(names, ", "))
				}
			case slices.Contains(p.Groups, name):
				v.fail(f, "%q is named twice", name)
			}
			p.Groups = append(p.Groups, name)
		}
	}
}

// probeSets reports, by group name ("" for the identities of no group),
// the sets whose spare identity a retry_after_probe sends from: the first
// set of each probe's groups.
func probeSets(s *Scenario) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Phases {
		if p.Kind != RetryAfterProbe {
			continue
		}
		if sets := s.Identities.SetsOf(p.Groups); len(sets) > 0 {
			out[sets[0].Group] = true
		}
	}
	return out
}

// groupsFit checks the groups against the rest of the scenario: a spare
// key for a probe in a keys file, route costs within every plan, and a
// target that can hold keys to plans.
func (v *validator) groupsFit(r *rawIdentities, s *Scenario) {
	id := &s.Identities
	if len(id.Groups) == 0 {
		return
	}
	probes := probeSets(s)
	for i := range id.Groups {
		g := &id.Groups[i]
		field := fmt.Sprintf("identities.groups[%d]", i)
		if probes[g.Name] && len(g.Keys) > 0 {
			switch {
			case r.Groups[i].Count != nil && g.Count >= len(g.Keys):
				v.fail(field+".count", "%d uses every key of %s, but a retry_after_probe sends from this group and needs a key no other phase uses; give at most %d", g.Count, g.KeysFile, len(g.Keys)-1)
			case r.Groups[i].Count == nil && len(g.Keys) < 2:
				v.fail(field+".keys_file", "%s holds one key, but a retry_after_probe sends from this group and needs one of its own beside it", g.KeysFile)
			case r.Groups[i].Count == nil:
				g.Count-- // the last key is the probe's
				id.Count--
			}
		}
		for j, rt := range s.Target.Routes {
			for _, l := range g.Policies {
				if !rt.Baseline() && rt.Cost > l.Capacity() {
					v.fail(fmt.Sprintf("target.routes[%d].cost", j), "%d is above the capacity %d of group %s's policy %s; none of its requests could ever be admitted", rt.Cost, l.Capacity(), g.Name, l)
				}
			}
		}
	}
	switch {
	case s.Target.Peer != "":
		v.fail("identities.groups", "peer %s holds every key to the route's policy; groups need the sample API or an external target", s.Target.Peer)
	case s.Target.Instances > 0 && len(s.Target.External) == 0:
		v.samplePlans(s, probes[""])
	}
}

// samplePlans checks that the sample API can hold the keys to their
// plans: each group's policies are a sample API plan, all on one
// algorithm, and the keys of no group (if any) take the routes' policies
// as one default plan, which needs the same policies on every limited
// route (the sample API charges a key's plan on every route).
func (v *validator) samplePlans(s *Scenario, probeUngrouped bool) {
	var alg limiter.Algorithm
	same := func(field string, a limiter.Algorithm, whose string) {
		switch {
		case alg == "":
			alg = a
		case a != alg:
			v.fail(field, "the sample API runs every plan's tier on one algorithm: %s uses %s, another plan %s", whose, a, alg)
		}
	}
	for i, g := range s.Identities.Groups {
		field := fmt.Sprintf("identities.groups[%d].policies", i)
		p, err := SamplePlanOf(g.Policies)
		if err != nil {
			v.fail(field, "the sample API keeps a plan as its api_keys table does, a per-minute tier and a monthly quota: %v", err)
			continue
		}
		same(field, p.Algorithm, "group "+g.Name)
	}
	if s.Identities.Ungrouped() == 0 && !probeUngrouped {
		return
	}
	var first []limiter.Limit
	for i, rt := range s.Target.Routes {
		if rt.Baseline() {
			continue
		}
		field := fmt.Sprintf("target.routes[%d].policies", i)
		if first == nil {
			first = rt.Policies
			p, err := SamplePlanOf(rt.Policies)
			if err != nil {
				v.fail(field, "with groups, the sample API gives keys of no group the routes' policies as a plan (a per-minute tier and a monthly quota): %v; or put every identity in a group", err)
				return
			}
			same(field, p.Algorithm, "the routes' default plan")
			continue
		}
		if !slices.Equal(rt.Policies, first) {
			v.fail(field, "with groups, the sample API gives keys of no group one plan on every route: give every limited route the same policies, or put every identity in a group")
			return
		}
	}
}
