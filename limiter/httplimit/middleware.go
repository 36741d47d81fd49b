// Package httplimit is net/http middleware that rate-limits requests with a
// limiter.Limiter: it identifies the caller, applies the route's and the
// caller's limits in one all-or-nothing call, answers 429 Too Many Requests
// (RFC 6585 §4) with Retry-After (RFC 9110 §10.2.3) and an RFC 9457 problem
// body, and writes RateLimit header fields in the selected style
// (draft-ietf-httpapi-ratelimit-headers-10 by default; see HeaderStyle).
//
// Callers are identified by an Authenticator's API key, hashed (HashKey)
// before it reaches the limiter, the logs or the metrics; requests it
// rejects are answered 401 and never counted. Anonymous callers are keyed
// by client IP, with X-Forwarded-For honoured only from trusted proxies
// (ClientIPResolver). Routes set costs, extra limits and exemptions; shadow
// mode decides and counts without rejecting; a request that cannot be
// decided goes to a pluggable ErrorHandler, 503 with Retry-After: 1 by
// default.
package httplimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlbench/rlbench/limiter"
)

// ErrUnauthenticated is returned (possibly wrapped) by an Authenticator that
// rejects a request's credentials; the middleware answers 401 and the
// request is never counted.
var ErrUnauthenticated = errors.New("unauthenticated")

// Identity is the caller a request is charged to.
type Identity struct {
	// Key is the caller's raw API key. The middleware hashes it before it
	// reaches the limiter, the logs or the metrics. Empty for an anonymous
	// caller, who is identified by client IP.
	Key string
	// Limits are the caller's plan tiers (a per-minute rate, a monthly
	// quota), applied together with the route's limits in one call. An
	// anonymous caller (empty Key) gets the limits of WithAnonymousLimits
	// instead; a keyed caller without Limits is held to the route's only.
	Limits []limiter.Limit
}

// Authenticator resolves the caller of a request. It returns an error
// wrapping ErrUnauthenticated for bad or missing credentials (answered 401,
// not counted, with the error's text as the problem's detail, so it must not
// hold the credentials); a zero Identity and nil error mean an anonymous
// caller. Any other error goes to the error handler.
type Authenticator func(r *http.Request) (Identity, error)

// KeyFunc returns the limiter key of an authenticated request. The key
// should already be hashed or otherwise free of secrets; it appears in logs.
type KeyFunc func(r *http.Request, id Identity) (string, error)

// RejectHandler writes the response to a rejected request. When it runs, the
// RateLimit fields and Retry-After are already set on w; it writes the status
// (429 unless it has reason to differ) and the body.
type RejectHandler func(w http.ResponseWriter, r *http.Request, d limiter.Decision)

// ErrorHandler writes the response when the request cannot be decided: the
// limiter or the key function failed. It is the place to plug a different
// failure policy; fail-open, fail-closed and local fallback belong in a
// limiter.Limiter decorator, which never reaches this handler.
type ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

// Route is the rate-limiting policy of the requests matching Pattern.
type Route struct {
	// Pattern is "[METHOD ]PATH": PATH matches exactly, or as a prefix when
	// it ends in "/" ("/docs/"); a GET pattern also matches HEAD. The
	// longest matching path wins, and a pattern with a method beats one
	// without.
	Pattern string
	// Name labels the route in metrics and logs; it defaults to Pattern.
	Name string
	// Cost is the number of units a request charges; zero means 1.
	Cost int64
	// Limits apply to every caller of the route, in addition to the
	// caller's own (Identity.Limits).
	Limits []limiter.Limit
	// Skip exempts the route from rate limiting (health checks, docs).
	// Skipped requests are neither authenticated nor counted.
	Skip bool
}

