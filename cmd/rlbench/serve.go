package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/peers"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/sampleapi/faulty"
)

// serveCommand runs one instance of the sample API.
type serveCommand struct{ stdout, stderr io.Writer }

var serveHelp = help{
	synopsis: "rlbench serve [flags]",
	about: `Runs one instance of the sample API (see sampleapi/). Everything an instance
runs with can live in one YAML file given with --config (sampleapi.Config:
instance name, store, Redis URL, failure mode, store timeout, clock offset,
faulty variant, limiter, routes and their policies, keys); rlbench run writes
one per instance. Several instances given the same Redis share one budget per
key. With no --config the embedded default configuration is used, with demo
keys demo-free-key, demo-pro-key and demo-bench-key. It binds its address,
waits up to ` + sampleapi.DefaultStoreStartWait.String() + ` for Redis's first answer (and warns if Redis may evict
limiter state), then prints "listening on HOST:PORT" on stdout; when Redis does
not answer it logs so and serves anyway, /readyz answering 503 (degraded under
fail-open and fallback) until Redis is back. /livez says the process is up.
On SIGTERM or SIGINT it stops accepting and drains in-flight requests. Each
flag set overrides the configuration file. URLs with a password are better
kept off the command line (ps shows it to every user): put them in the file
(redis:, postgres:) or in $` + sampleapi.RedisURLEnv + ` and $` + sampleapi.PostgresURLEnv + `, read when neither
the flag nor the file gives one. Passwords are redacted from every log line
and error.`,
}

func (c *serveCommand) Usage() string { return serveHelp.text(new(serveFlags).flagSet()) }

// serveFlags are the values of serve's flags.
type serveFlags struct {
	addr, config, store, redis, postgres, instance, headers, logLevel string
	failureMode, faulty, limiter                                      string
	planRefresh, shutdownTimeout, storeTimeout, clockOffset           time.Duration
	instances                                                         int
	shadow, baselineRoutes                                            bool
}

func (f *serveFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", "", "listen on `HOST:PORT`; port 0 picks a free port (default 127.0.0.1:8080)")
	fs.StringVar(&f.config, "config", "", "read the YAML configuration `FILE` (default the embedded one)")
	fs.StringVar(&f.store, "store", "", "keep limiter state in `STORE`: redis or memory (default redis when --redis is set, else memory)")
	fs.StringVar(&f.redis, "redis", "", "use the Redis at `URL`, as in redis://127.0.0.1:6379/0; client timeouts go in its "+
		"query: ?dial_timeout=1s&read_timeout=200ms&max_retries=-1 (-1: no retry)")
	fs.StringVar(&f.postgres, "postgres", "", "read API keys and plans from PostgreSQL at `DSN` instead of the configuration")
	fs.DurationVar(&f.planRefresh, "plan-refresh", 0, "bound on plan staleness with --postgres (default 10s)")
	fs.StringVar(&f.instance, "instance", "", "name the instance `NAME` in the X-Instance header (default the host name)")
	fs.StringVar(&f.headers, "headers", "", "send RateLimit headers in `STYLES`, comma-separated: ietf, draft06, legacy or none")
	fs.BoolVar(&f.shadow, "shadow", false, "decide and count, never reject")
	fs.BoolVar(&f.baselineRoutes, "baseline-routes", false, "serve the baseline routes (/baseline/v1/... and extra "+
		"routes marked baseline): the routes' work for any caller with the limiter bypassed, to measure its overhead; "+
		"never in service")
	fs.StringVar(&f.failureMode, "failure-mode", "", "the `MODE` when the store fails: open, closed (503) or "+
		"fallback (local share); unset: no resilience wrapper")
	fs.DurationVar(&f.storeTimeout, "store-timeout", 0, "bound on each store call with --failure-mode (default 50ms)")
	fs.IntVar(&f.instances, "instances", 0, "count `N` instances sharing the store, for the fallback's share (default 1)")
	fs.DurationVar(&f.clockOffset, "clock-offset", 0, "shift this instance's own clock, to simulate skew")
	fs.StringVar(&f.faulty, "faulty", "", "run the deliberately FAULTY limiter variant `NAME` instead of the reference, "+
		"for mutation testing of the checker (rlbench mutate): one of "+strings.Join(faulty.Names(), ", ")+
		"; non-atomic takes its read-to-write delay as non-atomic:5ms")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 0, "bound on the drain of in-flight requests (default 10s)")
	fs.StringVar(&f.limiter, "limiter", "reference", "serve with `LIMITER`: reference, or redis_rate to serve the "+
		"configuration's extra_routes with go-redis/redis_rate on --redis instead, a peer limiter that rlbench "+
		"holds to its claim (harness/peers)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log from `LEVEL` up: debug, info, warn or error")
	return fs
}

