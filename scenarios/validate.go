package scenarios

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios/yamlstrict"
)

// Bounds on what one scenario may ask for, so that a typo cannot start a
// run that exhausts the machine.
const (
	// MaxInstances is the most sample API processes a scenario may start.
	MaxInstances = 16
	// MaxBurstRequests is the most requests a Burst or each side of an
	// EdgeBurst may release together; each needs its own connection.
	MaxBurstRequests = 5000
	// MaxPhaseRequests is the most requests one phase may plan.
	MaxPhaseRequests = 1_000_000
	// MaxBurstRepeat is the most bursts a repeated Burst phase may release.
	MaxBurstRepeat = 1000
	// MaxBurstSpread is the longest a Burst may be spread over; a longer
	// release is a paced load, which a constant phase sends.
	MaxBurstSpread = time.Minute
	// DefaultEdgeOffset is an EdgeBurst's distance from the window edge
	// when the file gives none (a quarter of the window when that is
	// shorter): requests at W−1s and W+1s.
	DefaultEdgeOffset = time.Second
	// MaxEdgeWindow is the longest window an EdgeBurst may straddle: the
	// run waits up to one window for the next edge.
	MaxEdgeWindow = 2 * time.Minute
	// MaxIdentities is the most identities a scenario may name (the client
	// addresses 10.0.0.0/8 hold them all).
	MaxIdentities = 1 << 24
	// MaxNameLength is the longest scenario or phase name, in bytes: a
	// scenario's name is a directory of the run's output, and a path
	// component has room for 255 bytes at most.
	MaxNameLength = 100
	// MaxPathLength is the longest route path, in bytes.
	MaxPathLength = 1024
	// MaxCost is the most units one request may charge, so that sums of
	// costs over a run stay exact in an int64.
	MaxCost = 1_000_000_000
	// MaxExcessUnits bounds checks.budget.max_excess, in units.
	MaxExcessUnits = 1 << 40
	// MaxStoreTimeout bounds target.store_timeout.
	MaxStoreTimeout = time.Minute
	// MaxClockSkew bounds a target.clock_skew offset, ahead or behind.
	MaxClockSkew = 24 * time.Hour
	// MaxLatencyBound bounds the latency checks (max_latency and the
	// overhead percentiles): no request outlives the load generator's
	// timeout (10s), so a larger bound could never bind.
	MaxLatencyBound = time.Minute
)

// validator converts a raw scenario, keeping the first error.
type validator struct {
	doc *yamlstrict.Doc
	err *ScenarioError
	// dir is the directory the scenario's files are read from; empty for
	// a shipped scenario, which may name none.
	dir string
	// lookupEnv reads the environment header values take.
	lookupEnv func(string) (string, bool)
}

// fail records a fault at field (a path as yamlstrict records them) unless
// one was recorded already; the line is the field's, or its nearest
// recorded parent's.
func (v *validator) fail(field, format string, args ...any) {
	if v.err == nil {
		v.err = v.doc.Errorf(field, format, args...)
	}
}

