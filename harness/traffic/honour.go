package traffic

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// runHonouring runs an open-model phase whose clients honour Retry-After.
// It does not use vegeta: vegeta's targeter must produce a request for every
// tick of its pacer, while a client told to wait must send nothing. Here a
// dispatcher walks plan, the requests this run sends (Plan), on the
// phase's schedule sched; a request whose identity is still told to
// wait is withheld (counted, not sent), the others go to a bounded pool of
// workers. When every worker is busy the dispatcher waits, and the delay
// shows in the intended-send latency. Every identity's requests belong to
// one shard (Owner), so each client sees every answer it waits on.
func (e *engine) runHonouring(ctx context.Context, pi int, ph scenarios.Phase, sched Schedule, plan []Planned) error {
	sched = ownSchedule(sched, plan)
	n := sched.N()
	items := planItems(plan)
	firstID := e.ids(n)
	began := time.Now()
	e.coll.phaseMeta(pi, func(m *PhaseStats) {
		m.Planned, m.PlannedDuration, m.Began = n, sched.Duration(), began
	})

	var mu sync.Mutex
	until := map[int]time.Time{} // identity → end of its Retry-After wait
	type job struct {
		it  item
		res *Result
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	workers := uint64(0)
	worker := func() {
		defer wg.Done()
		for j := range jobs {
			e.do(ctx, e.client, j.it, j.res)
			if j.res.Status == http.StatusTooManyRequests {
				if wait, ok := RetryAfter(j.res.Header); ok {
					mu.Lock()
					if end := j.res.Received.Add(wait); end.After(until[j.it.identity]) {
						until[j.it.identity] = end
					}
					mu.Unlock()
				}
			}
			e.coll.add(j.res)
		}
	}
	withheld := 0
	defer func() {
		close(jobs)
		wg.Wait()
		e.coll.phaseMeta(pi, func(m *PhaseStats) { m.Withheld = withheld })
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i, it := range items {
		intended := began.Add(sched.At(i))
		if wait := time.Until(intended); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		mu.Lock()
		hold := time.Now().Before(until[it.identity])
		mu.Unlock()
		if hold {
			withheld++
			continue
		}
		res := e.newResult(pi, ph, it, firstID+uint64(i))
		res.Intended = intended
		j := job{it: it, res: res}
		select {
		case jobs <- j:
			continue
		default:
		}
		if workers < e.cfg.MaxWorkers {
			workers++
			wg.Add(1)
			go worker()
		}
		select {
		case jobs <- j:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// RetryAfter parses a Retry-After header given in seconds (RFC 9110
// §10.2.3); an HTTP-date is read relative to the local clock. It reports
// false when the header is absent or malformed.
func RetryAfter(h http.Header) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 || s > 1<<31 {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
