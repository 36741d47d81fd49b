package sampleapi

import (
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/resilience"
	"github.com/rlbench/rlbench/scenarios/yamlstrict"
)

// DefaultConfigYAML is the configuration used when no file is given: the
// routes' costs and three demo API keys, documented in the file itself.
//
//go:embed config/default.yaml
var DefaultConfigYAML []byte

// Defaults of the Config fields that have one.
const (
	DefaultAddr            = "127.0.0.1:8080"
	DefaultAlgorithm       = limiter.GCRA
	DefaultPlanRefresh     = 10 * time.Second
	DefaultShutdownTimeout = 10 * time.Second
	DefaultHeaders         = "ietf"
	// DefaultReadHeaderTimeout bounds the read of a request's headers,
	// from the connection's first byte wait (http.Server.ReadHeaderTimeout).
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the read of a whole request, headers and
	// body, so that a body trickled a byte at a time cannot hold a
	// connection longer (http.Server.ReadTimeout). When it passes while a
	// handler runs, Go cancels the request's context: it must exceed the
	// header timeout by the longest handler.
	DefaultReadTimeout = 20 * time.Second
	// DefaultWriteTimeout bounds the time from the end of the headers'
	// read to the end of the response's write (http.Server.WriteTimeout).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds how long a keep-alive connection waits for
	// its next request (http.Server.IdleTimeout).
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConcurrentRequests caps the requests served at once.
	DefaultMaxConcurrentRequests = 1024
	// DefaultMaxBodyBytes caps a request's body: 1 MiB.
	DefaultMaxBodyBytes = 1 << 20
	// MonthPeriod is the window of a monthly quota: 30 days, a fixed window
	// aligned on the Unix epoch (so every instance agrees on its start).
	MonthPeriod = 30 * 24 * time.Hour
)

// Store names for Config.Store.
const (
	StoreRedis  = "redis"
	StoreMemory = "memory"
)

// Limiter names for Config.Limiter.
const (
	// LimiterReference is rlbench's reference limiter (package limiter).
	LimiterReference = "reference"
	// LimiterRedisRate serves the extra routes with go-redis/redis_rate on
	// Config.Redis instead, a peer limiter rlbench holds to its claim
	// (harness/peers); it is scenarios.PeerRedisRate.
	LimiterRedisRate = "redis_rate"
)

// RedisURLEnv is the environment variable `rlbench serve` reads the Redis
// URL from when neither --redis nor the file gives one, so that a URL with
// a password need not appear on a command line.
const RedisURLEnv = "RLBENCH_REDIS_URL"

// PostgresURLEnv is the environment variable `rlbench serve` reads the
// PostgreSQL DSN from when neither --postgres nor the file gives one, for
// the same reason.
const PostgresURLEnv = "RLBENCH_POSTGRES_URL"

// CheckRedisURL reports whether raw is a Redis URL the sample API can use
// (redis.ParseURL's forms); its error shows the URL with its password
// redacted, and the form to write.
func CheckRedisURL(raw string) error {
	if _, err := redis.ParseURL(raw); err != nil {
		return fmt.Errorf("%s: %s; write it as redis://[:PASSWORD@]HOST:PORT/DB",
			redisstore.RedactURL(raw), redisstore.Redact(err.Error(), raw))
	}
	return nil
}

