package sampleapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/lease"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/resilience"
)

// Clock is the instance's clock: the wall clock shifted by cfg.ClockOffset.
func (c Config) Clock() func() time.Time {
	if c.ClockOffset == 0 {
		return time.Now
	}
	offset := c.ClockOffset
	return func() time.Time { return time.Now().Add(offset) }
}

// OpenLimiter returns the limiter cfg.Store names and a function releasing
// it: the Redis store on a client for cfg.Redis, or a MemoryStore swept of
// idle keys every minute until ctx ends; wrapped in the resilience wrapper
// when cfg.FailureMode is set; or, when cfg.Faulty is set, that faulty
// variant instead. It does not contact Redis: an unreachable Redis fails
// the decisions (as the failure mode says), not the opening. Errors name
// the Redis URL with its password redacted.
func OpenLimiter(ctx context.Context, cfg Config, logger *slog.Logger) (limiter.Limiter, func() error, error) {
	lim, probe, closeLim, err := openLimiter(ctx, cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	return lim, func() error { return errors.Join(closeLim(), probe.close()) }, nil
}

// openLimiter is OpenLimiter with the probe of the store's Redis (nil for
// the memory store), which the caller closes after the limiter.
func openLimiter(ctx context.Context, cfg Config, logger *slog.Logger) (limiter.Limiter, *storeProbe, func() error, error) {
	var probe *storeProbe
	if cfg.Store == StoreRedis {
		opts, err := redisOptions(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		probe = newStoreProbe(opts, cfg)
	}
	if cfg.Faulty != "" {
		lim, closeLim, err := openFaulty(ctx, cfg, logger)
		if err != nil {
			return nil, nil, nil, errors.Join(err, probe.close())
		}
		return lim, probe, closeLim, nil
	}
	store, closeStore, err := openStore(ctx, cfg, probe)
	if err != nil {
		return nil, nil, nil, errors.Join(err, probe.close())
	}
	if cfg.FailureMode == "" {
		return store, probe, closeStore, nil
	}
	r, err := Resilient(store, cfg, logger)
	if err != nil {
		return nil, nil, nil, errors.Join(err, closeStore(), probe.close())
	}
	return r, probe, func() error { return errors.Join(r.Close(), closeStore()) }, nil
}

// Resilient wraps store in the resilience wrapper configured by cfg's
// FailureMode, StoreTimeout, Instances and clock.
func Resilient(store limiter.Limiter, cfg Config, logger *slog.Logger) (*resilience.Limiter, error) {
	mode, err := resilience.ParseMode(cfg.FailureMode)
	if err != nil {
		return nil, err
	}
	return resilience.New(store, resilience.Config{
		Mode: mode, Timeout: cfg.StoreTimeout, Instances: cfg.Instances, Clock: cfg.Clock(), Logger: logger,
	}), nil
}

// openStore opens the store cfg.Store names: the Redis store on the probe's
// client, under package lease for the limits that declare a lease, or a
// MemoryStore.
func openStore(ctx context.Context, cfg Config, probe *storeProbe) (limiter.Limiter, func() error, error) {
	switch cfg.Store {
	case StoreRedis:
		// Limits that declare a lease are decided from local leases; the
		// others go to Redis on every request, as without the wrapper.
		return lease.New(redisstore.New(probe.client)), func() error { return nil }, nil // the probe closes the client
	case StoreMemory:
		var opts []limiter.MemoryOption // by default the monotonic clock, immune to a stepped system clock
		if cfg.ClockOffset != 0 {
			opts = append(opts, limiter.WithClock(cfg.Clock()))
		}
		m := limiter.NewMemoryStore(opts...)
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		go m.Sweep(sctx, time.Minute)
		return m, func() error { cancel(); return nil }, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q; use redis or memory", cfg.Store)
}

// Timing of the store probe.
const (
	// DefaultStoreStartWait bounds how long Run waits at start for the
	// store's first answer before it serves anyway, not ready.
	DefaultStoreStartWait = 3 * time.Second
	// DefaultStoreWatchInterval is how often Run pings the store to log
	// its losses and recoveries and check its eviction policy again.
	DefaultStoreWatchInterval = 2 * time.Second
	// storePingTimeout bounds one ping of the start wait and the watch.
	storePingTimeout = time.Second
)

// storeProbe reaches the limiter's Redis apart from the decisions: for
// readiness, the wait at start, the watch and the eviction check. On the
// reference store it shares the store's client; a faulty variant gets a
// client of its own. Its methods are safe for concurrent use; a nil
// *storeProbe is the memory store's and does nothing.
type storeProbe struct {
	client  redis.UniversalClient
	addr    string        // names the Redis in messages
	timeout time.Duration // of a readiness check: the store's own timeout
	dialed  atomic.Bool   // a connection was opened since the last watch tick
}

// newStoreProbe returns the probe with a client for opts, which it changes
// to signal new connections. Its readiness timeout is the one requests
// meet: the store timeout under a failure mode, else the client's read
// timeout.
func newStoreProbe(opts *redis.Options, cfg Config) *storeProbe {
	p := &storeProbe{timeout: opts.ReadTimeout}
	if cfg.FailureMode != "" {
		p.timeout = cmp.Or(cfg.StoreTimeout, resilience.DefaultTimeout)
	}
	if p.timeout <= 0 {
		p.timeout = DefaultRedisIOTimeout
	}
	onConnect := opts.OnConnect
	opts.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		p.dialed.Store(true)
		if onConnect != nil {
			return onConnect(ctx, cn)
		}
		return nil
	}
	if cfg.RedisSentinel != nil {
		fo := failoverOptions(cfg, opts)
		fo.OnConnect = opts.OnConnect
		p.client, p.addr = redis.NewFailoverClient(fo), cfg.RedisSentinel.Master+" via sentinel" // the current master
	} else {
		p.client, p.addr = redis.NewClient(opts), opts.Addr
	}
	return p
}

func (p *storeProbe) close() error {
	if p == nil {
		return nil
	}
	return p.client.Close()
}

// ping sends one PING bounded by timeout. Its error says what failed,
// without the URL: a refused password (wrapping redisstore.ErrAuth), no
// answer within the timeout, or the connection's error.
func (p *storeProbe) ping(ctx context.Context, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := redisstore.CheckAuth(p.client.Ping(pctx).Err())
	switch {
	case err == nil, errors.Is(err, redisstore.ErrAuth):
		return err
	case pctx.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("redis does not answer within %v", timeout)
	}
	return fmt.Errorf("redis unreachable: %w", err)
}

// check is the probe's StoreCheck: one PING within the store's timeout.
func (p *storeProbe) check(ctx context.Context) error { return p.ping(ctx, p.timeout) }

// start waits up to wait for the store's first answer, pinging every
// 100 ms, and logs the outcome; when the store answers it checks its
// eviction policy. It reports whether the store answered, and the eviction
// risk it logged.
func (p *storeProbe) start(ctx context.Context, wait time.Duration, logger *slog.Logger) (reachable bool, risk string) {
	deadline := time.Now().Add(wait)
	for {
		err := p.ping(ctx, min(storePingTimeout, max(time.Until(deadline), time.Millisecond)))
		if err == nil {
			p.dialed.Store(false)
			logger.Info("store reachable", "store", StoreRedis, "addr", p.addr)
			return true, p.checkEviction(ctx, logger, "")
		}
		if errors.Is(err, redisstore.ErrAuth) || time.Until(deadline) <= 0 || ctx.Err() != nil {
			logger.Warn("store unreachable: serving anyway; until it answers, /readyz says so and limited requests "+
				"are answered as the failure mode declares", "store", StoreRedis, "addr", p.addr, "err", err)
			return false, ""
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkEviction logs a warning when the store's eviction policy can drop
// limiter state, unless it is the risk last logged; it returns the risk.
func (p *storeProbe) checkEviction(ctx context.Context, logger *slog.Logger, last string) string {
	cctx, cancel := context.WithTimeout(ctx, storePingTimeout)
	defer cancel()
	risk, err := redisstore.EvictionRisk(cctx, p.client)
	switch {
	case err != nil:
		logger.Info("cannot read the store's eviction policy; check it with rlbench doctor", "err", err)
		return last
	case risk != "" && risk != last:
		logger.Warn("redis may evict rate-limit state (field case C16): "+risk, "fix", redisstore.EvictionFix)
	}
	return risk
}

// watch pings the store every interval until ctx ends, from the state
// start left: it logs when the store stops answering and when it answers
// again, and checks the eviction policy again after every reconnection (a
// restarted or replaced Redis may have another), warning when the risk is
// new or the store was lost since.
func (p *storeProbe) watch(ctx context.Context, interval time.Duration, reachable bool, risk string, logger *slog.Logger) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := p.ping(ctx, storePingTimeout)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && reachable:
			logger.Warn("store unreachable", "store", StoreRedis, "err", err)
			reachable, risk = false, ""
		case err == nil && !reachable:
			logger.Info("store reachable again", "store", StoreRedis)
			reachable = true
			p.dialed.Store(false)
			risk = p.checkEviction(ctx, logger, risk)
		case err == nil && p.dialed.Swap(false):
			risk = p.checkEviction(ctx, logger, risk)
		}
	}
}

// Redis client defaults where the URL's query does not set them: a limiter
// decision is one short script, so a store that does not answer within
// these is down, and a request should learn it in about a second rather
// than after go-redis's defaults (5 s dial, 3 s read, 3 retries).
const (
	DefaultRedisDialTimeout = time.Second
	DefaultRedisIOTimeout   = time.Second
	DefaultRedisMaxRetries  = 1
)

// applyRedisDefaults sets the Default* Redis options the URL leaves unset.
func applyRedisDefaults(opts *redis.Options, rawURL string) {
	q := url.Values{}
	if u, err := url.Parse(rawURL); err == nil {
		q = u.Query()
	}
	if !q.Has("dial_timeout") {
		opts.DialTimeout = DefaultRedisDialTimeout
	}
	if !q.Has("read_timeout") {
		opts.ReadTimeout = DefaultRedisIOTimeout
	}
	if !q.Has("write_timeout") {
		opts.WriteTimeout = DefaultRedisIOTimeout
	}
	if !q.Has("max_retries") {
		opts.MaxRetries = DefaultRedisMaxRetries
	}
	opts.ContextTimeoutEnabled = true // a caller's deadline (the store timeout) bounds every command
}

// OpenKeys returns the KeyStore of cfg: PostgreSQL when cfg.Postgres is
// set (the configured keys are then ignored, with a warning), else the
// configured keys; and a function releasing it.
func OpenKeys(ctx context.Context, cfg Config, logger *slog.Logger) (KeyStore, func() error, error) {
	if cfg.Postgres == "" {
		return NewStaticKeys(cfg.Keys), func() error { return nil }, nil
	}
	if len(cfg.Keys) > 0 {
		logger.Warn("postgres is set: API keys come from table api_keys and the configuration's keys are ignored", "ignored", len(cfg.Keys))
	}
	k, err := OpenPGKeys(ctx, cfg.Postgres, cfg.PlanRefresh, logger)
	if err != nil {
		return nil, nil, err
	}
	return k, k.Close, nil
}

// Run serves the sample API on ln until ctx ends, then stops accepting
// connections and drains in-flight requests for at most
// cfg.ShutdownTimeout. With a Redis store it first waits up to
// DefaultStoreStartWait for Redis's first answer (checking its eviction
// policy, field case C16), and serves anyway when none comes: /readyz then
// tells, and the store is watched for its return. started, when not nil,
// is called once the server accepts requests, after that wait. Run returns
// nil after a complete drain, an error when the drain timed out (the
// remaining connections are closed) or when serving failed. cfg must be
// validated (Config.Validate).
func Run(ctx context.Context, cfg Config, ln net.Listener, logger *slog.Logger, started func()) (err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lim, probe, closeLim, err := openLimiter(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeLim(), probe.close()) }()
	keys, closeKeys, err := OpenKeys(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeKeys()) }()
	var check StoreCheck
	if probe != nil {
		check = probe.check
		reachable, risk := probe.start(ctx, DefaultStoreStartWait, logger)
		wctx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); probe.watch(wctx, DefaultStoreWatchInterval, reachable, risk, logger) }()
		defer func() { stopWatch(); <-watched }()
	}
	srv, err := NewServer(cfg, lim, keys, check, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srv.Close()) }()
	hs := &http.Server{
		Handler:           faultyHandler(cfg, srv.Handler()),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("serving", "addr", ln.Addr().String(), "store", cfg.Store)
	if started != nil {
		started()
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
		return fmt.Errorf("drain in-flight requests: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
