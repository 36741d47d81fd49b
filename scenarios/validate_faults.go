package scenarios

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxExternalInstances is the most instances an external target may declare
// sharing its budget (target.instances with external).
const MaxExternalInstances = 1000

func (v *validator) faults(raw []rawFault, t Target, red Redis, traffic time.Duration) []Fault {
	var out []Fault
	for i, r := range raw {
		field := fmt.Sprintf("faults[%d]", i)
		f := Fault{Kind: FaultKind(r.Kind), Target: r.Target}
		if !slices.Contains(FaultKinds, f.Kind) {
			v.fail(field+".kind", "unknown %q; use %s", r.Kind, joinStrings(FaultKinds))
			continue
		}
		v.faultReach(field, f.Kind, t, red)
		if r.At == "" {
			v.fail(field+".at", "missing; give the time after the traffic starts, such as 2s")
		} else {
			f.At = v.duration(field+".at", r.At, false)
		}
		switch {
		case f.Kind == FaultClockStep && r.Duration != "":
			v.fail(field+".duration", "a clock step is instant and stays; leave duration out")
		case f.Kind == FaultClockStep:
		case r.Duration == "":
			v.fail(field+".duration", "missing; give how long the fault lasts, such as 2s")
		default:
			f.Duration = v.duration(field+".duration", r.Duration, true)
		}
		if f.At > MaxFaultTime || f.Duration > MaxFaultTime {
			v.fail(field, "at and duration must each be at most %v", MaxFaultTime)
		}
		if r.At != "" && f.At >= traffic {
			v.fail(field+".at", "%v is not before the end of the timed traffic (%v of constant, ramp and idle phases): the fault would never meet a request", f.At, traffic)
		}
		switch {
		case f.Kind == FaultInstanceKill && r.Target == "":
			v.fail(field+".target", "missing; name the instance to kill, such as instance-2")
		case f.Kind == FaultInstanceKill && !validInstance(r.Target, t.Instances):
			v.fail(field+".target", "%q is not one of instance-1 to instance-%d", r.Target, t.Instances)
		case f.Kind == FaultClockStep:
			v.clockStep(field, &r, &f, t, red)
		case f.Kind != FaultInstanceKill && r.Target != "":
			v.fail(field+".target", "only instance_kill and clock_step take a target")
		}
		if f.Kind != FaultClockStep && r.Step != "" {
			v.fail(field+".step", "only clock_step takes a step")
		}
		sentinelOK := f.Kind == FaultRedisFailover || f.Kind == FaultInstanceKill || f.Kind == FaultCommand ||
			(f.Kind == FaultClockStep && r.Target != ClockStepRedis)
		if red.Topology == TopologySentinel && !sentinelOK {
			v.fail(field+".kind", "%s acts on a single Redis; with topology: sentinel use redis_failover (and redis.replica_clock for a replica whose clock differs)", f.Kind)
		}
		if f.Kind == FaultRedisFailover && red.Topology != TopologySentinel {
			v.fail(field+".kind", "redis_failover needs a master and a replica watched by Sentinel; set redis: {topology: sentinel}")
		}
		switch {
		case f.Kind == FaultRedisLatency && r.Latency == "":
			v.fail(field+".latency", "missing; give the delay to add, such as 200ms")
		case f.Kind == FaultRedisLatency:
			f.Latency = v.durationMax(field+".latency", r.Latency, true, MaxFaultTime)
		case r.Latency != "":
			v.fail(field+".latency", "only redis_latency takes a latency")
		}
		v.command(field, &r, &f)
		out = append(out, f)
	}
	if len(t.External) > 0 && len(out) > 0 && !v.has("target.store_timeout") {
		v.fail("target.store_timeout", "missing; faults on an external target need its limiter's own timeout on a Redis call, such as 50ms: every request during a fault must be answered within it plus checks.faults.slack, and a latency at or above it hands the decisions to the failure mode")
	}
	return out
}

