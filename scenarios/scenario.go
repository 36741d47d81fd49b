package scenarios

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter"
)

// Scenario is one parsed and validated scenario file. Durations are Go
// durations; rates are requests per second. A Scenario is a plain value:
// safe to read from several goroutines, not to modify while others read.
type Scenario struct {
	// Name identifies the scenario in reports and on the command line.
	Name string
	// Description says what the scenario proves, in a sentence or two.
	Description string
	// Seed seeds every random choice (identity, route, instance), so a run
	// is reproducible up to the timing of the network.
	Seed int64
	// Source is the file the scenario came from: a path, or
	// "embedded:NAME.yaml" for a shipped scenario.
	Source string
	// Text is the file's text as Parse read it, so that a scenario with no
	// file of its own (an embedded one) can be handed to another process.
	Text []byte

	Redis      Redis
	Target     Target
	Identities Identities
	Phases     []Phase
	Checks     Checks
	// Faults are injected while the traffic runs (the failover drills).
	Faults []Fault
	// Shards says how a sharded run of the scenario (rlbench run --shard
	// I/N) splits its traffic; zero when the file does not say.
	Shards Shards
}

// Shards is how a sharded run splits the scenario's traffic over several
// load generators: every planned request belongs to exactly one shard
// (package traffic, Plan), by its identity unless the identity is spread.
type Shards struct {
	// Count is the number of shards a sharded run uses when the command
	// line gives none (rlbench run --shard I, rlbench k8s), 1 to
	// history.MaxShards; 0 when the file does not say.
	Count int
	// Spread names the identities whose requests every shard sends, each
	// its share, instead of the one shard that owns the identity: SpreadHot
	// for the hot identity of a hot distribution, or the name of an
	// identity group for each of its identities. Empty: none.
	Spread []string
}

// SpreadHot, in Shards.Spread, names the hot identity of a hot
// distribution: the first identity each phase sends from.
const SpreadHot = "hot"

// FaultKind names a fault a drill injects.
type FaultKind string

// Fault kinds. The Redis ones act on the server (kill, pause) or on the
// limiter's link to it through rlbench's TCP proxy (latency, blackhole,
// reset, disconnect); a command fault runs the user's own commands.
const (
	// FaultRedisKill kills Redis (SIGKILL) and starts it again, empty, on
	// the same port after Duration.
	FaultRedisKill FaultKind = "redis_kill"
	// FaultRedisPause stops Redis (SIGSTOP) for Duration, as a long fork
	// or a stalled host does: connections stay open, nothing answers.
	FaultRedisPause FaultKind = "redis_pause"
	// FaultRedisLatency delays every reply from Redis by Latency.
	FaultRedisLatency FaultKind = "redis_latency"
	// FaultRedisBlackhole carries nothing between the instances and Redis.
	FaultRedisBlackhole FaultKind = "redis_blackhole"
	// FaultRedisReset answers the instances' Redis traffic with TCP resets.
	FaultRedisReset FaultKind = "redis_reset"
	// FaultRedisDisconnect refuses every connection to Redis.
	FaultRedisDisconnect FaultKind = "redis_disconnect"
	// FaultInstanceKill kills the instance named Target (SIGKILL) and
	// restarts it after Duration.
	FaultInstanceKill FaultKind = "instance_kill"
	// FaultCommand runs the user's Inject command and, Duration after it
	// returned, the Heal command (each with `sh -c`, in the scenario
	// file's directory, bounded by Timeout): faults rlbench cannot inject
	// itself, such as `docker kill redis` / `docker start redis` for a
	// Redis it does not run. Effect says what they do to the store.
	FaultCommand FaultKind = "command"
	// FaultClockStep steps a clock by Step at At and leaves it there: the
	// limiter's clock (Redis TIME, Redis run under libfaketime) for Target
	// "redis", or the clock of the instance Target names (restarted with
	// its clock offset moved by Step).
	FaultClockStep FaultKind = "clock_step"
	// FaultRedisFailover pauses the master of a Sentinel group
	// (redis.topology: sentinel) until the Sentinel has promoted the
	// replica and at least Duration has passed, then resumes the old master
	// as a replica of the new one. Writes not yet replicated are lost.
	FaultRedisFailover FaultKind = "redis_failover"
)

