// Package sampleapi is the sample API that rlbench drives: a few routes with
// different costs and limits, API keys with per-key plans (from YAML or
// PostgreSQL), a budget endpoint, Prometheus metrics and a baseline route
// without the limiter for overhead measurement. Several instances share one
// budget per key through the Redis store. `rlbench serve` runs one instance.
//
// Routes:
//
//	GET  /v1/data            cost 1
//	GET  /v1/search          cost 1, plus a per-route limit in the default config
//	POST /v1/reports/export  cost 10
//	GET  /v1/limits          the caller's budget, read with Peek (consumes nothing)
//	GET  /baseline/v1/...    the three routes above with the limiter bypassed,
//	                         only with baseline_routes: true
//	GET  /livez              200 while the process serves
//	GET  /readyz             200 when the store answers, else 503 (see below)
//	GET  /healthz            the same as /readyz
//	GET  /metrics            Prometheus metrics
//
// plus the configuration's extra_routes (a scenario's routes). Every
// response carries X-Instance with the instance's name. At most
// max_concurrent_requests requests are served at once (the health routes
// and /metrics aside); one more is answered 503 with Retry-After at once.
// Request bodies are capped at max_body_bytes.
//
// Readiness: /readyz pings the limiter's store within its timeout. When it
// answers, 200. When it does not, the answer depends on what the instance
// does with requests meanwhile: without a failure mode, or fail-closed,
// every limited request gets 503, and so does /readyz (with the reason), so
// that a load balancer stops sending traffic; fail-open and fallback serve
// requests by their declared mode, so /readyz answers 200 with status
// "degraded" rather than take every instance sharing the store out of
// service at once. /healthz is an alias of /readyz: a health check that
// said "ok" while every request failed was the fault it replaces.
//
// Callers present "Authorization: Bearer KEY" or "X-API-Key: KEY"; a key's
// plan (a per-minute tier and a monthly quota) and the route's limits are
// charged in one all-or-nothing call. Keyless callers are answered 401
// unless the configuration admits anonymous traffic, keyed by client IP
// (X-Forwarded-For honoured from trusted_proxies only). A failing store is
// answered as failure_mode declares (limiter/resilience): fail-open,
// fail-closed (503 with Retry-After) or a local fallback.
package sampleapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
	"github.com/rlbench/rlbench/limiter/resilience"
)

// InstanceHeader names the instance that answered, on every response.
const InstanceHeader = "X-Instance"

// routeDef is a limited route of the API.
type routeDef struct {
	method, path string
	cost         int64
}

// defaultRoutes are the limited routes by the name Config.Routes uses.
var defaultRoutes = map[string]routeDef{
	"data":   {http.MethodGet, "/v1/data", 1},
	"search": {http.MethodGet, "/v1/search", 1},
	"export": {http.MethodPost, "/v1/reports/export", 10},
}

// healthPaths are the routes that answer whatever the load: liveness,
// readiness and its alias.
var healthPaths = []string{"/livez", "/readyz", "/healthz"}

// StoreCheck reports whether the limiter's store answers, within a timeout
// of its own: nil when it does, else why not. Its error must not hold a
// password. A nil StoreCheck stands for a store that is always there (the
// memory store).
type StoreCheck func(ctx context.Context) error

// Server is one instance of the sample API. It is safe for concurrent use.
type Server struct {
	cfg     Config
	lim     limiter.Limiter
	keys    KeyStore
	check   StoreCheck
	reg     *prometheus.Registry
	log     *slog.Logger
	keyFunc httplimit.KeyFunc
	anon    []limiter.Limit
	handler http.Handler
	plans   sync.Map // Plan → []limiter.Limit, shared read-only
	// redisRate decides the extra routes served by redis_rate; nil without.
	redisRate *redisRateRoutes
}