// parse parses serve's command line; errors are usage errors. It is also
// what the docker-compose test holds every service's command line to.
func (c *serveCommand) parse(args []string) (*serveFlags, map[string]bool, error) {
	f := &serveFlags{}
	fs := f.flagSet()
	if err := parseArgs(fs, args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, usagef("unexpected argument %q; serve takes flags only", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return f, set, nil
}

// config loads the configuration file and applies the flags set on top.
func (f *serveFlags) configure(set map[string]bool) (sampleapi.Config, error) {
	cfg, err := sampleapi.LoadConfig(f.config)
	if err != nil {
		return cfg, err
	}
	str := map[string]*string{"addr": &cfg.Addr, "store": &cfg.Store, "redis": &cfg.Redis, "postgres": &cfg.Postgres, "instance": &cfg.Instance, "headers": &cfg.Headers}
	val := map[string]string{"addr": f.addr, "store": f.store, "redis": f.redis, "postgres": f.postgres, "instance": f.instance, "headers": f.headers}
	for name, p := range str {
		if set[name] {
			*p = val[name]
		}
	}
	if set["plan-refresh"] {
		cfg.PlanRefresh = f.planRefresh
	}
	if set["shutdown-timeout"] {
		cfg.ShutdownTimeout = f.shutdownTimeout
	}
	if set["shadow"] {
		cfg.Shadow = f.shadow
	}
	if set["baseline-routes"] {
		cfg.BaselineRoutes = f.baselineRoutes
	}
	if set["failure-mode"] {
		cfg.FailureMode = f.failureMode
	}
	if set["store-timeout"] {
		cfg.StoreTimeout = f.storeTimeout
	}
	if set["instances"] {
		cfg.Instances = f.instances
	}
	if set["clock-offset"] {
		cfg.ClockOffset = f.clockOffset
	}
	if set["faulty"] {
		cfg.Faulty = f.faulty
	}
	if set["limiter"] {
		cfg.Limiter = f.limiter
	}
	if set["log-level"] {
		if err := cfg.LogLevel.UnmarshalText([]byte(f.logLevel)); err != nil {
			return cfg, usagef("--log-level %q: use debug, info, warn or error", f.logLevel)
		}
	}
	if set["redis"] {
		if err := sampleapi.CheckRedisURL(f.redis); err != nil {
			return cfg, usagef("--redis %v", err)
		}
	}
	if env := os.Getenv(sampleapi.RedisURLEnv); env != "" && !set["redis"] && cfg.Redis == "" {
		if err := sampleapi.CheckRedisURL(env); err != nil {
			return cfg, fmt.Errorf("$%s: %v", sampleapi.RedisURLEnv, err)
		}
		cfg.Redis = env
	}
	if env := os.Getenv(sampleapi.PostgresURLEnv); env != "" && !set["postgres"] && cfg.Postgres == "" {
		cfg.Postgres = env
	}
	if set["redis"] && !set["store"] && cfg.Store == sampleapi.StoreMemory {
		cfg.Store = sampleapi.StoreRedis // --redis alone means: use it
	}
	if cfg.Instance == "" {
		cfg.Instance, _ = os.Hostname()
	}
	return cfg, cfg.Validate()
}

func (c *serveCommand) Run(ctx context.Context, args []string) error {
	f, set, err := c.parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stderr, c.Usage())
		return err
	}
	if err != nil {
		return err
	}
	cfg, err := f.configure(set)
	if err != nil {
		return redactedError(err, f.redis, os.Getenv(sampleapi.RedisURLEnv), f.postgres, os.Getenv(sampleapi.PostgresURLEnv))
	}
	if err := c.serve(ctx, cfg); err != nil {
		return redactedError(err, cfg.Redis, cfg.Postgres)
	}
	return nil
}

// serve runs the instance cfg describes; its errors may quote URLs, which
// Run redacts.
func (c *serveCommand) serve(ctx context.Context, cfg sampleapi.Config) error {
	logger := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{
		Level:       cfg.LogLevel,
		ReplaceAttr: redactAttr(cfg.Redis, cfg.Postgres),
	})).With("instance", cfg.Instance)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if cfg.Faulty != "" {
		v, _ := faulty.Lookup(cfg.Faulty) // validated by configure
		logger.Warn("FAULTY LIMITER: this instance runs a deliberately broken limiter for mutation testing; never serve real traffic with it",
			"variant", cfg.Faulty, "fault", v.Fault)
	}
	if cfg.BaselineRoutes {
		logger.Warn("baseline routes are on: they serve any authenticated caller with the limiter bypassed; use them to measure overhead, never in service")
	}
	listening := func() { fmt.Fprintf(c.stdout, "listening on %s\n", ln.Addr()) }
	if cfg.Limiter == sampleapi.LimiterRedisRate {
		listening()
		return serveRedisRate(ctx, cfg, ln)
	}
	if err := sampleapi.Run(ctx, cfg, ln, logger, listening); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// redactAttr is a slog ReplaceAttr that removes the passwords of conns
// from every string and error logged.
func redactAttr(conns ...string) func([]string, slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindString:
			a.Value = slog.StringValue(redisstore.Redact(a.Value.String(), conns...))
		case slog.KindAny:
			if err, ok := a.Value.Any().(error); ok {
				a.Value = slog.StringValue(redisstore.Redact(err.Error(), conns...))
			}
		}
		return a
	}
}

// redactedError is err with the passwords of conns removed from its
// message; it keeps err's usage-error kind (the exit code), not its chain.
func redactedError(err error, conns ...string) error {
	msg := redisstore.Redact(err.Error(), conns...)
	if msg == err.Error() {
		return err
	}
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		return usagef("%s", msg)
	}
	return errors.New(msg)
}

// serveRedisRate serves cfg's extra routes with go-redis/redis_rate on
// cfg.Redis, each limited route under its one policy.
func serveRedisRate(ctx context.Context, cfg sampleapi.Config, ln net.Listener) error {
	var routes []peers.RedisRateRoute
	for _, er := range cfg.ExtraRoutes {
		rt := peers.RedisRateRoute{Method: er.Method, Path: er.Path, Cost: er.Cost}
		switch {
		case len(er.Limits) > 1:
			return fmt.Errorf("route %s: redis_rate applies one limit per route, not %d", er.Path, len(er.Limits))
		case len(er.Limits) == 1:
			rt.Limit = &er.Limits[0]
		}
		routes = append(routes, rt)
	}
	return peers.ServeRedisRate(ctx, ln, cfg.Redis, routes, cfg.ShutdownTimeout)
}