func (v *validator) has(field string) bool { return v.doc.Has(field) }

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func (v *validator) scenario(r *rawScenario) *Scenario {
	s := &Scenario{Name: r.Name, Description: strings.TrimSpace(r.Description), Seed: 1}
	switch {
	case r.Name == "":
		v.fail("name", "missing; give the scenario a name such as \"quickstart\"")
	case len(r.Name) > MaxNameLength:
		v.fail("name", "%d characters long; a name (the directory of the scenario's output) may have at most %d", len(r.Name), MaxNameLength)
	case !namePattern.MatchString(r.Name):
		v.fail("name", "%q: use lowercase letters, digits, '-' and '_', starting with a letter or digit", r.Name)
	}
	if s.Description == "" {
		v.fail("description", "missing; say what the scenario proves")
	}
	if r.Seed != nil {
		s.Seed = *r.Seed
	}
	s.Target = v.target(&r.Target)
	s.Redis = v.redis(&r.Redis, s.Target)
	s.Identities = v.identities(&r.Identities)
	if len(r.Traffic) == 0 {
		v.fail("traffic", "missing; give at least one phase")
	}
	for i := range r.Traffic {
		s.Phases = append(s.Phases, v.phase(&r.Traffic[i], fmt.Sprintf("traffic[%d]", i), i, s.Target))
	}
	v.phaseGroups(r.Traffic, s)
	v.identitiesFit(&r.Identities, s)
	v.groupsFit(&r.Identities, s)
	s.Checks = v.checks(&r.Checks, s.Target)
	if d := trafficLength(s.Phases); d > MaxTrafficTime {
		v.fail("traffic", "the phases last up to %v, beyond the %v a scenario may run; split it", d, MaxTrafficTime)
	}
	s.Faults = v.faults(r.Faults, s.Target, s.Redis, timedLength(s.Phases))
	if s.Target.Peer != "" {
		if len(s.Faults) > 0 && !s.Target.Peer.TakesStoreFaults() {
			v.fail("faults", "faults act on the sample API and its store; peer %s takes none", s.Target.Peer)
		}
		for i, f := range s.Faults {
			if f.Kind == FaultInstanceKill && s.Target.Peer.TakesStoreFaults() {
				v.fail(fmt.Sprintf("faults[%d].kind", i), "peer %s is drilled through its Redis only; %s acts on the sample API", s.Target.Peer, f.Kind)
			}
		}
		if s.Identities.Carry != APIKey || (s.Target.Peer == PeerRedisRate && s.Identities.Header != DefaultAPIKeyHeader) {
			v.fail("identities.carry", "peer %s keys requests by an API key header (%s for redis_rate)", s.Target.Peer, DefaultAPIKeyHeader)
		}
	}
	if len(s.Faults) > 0 && s.Checks.Faults == nil {
		s.Checks.Faults = &FaultChecks{Slack: DefaultFaultSlack, Recovery: DefaultRecovery}
	}
	s.Shards = v.shards(r.Shards, s)
	return s
}

// MaxTrafficTime bounds the length of a scenario's phases, every phase
// counted at its Length, so that a typo cannot start a run that never ends.
const MaxTrafficTime = 2 * time.Hour

// trafficLength is the sum of the phases' Length, saturating at the
// largest Duration.
func trafficLength(phases []Phase) time.Duration {
	var d time.Duration
	for _, p := range phases {
		d = addDurations(d, p.Length())
	}
	return d
}

// MaxFaultTime bounds a fault's At and Duration.
const MaxFaultTime = 10 * time.Minute

// timedLength is the length of the phases whose length the schedule fixes
// (constant, ramp, idle), which faults are placed within; bursts and probes
// start when their set-up is done.
func timedLength(phases []Phase) time.Duration {
	var d time.Duration
	for _, p := range phases {
		if p.Kind == Constant || p.Kind == Ramp || p.Kind == Idle {
			d = addDurations(d, p.Duration)
		}
	}
	return d
}

func validInstance(name string, n int) bool {
	for i := range n {
		if name == InstanceName(i) {
			return true
		}
	}
	return false
}