// FaultKinds lists every fault kind.
var FaultKinds = []FaultKind{FaultRedisKill, FaultRedisPause, FaultRedisLatency, FaultRedisBlackhole, FaultRedisReset, FaultRedisDisconnect, FaultInstanceKill, FaultCommand, FaultClockStep, FaultRedisFailover}

// ClockStepRedis is the Target of a FaultClockStep on the limiter's clock.
const ClockStepRedis = "redis"

// FaultEffect is what a command fault does to the limiter's store, which
// rlbench cannot see for itself: it decides which fault checks apply.
type FaultEffect string

const (
	// EffectUnavailable: the store cannot answer during the fault (stopped,
	// paused, cut off), so the declared failure mode decides every request.
	EffectUnavailable FaultEffect = "unavailable"
	// EffectLosesState: the store is unavailable and comes back empty (a
	// Redis without persistence restarted), as redis_kill does; the budget
	// is checked apart before and after.
	EffectLosesState FaultEffect = "loses_state"
	// EffectNone: the store keeps answering; only the latency bound applies.
	EffectNone FaultEffect = "none"
)

// FaultEffects lists every command fault effect.
var FaultEffects = []FaultEffect{EffectUnavailable, EffectLosesState, EffectNone}

// DefaultCommandTimeout bounds each command of a command fault when the
// file gives no timeout.
const DefaultCommandTimeout = 30 * time.Second

// NeedsProxy reports whether k acts on the link to Redis, so that the
// instances must reach Redis through rlbench's proxy.
func (k FaultKind) NeedsProxy() bool {
	return k == FaultRedisLatency || k == FaultRedisBlackhole || k == FaultRedisReset || k == FaultRedisDisconnect
}

// Fault is one fault of a drill: injected At after the traffic starts and
// healed Duration after it took effect.
type Fault struct {
	Kind     FaultKind
	At       time.Duration
	Duration time.Duration
	// Target names the instance of a FaultInstanceKill ("instance-2"), and
	// the clock of a FaultClockStep: ClockStepRedis or an instance.
	Target string
	// Step is a FaultClockStep's signed step (negative: backwards).
	Step time.Duration
	// Latency is the delay of a FaultRedisLatency.
	Latency time.Duration
	// Inject and Heal are a FaultCommand's shell commands; Heal may be
	// empty (the fault then ends Duration after Inject returned).
	Inject, Heal string
	// Timeout bounds each command of a FaultCommand; its process group is
	// killed when it runs out.
	Timeout time.Duration
	// Effect is what a FaultCommand does to the store.
	Effect FaultEffect
}

// InstanceName is the name of the sample API instance at index i (from 0)
// of a target: instance-1 for i = 0. Instances count from 1 wherever a
// person reads their names: faults, clock skews, the runner's instances,
// traffic results, histories and reports.
func InstanceName(i int) string { return "instance-" + strconv.Itoa(i+1) }

// Provider names where the Redis a scenario runs on comes from.
type Provider string

const (
	// ProviderAuto uses ProviderProcess when redis-server is on the PATH,
	// else ProviderDocker when a Docker engine answers, else
	// ProviderEmbedded with a warning. It is the default.
	ProviderAuto Provider = "auto"
	// ProviderProcess runs redis-server from the PATH on a free loopback port.
	ProviderProcess Provider = "process"
	// ProviderDocker runs the official redis image through a Docker engine.
	ProviderDocker Provider = "docker"
	// ProviderEmbedded serves an in-process miniredis on a loopback port.
	ProviderEmbedded Provider = "embedded"
	// ProviderExternal uses a Redis the user runs, given by Redis.URL. It is
	// never flushed.
	ProviderExternal Provider = "external"
	// ProviderNone means the scenario needs no Redis: an in-memory store or
	// an external target.
	ProviderNone Provider = "none"
)

var providers = []Provider{ProviderAuto, ProviderProcess, ProviderDocker, ProviderEmbedded, ProviderExternal, ProviderNone}

// Redis says where the scenario's Redis comes from.
type Redis struct {
	// Provider is ProviderAuto when the file does not say.
	Provider Provider
	// URL is the redis:// URL of an external Redis; set only with
	// ProviderExternal. It may hold a password: print it redacted.
	URL string
	// Topology is TopologySingle (the default) or TopologySentinel.
	Topology Topology
	// ReplicaClock, with TopologySentinel, runs the replica under a fake
	// clock this far from the host's (negative: behind), so that a failover
	// steps the limiter's clock by it; nil runs it on the host's clock.
	ReplicaClock *time.Duration
	// Proxy, when set, is the "host:port" rlbench's fault proxy listens on,
	// forwarding to the Redis: the address the limiter under test must use
	// (an external target's, configured by the user), so that the proxy
	// faults reach its link to Redis. Empty: a free loopback port, for the
	// sample API instances only.
	Proxy string
}

