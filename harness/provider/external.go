package provider

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/scenarios"
)

// External is a Redis the user runs. rlbench connects to it and nothing
// more: it is never flushed, stopped or made to fail, and it has no faults.
// It is safe for concurrent use; the zero value is not usable, call
// StartExternal.
type External struct {
	url  string
	addr string
}

// StartExternal checks that the Redis at url (redis:// or rediss://) answers
// PING. Errors: an unparsable URL, or the PING failure.
func StartExternal(ctx context.Context, url string) (*External, error) {
	if url == "" {
		return nil, fmt.Errorf("external redis: no URL; give one such as redis://127.0.0.1:6380/0")
	}
	opt, err := redis.ParseURL(url)
	if err != nil { // url.Parse's error quotes the URL: redact its password
		return nil, fmt.Errorf("external redis %s: %s", redisstore.RedactURL(url), redisstore.Redact(err.Error(), url))
	}
	if err := ping(ctx, opt, readyTimeout); err != nil {
		return nil, fmt.Errorf("external redis %s: %w", redisstore.RedactURL(url), redisstore.CheckAuth(err))
	}
	return &External{url: url, addr: opt.Addr}, nil
}

// URL implements Redis.
func (e *External) URL() string { return e.url }

// Addr implements Redis.
func (e *External) Addr() string { return e.addr }

// Provider implements Redis.
func (e *External) Provider() scenarios.Provider { return scenarios.ProviderExternal }

// Close implements Redis; the server is left as it is.
func (e *External) Close() error { return nil }
