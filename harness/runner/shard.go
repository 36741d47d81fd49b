//go:build unix

package runner

import (
	"errors"
	"fmt"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/progress"
	"github.com/rlbench/rlbench/harness/traffic"
	"github.com/rlbench/rlbench/scenarios"
)

// ErrNoRunID is returned by Shard for a sharded run without Options.RunID.
var ErrNoRunID = errors.New("a sharded run needs the run id its shards share, so that they send the same identities")

// Shard returns the shard of sc this runner fires: nil when Options.Shard
// is nil (the whole run), else Options.Shard, its count taken from the
// scenario's shards.count when Options.Shard.Count is 0. Errors: a run
// without Options.RunID (ErrNoRunID), a count the scenario does not give,
// an index beyond the count, the scenario's Shardable error, judged on
// the Redis Options.Provider puts it on (an external Redis every shard
// reaches) or as the external target Options.Target makes of it, and a scenario whose offset to the limiter's clock is unknown
// before the traffic: shards are merged on that clock.
func (r *Runner) Shard(sc *scenarios.Scenario) (*history.Shard, error) {
	want := r.opts.Shard
	if want == nil {
		return nil, nil
	}
	if r.opts.RunID == "" {
		return nil, ErrNoRunID
	}
	if r.opts.Target != nil {
		sc = r.opts.Target.Apply(sc)
	}
	s := *want
	if s.Count == 0 {
		if sc.Shards.Count == 0 {
			return nil, fmt.Errorf("scenario %s gives no shards.count; give the count of shards, as %d/3 for shard %d of 3", sc.Name, s.Index, s.Index)
		}
		s.Count = sc.Shards.Count
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	on := sc
	if r.opts.Provider == scenarios.ProviderExternal && sc.Redis.Provider != scenarios.ProviderNone {
		c := *sc
		c.Redis.Provider, c.Redis.URL = scenarios.ProviderExternal, r.opts.RedisURL
		on = &c
	}
	if err := on.Shardable(); err != nil {
		return nil, err
	}
	if limiterClock(on, on.Redis.Provider != scenarios.ProviderNone) == "" {
		return nil, fmt.Errorf("scenario %s: the offset to the limiter's clock is unknown before the traffic (an external target without redis.url or target.clock), "+
			"and the shards of a run are merged on that clock: give the scenario redis.url, the Redis whose TIME the limiter decides by, or target.clock: {offset, uncertainty}", sc.Name)
	}
	return &s, nil
}

// PlannedRequests is the number of requests shard (nil: the whole run)
// plans over every phase of sc, an upper bound when one of its phases
// plans at most (scenarios.Phase.PlannedAtMost) and sends requests.
func PlannedRequests(sc *scenarios.Scenario, shard *history.Shard) progress.Plan {
	var p progress.Plan
	for i, ph := range sc.Phases {
		n := int64(ph.PlannedRequests())
		if shard != nil {
			plan, err := traffic.Plan(sc, i, *shard)
			if err != nil { // Shard validated the shard
				continue
			}
			n = int64(len(plan))
		}
		p.Requests += n
		p.AtMost = p.AtMost || n > 0 && ph.PlannedAtMost()
	}
	return p
}