// Config is the sample API's configuration: everything one instance runs
// with, read from one YAML file by LoadConfig (and written by Marshal, as
// `rlbench run` does for each instance it starts). Zero fields take the
// Default* constants; `rlbench serve` flags override the fields they set.
type Config struct {
	// Instance names this process in the X-Instance header and the logs.
	Instance string `yaml:"instance,omitempty"`
	// Addr is the listen address, "host:port"; port 0 picks a free one.
	Addr string `yaml:"addr,omitempty"`
	// LogLevel is the least level logged: debug, info (the zero value),
	// warn or error.
	LogLevel slog.Level `yaml:"log_level,omitempty"`
	// Limiter is LimiterReference (when empty) or LimiterRedisRate.
	Limiter string `yaml:"limiter,omitempty"`
	// Store is "redis" (shared state; needs Redis) or "memory" (this
	// process only). Empty means redis when Redis is set, else memory.
	Store string `yaml:"store,omitempty"`
	// Redis is the Redis URL, as redis.ParseURL reads it:
	// "redis://127.0.0.1:6379/0". It may hold a password: keep it in the
	// file or in RedisURLEnv rather than on a command line.
	Redis string `yaml:"redis,omitempty"`
	// RedisSentinel, when set, has the Redis store follow the master of a
	// Sentinel group through go-redis's failover client: Redis then gives
	// the credentials, database and timeouts, the Sentinel the address.
	RedisSentinel *SentinelConfig `yaml:"redis_sentinel,omitempty"`
	// RedisPoolSize bounds the connections this instance holds to Redis;
	// zero means DefaultRedisPoolSize().
	RedisPoolSize int `yaml:"redis_pool_size,omitempty"`
	// FailureMode, when set, wraps the store in the resilience wrapper
	// (limiter/resilience): "open" admits, "closed" answers 503 with
	// Retry-After, "fallback" enforces this instance's share of every limit
	// in memory while the store fails. Empty: no wrapper, and a store error
	// is answered 503 with Retry-After: 1 after the Redis client's timeouts.
	FailureMode string `yaml:"failure_mode,omitempty"`
	// StoreTimeout bounds each store call under FailureMode; zero means
	// resilience.DefaultTimeout.
	StoreTimeout time.Duration `yaml:"store_timeout,omitempty"`
	// Instances is the number of instances sharing the store, for the
	// fallback's share of each limit; zero means 1.
	Instances int `yaml:"instances,omitempty"`
	// ClockOffset shifts this instance's own clock (the memory store, the
	// fallback store, the Reset and decision-time fields), to simulate
	// clock skew; the Redis store decides on Redis TIME and ignores it.
	ClockOffset time.Duration `yaml:"clock_offset,omitempty"`
	// Faulty, when set, names a deliberately faulty limiter variant
	// (package sampleapi/faulty) to run instead of the reference limiter,
	// for verifying rlbench's checker by mutation. Never set it in service.
	Faulty string `yaml:"faulty,omitempty"`
	// Postgres, when set, is a PostgreSQL DSN from which API keys and plans
	// are read (table api_keys, created if missing) instead of Keys.
	Postgres string `yaml:"postgres,omitempty"`
	// PlanRefresh bounds the staleness of plans read from PostgreSQL: a
	// changed, added or deleted key takes effect within PlanRefresh plus
	// the duration of one reload query. Default DefaultPlanRefresh.
	PlanRefresh time.Duration `yaml:"plan_refresh,omitempty"`
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout,omitempty"`
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// http.Server's; zero takes the Default* constant of that name. A
	// ReadTimeout shorter than ReadHeaderTimeout is an error.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout,omitempty"`
	ReadTimeout       time.Duration `yaml:"read_timeout,omitempty"`
	WriteTimeout      time.Duration `yaml:"write_timeout,omitempty"`
	IdleTimeout       time.Duration `yaml:"idle_timeout,omitempty"`
	// MaxConcurrentRequests caps the requests served at once, health
	// checks and metrics excepted; a request beyond it is answered 503
	// with Retry-After: 1 at once. Zero means DefaultMaxConcurrentRequests.
	MaxConcurrentRequests int `yaml:"max_concurrent_requests,omitempty"`
	// MaxBodyBytes caps a request's body, in bytes; a handler reading past
	// it answers 413. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64 `yaml:"max_body_bytes,omitempty"`
	// BaselineRoutes serves the baseline routes: /baseline/v1/... copies of
	// the built-in routes, and the extra_routes marked baseline. They do
	// the routes' work for any authenticated caller with the limiter
	// bypassed, to measure the limiter's overhead; off, as in service, they
	// do not exist (404) and an extra route marked baseline is an error.
	BaselineRoutes bool `yaml:"baseline_routes,omitempty"`
	// Algorithm of every plan's per-minute tier: token_bucket or gcra.
	Algorithm limiter.Algorithm `yaml:"algorithm,omitempty"`
	// Headers selects the RateLimit header styles: a comma-separated list
	// of ietf, draft06, legacy, or none (httplimit.ParseHeaderStyle).
	Headers string `yaml:"headers,omitempty"`
	// DecisionTimeHeader adds httplimit.DecisionTimeHeader to responses.
	DecisionTimeHeader bool `yaml:"decision_time_header,omitempty"`
	// Shadow decides and counts but never rejects (httplimit.WithShadow).
	Shadow bool `yaml:"shadow,omitempty"`
	// TrustedProxies are the CIDR prefixes whose X-Forwarded-For is honoured.
	TrustedProxies []string `yaml:"trusted_proxies,omitempty"`
	// Anonymous, when set, admits requests without an API key under its
	// plan, keyed by client IP; when nil they are answered 401.
	Anonymous *PlanConfig `yaml:"anonymous,omitempty"`
	// AllowAnonymous admits requests without an API key, keyed by client
	// IP, under the route limits only; setting Anonymous implies it.
	AllowAnonymous bool `yaml:"allow_anonymous,omitempty"`
	// AnyKey accepts every non-empty API key as an identity without a plan,
	// held to the route limits only: for load tests with generated keys.
	// Keys and Postgres still give their keys' plans.
	AnyKey bool `yaml:"any_key,omitempty"`
	// AnyKeyPlan, with AnyKey, is the plan of every key that neither Keys
	// nor Postgres holds, in addition to the route limits; nil: such keys
	// have none. `rlbench run` gives it the routes' policies when a
	// scenario's identity groups hold their keys to plans of their own.
	AnyKeyPlan *PlanConfig `yaml:"any_key_plan,omitempty"`
	// Routes sets each route's cost and extra limits, by route name: data,
	// search, export.
	Routes map[string]RouteConfig `yaml:"routes,omitempty"`
	// ExtraRoutes are further routes, each doing the work of GET /v1/data
	// under its own cost and limits (the routes of a scenario).
	ExtraRoutes []ExtraRoute `yaml:"extra_routes,omitempty"`
	// Keys are the API keys and their plans, unless Postgres is set.
	Keys []KeyConfig `yaml:"keys,omitempty"`

	// doc locates the fields of the file the configuration came from.
	doc *yamlstrict.Doc
}

