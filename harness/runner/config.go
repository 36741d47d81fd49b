package runner

import (
	"fmt"
	"net/http"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/scenarios"
)

// instanceConfig is the part of the sample API's configuration a scenario
// sets (sampleapi.Config's YAML form).
type instanceConfig struct {
	AnyKey             bool         `yaml:"any_key"`
	AllowAnonymous     bool         `yaml:"allow_anonymous,omitempty"`
	TrustedProxies     []string     `yaml:"trusted_proxies,omitempty"`
	DecisionTimeHeader bool         `yaml:"decision_time_header"`
	ExtraRoutes        []extraRoute `yaml:"extra_routes"`
}

type extraRoute struct {
	Method   string   `yaml:"method"`
	Path     string   `yaml:"path"`
	Cost     int64    `yaml:"cost"`
	Limits   []string `yaml:"limits,omitempty"`
	Baseline bool     `yaml:"baseline,omitempty"`
}

// InstanceConfig is the YAML configuration the scenario's sample API
// instances run with: every generated API key is accepted (identities are
// held to the route limits only), each scenario route is served with its
// cost and limits, and responses carry the limiter's decision time.
func InstanceConfig(sc *scenarios.Scenario) ([]byte, error) {
	cfg := instanceConfig{AnyKey: true, DecisionTimeHeader: true}
	if sc.Identities.Carry == scenarios.ClientIP {
		// The harness sends the client address as X-Forwarded-For from
		// loopback: it is the trusted proxy.
		cfg.AllowAnonymous = true
		cfg.TrustedProxies = []string{"127.0.0.0/8", "::1/128"}
	}
	for _, rt := range sc.Target.Routes {
		er := extraRoute{Method: rt.Method, Path: rt.Path, Cost: rt.Cost, Baseline: rt.Baseline()}
		if er.Method == "" {
			er.Method = http.MethodGet
		}
		for _, l := range rt.Policies {
			er.Limits = append(er.Limits, l.Spec())
		}
		cfg.ExtraRoutes = append(cfg.ExtraRoutes, er)
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("instance config: %w", err)
	}
	return append([]byte("# Written by rlbench run for this scenario's sample API instances.\n"), data...), nil
}

// InstanceArgs are the `rlbench serve` flags of instance i (the launcher
// adds --addr and --instance).
func InstanceArgs(sc *scenarios.Scenario, configPath, redisURL string, i int) []string {
	args := []string{"--config", configPath, "--log-level", "warn"}
	store := string(sc.Target.Store)
	if store == "" {
		store = string(scenarios.StoreRedis)
	}
	args = append(args, "--store", store)
	if redisURL != "" && store == string(scenarios.StoreRedis) {
		args = append(args, "--redis", redisURL)
	}
	if sc.Target.FailureMode != "" {
		args = append(args, "--failure-mode", string(sc.Target.FailureMode))
	}
	if sc.Target.StoreTimeout > 0 {
		args = append(args, "--store-timeout", sc.Target.StoreTimeout.String())
	}
	args = append(args, "--instances", strconv.Itoa(sc.Target.Instances))
	if skew, ok := sc.Target.ClockSkew[scenarios.InstanceName(i)]; ok {
		args = append(args, "--clock-offset", skew.String())
	}
	return args
}
