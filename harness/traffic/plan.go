package traffic

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios"
)

// Planned is one request of a phase's plan: who sends it, where, on which
// route and when. A phase's plan is drawn from the scenario's seed and the
// phase's place alone (newRand), so every load generator that plans the
// same scenario plans the same requests.
type Planned struct {
	// Seq is the request's place in the phase's whole plan, every shard's
	// requests counted, from 0.
	Seq int
	// Intended is when the request is due, from the phase's anchor: the
	// phase's start for a constant or ramp phase, the first planned send
	// of a burst phase, the window edge of an edge burst (negative before
	// it). A retry_after_probe's requests are all 0: each is sent when the
	// answer before it is in, the retry once its Retry-After is over.
	Intended time.Duration
	// Burst is the burst the request belongs to: the repetition of a burst
	// phase (from 0), the half of an edge burst (0 before the edge, 1
	// after); 0 in other phases.
	Burst int
	// Identity is the identity's index (scenarios.Identities.Identity),
	// Route an index into Target.Routes and Instance one into the target's
	// instances (Config.BaseURLs).
	Identity, Route, Instance int
}

func (p Planned) item() item { return item{identity: p.Identity, route: p.Route, instance: p.Instance} }

// Whole is the shard of a run that is not sharded: shard 0 of 1, which
// owns every request.
var Whole = history.Shard{Index: 0, Count: 1}

// Plan returns the requests shard sends in phase i (from 0) of sc, in the
// order of their Seq, which is the order of their Intended times. It sends
// nothing, and is what Run fires: a run of shard sends exactly these
// requests of the phase, each at its Intended time from the phase's
// anchor (a probe's as its answers allow, the retry only after a
// rejection). With Whole it is the phase's whole plan, and the plans of
// shards 0 to N−1 of N partition it (Owner). Errors: a phase index out of
// range or an invalid shard (history.Shard.Validate), both wrapping
// ErrConfig.
func Plan(sc *scenarios.Scenario, i int, shard history.Shard) ([]Planned, error) {
	if err := shard.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if sc == nil || i < 0 || i >= len(sc.Phases) {
		return nil, fmt.Errorf("%w: no phase %d", ErrConfig, i)
	}
	all := planPhase(sc, i)
	if shard.Count == 1 {
		return all, nil
	}
	own := newOwnership(sc, sc.Phases[i], shard.Count)
	var out []Planned
	for _, p := range all {
		if own.owner(p) == shard.Index {
			out = append(out, p)
		}
	}
	return out, nil
}

// Owner returns the shard (of count) that sends request p of phase i of
// sc. The rule, deterministic and balanced:
//
//   - a retry_after_probe's requests belong to shard 0, since each depends
//     on the answer to the one before;
//   - a request of an identity every shard sends (sc.SpreadIdentity:
//     shards.spread) belongs to shard Seq mod count;
//   - any other request belongs to its identity's shard, Identity mod
//     count, so that each identity's requests, and the clients that
//     honour Retry-After with them, stay on one load generator.
func Owner(sc *scenarios.Scenario, i int, p Planned, count int) int {
	return newOwnership(sc, sc.Phases[i], count).owner(p)
}

// ownership decides Owner for the requests of one phase.
type ownership struct {
	count  int
	probe  bool
	spread []scenarios.IdentitySet
}

func newOwnership(sc *scenarios.Scenario, ph scenarios.Phase, count int) ownership {
	return ownership{count: count, probe: ph.Kind == scenarios.RetryAfterProbe, spread: sc.SpreadSets(ph)}
}

func (o ownership) owner(p Planned) int {
	if o.probe {
		return 0
	}
	for _, s := range o.spread {
		if p.Identity >= s.First && p.Identity < s.First+s.Count {
			return p.Seq % o.count
		}
	}
	return p.Identity % o.count
}

// planPhase draws the whole plan of phase i of sc.
func planPhase(sc *scenarios.Scenario, i int) []Planned {
	ph := sc.Phases[i]
	p := newPlanner(sc, ph, newRand(sc.Seed, i), roundRobinStart(sc, i))
	var (
		n     int
		at    func(k int) time.Duration
		burst = func(int) int { return 0 }
	)
	switch ph.Kind {
	case scenarios.Constant, scenarios.Ramp:
		sched := schedule(ph)
		n, at = sched.N(), sched.At
	case scenarios.Burst:
		per := ph.Requests
		n = per * ph.Repeats()
		at = func(k int) time.Duration { return ph.BurstStart(k/per) + spreadOffset(k%per, per, ph.Spread) }
		burst = func(k int) int { return k / per }
	case scenarios.EdgeBurst:
		per := ph.Requests
		n = 2 * per
		at = func(k int) time.Duration { return edgeOffset(k, per, ph.Offset, ph.Spread) }
		burst = func(k int) int { return k / per }
	case scenarios.RetryAfterProbe:
		// Up to Requests sends and the retry, all from the spare identity,
		// each on the route and instance drawn for it in turn.
		out := make([]Planned, ph.Requests+1)
		spare := p.spare()
		for k := range out {
			rt := p.route()
			out[k] = Planned{Seq: k, Identity: spare, Route: rt, Instance: p.instance()}
		}
		return out
	default: // idle
		return nil
	}
	out := make([]Planned, n)
	for k := range out {
		it := p.next()
		out[k] = Planned{Seq: k, Intended: at(k), Burst: burst(k), Identity: it.identity, Route: it.route, Instance: it.instance}
	}
	return out
}

// schedule is the open-model schedule of a constant or ramp phase.
func schedule(ph scenarios.Phase) Schedule {
	if ph.Kind == scenarios.Ramp {
		return NewRampSchedule(ph.From, ph.To, ph.Duration)
	}
	return NewConstantSchedule(ph.Rate, ph.Duration)
}

// roundRobinStart is the round-robin position over the instances at which
// phase i starts: the requests every phase before it planned (a probe its
// most, Requests and the retry), so that the instance of each request
// depends on the plan alone, never on what a probe met.
func roundRobinStart(sc *scenarios.Scenario, i int) int {
	n := 0
	for _, ph := range sc.Phases[:i] {
		n += ph.PlannedRequests()
	}
	return n
}

// newRand returns the RNG of phase i: seeded by the scenario and the
// phase's place, so that one phase's plan does not depend on another's.
func newRand(seed int64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
}

// planItems returns the items of plan, in its order.
func planItems(plan []Planned) []item {
	items := make([]item, len(plan))
	for i, p := range plan {
		items[i] = p.item()
	}
	return items
}
