package faulty

import (
	"container/list"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/rlbench/rlbench/limiter"
)

// DefaultLRUKeys is how many keys LRUKeys keeps state for; "lru-keys:N"
// sets another.
const DefaultLRUKeys = 4

// lruKeys is the reference limiter that keeps the state of the last keys
// used only, as a bounded LRU cache of per-key limiters does: using a key
// beyond the most recent max evicts the least recently used one, whose state
// is forgotten (Reset), so its next request finds a full budget. It is safe
// for concurrent use.
type lruKeys struct {
	limiter.Limiter
	max int

	mu    sync.Mutex
	order *list.List               // of *lruEntry, most recent first
	byKey map[string]*list.Element // key → its element of order
}

// lruEntry is a cached key and every limit it was used under.
type lruEntry struct {
	key    string
	limits []limiter.Limit
}

func openLRUKeys(ctx context.Context, v Variant, env Env) (limiter.Limiter, func() error, error) {
	ref, closeRef, err := openReference(ctx, v, env)
	if err != nil {
		return nil, nil, err
	}
	return newLRUKeys(ref, v.keys), closeRef, nil
}

func newLRUKeys(lim limiter.Limiter, max int) *lruKeys {
	return &lruKeys{Limiter: lim, max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// touch marks key used under limits and returns the entries it evicts.
func (c *lruKeys) touch(key string, limits []limiter.Limit) []lruEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		el = c.order.PushFront(&lruEntry{key: key})
		c.byKey[key] = el
	}
	c.order.MoveToFront(el)
	e := el.Value.(*lruEntry)
	for _, l := range limits {
		if !slices.Contains(e.limits, l) {
			e.limits = append(e.limits, l)
		}
	}
	var evicted []lruEntry
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(*lruEntry)
		delete(c.byKey, old.key)
		evicted = append(evicted, *old)
	}
	return evicted
}

// evict forgets the state of the evicted entries.
func (c *lruKeys) evict(ctx context.Context, evicted []lruEntry) error {
	var errs []error
	for _, e := range evicted {
		errs = append(errs, c.Limiter.Reset(ctx, e.key, e.limits...))
	}
	return errors.Join(errs...)
}

func (c *lruKeys) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	if err := c.evict(ctx, c.touch(key, limits)); err != nil {
		return limiter.Decision{}, err
	}
	return c.Limiter.AllowN(ctx, key, n, limits...)
}

func (c *lruKeys) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	if err := c.evict(ctx, c.touch(key, limits)); err != nil {
		return limiter.Decision{}, err
	}
	return c.Limiter.Peek(ctx, key, limits...)
}

func (c *lruKeys) Reset(ctx context.Context, key string, limits ...limiter.Limit) error {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.Remove(el)
		delete(c.byKey, key)
	}
	c.mu.Unlock()
	return c.Limiter.Reset(ctx, key, limits...)
}
