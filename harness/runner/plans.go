package runner

import (
	"fmt"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
)

// ApplyPlans gives a sample API instance's configuration cfg (from
// InstanceConfig) the plans of the identity groups of sc, as the rows of
// an api_keys table would: every key of every group, spare identities
// included, is listed in cfg.Keys with its group's plan (generated keys as
// the run named run sends them), and the routes' policies leave the routes
// (the sample API charges a route's limits to every key) to become the
// plan of the keys of no group (cfg.AnyKeyPlan), when there are such keys.
// Unknown keys are otherwise refused (401), which the status check
// reports. A scenario without groups is left as it is. Errors: policies
// that are no sample API plan (scenario validation rejects them first).
func ApplyPlans(cfg *sampleapi.Config, sc *scenarios.Scenario, run scenarios.RunID) error {
	id := sc.Identities
	if len(id.Groups) == 0 {
		return nil
	}
	sets := id.Sets()
	cfg.Keys = nil
	for _, grp := range id.Groups {
		p, err := scenarios.SamplePlanOf(grp.Policies)
		if err != nil {
			return fmt.Errorf("group %s: %w", grp.Name, err)
		}
		cfg.Algorithm = p.Algorithm
		plan := planConfig(p)
		if len(grp.Keys) > 0 {
			for k, key := range grp.Keys {
				cfg.Keys = append(cfg.Keys, sampleapi.KeyConfig{Name: fmt.Sprintf("%s#%d", grp.Name, k+1), Key: key.Reveal(), PlanConfig: plan})
			}
			continue
		}
		for _, s := range sets {
			if s.Group != grp.Name {
				continue
			}
			for i := range s.Count + 1 { // and the spare, a probe's
				idx := s.First + i
				if i == s.Count {
					idx = s.Spare
				}
				idn := id.Identity(run, idx)
				cfg.Keys = append(cfg.Keys, sampleapi.KeyConfig{Name: idn.Label, Key: idn.Value, PlanConfig: plan})
			}
		}
	}
	var def []limiter.Limit
	for i := range cfg.ExtraRoutes {
		if !cfg.ExtraRoutes[i].Baseline {
			if def == nil {
				def = cfg.ExtraRoutes[i].Limits
			}
			cfg.ExtraRoutes[i].Limits = nil
		}
	}
	cfg.AnyKey, cfg.AnyKeyPlan = false, nil
	if id.Ungrouped() > 0 {
		p, err := scenarios.SamplePlanOf(def)
		if err != nil {
			return fmt.Errorf("the routes' policies as the plan of keys of no group: %w", err)
		}
		plan := planConfig(p)
		cfg.AnyKey, cfg.AnyKeyPlan, cfg.Algorithm = true, &plan, p.Algorithm
	}
	return nil
}

func planConfig(p scenarios.SamplePlan) sampleapi.PlanConfig {
	return sampleapi.PlanConfig{RateLimitPerMinute: p.PerMinute, RateLimitBurst: p.Burst, MonthlyQuota: p.MonthlyQuota}
}

// headerPolicies are the policies the checks hold sc's requests to, as
// the history header records them: each group's on every limited route
// for its keys (Group.KeyPattern), first, then each limited route's own
// for the keys of no group. Claims replace a route's or a group's.
func (r *Runner) headerPolicies(sc *scenarios.Scenario) []history.RoutePolicy {
	var out []history.RoutePolicy
	specs := func(limits []limiter.Limit) []string {
		var s []string
		for _, l := range limits {
			s = append(s, l.Spec())
		}
		return s
	}
	for _, g := range sc.Identities.Groups {
		limits := g.Policies
		if claim, ok := r.opts.GroupClaims[g.Name]; ok {
			limits = claim
		}
		for _, rt := range sc.Target.Routes {
			if !rt.Baseline() {
				out = append(out, history.RoutePolicy{Route: rt.Path, Key: g.KeyPattern(), Limits: specs(limits)})
			}
		}
	}
	if len(sc.Identities.Groups) > 0 && sc.Identities.Ungrouped() == 0 {
		return out
	}
	for _, rt := range sc.Target.Routes {
		if !rt.Baseline() {
			out = append(out, history.RoutePolicy{Route: rt.Path, Limits: specs(r.claimed(rt))})
		}
	}
	return out
}
