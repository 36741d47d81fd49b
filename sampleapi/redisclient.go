package sampleapi

import (
	"fmt"
	"net"
	"runtime"

	"github.com/redis/go-redis/v9"
	"github.com/rlbench/rlbench/limiter/redisstore"
)

// DefaultRedisPoolSize is the connections an instance holds to Redis at
// most when Config.RedisPoolSize is zero: go-redis's own default, ten per
// GOMAXPROCS, here made explicit so that it can be recorded and checked.
func DefaultRedisPoolSize() int { return 10 * runtime.GOMAXPROCS(0) }

// PoolSize is the connections the instance holds to Redis at most.
func (c Config) PoolSize() int {
	if c.RedisPoolSize > 0 {
		return c.RedisPoolSize
	}
	return DefaultRedisPoolSize()
}

// checkRedisClient validates RedisSentinel and RedisPoolSize.
func (c *Config) checkRedisClient() error {
	if c.RedisPoolSize < 0 {
		return c.errorAt("%d: give the most connections to Redis, above 0, or leave it out for %d", []any{"redis_pool_size"}, c.RedisPoolSize, DefaultRedisPoolSize())
	}
	s := c.RedisSentinel
	if s == nil {
		return nil
	}
	if c.Store != StoreRedis {
		return c.errorAt("the Sentinel names the master of the Redis store; set redis: too", []any{"redis_sentinel"})
	}
	if s.Master == "" {
		return c.errorAt("missing; give the name the Sentinels monitor the master under, such as mymaster", []any{"redis_sentinel", "master"})
	}
	if len(s.Addrs) == 0 {
		return c.errorAt("missing; give the Sentinels' addresses, such as [127.0.0.1:26379]", []any{"redis_sentinel", "addrs"})
	}
	for i, a := range s.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return c.errorAt("%q is not host:port", []any{"redis_sentinel", "addrs", i}, a)
		}
	}
	return nil
}

// redisOptions parses cfg.Redis with the sample API's defaults and pool
// size. The error shows the URL with its password redacted.
func redisOptions(cfg Config) (*redis.Options, error) {
	opts, err := redis.ParseURL(cfg.Redis)
	if err != nil {
		return nil, fmt.Errorf("redis URL %s: %s", redisstore.RedactURL(cfg.Redis), redisstore.Redact(err.Error(), cfg.Redis))
	}
	applyRedisDefaults(opts, cfg.Redis)
	opts.PoolSize = cfg.PoolSize()
	return opts, nil
}

// failoverOptions are opts for the master of cfg.RedisSentinel: the same
// credentials, database, timeouts, retries and pool, the address from the
// Sentinels.
func failoverOptions(cfg Config, opts *redis.Options) *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:            cfg.RedisSentinel.Master,
		SentinelAddrs:         cfg.RedisSentinel.Addrs,
		Username:              opts.Username,
		Password:              opts.Password,
		DB:                    opts.DB,
		DialTimeout:           opts.DialTimeout,
		ReadTimeout:           opts.ReadTimeout,
		WriteTimeout:          opts.WriteTimeout,
		MaxRetries:            opts.MaxRetries,
		PoolSize:              opts.PoolSize,
		ContextTimeoutEnabled: opts.ContextTimeoutEnabled,
		TLSConfig:             opts.TLSConfig,
		DisableIdentity:       opts.DisableIdentity,
	}
}

// newRedisClient is the Redis client of cfg: through the Sentinels to the
// current master when cfg.RedisSentinel is set, else to cfg.Redis; addr
// names it in messages.
func newRedisClient(cfg Config) (client redis.UniversalClient, addr string, err error) {
	opts, err := redisOptions(cfg)
	if err != nil {
		return nil, "", err
	}
	if cfg.RedisSentinel != nil {
		return redis.NewFailoverClient(failoverOptions(cfg, opts)), cfg.RedisSentinel.Master + " via sentinel", nil
	}
	return redis.NewClient(opts), opts.Addr, nil
}