func (v *validator) target(r *rawTarget) Target {
	t := Target{Instances: r.Instances, External: r.External, Spread: RoundRobin}
	switch {
	case r.Instances == 0 && len(r.External) == 0:
		v.fail("target", "give either instances (sample API processes to start) or external (URLs of a running API)")
	case r.Instances != 0 && len(r.External) != 0 && r.FailureMode != string(FailFallback):
		v.fail("target.instances", "with external, instances counts the external API's instances that share the budget, which only failure_mode: fallback uses; remove it, or give either instances or external")
	case len(r.External) == 0 && (r.Instances < 0 || r.Instances > MaxInstances):
		v.fail("target.instances", "%d: want 1 to %d", r.Instances, MaxInstances)
	}
	for i, u := range r.External {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			v.fail(fmt.Sprintf("target.external[%d]", i), "%q is not an http(s) URL such as http://127.0.0.1:8080", u)
		} else if p.User != nil || p.RawQuery != "" || p.Fragment != "" {
			// Base URLs are recorded (history, run.json, report); credentials
			// there would be too.
			v.fail(fmt.Sprintf("target.external[%d]", i), "give the base URL alone, without credentials, query or fragment; send credentials in a route header from the environment (Authorization: Bearer ${TOKEN})")
		}
	}
	if r.Spread != "" {
		t.Spread = Spread(r.Spread)
		if t.Spread != RoundRobin && t.Spread != Random {
			v.fail("target.spread", "unknown %q; use round_robin or random", r.Spread)
		}
	}
	if len(r.External) > 0 {
		v.externalTarget(r, &t)
		v.externalClock(r, &t)
	} else {
		for _, f := range []string{"clock_resolution", "clock"} {
			if v.has("target." + f) {
				v.fail("target."+f, "describes an external target's clock; rlbench knows the clocks of the instances it starts (the sample API reads microseconds, a peer declares its own)")
			}
		}
		t.Store, t.FailureMode, t.StoreTimeout = StoreRedis, FailOpen, DefaultStoreTimeout
		if r.Store != "" {
			t.Store = Store(r.Store)
			if t.Store != StoreRedis && t.Store != StoreMemory {
				v.fail("target.store", "unknown %q; use redis or memory", r.Store)
			}
		}
		if r.FailureMode != "" {
			t.FailureMode = FailureMode(r.FailureMode)
			if t.FailureMode != FailOpen && t.FailureMode != FailClosed && t.FailureMode != FailFallback {
				v.fail("target.failure_mode", "unknown %q; use open, closed or fallback", r.FailureMode)
			}
		}
		if r.StoreTimeout != "" {
			t.StoreTimeout = v.durationMax("target.store_timeout", r.StoreTimeout, true, MaxStoreTimeout)
		}
		for i, sk := range r.ClockSkew {
			field := fmt.Sprintf("target.clock_skew[%d]", i)
			if !validInstance(sk.Instance, r.Instances) {
				v.fail(field+".instance", "%q is not one of instance-1 to instance-%d", sk.Instance, r.Instances)
				continue
			}
			if sk.Offset == "" {
				v.fail(field+".offset", "missing; give the clock's offset, such as 1h or -30m")
				continue
			}
			if t.ClockSkew == nil {
				t.ClockSkew = map[string]time.Duration{}
			}
			d, err := time.ParseDuration(strings.TrimSpace(sk.Offset))
			switch {
			case err != nil:
				v.fail(field+".offset", "%q is not a duration; use Go syntax such as 1h or -30m", sk.Offset)
			case d > MaxClockSkew || d < -MaxClockSkew:
				v.fail(field+".offset", "%v is further than the %v a clock may be skewed, ahead or behind", d, MaxClockSkew)
			}
			t.ClockSkew[sk.Instance] = d
		}
	}
	if len(r.Routes) == 0 {
		v.fail("target.routes", "missing; give at least one route with its policies")
	}
	paths := map[string]bool{}
	limited := false
	for i, rr := range r.Routes {
		field := fmt.Sprintf("target.routes[%d]", i)
		rt := Route{Path: rr.Path, Method: strings.ToUpper(rr.Method), Cost: 1}
		if rt.Method == "" {
			rt.Method = "GET"
		}
		switch {
		case rr.Path == "":
			v.fail(field+".path", "missing")
		case !strings.HasPrefix(rr.Path, "/"):
			v.fail(field+".path", "%q must start with /", rr.Path)
		case paths[rr.Path]:
			v.fail(field+".path", "%q is given twice", rr.Path)
		case strings.ContainsAny(rr.Path, "?#"):
			// request says so, with the way to give a query string.
		default:
			v.routePath(field+".path", rr.Path, rt.Method, len(r.External) == 0, runsSampleAPI(r))
		}
		paths[rr.Path] = true
		if !slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}, rt.Method) {
			v.fail(field+".method", "unknown %q; use GET, HEAD, POST, PUT, PATCH or DELETE", rr.Method)
		}
		v.request(field, &rr, &rt)
		if rr.Cost != nil {
			rt.Cost = *rr.Cost
			if rt.Cost < 1 || rt.Cost > MaxCost {
				v.fail(field+".cost", "%d: want 1 to %d units a request", rt.Cost, MaxCost)
			}
		}
		for j, l := range rr.Policies {
			if err := l.Validate(); err != nil { // decoded by limiter.ParseLimit, which validates; "~" is left zero
				v.fail(fmt.Sprintf("%s.policies[%d]", field, j), "%w", err)
				continue
			}
			if rt.Cost > l.Capacity() {
				v.fail(field+".cost", "%d is above the capacity %d of policy %s; no request could ever be admitted", rt.Cost, l.Capacity(), l)
			}
			if l.Start != limiter.StartAligned && r.Peer == "" && len(r.External) == 0 {
				v.fail(fmt.Sprintf("%s.policies[%d]", field, j), "start=%s: the sample API (target.instances) enforces aligned windows only and refuses windows from each key's first request at request time; claim it for a peer or an external target, or use an aligned fixed_window", l.Start)
			}
			rt.Policies = append(rt.Policies, l)
		}
		if j, err := limiter.CheckLeaseAlone(rt.Policies); err != nil {
			v.fail(fmt.Sprintf("%s.policies[%d]", field, j), "%w", err)
		}
		if rr.Limiter != "" {
			v.routeLimiter(field, r, rr.Limiter, &rt)
		}
		limited = limited || !rt.Baseline()
		t.Routes = append(t.Routes, rt)
	}
	if len(r.External) == 0 && runsSampleAPI(r) {
		v.routerConflicts(t.Routes)
	}
	if len(r.Routes) > 0 && !limited {
		v.fail("target.routes", "no route has a policy; a scenario needs at least one limited route")
	}
	if r.Peer != "" {
		v.peer(r, &t)
	}
	return t
}