// SentinelConfig names a Redis master watched by Redis Sentinel.
type SentinelConfig struct {
	// Master is the name the Sentinels monitor the master under.
	Master string `yaml:"master"`
	// Addrs are the Sentinels' "host:port" addresses.
	Addrs []string `yaml:"addrs"`
}

// PlanConfig is a rate-limit plan: a per-minute tier and an optional
// monthly quota, applied together (all-or-nothing) to every request.
type PlanConfig struct {
	// RateLimitPerMinute is the sustained rate, in units per minute; it may
	// be fractional.
	RateLimitPerMinute float64 `yaml:"rate_limit_per_minute"`
	// RateLimitBurst is the most units admitted at once.
	RateLimitBurst int64 `yaml:"rate_limit_burst"`
	// MonthlyQuota is the units admitted per 30-day window; 0 means none.
	MonthlyQuota int64 `yaml:"monthly_quota,omitempty"`
}

// Plan returns the plan p configures, named name.
func (p PlanConfig) Plan(name string) Plan {
	return Plan{Name: name, PerMinute: p.RateLimitPerMinute, Burst: p.RateLimitBurst, MonthlyQuota: p.MonthlyQuota}
}

// KeyConfig is one API key and its plan.
type KeyConfig struct {
	// Name labels the key for people (it is never the key itself).
	Name string `yaml:"name,omitempty"`
	// Key is the secret the client sends as "Authorization: Bearer KEY" or
	// "X-API-Key: KEY". Only its SHA-256 is kept in memory.
	Key        string `yaml:"key"`
	PlanConfig `yaml:",inline"`
}

