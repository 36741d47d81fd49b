package k8s

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/rlbench/rlbench/scenarios"
)

// shardable reports why sc's run cannot be split into shards in pods, or
// nil: what scenarios.(*Scenario).Shardable refuses (faults, instances
// without a budget in a Redis every shard reaches, a client honouring
// Retry-After for a spread identity), and what every pod would start of
// its own: a fault proxy, or a Redis the shards could not share, neither
// to agree their start through nor to keep a budget in; and, as `rlbench
// run --shard` does, a scenario whose offset to the limiter's clock is not
// known before the traffic (no redis.url, no target.clock), since the
// shards are merged on that clock. Its errors wrap
// scenarios.ErrNotShardable.
func shardable(sc *scenarios.Scenario) error {
	if err := sc.Shardable(); err != nil {
		return err
	}
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s: %s", sc.Source, scenarios.ErrNotShardable, field, fmt.Sprintf(format, args...))
	}
	switch {
	case sc.Redis.Proxy != "":
		return fail("redis.proxy", "%s is a fault proxy every shard's pod would listen on, of which the limiter can use one; "+
			"remove it: a sharded run injects no faults", sc.Redis.Proxy)
	case sc.Redis.Provider != scenarios.ProviderExternal && sc.Redis.Provider != scenarios.ProviderNone:
		return fail("redis.provider", "%s starts a Redis in every shard's pod, which the shards would not share; "+
			"give a Redis they all reach with provider external and its url, or no redis section", sc.Redis.Provider)
	case sc.Redis.URL == "" && sc.Target.Clock == nil:
		// As `rlbench run --shard` refuses it, in every pod.
		return fail("redis.url", "the offset to the limiter's clock is unknown before the traffic, and the shards are merged on that clock; "+
			"give redis.url, the Redis whose TIME the limiter decides by, or target.clock: {offset, uncertainty}")
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