// Middleware rate-limits HTTP requests. Build it with New (the zero value is
// not usable); it is safe for concurrent use by multiple goroutines.
//
// For each request it finds the Route, authenticates the caller, and makes
// one limiter call with the caller's and the route's limits at the route's
// cost. An admitted request reaches the next handler with the RateLimit
// fields set; a rejected one is answered 429 Too Many Requests (RFC 6585 §4)
// with Retry-After in whole seconds, rounded up and at least 1 (RFC 9110
// §10.2.3), and an RFC 9457 problem body. A request that cannot be decided
// goes to the ErrorHandler (by default 503 with Retry-After: 1).
type Middleware struct {
	lim       limiter.Limiter
	routes    []route
	fallback  route
	auth      Authenticator
	keyFunc   KeyFunc
	clientIP  *ClientIPResolver
	anonymous []limiter.Limit
	style     HeaderStyle
	decTime   bool
	shadow    bool
	degraded  int
	reject    RejectHandler
	onError   ErrorHandler
	reg       prometheus.Registerer
	metrics   *metrics
	log       *slog.Logger
	now       func() time.Time
	headers   headerCache
}

type route struct {
	Route
	method, path string
	prefix       bool
	// metrics are the route's collectors, resolved once; nil without metrics.
	metrics *routeMetrics
	// policy is the RateLimit-Policy value of the route's own limits,
	// written when they are all a request is held to.
	policy string
}

// Option configures a Middleware.
type Option func(*Middleware)

// WithRoutes sets the per-route policies. Requests matching no route get the
// default route's (see WithDefaultRoute).
func WithRoutes(routes ...Route) Option {
	return func(m *Middleware) {
		for _, r := range routes {
			m.routes = append(m.routes, route{Route: r})
		}
	}
}

// WithDefaultRoute sets the policy of requests matching no route; its
// Pattern is ignored. The default charges 1 unit under the caller's limits
// and is named "default".
func WithDefaultRoute(r Route) Option {
	return func(m *Middleware) { m.fallback = route{Route: r} }
}

// WithSkip exempts the given patterns (see Route.Pattern) from limiting;
// shorthand for WithRoutes with Skip set.
func WithSkip(patterns ...string) Option {
	return func(m *Middleware) {
		for _, p := range patterns {
			m.routes = append(m.routes, route{Route: Route{Pattern: p, Skip: true}})
		}
	}
}

// WithAuthenticator makes the middleware authenticate every limited request
// before deciding. Requests it rejects are answered 401 and never counted.
// The Identity is available to later handlers through IdentityFrom.
func WithAuthenticator(a Authenticator) Option {
	return func(m *Middleware) { m.auth = a }
}

// WithKeyFunc replaces the default key function (see DefaultKey).
func WithKeyFunc(f KeyFunc) Option {
	return func(m *Middleware) { m.keyFunc = f }
}

// WithClientIP sets the resolver the default key function uses for
// anonymous callers. The default trusts no proxy.
func WithClientIP(c *ClientIPResolver) Option {
	return func(m *Middleware) { m.clientIP = c }
}

// WithAnonymousLimits sets the limits of anonymous callers (an Identity
// without Key), who are keyed by client IP. A request with neither caller
// nor route limits is not limited.
func WithAnonymousLimits(limits ...limiter.Limit) Option {
	return func(m *Middleware) { m.anonymous = limits }
}

// WithHeaders selects the RateLimit header style; DefaultHeaderStyle unless set.
func WithHeaders(style HeaderStyle) Option {
	return func(m *Middleware) { m.style = style }
}

// WithDecisionTime adds DecisionTimeHeader to every limited response.
func WithDecisionTime() Option {
	return func(m *Middleware) { m.decTime = true }
}

// WithShadow turns on shadow (dark) mode: every request is decided, counted
// and logged, but none is rejected and no rate-limit field is written, so
// clients see no difference. Rejections that would have happened are counted
// as shadow rejections.
func WithShadow() Option {
	return func(m *Middleware) { m.shadow = true }
}

// WithDegradedStatus sets the status of a rejection taken without the
// shared store (limiter.Decision.Degraded, as a resilience wrapper's
// fail-closed mode answers): by default 503 Service Unavailable with
// Retry-After, since no limit was exceeded (RFC 9110 §15.6.4). A wrapper
// whose degraded rejections are real limit decisions (a local fallback
// enforcing each instance's share) sets http.StatusTooManyRequests, and
// they are then answered as any rejection.
func WithDegradedStatus(status int) Option {
	return func(m *Middleware) { m.degraded = status }
}

