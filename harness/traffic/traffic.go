// Package traffic fires a scenario's traffic phases at a target and reports
// every request as it completes, with the time it was meant to be sent, the
// time it was sent and the time its answer came back.
//
// Constant and ramp phases run on an open model through a vegeta Attacker
// (one per phase) paced by a Schedule; bursts and edge bursts are released
// from a start barrier, each request on a connection of its own opened just
// before it (see burst.go for why), and what each burst achieved is
// recorded (PhaseStats.Bursts); phases
// whose clients honour Retry-After, and the Retry-After probe, drive net/http
// themselves because each client's sends depend on its earlier answers.
//
// Every phase's requests are planned up front from the scenario's seed
// (Plan), so a run can fire one shard of a sharded run (Config.Shard): the
// requests of the plan that shard owns, each at the time the whole plan
// gives it, so that several load generators together send the plan once.
//
// Latency is kept in HDR histograms twice: from the actual send and from the
// intended send, so that a generator that falls behind its schedule shows
// the delay (coordinated omission) instead of hiding it. A 429 is an
// outcome, not an error.
package traffic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios"
)

// Defaults for the Config fields left zero.
const (
	// DefaultWorkers is the number of vegeta workers a phase starts with.
	DefaultWorkers = 16
	// DefaultMaxWorkers bounds the concurrent requests of an open-model
	// phase; when every worker waits on a slow target the generator falls
	// behind its schedule, which the intended-send latency shows.
	DefaultMaxWorkers = 512
	// DefaultMaxConnections bounds the connections to each instance outside
	// bursts, which open one connection per request.
	DefaultMaxConnections = 512
	// DefaultTimeout bounds each request, response body included.
	DefaultTimeout = 10 * time.Second
	// DefaultHandoffBuffer is the number of results waiting for the
	// consumer before further ones are dropped (and counted).
	DefaultHandoffBuffer = 1 << 16
	// DefaultConnLead is how long before its planned send a burst request's
	// connection is opened: long enough to open a group of a few thousand
	// on a busy machine, far shorter than any server's idle or header
	// timeout.
	DefaultConnLead = 100 * time.Millisecond
	// DefaultLagTolerance is how late after its intended time a request may
	// be sent and still count as delivered on time. It is generous enough
	// for a busy two-core machine's scheduling noise, and far below the lag
	// of a generator that cannot keep up, which grows without bound; the
	// latency measured from the intended send counts every lag regardless.
	DefaultLagTolerance = 50 * time.Millisecond
	// RequestIDHeader carries each request's Result.ID to the target, so
	// that its logs can be joined with the history.
	RequestIDHeader = "X-Rlbench-Request"
)

// Config configures Run. Scenario and BaseURLs are required; the other
// fields start at the Default constants when zero.
type Config struct {
	// Scenario is the validated scenario whose phases are fired.
	Scenario *scenarios.Scenario
	// BaseURLs holds one base URL per target instance, such as
	// "http://127.0.0.1:41234", as many as Scenario.Target.NumInstances().
	BaseURLs []string
	// InstanceNames names the instances in results; when nil, BaseURLs[i]
	// is scenarios.InstanceName(i): instance-1, instance-2, ..., as
	// scenarios, faults and histories count them.
	InstanceNames []string
	// ClockOffset is the limiter's clock minus the local clock (see
	// MeasureClockOffset); edge bursts place their halves around window
	// edges on the limiter's clock.
	ClockOffset time.Duration
	// RunID names this run's identities (scenarios.Identities.Identity):
	// unless the scenario fixes them, every run sends its own keys
	// ("key-<run>-0003") and client addresses, so that a limiter that
	// outlives runs meets every identity with a full budget. Empty sends
	// the fixed names. The shards of a sharded run share it.
	RunID scenarios.RunID
	// Shard, when set, fires shard Shard.Index of Shard.Count of a sharded
	// run: of every phase, the requests Plan gives the shard, each at its
	// planned time, so that the shards together send the scenario's
	// traffic exactly once. Nil fires the whole run (Whole). The phase
	// statistics count the shard's own plan.
	Shard *history.Shard
	// OnResult receives every result, from one goroutine, in the order the
	// results complete. It does not slow the generator: results wait in a
	// buffer of HandoffBuffer entries and are dropped (Stats.Dropped) when
	// it is full. May be nil.
	OnResult func(*Result)

	// ConnLead is how long before its first planned send a group of burst
	// requests opens its connections; none is opened earlier, so none is
	// open longer than ConnLead, plus the group's span (under ConnLead) and
	// the time opening the group takes, before its request is written.
	ConnLead time.Duration

	Workers        uint64
	MaxWorkers     uint64
	MaxConnections int
	Timeout        time.Duration
	HandoffBuffer  int
	LagTolerance   time.Duration
}