// externalClock reads what the file declares of an external target's
// clock: its resolution and its offset.
func (v *validator) externalClock(r *rawTarget, t *Target) {
	if r.ClockResolution != "" {
		t.ClockResolution = v.duration("target.clock_resolution", r.ClockResolution, true)
		if t.ClockResolution > MaxClockResolution {
			v.fail("target.clock_resolution", "%v is coarser than the %v a limiter's clock may be; use the step the target reads its clock in, such as 1ms or 1s", t.ClockResolution, MaxClockResolution)
		}
	}
	c := r.Clock
	if c == nil {
		return
	}
	t.Clock = &Clock{}
	if c.Offset == "" {
		v.fail("target.clock.offset", "missing; give the target's clock minus rlbench's, such as 700ms or -2s")
	} else if d, err := time.ParseDuration(strings.TrimSpace(c.Offset)); err != nil {
		v.fail("target.clock.offset", "%q is not a duration; use Go syntax such as 700ms or -2s", c.Offset)
	} else {
		t.Clock.Offset = d
	}
	if c.Uncertainty != "" {
		t.Clock.Uncertainty = v.duration("target.clock.uncertainty", c.Uncertainty, false)
	}
	if t.Clock.Offset < -MaxClockOffset || t.Clock.Offset > MaxClockOffset || t.Clock.Uncertainty > MaxClockOffset {
		v.fail("target.clock", "offset and uncertainty must each be within %v", MaxClockOffset)
	}
}

// routeLimiter validates a sample API route's own limiter (field's
// limiter): redis_rate, with one policy it enforces exactly.
func (v *validator) routeLimiter(field string, r *rawTarget, name string, rt *Route) {
	switch {
	case name != RouteRedisRate:
		v.fail(field+".limiter", "unknown %q; use %s, or leave it out for the target's limiter", name, RouteRedisRate)
	case len(r.External) > 0 || r.Peer != "":
		v.fail(field+".limiter", "chooses a limiter of the sample API; this target runs its own")
	case r.Store == string(StoreMemory):
		v.fail(field+".limiter", "redis_rate keeps its state in Redis; remove store: memory")
	case len(rt.Policies) != 1:
		v.fail(field+".policies", "redis_rate applies one policy per route, not %d", len(rt.Policies))
	default:
		if err := PeerRedisRate.CheckPolicy(rt.Policies[0]); err != nil {
			v.fail(field+".policies[0]", "%w", err)
		}
	}
	rt.Limiter = name
}

// peer validates a target that runs a peer limiter instead of the sample API.
func (v *validator) peer(r *rawTarget, t *Target) {
	t.Peer = Peer(r.Peer)
	if !slices.Contains(Peers, t.Peer) {
		v.fail("target.peer", "unknown %q; use one of %s", r.Peer, joinStrings(Peers))
		return
	}
	if len(r.External) > 0 {
		v.fail("target.peer", "rlbench starts a peer; an external target is started by someone else")
		return
	}
	own := []string{"store", "failure_mode", "store_timeout", "clock_skew"}
	if t.Peer.TakesStoreFaults() {
		// The failure mode the peer's documentation declares, and the
		// timeout of its Redis client.
		own = []string{"store", "clock_skew"}
	}
	for _, f := range own {
		if v.has("target." + f) {
			v.fail("target."+f, "configures the sample API; peer %s has its own", t.Peer)
		}
	}
	if !t.Peer.TakesStoreFaults() {
		t.FailureMode, t.StoreTimeout = "", 0
	}
	t.Store = ""
	if t.Peer.UsesRedis() {
		t.Store = StoreRedis
	}
	for i, rt := range t.Routes {
		if len(rt.Policies) > 1 {
			v.fail(fmt.Sprintf("target.routes[%d].policies", i), "peer %s applies one policy per route, not %d", t.Peer, len(rt.Policies))
		}
		if rt.Cost != 1 && t.Peer != PeerRedisRate {
			v.fail(fmt.Sprintf("target.routes[%d].cost", i), "peer %s charges one unit per request, not %d", t.Peer, rt.Cost)
		}
		for j, l := range rt.Policies {
			if err := t.Peer.CheckPolicy(l); err != nil {
				v.fail(fmt.Sprintf("target.routes[%d].policies[%d]", i, j), "%w", err)
			}
		}
	}
}

