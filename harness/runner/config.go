package runner

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter"
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

// Policy is what the scenario's routes promise, for the checker, with the
// fault windows the run recorded. Errors come from the checker's parsing of
// the policies (see checkerLimits).
func Policy(sc *scenarios.Scenario, offset, uncertainty time.Duration, windows []runrecord.FaultWindow) (checker.Policy, error) {
	p := checker.Policy{ClockOffset: &offset, ClockUncertainty: uncertainty}
	for _, rt := range sc.Target.Routes {
		if rt.Baseline() {
			continue
		}
		limits, err := checkerLimits(rt.Policies)
		if err != nil {
			return checker.Policy{}, fmt.Errorf("route %s: %w", rt.Path, err)
		}
		p.Rules = append(p.Rules, checker.Rule{Route: rt.Path, Limits: limits})
	}
	if sc.Target.FailureMode == scenarios.FailClosed {
		p.ExpectedStatuses = []int{http.StatusServiceUnavailable}
	}
	if len(windows) > 0 && sc.Checks.Faults != nil {
		f := &checker.Faults{
			Mode: checker.FailureMode(sc.Target.FailureMode), Instances: sc.Target.Instances, Timeout: sc.Target.StoreTimeout,
			Slack: sc.Checks.Faults.Slack, Recovery: sc.Checks.Faults.Recovery,
		}
		for i, w := range windows {
			if w.FromNs == 0 { // never injected: the fault-injected check says so
				continue
			}
			fault := sc.Faults[i]
			f.Windows = append(f.Windows, checker.FaultWindow{
				Kind: w.Kind, FromNs: w.FromNs, ToNs: w.ToNs,
				Unavailable: storeUnavailable(fault, sc.Target.StoreTimeout),
				LosesState:  fault.Kind == scenarios.FaultRedisKill,
				Instance:    fault.Target,
			})
		}
		p.Faults = f
	}
	return p, nil
}

// checkerLimits hands limits to the checker in the policy syntax the
// history's header records (limiter.Limit.Spec), read by the checker's own
// parser, so that the run is judged by the limits `rlbench check` reads
// back from the header.
func checkerLimits(ls []limiter.Limit) ([]checker.Limit, error) {
	out := make([]checker.Limit, len(ls))
	for i, l := range ls {
		c, err := checker.ParseLimit(l.Spec())
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// storeUnavailable reports whether fault leaves the limiter without an
// answer from its store within timeout, so that its failure mode decides.
func storeUnavailable(f scenarios.Fault, timeout time.Duration) bool {
	switch f.Kind {
	case scenarios.FaultInstanceKill:
		return false
	case scenarios.FaultRedisLatency:
		return f.Latency >= timeout
	}
	return true
}
