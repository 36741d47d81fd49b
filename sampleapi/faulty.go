package sampleapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/sampleapi/faulty"
)

// checkFaulty validates Config.Faulty: a known variant, with Redis when it
// keeps its state there.
func (c *Config) checkFaulty() error {
	if c.Faulty == "" {
		return nil
	}
	v, err := faulty.Lookup(c.Faulty)
	if err != nil {
		return c.errorAt("%v", []any{"faulty"}, err)
	}
	if v.NeedsRedis && c.Store != StoreRedis {
		return c.errorAt("variant %s keeps its state in Redis; set redis: or pass --redis", []any{"faulty"}, v.Name)
	}
	return nil
}

// openFaulty opens the faulty variant cfg.Faulty names in place of the
// reference limiter, wrapped in the resilience wrapper as OpenLimiter
// wraps the reference, unless the variant answers store failures itself.
func openFaulty(ctx context.Context, cfg Config, logger *slog.Logger) (limiter.Limiter, func() error, error) {
	v, err := faulty.Lookup(cfg.Faulty)
	if err != nil {
		return nil, nil, err
	}
	env := faulty.Env{Clock: cfg.Clock(), Logger: logger, StoreTimeout: cfg.StoreTimeout}
	if cfg.Store == StoreRedis {
		opts, err := redisOptions(cfg)
		if err != nil {
			return nil, nil, err
		}
		env.Redis = opts
		if cfg.RedisSentinel != nil {
			env.Sentinel = failoverOptions(cfg, opts)
		}
	}
	lim, closeLim, err := v.Open(ctx, env)
	if err != nil || cfg.FailureMode == "" || v.OwnFailureMode {
		return lim, closeLim, err
	}
	r, err := Resilient(lim, cfg, logger)
	if err != nil {
		return nil, nil, errors.Join(err, closeLim())
	}
	return r, func() error { return errors.Join(r.Close(), closeLim()) }, nil
}

// faultyHandler wraps h for a faulty variant whose fault lies before the
// limiter; without one it returns h.
func faultyHandler(cfg Config, h http.Handler) http.Handler {
	if cfg.Faulty == "" {
		return h
	}
	v, err := faulty.Lookup(cfg.Faulty)
	if err != nil { // Validate has refused it already
		return h
	}
	return v.Handler(h)
}