func (v *validator) redis(r *rawRedis, t Target) Redis {
	needs := len(t.External) == 0 && t.Store == StoreRedis
	out := Redis{Provider: ProviderNone, URL: r.URL}
	if needs {
		out.Provider = ProviderAuto
	}
	if r.Provider != "" {
		out.Provider = Provider(r.Provider)
		if !slices.Contains(providers, out.Provider) {
			v.fail("redis.provider", "unknown %q; use one of %s", r.Provider, joinStrings(providers))
		}
	}
	switch {
	case needs && out.Provider == ProviderNone:
		v.fail("redis.provider", "none, but the instances keep their budget in Redis (store: redis)")
	case out.Provider == ProviderExternal && r.URL == "":
		v.fail("redis.url", "missing; the external provider needs a URL such as redis://127.0.0.1:6380/0")
	case out.Provider != ProviderExternal && r.URL != "":
		v.fail("redis.url", "only the external provider takes a URL; the others start their own Redis")
	}
	if r.URL != "" {
		if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			v.fail("redis.url", "%q is not a redis:// or rediss:// URL", RedactURL(r.URL))
		}
	}
	out.Proxy = v.redisProxy(r, out.Provider)
	v.topology(r, &out)
	return out
}

var headerPattern = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

// phaseFields lists the keys each phase kind takes, beyond kind and name.
var phaseFields = map[PhaseKind][]string{
	Constant:        {"rate", "duration", "routes", "honor_retry_after"},
	Ramp:            {"from", "to", "duration", "routes", "honor_retry_after"},
	Burst:           {"requests", "spread", "repeat", "gap", "routes"},
	EdgeBurst:       {"requests", "spread", "offset", "window", "routes"},
	Idle:            {"duration"},
	RetryAfterProbe: {"requests", "routes"},
}

var allPhaseFields = []string{"rate", "from", "to", "duration", "requests", "spread", "repeat", "gap", "offset", "window", "routes", "honor_retry_after"}