// WithRejectHandler replaces the default 429 problem response.
func WithRejectHandler(h RejectHandler) Option {
	return func(m *Middleware) { m.reject = h }
}

// WithErrorHandler replaces DefaultErrorHandler.
func WithErrorHandler(h ErrorHandler) Option {
	return func(m *Middleware) { m.onError = h }
}

// WithMetrics registers the middleware's Prometheus metrics with reg (a
// registry of the caller's, never the global one); New fails if they are
// already registered there. Without it no metrics are kept. The metrics:
//
//	rlbench_httplimit_admitted_total{route,policy}         admitted requests
//	rlbench_httplimit_rejected_total{route,policy}         rejected requests (429)
//	rlbench_httplimit_shadow_rejected_total{route,policy}  rejections shadow mode let through
//	rlbench_httplimit_errors_total{route}                  requests that could not be decided
//	rlbench_httplimit_degraded_total{route,outcome}        decisions taken without the shared store
//	rlbench_httplimit_decision_duration_seconds{route}     time spent in the limiter (histogram)
//
// policy is the deciding limit's ID (limiter.Limit.ID); outcome is
// "admitted" or "rejected".
func WithMetrics(reg prometheus.Registerer) Option {
	return func(m *Middleware) { m.reg = reg }
}

// WithLogger sets the logger for rejections and errors; the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(m *Middleware) { m.log = l }
}

// WithClock sets the clock of the Reset and decision-time fields; tests pass
// a fake clock. Decisions themselves use the limiter's clock.
func WithClock(now func() time.Time) Option {
	return func(m *Middleware) { m.now = now }
}

// New returns a Middleware deciding with lim. It returns an error naming the
// route at fault when a route's pattern, cost or limits are invalid, or when
// the metrics cannot be registered.
func New(lim limiter.Limiter, opts ...Option) (*Middleware, error) {
	if lim == nil {
		return nil, errors.New("httplimit: nil limiter")
	}
	m := &Middleware{
		lim:      lim,
		fallback: route{Route: Route{Name: "default"}},
		style:    DefaultHeaderStyle,
		degraded: http.StatusServiceUnavailable,
		log:      slog.New(slog.DiscardHandler),
		now:      time.Now,
	}
	for _, opt := range opts {
		opt(m)
	}
	if m.keyFunc == nil {
		m.keyFunc = DefaultKey(m.clientIP)
	}
	if m.reject == nil {
		m.reject = defaultReject
	}
	if m.onError == nil {
		m.onError = DefaultErrorHandler
	}
	seen := map[string]bool{}
	for i := range m.routes {
		r := &m.routes[i]
		if err := r.parse(); err != nil {
			return nil, err
		}
		if seen[r.method+" "+r.path] {
			return nil, fmt.Errorf("httplimit: route %q: pattern given twice", r.Pattern)
		}
		seen[r.method+" "+r.path] = true
	}
	if err := m.fallback.check(); err != nil {
		return nil, err
	}
	for _, l := range m.anonymous {
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("httplimit: anonymous limits: %w", err)
		}
	}
	if m.reg != nil {
		mt, err := newMetrics(m.reg)
		if err != nil {
			return nil, fmt.Errorf("httplimit: register metrics: %w", err)
		}
		m.metrics = mt
	}
	for _, r := range append(sliceOf(m.routes), &m.fallback) {
		if m.metrics != nil {
			r.metrics = m.metrics.forRoute(r.Name)
		}
		if len(r.Limits) > 0 {
			r.policy = m.headers.policy(r.Limits)
		}
	}
	return m, nil
}

// sliceOf returns pointers to the elements of routes.
func sliceOf(routes []route) []*route {
	out := make([]*route, len(routes))
	for i := range routes {
		out[i] = &routes[i]
	}
	return out
}

func (r *route) parse() error {
	p := strings.TrimSpace(r.Pattern)
	if method, path, ok := strings.Cut(p, " "); ok {
		r.method, p = method, strings.TrimSpace(path)
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("httplimit: route %q: want \"[METHOD ]/path\", as in \"POST /v1/reports/export\"", r.Pattern)
	}
	r.path, r.prefix = p, strings.HasSuffix(p, "/")
	if r.Name == "" {
		r.Name = strings.TrimSpace(r.Pattern)
	}
	return r.check()
}