func (c *Config) setDefaults() {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = DefaultMaxWorkers
	}
	c.Workers = min(c.Workers, c.MaxWorkers)
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.HandoffBuffer == 0 {
		c.HandoffBuffer = DefaultHandoffBuffer
	}
	if c.LagTolerance == 0 {
		c.LagTolerance = DefaultLagTolerance
	}
	if c.ConnLead == 0 {
		c.ConnLead = DefaultConnLead
	}
}

// ErrConfig is wrapped by the errors Run returns for an unusable Config.
var ErrConfig = errors.New("invalid traffic config")

// ProbeRole marks the requests of a RetryAfterProbe phase.
type ProbeRole uint8

const (
	// NotProbe is every request outside a probe.
	NotProbe ProbeRole = iota
	// ProbeSend is a probe request sent to exhaust the budget.
	ProbeSend
	// ProbeRetry is the one retry sent exactly Retry-After after the probe's
	// first rejection; the limiter must admit it.
	ProbeRetry
)

// Result is one request and its answer. Times are on the local monotonic
// clock; Received is when the response headers arrived (the body is then
// read and discarded), or when the transport failed.
type Result struct {
	// ID is unique within a run, from 1.
	ID uint64
	// Phase is the phase's name and PhaseIndex its place in the scenario.
	Phase      string
	PhaseIndex int
	Kind       scenarios.PhaseKind
	// Identity is the identity's label (scenarios.Identity.Label): the
	// key as sent when it is generated, key#N for a key from a keys file,
	// the client address or the identity's block of addresses. Histories
	// record it, so that checks group requests by identity.
	Identity string
	// IdentityIndex is the identity's index, 0 ≤ IdentityIndex ≤ Count (the
	// probe uses index Count, an identity no other phase sends).
	IdentityIndex int
	Route         string
	Method        string
	Cost          int64
	// Instance is the index in Config.BaseURLs (from 0) of the instance the
	// request went to, and InstanceName its name (instance-1 for index 0).
	Instance     int
	InstanceName string
	// URL is the request's URL, a key from a keys file replaced by its
	// label.
	URL string
	// Intended is when the schedule meant the request to be sent; Sent is
	// when it was handed to the connection.
	Intended, Sent, Received time.Time
	// Status is the HTTP status code; 0 when no answer arrived.
	Status int
	// Header holds the response headers.
	Header http.Header
	// Err is the transport error when Status is 0.
	Err string
	// Probe marks the requests of a RetryAfterProbe phase; Waited is how
	// long a ProbeRetry waited after the rejection it follows.
	Probe  ProbeRole
	Waited time.Duration
}

// Latency is the time from the actual send to the answer.
func (r *Result) Latency() time.Duration { return r.Received.Sub(r.Sent) }

// LatencyFromIntended is the time from the intended send to the answer:
// the latency a client on the schedule experienced.
func (r *Result) LatencyFromIntended() time.Duration { return r.Received.Sub(r.Intended) }