// Topology is how the scenario's Redis is laid out.
type Topology string

const (
	// TopologySingle is one server. It is the default.
	TopologySingle Topology = "single"
	// TopologySentinel is a master and a replica watched by Redis
	// Sentinel; the instances follow the master through the Sentinel. It
	// needs the process provider (redis-server from the PATH).
	TopologySentinel Topology = "sentinel"
)

var topologies = []Topology{TopologySingle, TopologySentinel}

// NeedsFakeClock reports whether the scenario's Redis must run under a fake
// clock: a clock_step on Redis, or a replica clock.
func (sc *Scenario) NeedsFakeClock() bool {
	return sc.Redis.ReplicaClock != nil || slices.ContainsFunc(sc.Faults, func(f Fault) bool {
		return f.Kind == FaultClockStep && f.Target == ClockStepRedis
	})
}

// Spread says how requests are spread over the target's instances.
type Spread string

const (
	// RoundRobin sends request i to instance i mod N. It is the default.
	RoundRobin Spread = "round_robin"
	// Random picks an instance with the scenario's seeded RNG.
	Random Spread = "random"
)

// Store names the limiter store of the sample API instances.
type Store string

const (
	// StoreRedis shares the budget through Redis. It is the default.
	StoreRedis Store = "redis"
	// StoreMemory keeps a private budget per instance; with more than one
	// instance it cannot keep a shared promise, which is what a scenario
	// may set out to show.
	StoreMemory Store = "memory"
)

// FailureMode is what the sample API does when its store fails: the one
// failure-mode type the scenario, the run record and the checker share.
type FailureMode = runrecord.FailureMode

const (
	// FailOpen admits requests while the store is unavailable. It is the
	// default.
	FailOpen = runrecord.FailOpen
	// FailClosed rejects them with 503 and a Retry-After.
	FailClosed = runrecord.FailClosed
	// FailFallback decides on a local in-memory limiter holding the
	// instance's share of the budget.
	FailFallback = runrecord.FailFallback
)

// DefaultStoreTimeout is the store timeout of the sample API instances when
// the scenario gives none. It is long on purpose: a scenario that is not a
// drill tests enforcement, and a timeout a stalled CI machine can hit would
// turn its decisions over to the failure mode (a fail-open admission is
// then an excess the budget check rightly reports). Drills set the short
// production timeout they exercise, such as 50ms.
const DefaultStoreTimeout = time.Second

// Target is what the traffic is fired at: Instances sample API processes
// started by rlbench, or the External URLs. Exactly one of the two is set.
type Target struct {
	// Instances is the number of sample API processes to start; 0 with
	// External.
	Instances int
	// External holds base URLs ("http://127.0.0.1:8080") of an API rlbench
	// does not start; Routes then give the policies it claims to enforce.
	External []string
	// Spread is RoundRobin when the file does not say.
	Spread Spread
	// Store, FailureMode and StoreTimeout configure the sample API
	// instances. For an external target Store is empty, and FailureMode and
	// StoreTimeout are what the user declares its limiter does (empty and 0
	// when the file declares nothing).
	Store        Store
	FailureMode  FailureMode
	StoreTimeout time.Duration
	// ExternalInstances is, for an external target, the number of its
	// instances sharing the budget (target.instances with external), among
	// which a fallback splits it: len(External) when the file does not
	// say; 0 for the sample API.
	ExternalInstances int
	// ClockSkew offsets the clock of named instances ("instance-2": one
	// hour ahead); a limiter that decides on Redis TIME must ignore it.
	ClockSkew map[string]time.Duration
	// Peer, when set, runs Instances of that limiter instead of the sample
	// API, held to the routes' policies; Store is then StoreRedis when the
	// peer uses Redis and empty otherwise.
	Peer Peer
	// ClockResolution is the step of an external target's limiter clock
	// (1ms for one that reads milliseconds); 0 when the file does not say,
	// and the checks then assume 1 µs. The sample API reads microseconds
	// and each peer declares its own (harness/peers.ClockResolution).
	ClockResolution time.Duration
	// Clock, when set, declares an external target's clock offset: the
	// checks place its windows by it instead of measuring (Redis TIME of
	// the scenario's Redis, or the Date headers of its responses).
	Clock *Clock
	// Routes are the target's routes with their cost and policies.
	Routes []Route
}