// RouteConfig is the policy of one route.
type RouteConfig struct {
	// Cost is the units a request charges; 0 keeps the route's default.
	Cost int64 `yaml:"cost,omitempty"`
	// Limits are extra limits on the route for every caller, written in
	// limiter.ParseLimit's form ("gcra:10/1s,burst=10,name=search") and
	// decoded once, with the file.
	Limits []limiter.Limit `yaml:"limits,omitempty"`
}

// ExtraRoute is a route beyond the built-in ones.
type ExtraRoute struct {
	// Method is the HTTP method; GET when empty (a GET route also answers HEAD).
	Method string `yaml:"method,omitempty"`
	// Path is the exact request path, such as "/api/items".
	Path string `yaml:"path"`
	// Cost is the units a request charges; 0 means 1.
	Cost int64 `yaml:"cost,omitempty"`
	// Limits are the route's limits, written in limiter.ParseLimit's form
	// and decoded once, with the file.
	Limits []limiter.Limit `yaml:"limits,omitempty"`
	// Baseline bypasses the limiter: the same work with authentication
	// only, for overhead measurement. It needs Config.BaselineRoutes.
	Baseline bool `yaml:"baseline,omitempty"`
	// Limiter, when LimiterRedisRate, decides this route with
	// go-redis/redis_rate on Redis instead of the instance's limiter: the
	// same work and authentication, keyed by the same hashed identity, so
	// that one instance can measure both limiters side by side. It takes
	// one gcra or token_bucket limit with a whole rate. Empty: the
	// instance's limiter.
	Limiter string `yaml:"limiter,omitempty"`
}

// ErrInvalidConfig is matched by errors.Is for every configuration fault
// at a place: it is yamlstrict.ErrInvalid, and the error a
// *yamlstrict.Error, as for scenario files.
var ErrInvalidConfig = yamlstrict.ErrInvalid

// LoadConfig reads the YAML configuration at path; an empty path reads
// DefaultConfigYAML. Decoding is strict (package yamlstrict): an unknown
// key is a *yamlstrict.Error naming the line and the nearest valid key, and
// every limit is decoded, once, into a limiter.Limit. The result is not yet
// validated, so that command-line flags can complete it: call Validate,
// whose errors still name the line of the field at fault.
func LoadConfig(path string) (Config, error) {
	if path == "" {
		return ParseConfig("(default config)", DefaultConfigYAML)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig decodes a YAML configuration strictly, as LoadConfig does;
// file names it in errors. An empty file means every default.
func ParseConfig(file string, data []byte) (Config, error) {
	var cfg Config
	doc, err := yamlstrict.Decode(file, data, &cfg)
	switch {
	case errors.Is(err, yamlstrict.ErrEmpty):
		doc = yamlstrict.NewDoc(file)
	case err != nil:
		return Config{}, err
	}
	cfg.doc = doc
	return cfg, nil
}

// Marshal encodes c in the YAML form ParseConfig reads, omitting zero
// fields; limits are written as limiter.Limit.Spec writes them.
func (c Config) Marshal() ([]byte, error) {
	data, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("marshal config: %w", err)
	}
	return data, nil
}

var (
	validMethod = regexp.MustCompile(`^[A-Z]+$`)
	validPath   = regexp.MustCompile(`^/[A-Za-z0-9._~/-]*$`)
)

// reservedPatterns are the method and path pairs the sample API serves itself.
func reservedPatterns() map[string]bool {
	taken := map[string]bool{
		"GET /v1/limits": true, "GET /metrics": true, "HEAD /v1/limits": true, "HEAD /metrics": true,
	}
	for _, p := range healthPaths {
		taken["GET "+p], taken["HEAD "+p] = true, true
	}
	for _, def := range defaultRoutes {
		taken[def.method+" "+def.path] = true
		taken[def.method+" /baseline"+def.path] = true
	}
	return taken
}

// errorAt returns a *yamlstrict.Error for the field at path (mapping keys
// and sequence indexes from the document root), with the line of that
// field when the configuration came from YAML.
func (c *Config) errorAt(format string, path []any, args ...any) error {
	doc := c.doc
	if doc == nil {
		doc = yamlstrict.NewDoc("(config)")
	}
	return doc.Errorf(fieldName(path), format, args...)
}

// checkLeases reports a lease among a route's limits (at path) that would
// never be taken: package lease leases only for a request under one limit,
// so the lease must be the route's only limit, and no caller may bring a
// plan's limits beside it (keys, postgres, any_key_plan, anonymous).
func (c *Config) checkLeases(limits []limiter.Limit, path ...any) error {
	if j, err := limiter.CheckLeaseAlone(limits); err != nil {
		return c.errorAt("%w", append(path, j), err)
	}
	var plans []string
	for _, p := range []struct {
		field string
		set   bool
	}{
		{"keys", len(c.Keys) > 0}, {"postgres", c.Postgres != ""},
		{"any_key_plan", c.AnyKeyPlan != nil}, {"anonymous", c.Anonymous != nil},
	} {
		if p.set {
			plans = append(plans, p.field)
		}
	}
	for j, l := range limits {
		if l.Leased() && len(plans) > 0 {
			return c.errorAt("%w: lease: lease=%d/%v: a lease applies to a rule of one limit, and callers with a plan (%s) are held to its limits beside the route's; remove lease= or the plans",
				append(path, j), limiter.ErrInvalidLimit, l.LeaseTokens, l.LeaseFor, strings.Join(plans, ", "))
		}
	}
	return nil
}

func fieldName(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		}
	}
	return b.String()
}