// Record converts r to a history record with times in nanoseconds since
// start, which must carry a monotonic reading (time.Now()).
func (r *Result) Record(start time.Time) history.Record {
	rec := history.Record{
		ID:         r.ID,
		Key:        r.Identity,
		Instance:   r.InstanceName,
		Route:      r.Route,
		Cost:       r.Cost,
		IntendedNs: r.Intended.Sub(start).Nanoseconds(),
		SentNs:     r.Sent.Sub(start).Nanoseconds(),
		ReceivedNs: r.Received.Sub(start).Nanoseconds(),
		Status:     r.Status,
		Outcome:    history.OutcomeForStatus(r.Status),
		Error:      r.Err,
		Headers:    history.RateLimitHeaderValues(r.Header),
		Phase:      r.Phase,
	}
	return rec
}

// Run fires the scenario's phases in order at cfg.BaseURLs and returns what
// was delivered. It returns when every phase is done and every result has
// been handed to OnResult (or dropped), or when ctx is cancelled, with the
// statistics so far and ctx's error. Errors: ErrConfig for an unusable
// Config; request failures are results, not errors.
func Run(ctx context.Context, cfg Config) (*Stats, error) {
	e, err := newEngine(cfg)
	if err != nil {
		return nil, err
	}
	defer e.transport.CloseIdleConnections()
	e.coll.start(cfg.OnResult)
	var runErr error
	for i, ph := range cfg.Scenario.Phases {
		if err := ctx.Err(); err != nil {
			runErr = err
			break
		}
		if err := e.runPhase(ctx, i, ph); err != nil {
			runErr = err
			break
		}
	}
	stats := e.coll.finish()
	if runErr == nil {
		runErr = ctx.Err()
	}
	return stats, runErr
}

// engine holds what the phases of one run share.
type engine struct {
	cfg       Config
	sc        *scenarios.Scenario
	shard     history.Shard // Whole when Config.Shard is nil
	bases     []*url.URL
	baseStrs  []string // bases[i].String(), once
	names     []string
	transport *http.Transport
	client    *http.Client
	coll      *collector
	routes    []request // by index into Scenario.Target.Routes
	// proxies is what follows a client's address in X-Forwarded-For: the
	// trusted proxies beyond the first hop (", 192.0.2.1"), or "".
	proxies string
	// envSecrets replaces header values taken from the environment by
	// scenarios.Redacted; nil when there are none.
	envSecrets *strings.Replacer
	// burstConns holds a token per open burst connection, at most
	// maxBurstConns.
	burstConns chan struct{}

	mu     sync.Mutex
	nextID uint64 // last ID handed out
}