func (r *route) check() error {
	if r.Cost < 0 {
		return fmt.Errorf("httplimit: route %q: cost %d is negative", r.Name, r.Cost)
	}
	if r.Cost == 0 {
		r.Cost = 1
	}
	for _, l := range r.Limits {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("httplimit: route %q: %w", r.Name, err)
		}
	}
	return nil
}

func (r *route) matches(req *http.Request) bool {
	if r.method != "" && r.method != req.Method && !(r.method == http.MethodGet && req.Method == http.MethodHead) {
		return false
	}
	if r.prefix {
		return strings.HasPrefix(req.URL.Path, r.path)
	}
	return req.URL.Path == r.path
}

// match returns the route of req: the longest matching path, a method
// pattern before a method-less one.
func (m *Middleware) match(req *http.Request) *route {
	best := &m.fallback
	found := false
	for i := range m.routes {
		r := &m.routes[i]
		if !r.matches(req) {
			continue
		}
		if !found || len(r.path) > len(best.path) || (len(r.path) == len(best.path) && r.method != "" && best.method == "") {
			best, found = r, true
		}
	}
	return best
}

type identityKey struct{}

// IdentityFrom returns the Identity the middleware's Authenticator found for
// the request whose context is ctx.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// HashKey is the form in which an API key reaches the limiter, logs and
// metrics: "key:" and the first 16 bytes of its SHA-256, in hex.
func HashKey(apiKey string) string {
	var buf [64]byte // keys up to 64 bytes are hashed without an allocation
	sum := sha256.Sum256(append(buf[:0], apiKey...))
	return "key:" + hex.EncodeToString(sum[:16])
}

// DefaultKey is the default key function: HashKey of the caller's API key,
// or for an anonymous caller "ip:" and the client address resolved by c
// (nil trusts no proxy). IPv6 clients are keyed by their /64 prefix, the
// smallest block a host is usually given, so one host cannot rotate through
// addresses to multiply its budget.
func DefaultKey(c *ClientIPResolver) KeyFunc {
	return func(r *http.Request, id Identity) (string, error) {
		if id.Key != "" {
			return HashKey(id.Key), nil
		}
		a, err := c.ClientIP(r)
		if err != nil {
			return "", err
		}
		if a.Is6() {
			p, _ := a.Prefix(64)
			return "ip:" + p.String(), nil
		}
		return "ip:" + a.String(), nil
	}
}