// NewServer returns an instance deciding with lim, authenticating with
// keys and reporting its readiness with check (nil: always ready), under a
// validated cfg (Config.Validate). It registers its metrics on a registry
// of its own, served at /metrics.
func NewServer(cfg Config, lim limiter.Limiter, keys KeyStore, check StoreCheck, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, lim: lim, keys: keys, check: check, reg: prometheus.NewRegistry(), log: logger}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	style, err := httplimit.ParseHeaderStyle(cfg.Headers)
	if err != nil {
		return nil, fmt.Errorf("headers: %w", err)
	}
	clientIP, err := httplimit.NewClientIPResolver(cfg.TrustedProxies...)
	if err != nil {
		return nil, err
	}
	s.keyFunc = httplimit.DefaultKey(clientIP)
	if cfg.Anonymous != nil {
		p := Plan{PerMinute: cfg.Anonymous.RateLimitPerMinute, Burst: cfg.Anonymous.RateLimitBurst, MonthlyQuota: cfg.Anonymous.MonthlyQuota}
		s.anon = p.Limits(cfg.Algorithm, "anon-")
	}
	var routes []httplimit.Route
	for name, def := range defaultRoutes {
		r := httplimit.Route{Pattern: def.method + " " + def.path, Name: name, Cost: def.cost}
		if rc, ok := cfg.Routes[name]; ok {
			if rc.Cost > 0 {
				r.Cost = rc.Cost
			}
			r.Limits = rc.Limits
		}
		routes = append(routes, r)
	}
	for _, er := range cfg.ExtraRoutes {
		if er.Baseline || byRedisRate(cfg, er) {
			continue
		}
		routes = append(routes, httplimit.Route{Pattern: er.Method + " " + er.Path, Cost: er.Cost, Limits: er.Limits})
	}
	opts := []httplimit.Option{
		httplimit.WithRoutes(routes...),
		httplimit.WithAuthenticator(s.authenticate),
		httplimit.WithKeyFunc(s.keyFunc),
		httplimit.WithAnonymousLimits(s.anon...),
		httplimit.WithHeaders(style),
		httplimit.WithMetrics(s.reg),
		httplimit.WithLogger(logger),
	}
	if cfg.ClockOffset != 0 {
		opts = append(opts, httplimit.WithClock(cfg.Clock()))
	}
	if cfg.FailureMode == string(resilience.Fallback) { // degraded rejections enforce the local share
		opts = append(opts, httplimit.WithDegradedStatus(http.StatusTooManyRequests))
	}
	if cfg.DecisionTimeHeader {
		opts = append(opts, httplimit.WithDecisionTime())
	}
	if cfg.Shadow {
		opts = append(opts, httplimit.WithShadow())
	}
	mw, err := httplimit.New(lim, opts...)
	if err != nil {
		return nil, err
	}

	api := http.NewServeMux()
	work := map[string]http.HandlerFunc{"data": s.data, "search": s.search, "export": s.export}
	for name, def := range defaultRoutes {
		api.Handle(def.method+" "+def.path, mw.Handler(work[name]))
		if cfg.BaselineRoutes {
			api.Handle(def.method+" /baseline"+def.path, s.authOnly(work[name]))
		}
	}
	for _, er := range cfg.ExtraRoutes {
		switch {
		case er.Baseline:
			if cfg.BaselineRoutes { // Validate refuses a baseline route without it
				api.Handle(er.Method+" "+er.Path, s.authOnly(http.HandlerFunc(s.data)))
			}
		case byRedisRate(cfg, er):
			if s.redisRate == nil {
				if s.redisRate, err = newRedisRateRoutes(cfg); err != nil {
					return nil, err
				}
			}
			h, err := s.redisRate.handler(s, er, http.HandlerFunc(s.data))
			if err != nil {
				return nil, errors.Join(err, s.Close())
			}
			api.Handle(er.Method+" "+er.Path, h)
		default:
			api.Handle(er.Method+" "+er.Path, mw.Handler(http.HandlerFunc(s.data)))
		}
	}
	api.HandleFunc("GET /v1/limits", s.limits)
	limited := s.capped(api)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, Health{Status: StatusLive})
	})
	mux.HandleFunc("GET /readyz", s.ready)
	mux.HandleFunc("GET /healthz", s.ready)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.Handle("/", limited)
	instance := cfg.Instance
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(InstanceHeader, instance)
		mux.ServeHTTP(w, r)
	})
	return s, nil
}

// capped serves h for at most cfg.MaxConcurrentRequests requests at once
// and answers one more 503 with Retry-After: 1 without waiting; it caps
// every request body at cfg.MaxBodyBytes.
func (s *Server) capped(h http.Handler) http.Handler {
	limit := s.cfg.MaxConcurrentRequests
	if limit <= 0 {
		limit = DefaultMaxConcurrentRequests
	}
	maxBody := s.cfg.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	inFlight := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "rlbench", Subsystem: "sampleapi", Name: "in_flight_requests",
		Help: "Requests being served, health checks and metrics aside.",
	})
	shed := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "rlbench", Subsystem: "sampleapi", Name: "shed_requests_total",
		Help: "Requests answered 503 because max_concurrent_requests requests were in flight.",
	})
	s.reg.MustRegister(inFlight, shed)
	sem := make(chan struct{}, limit)
	detail := fmt.Sprintf("the server is serving its limit of %d requests at once; retry shortly", limit)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
		default:
			shed.Inc()
			w.Header().Set("Retry-After", "1")
			httplimit.WriteProblem(w, httplimit.Problem{Status: http.StatusServiceUnavailable, Detail: detail, Instance: r.URL.Path, RetryAfter: 1})
			return
		}
		inFlight.Inc()
		defer func() { inFlight.Dec(); <-sem }()
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		h.ServeHTTP(w, r)
	})
}