func (v *validator) phase(r *rawPhase, field string, i int, t Target) Phase {
	p := Phase{Kind: PhaseKind(r.Kind), Name: r.Name}
	switch {
	case p.Name == "":
		p.Name = "phase-" + strconv.Itoa(i+1)
	case len(p.Name) > MaxNameLength:
		v.fail(field+".name", "%d characters long; a phase name may have at most %d", len(p.Name), MaxNameLength)
	case strings.ContainsFunc(p.Name, unicode.IsControl):
		v.fail(field+".name", "%q holds a control character (a line break, a tab); reports print it on one line", p.Name)
	}
	allowed, ok := phaseFields[p.Kind]
	if !ok {
		if r.Kind == "" {
			v.fail(field+".kind", "missing; use one of %s", joinStrings(phaseKinds))
		} else {
			v.fail(field+".kind", "unknown %q; use one of %s", r.Kind, joinStrings(phaseKinds))
		}
		return p
	}
	for _, f := range allPhaseFields {
		if v.has(field+"."+f) && !slices.Contains(allowed, f) {
			v.fail(field+"."+f, "a %s phase does not take %s; it takes %s", p.Kind, f, strings.Join(allowed, ", "))
		}
	}
	need := func(f, what string) bool {
		if !v.has(field + "." + f) {
			v.fail(field+"."+f, "missing; a %s phase needs %s", p.Kind, what)
			return false
		}
		return true
	}
	if slices.Contains(allowed, "duration") && need("duration", "a duration such as 5s") {
		p.Duration = v.durationMax(field+".duration", r.Duration, true, MaxTrafficTime)
	}
	if slices.Contains(allowed, "requests") && need("requests", "a number of requests") {
		p.Requests = r.Requests
		limit := MaxPhaseRequests
		if p.Kind == Burst || p.Kind == EdgeBurst {
			limit = MaxBurstRequests
		}
		if p.Requests < 1 || p.Requests > limit {
			v.fail(field+".requests", "%d: want 1 to %d", p.Requests, limit)
		}
	}
	switch p.Kind {
	case Constant:
		if need("rate", "a rate such as 50/1s") {
			p.Rate = v.rate(field+".rate", r.Rate, false)
		}
	case Ramp:
		if need("from", "a starting rate such as 10/1s") && need("to", "a final rate such as 100/1s") {
			p.From = v.rate(field+".from", r.From, true)
			p.To = v.rate(field+".to", r.To, true)
			if p.From == 0 && p.To == 0 {
				v.fail(field+".to", "a ramp from 0 to 0 sends nothing; use an idle phase")
			}
		}
	case EdgeBurst:
		if r.Offset != "" {
			p.Offset = v.durationMax(field+".offset", r.Offset, true, MaxEdgeWindow)
		}
	}
	if r.Spread != "" {
		p.Spread = v.duration(field+".spread", r.Spread, false)
	}
	if p.Kind == Burst {
		v.burst(r, field, &p)
	}
	p.HonorRetryAfter = r.HonorRetryAfter
	if slices.Contains(allowed, "routes") {
		p.Routes = v.routeWeights(r.Routes, field+".routes", t)
	}
	if p.Kind == RetryAfterProbe {
		for i, rw := range p.Routes {
			if j := slices.IndexFunc(t.Routes, func(r Route) bool { return r.Path == rw.Path }); j >= 0 && t.Routes[j].Baseline() {
				v.fail(fmt.Sprintf("%s.routes[%d].path", field, i), "%q has no policy; a probe waits for a rejection only a limited route gives", rw.Path)
			}
		}
	}
	if p.Kind == EdgeBurst {
		if r.Window != "" {
			p.Window = v.duration(field+".window", r.Window, true) // at most MaxEdgeWindow, below
		} else {
			for _, rw := range p.Routes {
				for _, rt := range t.Routes {
					for _, l := range rt.Policies {
						if rt.Path == rw.Path && l.Algorithm.IsWindow() && p.Window == 0 {
							p.Window = l.Period
						}
					}
				}
			}
			if p.Window == 0 && v.err == nil {
				v.fail(field+".window", "missing, and no route of the phase has a window policy to take it from")
			}
		}
		if r.Offset == "" {
			p.Offset = min(DefaultEdgeOffset, p.Window/4)
		}
		if p.Window > MaxEdgeWindow {
			v.fail(field+".window", "%v is longer than %v; the run would wait up to a window for the edge", p.Window, MaxEdgeWindow)
		}
		if p.Window > 0 && (p.Offset >= p.Window || p.Spread >= p.Window-p.Offset) { // offset+spread < window, without overflow
			v.fail(field+".offset", "offset %v plus spread %v must be shorter than the window %v, so that each half stays within one window", p.Offset, p.Spread, p.Window)
		}
	}
	if n := p.PlannedRequests(); (p.Kind == Constant || p.Kind == Ramp) && v.err == nil {
		switch {
		case n < 1:
			v.fail(field, "plans no request in %v; raise the rate or lengthen the phase", p.Duration)
		case n > MaxPhaseRequests:
			v.fail(field, "plans %d requests, above the maximum %d; keep scenarios short", n, MaxPhaseRequests)
		}
	}
	return p
}

// burst validates the spread and the repetition of a Burst phase.
func (v *validator) burst(r *rawPhase, field string, p *Phase) {
	if p.Spread > MaxBurstSpread {
		v.fail(field+".spread", "%v is longer than %v, the longest a burst may be spread over; a constant phase sends a paced load", p.Spread, MaxBurstSpread)
	}
	p.Repeat = 1
	if r.Repeat != nil {
		p.Repeat = *r.Repeat
		if p.Repeat < 1 || p.Repeat > MaxBurstRepeat {
			v.fail(field+".repeat", "%d: want 1 to %d bursts", p.Repeat, MaxBurstRepeat)
		}
	}
	if r.Gap != "" {
		p.Gap = v.duration(field+".gap", r.Gap, false)
		switch {
		case p.Gap > MaxTrafficTime:
			v.fail(field+".gap", "%v is longer than the %v a scenario may run", p.Gap, MaxTrafficTime)
		case p.Repeat == 1 && v.err == nil:
			v.fail(field+".gap", "a gap separates repeated bursts; give repeat above 1, or use an idle phase before the burst")
		}
	}
	if n := int64(p.Requests) * int64(p.Repeat); n > MaxPhaseRequests && v.err == nil {
		v.fail(field+".repeat", "%d bursts of %d plan %d requests, above the maximum %d; keep scenarios short", p.Repeat, p.Requests, n, MaxPhaseRequests)
	}
}

