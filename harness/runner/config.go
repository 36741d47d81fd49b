package runner

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
)

// InstanceConfig is the configuration sample API instance i (from 0, named
// scenarios.InstanceName(i)) of the scenario runs with, everything in one
// value that crosses to the instance's process once, as its configuration
// file: its name, the store and redisURL (when the store is Redis), the
// failure mode and store timeout, the number of instances sharing the
// store, its clock offset, the limiter (redis_rate for that peer) and the
// scenario's routes with their costs and policies (baseline routes turned
// on when the scenario has one). Every generated API key
// is accepted (identities are held to the route limits only) and responses
// carry the limiter's decision time. faulty, when set, names the faulty
// variant it runs instead of the reference limiter.
func InstanceConfig(sc *scenarios.Scenario, i int, redisURL, faulty string) sampleapi.Config {
	name := scenarios.InstanceName(i)
	cfg := sampleapi.Config{
		Instance:           name,
		LogLevel:           slog.LevelWarn,
		Store:              string(sc.Target.Store),
		FailureMode:        string(sc.Target.FailureMode),
		StoreTimeout:       sc.Target.StoreTimeout,
		Instances:          sc.Target.Instances,
		ClockOffset:        sc.Target.ClockSkew[name],
		Faulty:             faulty,
		AnyKey:             true,
		DecisionTimeHeader: true,
	}
	if cfg.Store == "" {
		cfg.Store = sampleapi.StoreRedis
	}
	if cfg.Store == sampleapi.StoreRedis {
		cfg.Redis = redisURL
		// Explicit, so that the run records the bound of its connections.
		cfg.RedisPoolSize = sampleapi.DefaultRedisPoolSize()
	}
	if sc.Target.Peer == scenarios.PeerRedisRate {
		cfg.Limiter = sampleapi.LimiterRedisRate
	}
	if sc.Identities.Carry == scenarios.ClientIP {
		// The harness sends the client address as X-Forwarded-For from
		// loopback: it is the trusted proxy.
		cfg.AllowAnonymous = true
		cfg.TrustedProxies = []string{"127.0.0.0/8", "::1/128"}
		if sc.Identities.TrustedHops > 1 {
			// The proxies the harness appends after each client's address.
			cfg.TrustedProxies = append(cfg.TrustedProxies, sc.Identities.ProxyPrefix().String())
		}
	}
	for _, rt := range sc.Target.Routes {
		er := sampleapi.ExtraRoute{Method: rt.Method, Path: rt.Path, Cost: rt.Cost, Limits: rt.Policies, Baseline: rt.Baseline(), Limiter: rt.Limiter}
		if er.Method == "" {
			er.Method = http.MethodGet
		}
		// The scenario's routes without a policy measure the limiter's
		// overhead; the sample API serves them only when told to.
		cfg.BaselineRoutes = cfg.BaselineRoutes || er.Baseline
		cfg.ExtraRoutes = append(cfg.ExtraRoutes, er)
	}
	return cfg
}

// WriteInstanceConfig writes cfg to path in the sample API's YAML form,
// readable by its owner only: it may hold a Redis URL with a password.
func WriteInstanceConfig(path string, cfg sampleapi.Config) error {
	data, err := cfg.Marshal()
	if err != nil {
		return fmt.Errorf("instance config: %w", err)
	}
	data = append([]byte("# Written by rlbench run: the configuration of sample API "+cfg.Instance+" (rlbench serve --config).\n"), data...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("instance config: %w", err)
	}
	return nil
}