// Handler returns next wrapped by the middleware.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serve(w, r, next)
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	rt := m.match(r)
	if rt.Skip {
		next.ServeHTTP(w, r)
		return
	}
	var id Identity
	if m.auth != nil {
		var err error
		if id, err = m.auth(r); err != nil {
			if errors.Is(err, ErrUnauthenticated) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
				WriteProblem(w, Problem{Status: http.StatusUnauthorized, Detail: err.Error(), Instance: r.URL.Path})
				return
			}
			m.fail(w, r, rt, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
	}
	limits := id.Limits
	if id.Key == "" {
		limits = m.anonymous
	}
	policy := "" // the RateLimit-Policy value when known without a lookup
	switch {
	case len(rt.Limits) == 0:
	case len(limits) == 0: // the route's own limits alone: no copy
		limits, policy = rt.Limits, rt.policy
	default:
		limits = append(append(make([]limiter.Limit, 0, len(limits)+len(rt.Limits)), limits...), rt.Limits...)
	}
	if len(limits) == 0 {
		next.ServeHTTP(w, r)
		return
	}
	key, err := m.keyFunc(r, id)
	if err != nil {
		m.fail(w, r, rt, err)
		return
	}
	start := time.Now()
	d, err := m.lim.AllowN(r.Context(), key, rt.Cost, limits...)
	if rt.metrics != nil {
		rt.metrics.latency.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		if m.log.Enabled(r.Context(), slog.LevelWarn) {
			m.log.Warn("rate limit decision failed", "key", key, "route", rt.Name, "err", err)
		}
		m.fail(w, r, rt, err)
		return
	}
	if !m.shadow {
		now := m.now()
		h := w.Header()
		if !d.Degraded { // a degraded decision's numbers are not the shared budget's
			if policy == "" {
				policy = m.headers.policy(limits)
			}
			m.headers.write(h, m.style, d, policy, now)
		}
		if m.decTime {
			h[hDecisionTime] = []string{strconv.FormatInt(now.UnixMicro(), 10)}
		}
	}
	if d.Degraded && rt.metrics != nil {
		rt.metrics.degraded[boolIndex(d.Allowed)].Inc()
	}
	if !d.Allowed && d.Degraded && m.degraded != http.StatusTooManyRequests && !m.shadow {
		if m.log.Enabled(r.Context(), slog.LevelDebug) {
			m.log.Debug("rejected without the shared store", "key", key, "route", rt.Name, "status", m.degraded)
		}
		w.Header().Set("Retry-After", strconv.FormatInt(d.RetryAfterSeconds(), 10))
		WriteProblem(w, Problem{Status: m.degraded, Detail: "the rate limiter's store is unavailable; retry later", Instance: r.URL.Path, RetryAfter: d.RetryAfterSeconds()})
		return
	}
	if !d.Allowed {
		decider := m.headers.id(d.Limit)
		if m.shadow {
			if rt.metrics != nil {
				rt.metrics.shadowRejected.get(decider).Inc()
			}
			if m.log.Enabled(r.Context(), slog.LevelInfo) {
				m.log.Info("rate limited (shadow)", "key", key, "route", rt.Name, "policy", decider, "wait", d.RetryAfter, "cost", rt.Cost)
			}
			next.ServeHTTP(w, r)
			return
		}
		if rt.metrics != nil {
			rt.metrics.rejected.get(decider).Inc()
		}
		if m.log.Enabled(r.Context(), slog.LevelInfo) {
			m.log.Info("rate limited", "key", key, "route", rt.Name, "policy", decider, "wait", d.RetryAfter, "cost", rt.Cost)
		}
		w.Header()[hRetryAfter] = []string{strconv.FormatInt(d.RetryAfterSeconds(), 10)}
		m.reject(w, r, d)
		return
	}
	if rt.metrics != nil {
		rt.metrics.admitted.get(m.headers.id(d.Limit)).Inc()
	}
	if d.Delay > 0 { // leaky bucket: wait for the request's slot
		t := time.NewTimer(d.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	next.ServeHTTP(w, r)
}

// boolIndex is 1 for true and 0 for false.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (m *Middleware) fail(w http.ResponseWriter, r *http.Request, rt *route, err error) {
	if rt.metrics != nil {
		rt.metrics.errors.Inc()
	}
	m.onError(w, r, err)
}

func defaultReject(w http.ResponseWriter, r *http.Request, d limiter.Decision) {
	wait := d.RetryAfterSeconds()
	WriteProblem(w, Problem{
		Status:     http.StatusTooManyRequests,
		Detail:     fmt.Sprintf("rate limit %q exceeded; retry after %d s", d.Limit.ID(), wait),
		Instance:   r.URL.Path,
		Policy:     d.Limit.ID(),
		RetryAfter: wait,
	})
}

// DefaultErrorHandler answers a request that could not be decided:
// 403 when its cost exceeds a limit's capacity (waiting never helps),
// 400 when its client address is unreadable, and otherwise 503 Service
// Unavailable with Retry-After: 1. Bodies are RFC 9457 problems that do not
// reveal the error's text.
func DefaultErrorHandler(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, limiter.ErrCostExceedsCapacity):
		WriteProblem(w, Problem{Status: http.StatusForbidden, Detail: "this request costs more than your plan admits at once", Instance: r.URL.Path})
	case errors.Is(err, ErrNoClientIP):
		WriteProblem(w, Problem{Status: http.StatusBadRequest, Detail: "the client address cannot be determined", Instance: r.URL.Path})
	default:
		w.Header().Set("Retry-After", "1")
		WriteProblem(w, Problem{Status: http.StatusServiceUnavailable, Detail: "the rate limiter is unavailable; retry shortly", Instance: r.URL.Path})
	}
}