func (v *validator) routeWeights(raw []rawWeight, field string, t Target) []RouteWeight {
	var out []RouteWeight
	if len(raw) == 0 {
		for _, rt := range t.Routes {
			if !rt.Baseline() {
				out = append(out, RouteWeight{Path: rt.Path, Weight: 1})
			}
		}
		return out
	}
	for i, rw := range raw {
		f := fmt.Sprintf("%s[%d]", field, i)
		w := RouteWeight{Path: rw.Path, Weight: 1}
		if !slices.ContainsFunc(t.Routes, func(r Route) bool { return r.Path == rw.Path }) {
			v.fail(f+".path", "%q is not a route of the target", rw.Path)
		}
		if rw.Weight != nil {
			w.Weight = *rw.Weight
			if !(w.Weight > 0) || w.Weight > 1e6 {
				v.fail(f+".weight", "%v: want a positive weight up to 1e6", w.Weight)
			}
		}
		out = append(out, w)
	}
	return out
}

func (v *validator) checks(r *rawChecks, t Target) Checks {
	c := Checks{Headers: r.Headers == nil || *r.Headers, LoadDelivered: DefaultLoadDelivered}
	if r.Budget != nil {
		c.MaxExcess = r.Budget.MaxExcess
		if c.MaxExcess < 0 || c.MaxExcess > MaxExcessUnits {
			v.fail("checks.budget.max_excess", "%d: want 0 to %d units", c.MaxExcess, int64(MaxExcessUnits))
		}
	}
	if r.FalseRejections != nil {
		switch mr := r.FalseRejections.MaxRate; {
		case mr == nil:
			v.fail("checks.false_rejections.max_rate", "missing; give the largest tolerated rate, such as 0.01")
		case !(*mr >= 0 && *mr <= 1):
			v.fail("checks.false_rejections.max_rate", "%v: want a fraction from 0 to 1", *mr)
		default:
			c.FalseRejections = &FalseRejections{MaxRate: *mr}
		}
	}
	if o := r.Overhead; o != nil {
		c.Overhead = &Overhead{Route: o.Route, Baseline: o.Baseline}
		find := func(path string) (Route, bool) {
			i := slices.IndexFunc(t.Routes, func(r Route) bool { return r.Path == path })
			if i < 0 {
				return Route{}, false
			}
			return t.Routes[i], true
		}
		if rt, ok := find(o.Route); !ok {
			v.fail("checks.overhead.route", "%q is not a route of the target", o.Route)
		} else if rt.Baseline() {
			v.fail("checks.overhead.route", "%q has no policy; the overhead is measured on a limited route", o.Route)
		}
		if rt, ok := find(o.Baseline); !ok {
			v.fail("checks.overhead.baseline", "%q is not a route of the target", o.Baseline)
		} else if !rt.Baseline() {
			v.fail("checks.overhead.baseline", "%q has policies; the baseline is a route with none", o.Baseline)
		}
		for _, q := range []struct {
			name string
			raw  string
			dst  *time.Duration
		}{{"p50", o.P50, &c.Overhead.P50}, {"p99", o.P99, &c.Overhead.P99}, {"p999", o.P999, &c.Overhead.P999}} {
			if q.raw != "" {
				*q.dst = v.durationMax("checks.overhead."+q.name, q.raw, true, MaxLatencyBound)
			}
		}
		ratios := []struct {
			name string
			raw  *float64
			dst  *float64
		}{{"ratio_p50", o.RatioP50, &c.Overhead.RatioP50}, {"ratio_p99", o.RatioP99, &c.Overhead.RatioP99}, {"ratio_p999", o.RatioP999, &c.Overhead.RatioP999}}
		anyRatio := false
		for _, q := range ratios {
			if q.raw == nil {
				continue
			}
			anyRatio = true
			if *q.raw <= 0 {
				v.fail("checks.overhead."+q.name, "%v: want a positive ratio, such as 0.6 for at most 60%% of the other route's overhead", *q.raw)
			}
			*q.dst = *q.raw
		}
		switch {
		case o.Versus != "":
			c.Overhead.Versus = o.Versus
			if rt, ok := find(o.Versus); !ok {
				v.fail("checks.overhead.versus", "%q is not a route of the target", o.Versus)
			} else if rt.Baseline() {
				v.fail("checks.overhead.versus", "%q has no policy; compare with another limited route", o.Versus)
			} else if o.Versus == o.Route {
				v.fail("checks.overhead.versus", "%q is the route itself; compare with another limited route", o.Versus)
			}
			if !anyRatio {
				v.fail("checks.overhead", "versus needs at least one bound of ratio_p50, ratio_p99 and ratio_p999")
			}
		case anyRatio:
			v.fail("checks.overhead.versus", "missing; a ratio bound compares with another limited route, such as versus: /api/peer")
		}
		if o.P50 == "" && o.P99 == "" && o.P999 == "" && !anyRatio {
			v.fail("checks.overhead", "give at least one bound of p50, p99 and p999")
		}
	}
	if r.MaxLatency != "" {
		c.MaxLatency = v.durationMax("checks.max_latency", r.MaxLatency, true, MaxLatencyBound)
	}
	if f := r.Faults; f != nil {
		c.Faults = &FaultChecks{Slack: DefaultFaultSlack, Recovery: DefaultRecovery}
		if f.Slack != "" {
			c.Faults.Slack = v.durationMax("checks.faults.slack", f.Slack, false, MaxFaultTime)
		}
		if f.Recovery != "" {
			c.Faults.Recovery = v.durationMax("checks.faults.recovery", f.Recovery, false, MaxFaultTime)
		}
	}
	if r.LoadDelivered != nil {
		c.LoadDelivered = *r.LoadDelivered
		if !(c.LoadDelivered > 0) || c.LoadDelivered > 1 {
			v.fail("checks.load_delivered", "%v: want a fraction above 0, at most 1", c.LoadDelivered)
		}
	}
	return c
}

