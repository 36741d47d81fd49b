package k8s

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/rlbench/rlbench/scenarios"
)

// shardable reports why sc's run cannot be split into shards, or nil: a
// shard is the same scenario run by another process on another host, so
// everything the run starts of its own (sample API or peer instances, a
// Redis, a fault proxy) every shard would start again, each shard holding
// only its own, and a fault schedule would be armed once per shard.
func shardable(sc *scenarios.Scenario) error {
	t := sc.Target
	fail := func(format string, args ...any) error {
		return fmt.Errorf("scenario %s cannot be sharded: %s", sc.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case len(t.External) == 0 && t.Peer != "":
		return fail("it starts %d %s instances of its own, and every shard would start its own; "+
			"run the limiter where the shards can reach it and name it in target.external", t.Instances, t.Peer)
	case len(t.External) == 0:
		return fail("it starts %d sample API instances of its own, and every shard would start its own; "+
			"run `rlbench serve` where the shards can reach it and name it in target.external", t.Instances)
	case len(sc.Faults) > 0:
		kinds := make([]string, len(sc.Faults))
		for i, f := range sc.Faults {
			kinds[i] = string(f.Kind)
		}
		return fail("it injects faults (%s), which one run schedules over its whole traffic; "+
			"every shard would inject them again; drill the limiter with an unsharded run", strings.Join(kinds, ", "))
	case sc.Redis.Proxy != "":
		return fail("redis.proxy %s is a fault proxy every shard would listen on, and the limiter can use one; "+
			"remove it, a sharded run injects no faults", sc.Redis.Proxy)
	case sc.Redis.Provider != scenarios.ProviderExternal && sc.Redis.Provider != scenarios.ProviderNone:
		return fail("redis.provider %s starts a Redis in every shard, which the shards would not share; "+
			"give the limiter's Redis with provider external and its url, or no redis section", sc.Redis.Provider)
	}
	return nil
}

// reachable reports an address in sc that a pod cannot reach as this
// machine would: a loopback base URL or Redis URL names, in a pod, the pod
// itself.
func reachable(sc *scenarios.Scenario) error {
	for i, u := range sc.Target.External {
		if loopback(u) {
			return fmt.Errorf("%s: target.external[%d]: %s is a loopback address, which in a shard's pod is the pod itself; "+
				"give the API's address in the cluster, as http://orders-api.default.svc:8080", sc.Source, i, u)
		}
	}
	if sc.Redis.URL != "" && loopback(sc.Redis.URL) {
		return fmt.Errorf("%s: redis.url: %s is a loopback address, which in a shard's pod is the pod itself; "+
			"give the Redis's address in the cluster, as redis://redis.default.svc:6379/0", sc.Source, scenarios.RedactURL(sc.Redis.URL))
	}
	return nil
}

// loopback reports whether rawURL's host is localhost or a loopback
// address.
func loopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
