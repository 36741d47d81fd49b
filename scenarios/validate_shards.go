package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios/nearest"
)

// shards validates the shards section: a count of shards within
// history.MaxShards and spread identities that exist.
func (v *validator) shards(r *rawShards, s *Scenario) Shards {
	var out Shards
	if r == nil {
		return out
	}
	if r.Count == nil && len(r.Spread) == 0 {
		v.fail("shards", "empty; give count (the shards a sharded run uses, such as 3), spread, or both")
	}
	if r.Count != nil {
		out.Count = *r.Count
		if out.Count < 1 || out.Count > history.MaxShards {
			v.fail("shards.count", "%d: want 1 to %d shards", out.Count, history.MaxShards)
		}
	}
	id := &s.Identities
	var groups []string
	for _, g := range id.Groups {
		groups = append(groups, g.Name)
	}
	for j, name := range r.Spread {
		field := fmt.Sprintf("shards.spread[%d]", j)
		valid := append([]string{SpreadHot}, groups...)
		switch {
		case slices.Contains(out.Spread, name):
			v.fail(field, "%q is named twice", name)
		case name == SpreadHot && slices.Contains(groups, name):
			v.fail(field, "hot names both the hot identity and group hot; rename the group")
		case name == SpreadHot && id.Distribution != Hot:
			v.fail(field, "hot names the hot identity of distribution: hot, but identities.distribution is %s; name a group of identities.groups, or remove it", id.Distribution)
		case name == SpreadHot || slices.Contains(groups, name):
		case len(groups) == 0:
			v.fail(field, "unknown %q; spread takes hot (the hot identity of distribution: hot) or the name of a group of identities.groups", name)
		default:
			if near := nearest.Word(name, valid); near != "" {
				v.fail(field, "unknown %q; did you mean %q?", name, near)
			} else {
				v.fail(field, "unknown %q; spread takes hot or a group: %s", name, strings.Join(groups, ", "))
			}
		}
		out.Spread = append(out.Spread, name)
	}
	return out
}

// ErrNotShardable is wrapped by the errors Shardable returns.
var ErrNotShardable = errors.New("not shardable")

// Shardable reports whether the scenario's traffic can be split into shards
// that several load generators fire together (rlbench run --shard I/N),
// which needs every shard to reach one limiter and one budget. It returns
// an error wrapping ErrNotShardable, naming the file, the field, the
// reason and the fix, when
//
//   - the scenario injects faults: a drill's fault acts on one Redis or
//     instance, armed by one run, which its shards could not share;
//   - the target is sample API (or peer) instances rlbench starts, unless
//     they keep their budget in a Redis every shard reaches (store: redis
//     with redis.provider: external): each shard would start its own
//     instances, and no two would share a budget;
//   - a phase whose clients honour Retry-After sends from an identity of
//     Shards.Spread: such a client waits out the answers to its own
//     requests, which would come to several shards.
//
// A launcher that starts the target once and runs its shards against it
// as an external target checks the scenario rewritten that way, which
// leaves the other reasons.
func (sc *Scenario) Shardable() error {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s: %s", sc.Source, ErrNotShardable, field, fmt.Sprintf(format, args...))
	}
	if len(sc.Faults) > 0 {
		return fail("faults", "a drill's faults act on one Redis or instance, injected by one run, which the shards could not share; run the drill unsharded")
	}
	t := sc.Target
	if len(t.External) == 0 {
		what := "sample API instances"
		if t.Peer != "" {
			what = string(t.Peer) + " instances"
		}
		switch {
		case t.Store != StoreRedis && t.Peer != "":
			return fail("target.peer", "peer %s keeps its budget in its own processes, and every shard would start its own; run it unsharded", t.Peer)
		case t.Store != StoreRedis:
			return fail("target.store", "%s: every shard would start its own %s, each with a budget of its own; use store: redis on a Redis every shard reaches (redis: {provider: external, url: ...}), or run it unsharded", t.Store, what)
		case sc.Redis.Provider != ProviderExternal:
			return fail("target.instances", "every shard would start its own %s on its own Redis, and no two would share a budget; "+
				"point target.external at a running API, keep the budget in a Redis every shard reaches (redis: {provider: external, url: ...}, "+
				"or rlbench run --redis-provider external --redis-url URL), or run it unsharded", what)
		}
	}
	for i, ph := range sc.Phases {
		if !ph.HonorRetryAfter {
			continue
		}
		if n := sc.spreadSent(ph); n >= 0 {
			return fail(fmt.Sprintf("traffic[%d].honor_retry_after", i), "the clients of phase %s wait out the Retry-After of their own requests, "+
				"but every shard sends identity %s's (shards.spread: %s) and sees its own answers alone; "+
				"remove the identity from shards.spread, or honor_retry_after from the phase", ph.Name, sc.Identities.Identity("", n).Label, strings.Join(sc.Shards.Spread, ", "))
		}
	}
	return nil
}

// SpreadIdentity reports whether every shard of a sharded run sends its
// share of identity i's requests in phase ph (SpreadSets).
func (sc *Scenario) SpreadIdentity(ph Phase, i int) bool {
	for _, s := range sc.SpreadSets(ph) {
		if i >= s.First && i < s.First+s.Count {
			return true
		}
	}
	return false
}

// SpreadSets returns the identities of phase ph whose requests every shard
// of a sharded run sends its share of, as Shards.Spread names them: for
// SpreadHot with a hot distribution the phase's hot identity
// (Identities.Hot), a set of one with no Group and Spare -1; for a
// group's name the group's set (Identities.Sets). Nil when Spread names
// none.
func (sc *Scenario) SpreadSets(ph Phase) []IdentitySet {
	var out []IdentitySet
	for _, name := range sc.Shards.Spread {
		if name == SpreadHot {
			if hot := sc.Identities.Hot(ph.Groups); sc.Identities.Distribution == Hot && hot >= 0 {
				out = append(out, IdentitySet{First: hot, Count: 1, Spare: -1})
			}
			continue
		}
		for _, set := range sc.Identities.Sets() {
			if set.Group == name {
				out = append(out, set)
			}
		}
	}
	return out
}

// spreadSent returns a spread identity (SpreadIdentity) phase ph sends
// from, or -1 when it sends from none. A group is spread whole, and the hot
// identity is the first of a set, so the first identity of each set tells.
func (sc *Scenario) spreadSent(ph Phase) int {
	for _, set := range sc.Identities.SetsOf(ph.Groups) {
		if set.Count > 0 && sc.SpreadIdentity(ph, set.First) {
			return set.First
		}
	}
	return -1
}

// Hot returns the index of the hot identity of a phase that sends from
// groups (nil: every identity): the first identity of the first of its
// sets that holds any, which a hot distribution sends Share of the
// requests from; -1 when the sets hold none.
func (id Identities) Hot(groups []string) int {
	for _, s := range id.SetsOf(groups) {
		if s.Count > 0 {
			return s.First
		}
	}
	return -1
}