func newEngine(cfg Config) (*engine, error) {
	cfg.setDefaults()
	sc := cfg.Scenario
	if sc == nil {
		return nil, fmt.Errorf("%w: no scenario", ErrConfig)
	}
	if n := sc.Target.NumInstances(); len(cfg.BaseURLs) != n {
		return nil, fmt.Errorf("%w: %d base URLs for %d instances", ErrConfig, len(cfg.BaseURLs), n)
	}
	if cfg.InstanceNames != nil && len(cfg.InstanceNames) != len(cfg.BaseURLs) {
		return nil, fmt.Errorf("%w: %d instance names for %d base URLs", ErrConfig, len(cfg.InstanceNames), len(cfg.BaseURLs))
	}
	if cfg.ConnLead < 0 {
		return nil, fmt.Errorf("%w: ConnLead %v is negative", ErrConfig, cfg.ConnLead)
	}
	e := &engine{cfg: cfg, sc: sc, shard: Whole, burstConns: make(chan struct{}, maxBurstConns)}
	if cfg.Shard != nil {
		if err := cfg.Shard.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		e.shard = *cfg.Shard
	}
	for i, raw := range cfg.BaseURLs {
		u, err := url.Parse(strings.TrimSuffix(raw, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: base URL %q is not an http(s) URL", ErrConfig, raw)
		}
		e.bases = append(e.bases, u)
		e.baseStrs = append(e.baseStrs, u.String())
		name := scenarios.InstanceName(i)
		if cfg.InstanceNames != nil {
			name = cfg.InstanceNames[i]
		}
		e.names = append(e.names, name)
	}
	e.transport = newTransport(cfg.MaxConnections)
	e.client = &http.Client{
		Transport:     e.transport,
		Timeout:       cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	e.prepare()
	e.coll = newCollector(sc.Phases, cfg)
	e.coll.scrub = e.scrub
	return e, nil
}

// request is the fixed part of a route's requests: everything but the
// identity and the request ID.
type request struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// prepare builds each route's fixed request parts once, and what scrub
// needs to keep secrets out of results.
func (e *engine) prepare() {
	var secrets []string
	for _, rt := range e.sc.Target.Routes {
		rq := request{method: rt.Method, path: rt.Path, query: rt.Query, header: make(http.Header, len(rt.Headers)), body: rt.Body}
		for _, h := range rt.Headers {
			rq.header[h.Name] = []string{h.Value.Reveal()}
			if h.FromEnv() {
				secrets = append(secrets, h.Value.Reveal(), scenarios.Redacted)
				if esc := url.QueryEscape(h.Value.Reveal()); esc != h.Value.Reveal() {
					secrets = append(secrets, esc, scenarios.Redacted)
				}
			}
		}
		e.routes = append(e.routes, rq)
	}
	if len(secrets) > 0 {
		e.envSecrets = strings.NewReplacer(secrets...)
	}
	for _, a := range e.sc.Identities.Proxies() {
		e.proxies += ", " + a.String()
	}
}

// newTransport returns a keep-alive HTTP/1.1 transport for loopback and LAN
// targets: no proxy, no compression, bounded connections per host.
func newTransport(maxConns int) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: maxConns,
		MaxConnsPerHost:     maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

func (e *engine) runPhase(ctx context.Context, i int, ph scenarios.Phase) error {
	plan, err := Plan(e.sc, i, e.shard)
	if err != nil {
		return err
	}
	switch ph.Kind {
	case scenarios.Constant, scenarios.Ramp:
		sched := schedule(ph)
		if ph.HonorRetryAfter {
			return e.runHonouring(ctx, i, ph, sched, plan)
		}
		return e.runVegeta(ctx, i, ph, sched, plan)
	case scenarios.Burst:
		return e.runBurst(ctx, i, ph, plan)
	case scenarios.EdgeBurst:
		return e.runEdgeBurst(ctx, i, ph, plan)
	case scenarios.Idle:
		e.coll.phaseMeta(i, func(m *PhaseStats) { m.Began = time.Now() })
		t := time.NewTimer(ph.Duration)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		e.coll.phaseMeta(i, func(m *PhaseStats) { m.Ended = time.Now() })
		return ctx.Err()
	case scenarios.RetryAfterProbe:
		return e.runProbe(ctx, i, ph, plan)
	}
	return fmt.Errorf("%w: phase %s: unknown kind %q", ErrConfig, ph.Name, ph.Kind)
}

// ids reserves n consecutive result IDs and returns the first.
func (e *engine) ids(n int) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	first := e.nextID + 1
	e.nextID += uint64(n)
	return first
}

// item is one planned request: who sends it, where and on which route.
type item struct {
	identity int
	route    int // index into Scenario.Target.Routes
	instance int
}

// planner draws a phase's items with its seeded RNG, for Plan.
type planner struct {
	sc      *scenarios.Scenario
	rng     *rand.Rand
	zipf    *rand.Zipf
	routes  []int     // indexes into Target.Routes
	cumul   []float64 // cumulative route weights
	sumW    float64
	random  bool
	idCount int
	// sets are the identity sets the phase sends from (its groups, or
	// every set); identity draws an index among their idCount identities,
	// in order, and maps it to the identity's own index.
	sets []scenarios.IdentitySet
	// instances is the number of the target's instances, and rr the
	// round-robin position over them.
	instances, rr int
}

// newPlanner returns the planner of phase ph of sc, drawing from rng, its
// round robin over the instances starting at position rr.
func newPlanner(sc *scenarios.Scenario, ph scenarios.Phase, rng *rand.Rand, rr int) *planner {
	p := &planner{sc: sc, rng: rng, random: sc.Target.Spread == scenarios.Random, sets: sc.Identities.SetsOf(ph.Groups),
		instances: max(sc.Target.NumInstances(), 1), rr: rr}
	for _, s := range p.sets {
		p.idCount += s.Count
	}
	if sc.Identities.Distribution == scenarios.Zipf && p.idCount > 1 {
		p.zipf = rand.NewZipf(rng, sc.Identities.S, 1, uint64(p.idCount-1))
	}
	for _, rw := range ph.Routes {
		for j, rt := range sc.Target.Routes {
			if rt.Path == rw.Path {
				p.routes = append(p.routes, j)
				p.sumW += rw.Weight
				p.cumul = append(p.cumul, p.sumW)
			}
		}
	}
	return p
}

// identity draws the identity of the next request: an index among the
// phase's identities by the scenario's distribution (the first of them is
// the hot one), as the identity's own index.
func (p *planner) identity() int {
	return p.member(p.draw())
}

func (p *planner) draw() int {
	id := p.sc.Identities
	switch {
	case p.idCount <= 1:
		return 0
	case id.Distribution == scenarios.Hot:
		if p.rng.Float64() < id.Share {
			return 0
		}
		return 1 + p.rng.IntN(p.idCount-1)
	case p.zipf != nil:
		return int(p.zipf.Uint64())
	}
	return p.rng.IntN(p.idCount)
}

// member maps the n-th identity of the phase's sets to its own index.
func (p *planner) member(n int) int {
	for _, s := range p.sets {
		if n < s.Count {
			return s.First + n
		}
		n -= s.Count
	}
	return n
}

// spare is the identity a retry_after_probe sends from: the spare of the
// phase's first set, which no other phase uses.
func (p *planner) spare() int {
	if len(p.sets) == 0 {
		return p.sc.Identities.Count
	}
	return p.sets[0].Spare
}

func (p *planner) route() int {
	if len(p.routes) == 1 {
		return p.routes[0]
	}
	x := p.rng.Float64() * p.sumW
	for i, c := range p.cumul {
		if x < c {
			return p.routes[i]
		}
	}
	return p.routes[len(p.routes)-1]
}

// instance is the next request's instance: drawn with Spread random,
// else the next in round robin.
func (p *planner) instance() int {
	if p.random {
		return p.rng.IntN(p.instances)
	}
	i := p.rr % p.instances
	p.rr++
	return i
}

func (p *planner) next() item {
	return item{identity: p.identity(), route: p.route(), instance: p.instance()}
}

func (p *planner) plan(n int) []item {
	items := make([]item, n)
	for i := range items {
		items[i] = p.next()
	}
	return items
}

// identity is identity i of the run.
func (e *engine) identity(i int) scenarios.Identity {
	return e.sc.Identities.Identity(e.cfg.RunID, i)
}

// target is the method, URL, headers and body of an item's request: the
// route's fixed parts, the request ID, and the identity where the
// scenario carries it.
func (e *engine) target(it item, id uint64) (method, u string, h http.Header, body []byte) {
	rq := &e.routes[it.route]
	ids := &e.sc.Identities
	idn := e.identity(it.identity)
	h = make(http.Header, len(rq.header)+2)
	for k, v := range rq.header {
		h[k] = v
	}
	query := rq.query
	switch ids.Carry {
	case scenarios.APIKey:
		h.Set(ids.Header, idn.Value)
	case scenarios.Bearer:
		h.Set("Authorization", "Bearer "+idn.Value)
	case scenarios.Cookie:
		h.Set("Cookie", ids.Name+"="+idn.Value)
	case scenarios.Query:
		query = joinQuery(query, url.QueryEscape(ids.Name)+"="+url.QueryEscape(idn.Value))
	case scenarios.ClientIP:
		h.Set(ids.Header, e.forwarded(idn, id))
	}
	h.Set(RequestIDHeader, strconv.FormatUint(id, 10))
	return rq.method, e.url(it, query), h, rq.body
}

// forwarded is the client address header of request id of identity idn:
// its address, after a forged one of its own when it spoofs
// X-Forwarded-For (TEST-NET-2, RFC 5737, new on every request), and before
// the trusted proxies beyond the first hop, as they would append theirs.
func (e *engine) forwarded(idn scenarios.Identity, id uint64) string {
	addr := idn.Addr(id).String()
	if e.sc.Identities.SpoofForwarded {
		addr = fmt.Sprintf("198.51.%d.%d, %s", id>>8&0xff, id&0xff, addr)
	}
	return addr + e.proxies
}

func joinQuery(a, b string) string {
	if a == "" {
		return b
	}
	return a + "&" + b
}

// url is the URL of an item's request with the given query string.
func (e *engine) url(it item, query string) string {
	u := e.baseStrs[it.instance] + e.routes[it.route].path
	if query != "" {
		u += "?" + query
	}
	return u
}

// shownURL is the URL a result shows: the request's, with an identity
// from a keys file replaced by its label.
func (e *engine) shownURL(it item, idn scenarios.Identity) string {
	query := e.routes[it.route].query
	if e.sc.Identities.Carry == scenarios.Query {
		v := idn.Value
		if idn.Secret {
			v = idn.Label
		}
		query = joinQuery(query, url.QueryEscape(e.sc.Identities.Name)+"="+url.QueryEscape(v))
	}
	return e.url(it, query)
}

// scrub keeps secrets out of a result before anyone sees it: a transport
// error's text may quote the request URL, which may carry a key from a
// keys file, so the key becomes its label and every header value taken
// from the environment scenarios.Redacted.
func (e *engine) scrub(res *Result) {
	if res.Err == "" {
		return
	}
	if idn := e.identity(res.IdentityIndex); idn.Secret {
		res.Err = strings.ReplaceAll(res.Err, url.QueryEscape(idn.Value), url.QueryEscape(idn.Label))
		res.Err = strings.ReplaceAll(res.Err, idn.Value, idn.Label)
	}
	if e.envSecrets != nil {
		res.Err = e.envSecrets.Replace(res.Err)
	}
}

// newResult fills the fields of a result that come from the plan.
func (e *engine) newResult(pi int, ph scenarios.Phase, it item, id uint64) *Result {
	rt := e.sc.Target.Routes[it.route]
	idn := e.identity(it.identity)
	return &Result{
		ID: id, Phase: ph.Name, PhaseIndex: pi, Kind: ph.Kind,
		Identity: idn.Label, IdentityIndex: it.identity,
		Route: rt.Path, Method: rt.Method, Cost: rt.Cost,
		Instance: it.instance, InstanceName: e.names[it.instance], URL: e.shownURL(it, idn),
	}
}

// do sends one request on client and fills res's times, status and headers.
func (e *engine) do(ctx context.Context, client *http.Client, it item, res *Result) {
	req, err := e.request(ctx, it, res.ID)
	if err != nil {
		res.Sent = time.Now()
		res.Received = res.Sent
		res.Err = err.Error()
		return
	}
	send(client, req, res)
}

// request builds the request of an item.
func (e *engine) request(ctx context.Context, it item, id uint64) (*http.Request, error) {
	method, u, h, body := e.target(it, id)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header = h
	return req, nil
}

// send sends req on client and fills res's times, status and headers. The
// body is read and discarded so the connection can be reused.
func send(client *http.Client, req *http.Request, res *Result) {
	res.Sent = time.Now()
	resp, err := client.Do(req)
	if err != nil {
		res.Received = time.Now()
		res.Err = err.Error()
		return
	}
	res.Received = time.Now()
	_, err = discard(resp)
	res.Status = resp.StatusCode
	res.Header = resp.Header
	if err != nil {
		res.Err = err.Error()
	}
}