// Validate fills defaults and reports the first invalid field as a *ConfigError.
func (c *Config) Validate() error {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.PlanRefresh == 0 {
		c.PlanRefresh = DefaultPlanRefresh
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	for _, d := range []struct {
		field string
		v     *time.Duration
		def   time.Duration
	}{
		{"read_header_timeout", &c.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"read_timeout", &c.ReadTimeout, DefaultReadTimeout},
		{"write_timeout", &c.WriteTimeout, DefaultWriteTimeout},
		{"idle_timeout", &c.IdleTimeout, DefaultIdleTimeout},
	} {
		if *d.v < 0 {
			return c.errorAt("%v is negative", []any{d.field}, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.ReadTimeout < c.ReadHeaderTimeout {
		return c.errorAt("%v is shorter than read_header_timeout %v: a request's body would have no time left; "+
			"make it longer, or shorten read_header_timeout", []any{"read_timeout"}, c.ReadTimeout, c.ReadHeaderTimeout)
	}
	if c.MaxConcurrentRequests < 0 {
		return c.errorAt("%d is negative", []any{"max_concurrent_requests"}, c.MaxConcurrentRequests)
	}
	if c.MaxConcurrentRequests == 0 {
		c.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if c.MaxBodyBytes < 0 {
		return c.errorAt("%d is negative", []any{"max_body_bytes"}, c.MaxBodyBytes)
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Algorithm == "" {
		c.Algorithm = DefaultAlgorithm
	}
	if c.Headers == "" {
		c.Headers = DefaultHeaders
	}
	if c.Limiter == "" {
		c.Limiter = LimiterReference
	}
	if c.Store == "" {
		c.Store = StoreMemory
		if c.Redis != "" {
			c.Store = StoreRedis
		}
	}
	if strings.ContainsFunc(c.Instance, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return c.errorAt("%q: use printable ASCII without spaces; it is sent in the X-Instance header", []any{"instance"}, c.Instance)
	}
	switch c.Store {
	case StoreMemory:
	case StoreRedis:
		if c.Redis == "" {
			return c.errorAt("the redis store needs a Redis URL; set redis: redis://HOST:6379/0 or pass --redis", []any{"redis"})
		}
		if err := CheckRedisURL(c.Redis); err != nil {
			return c.errorAt("%v", []any{"redis"}, err)
		}
	default:
		return c.errorAt("unknown store %q; use redis or memory", []any{"store"}, c.Store)
	}
	if err := c.checkRedisClient(); err != nil {
		return err
	}
	switch c.Limiter {
	case LimiterReference:
	case LimiterRedisRate:
		if c.Store != StoreRedis {
			return c.errorAt("redis_rate keeps its state in Redis; set redis: redis://HOST:6379/0 or pass --redis", []any{"limiter"})
		}
		if c.Faulty != "" {
			return c.errorAt("a faulty variant replaces the reference limiter, not redis_rate", []any{"faulty"})
		}
	default:
		return c.errorAt("unknown limiter %q; use %s or %s", []any{"limiter"}, c.Limiter, LimiterReference, LimiterRedisRate)
	}
	if c.FailureMode != "" {
		if _, err := resilience.ParseMode(c.FailureMode); err != nil {
			return c.errorAt("%q; use open, closed or fallback", []any{"failure_mode"}, c.FailureMode)
		}
	}
	if err := c.checkFaulty(); err != nil {
		return err
	}
	if c.StoreTimeout < 0 {
		return c.errorAt("%v is negative", []any{"store_timeout"}, c.StoreTimeout)
	}
	if c.Instances < 0 {
		return c.errorAt("%d is negative", []any{"instances"}, c.Instances)
	}
	if c.Instances == 0 {
		c.Instances = 1
	}
	if c.PlanRefresh < 0 {
		return c.errorAt("%v is negative", []any{"plan_refresh"}, c.PlanRefresh)
	}
	if c.ShutdownTimeout < 0 {
		return c.errorAt("%v is negative", []any{"shutdown_timeout"}, c.ShutdownTimeout)
	}
	if c.Algorithm != limiter.GCRA && c.Algorithm != limiter.TokenBucket {
		return c.errorAt("%q; use gcra or token_bucket", []any{"algorithm"}, string(c.Algorithm))
	}
	if _, err := httplimit.ParseHeaderStyle(c.Headers); err != nil {
		return c.errorAt("%v", []any{"headers"}, err)
	}
	if _, err := httplimit.NewClientIPResolver(c.TrustedProxies...); err != nil {
		return c.errorAt("%v", []any{"trusted_proxies"}, err)
	}
	if c.Anonymous != nil {
		if err := c.checkPlan(*c.Anonymous, "anonymous"); err != nil {
			return err
		}
	}
	if c.AnyKeyPlan != nil {
		if !c.AnyKey {
			return c.errorAt("applies to the keys any_key accepts; set any_key: true, or remove it", []any{"any_key_plan"})
		}
		if err := c.checkPlan(*c.AnyKeyPlan, "any_key_plan"); err != nil {
			return err
		}
	}
	for name, rc := range c.Routes {
		if _, ok := defaultRoutes[name]; !ok {
			return c.errorAt("unknown route; valid routes are data, search and export", []any{"routes", name})
		}
		if rc.Cost < 0 {
			return c.errorAt("%d is negative", []any{"routes", name, "cost"}, rc.Cost)
		}
		for i, l := range rc.Limits {
			if err := l.Validate(); err != nil {
				return c.errorAt("%w", []any{"routes", name, "limits", i}, err)
			}
		}
		if err := c.checkLeases(rc.Limits, "routes", name, "limits"); err != nil {
			return err
		}
	}
	taken := reservedPatterns()
	for i, r := range c.ExtraRoutes {
		if r.Method == "" {
			c.ExtraRoutes[i].Method, r.Method = http.MethodGet, http.MethodGet
		}
		if !validMethod.MatchString(r.Method) {
			return c.errorAt("%q is not an HTTP method", []any{"extra_routes", i, "method"}, r.Method)
		}
		if !validPath.MatchString(r.Path) {
			return c.errorAt("%q: want an absolute path of letters, digits and . _ ~ - /, as in /api/items", []any{"extra_routes", i, "path"}, r.Path)
		}
		pattern := r.Method + " " + r.Path
		if taken[pattern] {
			return c.errorAt("%s is already a route of the sample API or of another entry", []any{"extra_routes", i, "path"}, pattern)
		}
		taken[pattern] = true
		if r.Cost < 0 {
			return c.errorAt("%d is negative", []any{"extra_routes", i, "cost"}, r.Cost)
		}
		if r.Baseline && len(r.Limits) > 0 {
			return c.errorAt("a baseline route bypasses the limiter; remove its limits or baseline: true", []any{"extra_routes", i, "limits"})
		}
		if r.Baseline && !c.BaselineRoutes {
			return c.errorAt("a baseline route serves any caller with the limiter bypassed; "+
				"set baseline_routes: true to serve it (for overhead measurement), or remove it", []any{"extra_routes", i, "baseline"})
		}
		if err := c.checkRouteLimiter(r, i); err != nil {
			return err
		}
		for j, l := range r.Limits {
			if err := l.Validate(); err != nil {
				return c.errorAt("%w", []any{"extra_routes", i, "limits", j}, err)
			}
		}
		if err := c.checkLeases(r.Limits, "extra_routes", i, "limits"); err != nil {
			return err
		}
	}
	seen := map[string]int{}
	for i, k := range c.Keys {
		if k.Key == "" {
			return c.errorAt("missing; every entry needs its secret key", []any{"keys", i, "key"})
		}
		if j, dup := seen[k.Key]; dup {
			return c.errorAt("the same key as keys[%d]", []any{"keys", i, "key"}, j)
		}
		seen[k.Key] = i
		if err := c.checkPlan(k.PlanConfig, "keys", i); err != nil {
			return err
		}
	}
	return nil
}

// checkRouteLimiter checks extra route i's limiter: the instance's, or
// redis_rate on Redis with one limit it can enforce.
func (c *Config) checkRouteLimiter(r ExtraRoute, i int) error {
	switch r.Limiter {
	case "":
		return nil
	case LimiterReference:
		if c.Limiter != LimiterReference {
			return c.errorAt("this instance serves its routes with %s, not the reference limiter", []any{"extra_routes", i, "limiter"}, c.Limiter)
		}
		return nil
	case LimiterRedisRate:
		if c.Limiter == LimiterRedisRate {
			return nil // the whole instance is redis_rate's
		}
	default:
		return c.errorAt("unknown limiter %q; use %s, or leave it out for the instance's", []any{"extra_routes", i, "limiter"}, r.Limiter, LimiterRedisRate)
	}
	if r.Baseline {
		return c.errorAt("a baseline route bypasses the limiter; remove limiter or baseline: true", []any{"extra_routes", i, "limiter"})
	}
	if c.Store != StoreRedis {
		return c.errorAt("redis_rate keeps its state in Redis; set redis: redis://HOST:6379/0 or pass --redis", []any{"extra_routes", i, "limiter"})
	}
	if len(r.Limits) != 1 {
		return c.errorAt("redis_rate applies one limit per route, not %d", []any{"extra_routes", i, "limits"}, len(r.Limits))
	}
	if _, err := RedisRateLimit(r.Limits[0]); err != nil {
		return c.errorAt("%v", []any{"extra_routes", i, "limits", 0}, err)
	}
	if l, _ := RedisRateLimit(r.Limits[0]); max(r.Cost, 1) > int64(l.Burst) {
		return c.errorAt("%d is above the burst %d", []any{"extra_routes", i, "cost"}, r.Cost, l.Burst)
	}
	return nil
}

func (c *Config) checkPlan(p PlanConfig, path ...any) error {
	at := func(field string) []any { return append(append([]any{}, path...), field) }
	if p.RateLimitPerMinute <= 0 {
		return c.errorAt("%v must be positive (units per minute, fractions allowed)", at("rate_limit_per_minute"), p.RateLimitPerMinute)
	}
	if p.RateLimitBurst < 1 {
		return c.errorAt("%d must be at least 1", at("rate_limit_burst"), p.RateLimitBurst)
	}
	if p.MonthlyQuota < 0 {
		return c.errorAt("%d is negative; use 0 for no quota", at("monthly_quota"), p.MonthlyQuota)
	}
	plan := Plan{PerMinute: p.RateLimitPerMinute, Burst: p.RateLimitBurst, MonthlyQuota: p.MonthlyQuota}
	for _, l := range plan.Limits(c.Algorithm, "") {
		if err := l.Validate(); err != nil {
			return c.errorAt("%v", at("rate_limit_per_minute"), err)
		}
	}
	return nil
}
