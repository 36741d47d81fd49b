//go:build unix

package redistest

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"
)

// scanBatch is the COUNT hint of each SCAN and the size of each PTTL pipeline.
const scanBatch = 500

// KeysWithoutTTL SCANs every key of the server behind client (of every
// master when client is a *redis.ClusterClient) and returns, sorted, the keys
// that exist without an expiry. Field case C6 asks that no rate-limiter key
// is ever left without one. Errors are the first SCAN or PTTL failure.
func KeysWithoutTTL(ctx context.Context, client redis.UniversalClient) ([]string, error) {
	var (
		mu      sync.Mutex
		missing []string
	)
	scan := func(ctx context.Context, c *redis.Client) error {
		keys, err := persistentKeys(ctx, c)
		mu.Lock()
		missing = append(missing, keys...)
		mu.Unlock()
		return err
	}
	var err error
	switch c := client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		return nil, fmt.Errorf("keys without ttl: unsupported client %T", client)
	}
	if err != nil {
		return nil, fmt.Errorf("keys without ttl: %w", err)
	}
	sort.Strings(missing)
	return missing, nil
}

// persistentKeys scans one node.
func persistentKeys(ctx context.Context, c *redis.Client) ([]string, error) {
	var (
		missing []string
		cursor  uint64
	)
	for {
		keys, next, err := c.Scan(ctx, cursor, "*", scanBatch).Result()
		if err != nil {
			return missing, err
		}
		if len(keys) > 0 {
			pipe := c.Pipeline()
			ttls := make([]*redis.DurationCmd, len(keys))
			for i, k := range keys {
				ttls[i] = pipe.PTTL(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return missing, err
			}
			for i, cmd := range ttls {
				// -1 is "no expiry"; -2, a key gone since SCAN, is fine.
				if cmd.Val() == -1 {
					missing = append(missing, keys[i])
				}
			}
		}
		if cursor = next; cursor == 0 {
			return missing, nil
		}
	}
}

// Keys SCANs every key of the server behind client (of every master of a
// *redis.ClusterClient) and returns them sorted.
func Keys(ctx context.Context, client redis.UniversalClient) ([]string, error) {
	var (
		mu  sync.Mutex
		all []string
	)
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "*", scanBatch).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			all = append(all, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	switch c := client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		return nil, fmt.Errorf("keys: unsupported client %T", client)
	}
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	sort.Strings(all)
	return all, nil
}