// Clock is a declared clock offset: the limiter's clock minus rlbench's,
// within ± Uncertainty.
type Clock struct {
	Offset, Uncertainty time.Duration
}

// MaxClockResolution is the coarsest clock resolution a scenario may
// declare: one hour (history.MaxClockResolution).
const MaxClockResolution = time.Hour

// MaxClockOffset bounds a declared clock offset and its uncertainty: a
// day either way. A limiter's clock further off than that is misconfigured.
const MaxClockOffset = 24 * time.Hour

// Algorithms returns the algorithms the target's policies use, each once,
// in the order limiter.Algorithms lists them.
func (t Target) Algorithms() []limiter.Algorithm {
	used := map[limiter.Algorithm]bool{}
	for _, r := range t.Routes {
		for _, l := range r.Policies {
			used[l.Algorithm] = true
		}
	}
	var out []limiter.Algorithm
	for _, a := range limiter.Algorithms {
		if used[a] {
			out = append(out, a)
		}
	}
	return out
}

// NumInstances is the number of base URLs the traffic is spread over.
func (t Target) NumInstances() int {
	if len(t.External) > 0 {
		return len(t.External)
	}
	return t.Instances
}

// SharingInstances is the number of instances that share the budget, each
// held to its 1/SharingInstances share by a fallback: Instances, or
// ExternalInstances for an external target.
func (t Target) SharingInstances() int {
	if len(t.External) > 0 {
		return t.ExternalInstances
	}
	return t.Instances
}

// Route is one route of the target and the limits that guard it.
type Route struct {
	// Path is the request path, such as "/api/items".
	Path string
	// Method is the HTTP method; GET when the file does not say.
	Method string
	// Query is the query string every request carries, without the '?'
	// and already encoded ("page=2&sort=id"); empty for none. An identity
	// carried in the query string is appended to it.
	Query string
	// Body is every request's body, from the file's body or body_file;
	// nil sends none. It is sent as written: keep secrets in Headers.
	Body []byte
	// BodyFile is the file the body came from as the scenario names it
	// (relative to the scenario file), or empty.
	BodyFile string
	// Headers are static request headers, sorted by name; their values
	// may take environment variables, which are never recorded.
	Headers []Header
	// Cost is the number of units one request charges; 1 when the file
	// does not say.
	Cost int64
	// Policies are the limits applied together to every request, each
	// keyed by identity. None means the route is a baseline: the same
	// handler with the limiter bypassed, for the overhead check.
	Policies []limiter.Limit
	// Limiter, on the sample API, is RouteRedisRate for a route decided by
	// go-redis/redis_rate on the instances' Redis instead of the reference
	// limiter (one gcra or token_bucket policy with a whole rate), so that
	// one process serves both and the overhead check can compare them;
	// empty for the target's own limiter.
	Limiter string
}

// RouteRedisRate is Route.Limiter for a sample API route decided by
// go-redis/redis_rate; it names the same limiter as PeerRedisRate.
const RouteRedisRate = string(PeerRedisRate)

// Baseline reports whether the route bypasses the limiter.
func (r Route) Baseline() bool { return len(r.Policies) == 0 }

// Distribution says how requests are spread over identities.
type Distribution string

const (
	// Uniform gives every identity the same share. It is the default.
	Uniform Distribution = "uniform"
	// Hot gives identity 0 the fraction Identities.Share of the requests
	// and spreads the rest uniformly over the others.
	Hot Distribution = "hot"
	// Zipf gives identity k a share proportional to 1/(k+1)^s, with
	// s = Identities.S > 1.
	Zipf Distribution = "zipf"
)

// Carry says how a request names its identity.
type Carry string

const (
	// APIKey carries the identity in a header, X-API-Key by default. It is
	// the default.
	APIKey Carry = "api_key"
	// Bearer carries the identity as a bearer token: "Authorization:
	// Bearer <identity>" (RFC 6750 §2.1).
	Bearer Carry = "bearer"
	// Query carries the identity as a query parameter, api_key by default
	// (RFC 6750 §2.3 names access_token for tokens).
	Query Carry = "query"
	// Cookie carries the identity as a cookie, api_key by default.
	Cookie Carry = "cookie"
	// ClientIP carries the identity as a client IP address in a header,
	// X-Forwarded-For by default.
	ClientIP Carry = "client_ip"
)