// Health statuses in the body of /livez and /readyz.
const (
	StatusLive     = "live"
	StatusReady    = "ready"
	StatusDegraded = "degraded"  // the store fails; requests are answered by the failure mode
	StatusNotReady = "not ready" // the store fails; limited requests get 503
)

// Health is the JSON body of /livez, /readyz and /healthz.
type Health struct {
	Status string `json:"status"`
	// Store is the limiter's store: redis or memory (readiness only).
	Store string `json:"store,omitempty"`
	// FailureMode is the failure mode answering requests while the store fails.
	FailureMode string `json:"failureMode,omitempty"`
	// Reason says why the store is not ready.
	Reason string `json:"reason,omitempty"`
}

// ready answers /readyz: see the package documentation.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	h := Health{Status: StatusReady, Store: s.cfg.Store}
	if s.check == nil {
		writeJSON(w, h)
		return
	}
	err := s.check(r.Context())
	if err == nil {
		writeJSON(w, h)
		return
	}
	h.Reason = err.Error()
	switch mode := resilience.Mode(s.cfg.FailureMode); mode {
	case resilience.FailOpen, resilience.Fallback:
		h.Status, h.FailureMode = StatusDegraded, string(mode)
		writeJSON(w, h)
	default:
		h.Status, h.FailureMode = StatusNotReady, s.cfg.FailureMode
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(h)
	}
}

// Handler is the instance's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry is the instance's Prometheus registry, served at /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// apiKey is the key a request presents: "Authorization: Bearer KEY", or
// "X-API-Key: KEY".
func apiKey(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); auth != "" {
		if scheme, key, ok := strings.Cut(auth, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key)
		}
	}
	return strings.TrimSpace(r.Header.Get("X-API-Key"))
}

// authenticate is the middleware's Authenticator: a known key gets its
// plan; no key is anonymous when the config allows it.
func (s *Server) authenticate(r *http.Request) (httplimit.Identity, error) {
	key := apiKey(r)
	if key == "" {
		if s.cfg.Anonymous != nil || s.cfg.AllowAnonymous {
			return httplimit.Identity{}, nil
		}
		return httplimit.Identity{}, fmt.Errorf("%w: missing API key; send Authorization: Bearer KEY", httplimit.ErrUnauthenticated)
	}
	plan, ok, err := s.keys.Lookup(r.Context(), key)
	if err != nil {
		return httplimit.Identity{}, fmt.Errorf("look up API key: %w", err)
	}
	if !ok {
		if s.cfg.AnyKey {
			if p := s.cfg.AnyKeyPlan; p != nil {
				return httplimit.Identity{Key: key, Limits: s.planLimits(p.Plan(""))}, nil
			}
			return httplimit.Identity{Key: key}, nil
		}
		return httplimit.Identity{}, fmt.Errorf("%w: unknown API key", httplimit.ErrUnauthenticated)
	}
	return httplimit.Identity{Key: key, Limits: s.planLimits(plan)}, nil
}

// planLimits returns plan's limits, built once per distinct plan.
func (s *Server) planLimits(plan Plan) []limiter.Limit {
	if v, ok := s.plans.Load(plan); ok {
		return v.([]limiter.Limit)
	}
	v, _ := s.plans.LoadOrStore(plan, plan.Limits(s.cfg.Algorithm, ""))
	return v.([]limiter.Limit)
}

// authFailed answers a failed authentication as the middleware does.
func authFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, httplimit.ErrUnauthenticated) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
		httplimit.WriteProblem(w, httplimit.Problem{Status: http.StatusUnauthorized, Detail: err.Error(), Instance: r.URL.Path})
		return
	}
	httplimit.DefaultErrorHandler(w, r, err)
}