// clockStep reads a clock_step's target and step: the limiter's clock
// (redis, which rlbench must run) or an instance's.
func (v *validator) clockStep(field string, r *rawFault, f *Fault, t Target, red Redis) {
	switch {
	case r.Target == "":
		v.fail(field+".target", "missing; name the clock to step: redis (the limiter's clock, Redis TIME) or an instance such as instance-2")
	case r.Target == ClockStepRedis:
		if red.Provider != ProviderAuto && red.Provider != ProviderProcess {
			v.fail(field+".target", "stepping Redis's clock needs redis-server run by rlbench under libfaketime (redis.provider: process or auto), not %s", red.Provider)
		}
	case len(t.External) > 0:
		v.fail(field+".target", "rlbench cannot step an external target's clock; use kind: command")
	case !validInstance(r.Target, t.Instances):
		v.fail(field+".target", "%q is neither redis nor one of instance-1 to instance-%d", r.Target, t.Instances)
	}
	if r.Step == "" {
		v.fail(field+".step", "missing; give the signed step of the clock, such as -2s (backwards) or 2s")
		return
	}
	d, err := time.ParseDuration(r.Step)
	switch {
	case err != nil:
		v.fail(field+".step", "%q is not a duration such as -2s", r.Step)
	case d == 0:
		v.fail(field+".step", "a step of 0 changes nothing; give one such as -2s")
	case d > MaxFaultTime || d < -MaxFaultTime:
		v.fail(field+".step", "%v: at most %v either way", d, MaxFaultTime)
	default:
		f.Step = d
	}
}

// topology reads redis.topology and redis.replica_clock.
func (v *validator) topology(r *rawRedis, out *Redis) {
	out.Topology = TopologySingle
	if r.Topology != "" {
		out.Topology = Topology(r.Topology)
		if !slices.Contains(topologies, out.Topology) {
			v.fail("redis.topology", "unknown %q; use %s", r.Topology, joinStrings(topologies))
		}
	}
	if out.Topology == TopologySentinel && out.Provider != ProviderAuto && out.Provider != ProviderProcess {
		v.fail("redis.topology", "sentinel needs redis-server run by rlbench (redis.provider: process or auto), not %s", out.Provider)
	}
	if out.Topology == TopologySentinel && out.Proxy != "" {
		v.fail("redis.proxy", "the instances follow the master through Sentinel, not through a proxy; leave proxy out with topology: sentinel")
	}
	if r.ReplicaClock == "" {
		return
	}
	if out.Topology != TopologySentinel {
		v.fail("redis.replica_clock", "only a sentinel topology has a replica; set topology: sentinel")
	}
	d, err := time.ParseDuration(r.ReplicaClock)
	switch {
	case err != nil:
		v.fail("redis.replica_clock", "%q is not a duration such as -2s", r.ReplicaClock)
	case d > MaxFaultTime || d < -MaxFaultTime:
		v.fail("redis.replica_clock", "%v: at most %v either way", d, MaxFaultTime)
	default:
		out.ReplicaClock = &d
	}
}

// faultReach checks that rlbench can reach what a fault of kind k acts on:
// its own Redis process for a kill or pause, the limiter's link to Redis
// (through redis.proxy) for the network faults, the instances it started
// for an instance kill. A command fault acts through the user's commands.
func (v *validator) faultReach(field string, k FaultKind, t Target, red Redis) {
	external := len(t.External) > 0
	switch {
	case k == FaultCommand:
	case k == FaultInstanceKill && external:
		v.fail(field+".kind", "rlbench cannot kill an external target's instances; use kind: command with inject and heal commands that stop and start one")
	case k == FaultInstanceKill:
	case !external && t.Store != StoreRedis:
		v.fail(field+".kind", "%s needs the instances to use Redis (target.store: redis)", k)
	case k == FaultClockStep: // clockStep checks its target
	case (k == FaultRedisKill || k == FaultRedisPause || k == FaultRedisFailover) && red.Provider == ProviderExternal:
		v.fail(field+".kind", "%s needs control of the Redis process, which rlbench lacks for an external Redis (redis.provider: external); use kind: command with inject and heal commands that do it (such as docker kill redis and docker start redis), or a proxy fault (redis_blackhole, redis_disconnect) through redis.proxy", k)
	case external && (red.Proxy == "" || red.Provider == ProviderNone):
		v.fail("redis.proxy", "missing; %s on an external target acts on its limiter's link to Redis through rlbench's proxy: give redis: {provider: external, url: redis://HOST:PORT/DB, proxy: 127.0.0.1:16379} and point the limiter at the proxy's address", k)
	}
}