var carries = []Carry{APIKey, Bearer, Query, Cookie, ClientIP}

// Default identity headers and names.
const (
	DefaultAPIKeyHeader   = "X-API-Key"
	DefaultClientIPHeader = "X-Forwarded-For"
	// DefaultIdentityName is the query parameter or cookie that carries
	// the identity when the file does not say.
	DefaultIdentityName = "api_key"
)

// Identities describes the clients that send the traffic. Identity
// returns each one's name and what its requests carry.
type Identities struct {
	// Count is the number of distinct identities, those of Groups
	// included. Of no group: identities.count; 1 when the file does not
	// say (0 when it gives groups), or the number of keys in KeysFile (one
	// fewer when a retry_after_probe needs one of them for itself).
	Count int
	// Distribution is Uniform when the file does not say.
	Distribution Distribution
	// Share is the hot identity's fraction of requests, in (0, 1); set only
	// with Hot.
	Share float64
	// S is the Zipf exponent, above 1; set only with Zipf.
	S float64
	// Carry is APIKey when the file does not say.
	Carry Carry
	// Header is the request header that carries the identity with APIKey
	// and ClientIP ("Authorization" with Bearer, "Cookie" with Cookie,
	// empty with Query).
	Header string
	// Name is the query parameter (Query) or cookie (Cookie) that carries
	// the identity; DefaultIdentityName when the file does not say, empty
	// with the other carries.
	Name string
	// Fixed gives generated identities the same names in every run
	// (key-0000, 10.0.0.0). When false, the default, every run names its
	// own (key-<run>-0000; see Identity), so that a limiter that outlives
	// runs meets every identity with a full budget. Identities read from
	// KeysFile are always fixed.
	Fixed bool
	// KeysFile is the file of real API keys or tokens the identities use,
	// as the scenario names it (relative to the scenario file), and Keys
	// its keys in file order: one a line, blank lines and lines starting
	// with # skipped. Keys are secrets: histories and reports name them
	// key#1, key#2, ... by their place in Keys.
	KeysFile string
	Keys     []Secret
	// IPVersion is 4 or 6 with ClientIP (4 when the file does not say),
	// and 0 with the other carries.
	IPVersion int
	// Prefix, with ClientIP, makes each identity a block of addresses of
	// this prefix length (64: an IPv6 /64) from which every request takes
	// a different address, as a host that rotates its addresses does; 0,
	// the default, gives each identity one address.
	Prefix int
	// TrustedHops, with ClientIP in X-Forwarded-For, is the number of
	// proxies the target trusts, counting the one it takes connections
	// from (the harness itself): the harness appends TrustedHops−1 proxy
	// addresses (Proxies) after the client's, so that the client's address
	// is the TrustedHops-th entry from the right, where a server trusting
	// that many hops reads it. 1 with ClientIP when the file does not say.
	TrustedHops int
	// SpoofForwarded makes every client (with ClientIP) put an address of
	// its own choosing, new on every request, in front of its real one in
	// X-Forwarded-For, as a client that wants a fresh budget does. A limiter
	// that trusts only its proxies' entries is not fooled.
	SpoofForwarded bool
	// Groups are sets of identities with plans of their own (see Group),
	// numbered after the identities of no group; Count includes them.
	Groups []Group
}

// Fresh reports whether every run names its own identities, so that each
// starts with a full budget even on a limiter that outlives runs: the
// identities are generated and not Fixed.
func (id Identities) Fresh() bool {
	if id.Fixed || len(id.Keys) > 0 {
		return false
	}
	for _, g := range id.Groups {
		if len(g.Keys) > 0 {
			return false
		}
	}
	return true
}

// PhaseKind names a traffic phase's shape.
type PhaseKind string