// duration parses a Go duration; positive demands it be above zero.
func (v *validator) duration(field, s string, positive bool) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		v.fail(field, "%q is not a duration; use Go syntax such as 250ms, 5s or 1m30s", s)
	case d < 0 || (positive && d == 0):
		v.fail(field, "%v must be positive", d)
	}
	return d
}

// durationMax parses a duration as duration does and demands it be at
// most limit.
func (v *validator) durationMax(field, s string, positive bool, limit time.Duration) time.Duration {
	d := v.duration(field, s, positive)
	if d > limit {
		v.fail(field, "%v is longer than the %v it may be", d, limit)
	}
	return d
}

// MaxRate is the highest request rate a phase may ask for, per second.
const MaxRate = 1e9

// ParseRate parses a request rate in the RATE/PERIOD grammar policies use
// (limiter.ParseRate): "50/1s", "50/s", "600/1m", "50/min", "3000/1h",
// "5/100ms" or "10000/1d". It returns requests per second, from 0 to
// MaxRate. Errors name the accepted forms.
func ParseRate(s string) (float64, error) {
	const forms = "use N/PERIOD such as 50/1s, 50/min or 3000/1h"
	n, per, err := limiter.ParseRate(s)
	switch {
	case err != nil && !strings.Contains(s, "/"):
		return 0, fmt.Errorf("%q is not a rate; %s", s, forms)
	case err != nil:
		return 0, fmt.Errorf("%q is not a rate: %v; %s", s, err, forms)
	case per <= 0:
		return 0, fmt.Errorf("%q is not a rate: the period must be positive", s)
	case !(n >= 0):
		return 0, fmt.Errorf("%q is not a rate: the number of requests must be 0 or more", s)
	}
	r := n / per.Seconds()
	if !(r <= MaxRate) {
		return 0, fmt.Errorf("%q is %g requests per second, above the most a phase may send, %g", s, r, MaxRate)
	}
	return r, nil
}

func (v *validator) rate(field, s string, zeroOK bool) float64 {
	r, err := ParseRate(s)
	switch {
	case err != nil:
		v.fail(field, "%w", err)
	case r == 0 && !zeroOK:
		v.fail(field, "%q must be above zero", s)
	}
	return r
}

func joinStrings[S ~string](xs []S) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return strings.Join(out, ", ")
}
