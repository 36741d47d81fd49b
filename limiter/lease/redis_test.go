package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/lease"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestRedisSharedBudgetExact: three lease.Limiters, each with its own Redis
// client as three instances would have, hammer one key of a tight budget on
// one redis-server from several goroutines each. Every admission was
// decided within its call's [start, end], so over every interval [a, b]
// the admissions whose calls lie inside it cost at most B + (b − a)/T (one
// microsecond added for Redis TIME's resolution): the budget is exact, not
// approximate, and most decisions never reached Redis.
func TestRedisSharedBudgetExact(t *testing.T) {
	srv := redistest.StartForTest(t)
	lim := limiter.Limit{Algorithm: limiter.GCRA, Rate: 200, Period: time.Second, Burst: 20, LeaseTokens: 5, LeaseFor: 50 * ms}
	type call struct{ start, end time.Time }
	var (
		mu       sync.Mutex
		admitted []call
		total    int
		wg       sync.WaitGroup
	)
	stop := time.Now().Add(1500 * ms)
	for range 3 {
		client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, ContextTimeoutEnabled: true})
		defer client.Close()
		l := lease.New(redisstore.New(client, redisstore.WithPrefix("lease-test:")))
		for range 4 {
			wg.Go(func() {
				var mine []call
				n := 0
				for time.Now().Before(stop) {
					start := time.Now()
					d, err := l.AllowN(context.Background(), "hot", 1, lim)
					end := time.Now()
					if err != nil {
						t.Error(err)
						return
					}
					n++
					if d.Allowed {
						mine = append(mine, call{start, end})
					}
				}
				mu.Lock()
				admitted, total = append(admitted, mine...), total+n
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	T := time.Second / 200
	for _, a := range admitted {
		for _, b := range admitted {
			if b.end.Before(a.start) {
				continue
			}
			count := int64(0)
			for _, c := range admitted {
				if !c.start.Before(a.start) && !c.end.After(b.end) {
					count++
				}
			}
			span := b.end.Sub(a.start) + time.Microsecond
			if bound := lim.Burst + int64(span/T); count > bound {
				t.Fatalf("%d admitted within [%v, %v] (%v), bound %d", count, a.start, b.end, span, bound)
			}
		}
	}
	if len(admitted) < 200 {
		t.Errorf("only %d admitted in 1.5 s of a 200/s budget", len(admitted))
	}
	t.Logf("%d requests, %d admitted", total, len(admitted))
}