const (
	// Constant sends Rate requests per second for Duration, on an open
	// model: sends follow the schedule whatever the responses do.
	Constant PhaseKind = "constant"
	// Ramp moves the rate linearly from From to To over Duration.
	Ramp PhaseKind = "ramp"
	// Burst releases Requests requests together, spread evenly within
	// Spread; Repeat times, Gap apart, when the phase repeats.
	Burst PhaseKind = "burst"
	// EdgeBurst releases Requests requests (each within Spread) at Offset
	// before and again at Offset after the next edge of an aligned window
	// of length Window on the limiter's clock: the boundary a fixed window
	// lets through twice.
	EdgeBurst PhaseKind = "edge_burst"
	// Idle sends nothing for Duration, so that budgets refill.
	Idle PhaseKind = "idle"
	// RetryAfterProbe sends up to Requests requests for one identity until
	// one is rejected, waits exactly its Retry-After and retries once; the
	// retry must be admitted.
	RetryAfterProbe PhaseKind = "retry_after_probe"
)

var phaseKinds = []PhaseKind{Constant, Ramp, Burst, EdgeBurst, Idle, RetryAfterProbe}

// Phase is one traffic phase. Which fields are set depends on Kind; the
// others are zero.
type Phase struct {
	Kind PhaseKind
	// Name labels the phase in reports; "phase-N" (from 1) when the file
	// does not say.
	Name string
	// Rate is the request rate of a Constant phase, per second.
	Rate float64
	// From and To are the rates at the start and end of a Ramp, per second.
	From, To float64
	// Duration is the length of a Constant, Ramp or Idle phase.
	Duration time.Duration
	// Requests is the number of requests of a Burst, of each side of an
	// EdgeBurst, or the most a RetryAfterProbe sends before a rejection.
	Requests int
	// Spread is the time within which a Burst (or each side of an
	// EdgeBurst) is released; 0 releases all at once. At most
	// MaxBurstSpread.
	Spread time.Duration
	// Repeat is the number of bursts a Burst phase releases, 1 to
	// MaxBurstRepeat; 1 when the file does not say (0 also means 1).
	Repeat int
	// Gap is the time between the last planned send of one burst of a
	// repeated Burst and the first of the next; 0 when the file does not
	// say.
	Gap time.Duration
	// Offset is how far before and after the window edge an EdgeBurst's two
	// halves are placed; DefaultEdgeOffset, or a quarter of the window when
	// that is shorter, when the file does not say.
	Offset time.Duration
	// Window is the window length whose edge an EdgeBurst straddles, at
	// most MaxEdgeWindow; when the file does not say, the period of the
	// first window policy of the phase's routes.
	Window time.Duration
	// Routes are the routes requests go to with their relative weights;
	// when the file does not say, every limited route with weight 1.
	Routes []RouteWeight
	// HonorRetryAfter makes clients of a Constant or Ramp phase honour
	// Retry-After: an identity told to wait sends nothing until the wait
	// is over, and the requests it holds back are counted as withheld.
	HonorRetryAfter bool
	// Groups names the identity groups the phase sends from; empty: every
	// identity, of a group or of none. A RetryAfterProbe sends from the
	// spare identity of the first of them (IdentitySet.Spare).
	Groups []string
}

// RouteWeight is a route of a phase and its relative share of requests.
type RouteWeight struct {
	Path   string
	Weight float64
}

// PlannedRequests is the number of requests the phase's schedule holds; a
// RetryAfterProbe reports its maximum.
func (p Phase) PlannedRequests() int {
	switch p.Kind {
	case Constant:
		return int(math.Floor(p.Rate*p.Duration.Seconds() + 1e-9))
	case Ramp:
		return int(math.Floor((p.From+p.To)/2*p.Duration.Seconds() + 1e-9))
	case Burst:
		return p.Requests * p.Repeats()
	case EdgeBurst:
		return 2 * p.Requests
	case RetryAfterProbe:
		return p.Requests + 1
	}
	return 0
}

// PlannedAtMost reports whether PlannedRequests is an upper bound on what
// the phase sends rather than its count: a RetryAfterProbe stops once its
// retry is answered, and clients that honour Retry-After withhold the
// requests due while they are told to wait (HonorRetryAfter).
func (p Phase) PlannedAtMost() bool { return p.Kind == RetryAfterProbe || p.HonorRetryAfter }

// Repeats is the number of bursts of a Burst phase: Repeat, or 1 when
// Repeat is 0.
func (p Phase) Repeats() int { return max(p.Repeat, 1) }

// BurstStart is the planned time from the first send of a Burst phase to
// the first send of its burst k (from 0): k·(Spread + Gap).
func (p Phase) BurstStart(k int) time.Duration { return time.Duration(k) * (p.Spread + p.Gap) }