// authOnly serves h after authentication, without the limiter: the
// baseline for overhead measurement.
func (s *Server) authOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.authenticate(r); err != nil {
			authFailed(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Budget is the body of GET /v1/limits: the caller's per-minute tier
// (Limit in units per minute) and, when the plan has one, its monthly quota.
type Budget struct {
	Policy       string  `json:"policy"`
	Limit        float64 `json:"limit"`
	Remaining    int64   `json:"remaining"`
	ResetSeconds int64   `json:"resetSeconds"`
	Burst        int64   `json:"burst"`
	Monthly      *Quota  `json:"monthlyQuota,omitempty"`
}

// Quota is a monthly quota's state in a Budget.
type Quota struct {
	Limit        int64 `json:"limit"`
	Remaining    int64 `json:"remaining"`
	ResetSeconds int64 `json:"resetSeconds"`
}

// limits answers GET /v1/limits with the caller's Budget, read with Peek.
func (s *Server) limits(w http.ResponseWriter, r *http.Request) {
	id, err := s.authenticate(r)
	if err != nil {
		authFailed(w, r, err)
		return
	}
	limits := id.Limits
	if id.Key == "" {
		limits = s.anon
	}
	if len(limits) == 0 {
		httplimit.WriteProblem(w, httplimit.Problem{Status: http.StatusNotFound, Detail: "you have no plan; only the limits of each route apply", Instance: r.URL.Path})
		return
	}
	key, err := s.keyFunc(r, id)
	if err != nil {
		httplimit.DefaultErrorHandler(w, r, err)
		return
	}
	minute := limits[0]
	d, err := s.lim.Peek(r.Context(), key, minute)
	if err != nil || d.Degraded {
		s.budgetUnknown(w, r, err)
		return
	}
	b := Budget{Policy: minute.ID(), Limit: minute.Rate, Remaining: d.Remaining, ResetSeconds: d.ResetAfterSeconds(), Burst: minute.Burst}
	if len(limits) > 1 {
		month := limits[1]
		md, err := s.lim.Peek(r.Context(), key, month)
		if err != nil || md.Degraded {
			s.budgetUnknown(w, r, err)
			return
		}
		b.Monthly = &Quota{Limit: month.Capacity(), Remaining: md.Remaining, ResetSeconds: md.ResetAfterSeconds()}
	}
	writeJSON(w, b)
}

// budgetUnknown answers GET /v1/limits when the shared store cannot say
// the budget: 503 with Retry-After. A decision the failure mode made
// (Degraded) is not the budget either: fail-open and fail-closed know
// nothing, and the fallback's local share is not the shared budget.
func (s *Server) budgetUnknown(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, limiter.ErrInvalidCost) || errors.Is(err, limiter.ErrCostExceedsCapacity) {
		httplimit.DefaultErrorHandler(w, r, err) // the request's fault, not the store's
		return
	}
	if err != nil {
		s.log.Warn("budget peek failed", "err", err)
	}
	w.Header().Set("Retry-After", "1")
	httplimit.WriteProblem(w, httplimit.Problem{Status: http.StatusServiceUnavailable, Instance: r.URL.Path, RetryAfter: 1,
		Detail: "the budget is unknown: the rate-limit store does not answer; retry shortly"})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// catalog is the data the routes serve.
var catalog = []string{
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa",
}

type item struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

func (s *Server) data(w http.ResponseWriter, _ *http.Request) {
	items := make([]item, len(catalog))
	for i, name := range catalog {
		items[i] = item{ID: i + 1, Name: name}
	}
	writeJSON(w, map[string]any{"instance": s.cfg.Instance, "items": items})
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := strings.ToLower(r.URL.Query().Get("q"))
	var hits []item
	for i, name := range catalog {
		if strings.Contains(name, q) {
			hits = append(hits, item{ID: i + 1, Name: name})
		}
	}
	writeJSON(w, map[string]any{"instance": s.cfg.Instance, "query": q, "results": hits})
}

// export stands for an expensive report: it hashes the request body
// (capped at max_body_bytes) and the catalog many times over.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		httplimit.WriteProblem(w, httplimit.Problem{Status: http.StatusRequestEntityTooLarge,
			Detail: fmt.Sprintf("the request body exceeds %d bytes", tooLarge.Limit), Instance: r.URL.Path})
		return
	}
	if err != nil {
		httplimit.WriteProblem(w, httplimit.Problem{Status: http.StatusBadRequest, Detail: "the request body could not be read", Instance: r.URL.Path})
		return
	}
	h := sha256.New()
	for range 256 {
		h.Write(body)
		for _, name := range catalog {
			io.WriteString(h, name)
		}
	}
	writeJSON(w, map[string]any{"instance": s.cfg.Instance, "export": hex.EncodeToString(h.Sum(nil))[:16], "rows": 256 * len(catalog)})
}
