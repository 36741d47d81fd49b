package sampleapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
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
// variant instead. An unreachable Redis is logged, not fatal.
func OpenLimiter(ctx context.Context, cfg Config, logger *slog.Logger) (limiter.Limiter, func() error, error) {
	if cfg.Faulty != "" {
		return openFaulty(ctx, cfg, logger)
	}
	store, closeStore, err := openStore(ctx, cfg, logger)
	if err != nil || cfg.FailureMode == "" {
		return store, closeStore, err
	}
	r, err := Resilient(store, cfg, logger)
	if err != nil {
		return nil, nil, errors.Join(err, closeStore())
	}
	return r, func() error { return errors.Join(r.Close(), closeStore()) }, nil
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

func openStore(ctx context.Context, cfg Config, logger *slog.Logger) (limiter.Limiter, func() error, error) {
	switch cfg.Store {
	case StoreRedis:
		client, addr, err := newRedisClient(cfg)
		if err != nil {
			return nil, nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := client.Ping(pctx).Err(); err != nil {
			logger.Warn("redis does not answer yet; limited requests fail until it does", "addr", addr, "err", err)
		}
		return redisstore.New(client), client.Close, nil
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
// cfg.ShutdownTimeout. It returns nil after a complete drain, an error when
// the drain timed out (the remaining connections are closed) or when
// serving failed. cfg must be validated (Config.Validate).
func Run(ctx context.Context, cfg Config, ln net.Listener, logger *slog.Logger) (err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lim, closeLim, err := OpenLimiter(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeLim()) }()
	keys, closeKeys, err := OpenKeys(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeKeys()) }()
	srv, err := NewServer(cfg, lim, keys, logger)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           faultyHandler(cfg, srv.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("serving", "addr", ln.Addr().String(), "store", cfg.Store)
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