// Length is the longest the phase's schedule can take, which the
// scenario's bound on its length (MaxTrafficTime) counts: the Duration of
// a Constant, Ramp or Idle phase; Repeats·Spread + (Repeats−1)·Gap for a
// Burst; for an EdgeBurst the wait for the window edge (at most a Window)
// and 2·Offset + Spread around it; MaxProbeWait for a RetryAfterProbe,
// which waits out a Retry-After of up to that. The harness's own set-up of
// a phase (opening connections, well under a second) is not counted. The
// sum saturates at the largest Duration instead of overflowing.
func (p Phase) Length() time.Duration {
	switch p.Kind {
	case Constant, Ramp, Idle:
		return p.Duration
	case Burst:
		n := int64(p.Repeats())
		return addDurations(mulDuration(n, p.Spread), mulDuration(n-1, p.Gap))
	case EdgeBurst:
		return addDurations(addDurations(p.Window, mulDuration(2, p.Offset)), p.Spread)
	case RetryAfterProbe:
		return MaxProbeWait
	}
	return 0
}

// MaxProbeWait bounds the Retry-After a RetryAfterProbe waits out before it
// retries.
const MaxProbeWait = 2 * time.Minute

// addDurations returns a+b for non-negative a and b, saturating at the
// largest Duration.
func addDurations(a, b time.Duration) time.Duration {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// mulDuration returns n·d for non-negative n and d, saturating at the
// largest Duration.
func mulDuration(n int64, d time.Duration) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

// Checks are the verdicts a run must pass, with their bounds.
type Checks struct {
	// MaxExcess is the most units per key the budget check tolerates above
	// the policy's bound (checker.Policy.MaxExcess); 0 when the file does
	// not say. The budget check always runs.
	MaxExcess int64
	// FalseRejections, when set, bounds the false-rejection rate; when nil
	// the false-rejection check tolerates none. The check always runs.
	FalseRejections *FalseRejections
	// Headers runs the header honesty checks (retry-after,
	// ratelimit-fields and header-style), the default; false (headers:
	// false) leaves them out (checker.Policy.SkipHeaderChecks) and the
	// report notes it.
	Headers bool
	// Overhead, when set, bounds the latency the limiter adds.
	Overhead *Overhead
	// MaxLatency, when positive, bounds every request's latency.
	MaxLatency time.Duration
	// LoadDelivered is the least fraction of planned requests the generator
	// must send on schedule for latency figures to count; DefaultLoadDelivered
	// when the file does not say.
	LoadDelivered float64
	// Faults bounds behaviour during and after the scenario's faults; set
	// whenever the scenario has faults.
	Faults *FaultChecks
}

// FaultChecks are the bounds of a drill.
type FaultChecks struct {
	// Slack is added to the store timeout to bound every request's latency
	// during a fault; DefaultFaultSlack when the file does not say.
	Slack time.Duration
	// Recovery is how long after a fault is healed the shared budget must
	// hold again; DefaultRecovery when the file does not say.
	Recovery time.Duration
}

// Fault check defaults.
const (
	DefaultFaultSlack = 250 * time.Millisecond
	DefaultRecovery   = 2 * time.Second
)

// DefaultLoadDelivered is the least fraction of the planned load a run must
// deliver when the scenario gives no bound.
const DefaultLoadDelivered = 0.98

// FalseRejections bounds the rate of 429s the ideal limiter would have
// admitted.
type FalseRejections struct {
	// MaxRate is the fraction of the requests under a route's policy that
	// may be false rejections, in [0, 1]: ⌊MaxRate·N⌋ of N requests pass
	// (checker.Policy.MaxFalseRejectionRate).
	MaxRate float64
}

// Overhead bounds the latency the limiter adds to Route over Baseline, the
// same handler with the limiter bypassed, at three percentiles; a zero
// bound is not checked. With Versus, another limited route of the same
// target (another limiter under the same policy), it also bounds the ratio
// of Route's overhead to Versus's at each percentile that has a ratio
// bound, each route measured against the baseline requests of the phases
// it had traffic in.
type Overhead struct {
	Route, Baseline string
	P50, P99, P999  time.Duration
	Versus          string
	// RatioP50, RatioP99 and RatioP999 bound Route's overhead over
	// Versus's; zero is not checked.
	RatioP50, RatioP99, RatioP999 float64
}