// command reads the fields of a command fault, and rejects them on any
// other kind.
func (v *validator) command(field string, r *rawFault, f *Fault) {
	if f.Kind != FaultCommand {
		for _, k := range []string{"inject", "heal", "timeout", "effect"} {
			if v.has(field + "." + k) {
				v.fail(field+"."+k, "only command takes %s", k)
			}
		}
		return
	}
	f.Inject, f.Heal = strings.TrimSpace(r.Inject), strings.TrimSpace(r.Heal)
	if f.Inject == "" {
		v.fail(field+".inject", "missing; give the shell command that injects the fault, such as \"docker kill redis\"")
	}
	if v.has(field+".heal") && f.Heal == "" {
		v.fail(field+".heal", "empty; give the shell command that heals the fault, such as \"docker start redis\", or leave heal out")
	}
	f.Timeout = DefaultCommandTimeout
	if r.Timeout != "" {
		f.Timeout = v.duration(field+".timeout", r.Timeout, true)
		if f.Timeout > MaxFaultTime {
			v.fail(field+".timeout", "%v is above %v", f.Timeout, MaxFaultTime)
		}
	}
	switch e := FaultEffect(r.Effect); {
	case r.Effect == "":
		v.fail(field+".effect", "missing; say what the commands do to the limiter's store: unavailable (it cannot answer), loses_state (it comes back empty) or none (it keeps answering)")
	case !slices.Contains(FaultEffects, e):
		v.fail(field+".effect", "unknown %q; use %s", r.Effect, joinStrings(FaultEffects))
	default:
		f.Effect = e
	}
}

// externalTarget reads what the file declares of an external target's
// limiter: its failure mode, its timeout on a Redis call, and how many
// instances a fallback splits the budget among. The store and the clock
// skew configure the sample API only.
func (v *validator) externalTarget(r *rawTarget, t *Target) {
	for _, f := range []string{"store", "clock_skew"} {
		if v.has("target." + f) {
			v.fail("target."+f, "configures the sample API instances rlbench starts; an external target's store is its own")
		}
	}
	t.Instances, t.ExternalInstances = 0, len(r.External)
	if r.Instances != 0 { // with failure_mode: fallback alone; target checks that
		t.ExternalInstances = r.Instances
		if r.Instances < 1 || r.Instances > MaxExternalInstances {
			v.fail("target.instances", "%d: want 1 to %d instances of the external API sharing the budget", r.Instances, MaxExternalInstances)
		}
	}
	if r.FailureMode != "" {
		t.FailureMode = FailureMode(r.FailureMode)
		if t.FailureMode != FailOpen && t.FailureMode != FailClosed && t.FailureMode != FailFallback {
			v.fail("target.failure_mode", "unknown %q; use open, closed or fallback", r.FailureMode)
		}
	}
	if r.StoreTimeout != "" {
		t.StoreTimeout = v.duration("target.store_timeout", r.StoreTimeout, true)
	}
}

// redisProxy validates redis.proxy, the address rlbench's fault proxy
// listens on.
func (v *validator) redisProxy(r *rawRedis, p Provider) string {
	if r.Proxy == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(r.Proxy)
	n, perr := strconv.Atoi(port)
	switch {
	case err != nil || perr != nil || n < 1 || n > 65535 || (host != "localhost" && net.ParseIP(host) == nil):
		v.fail("redis.proxy", "%q is not an address to listen on such as 127.0.0.1:16379: an IP address or localhost, and a port from 1 to 65535", r.Proxy)
	case p == ProviderNone:
		v.fail("redis.proxy", "the proxy forwards to a Redis, but redis.provider is none; give provider: external with the url of the limiter's Redis")
	}
	return r.Proxy
}

// RedactURL returns rawURL with its password, if any, replaced by "xxxxx",
// for messages and records: a Redis URL may hold one. A URL that does not
// parse keeps its scheme and host part only after the last '@'.
func RedactURL(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	if i := strings.LastIndex(rawURL, "@"); i >= 0 {
		scheme, _, ok := strings.Cut(rawURL, "://")
		if !ok {
			scheme = ""
		} else {
			scheme += "://"
		}
		return scheme + "xxxxx" + rawURL[i:]
	}
	return rawURL
}
