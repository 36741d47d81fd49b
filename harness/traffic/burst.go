package traffic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// Bursts do not go through vegeta. A vegeta attack releases hits one by one
// from a single pacing goroutine to workers that it starts lazily and that
// open their connections on first use, so a 100-request burst spends its
// first milliseconds dialling and spawning: the requests would not arrive
// within a 5 ms spread, and the concurrency the scenario claims would not be
// the concurrency the limiter saw. Here every request gets its own
// connection, opened in advance, and a goroutine parked on a start barrier
// with its request already built; the barrier opens when everything is
// ready and each goroutine sends at its planned instant.

// burstLead is the time between the barrier's opening and a burst's first
// planned send, so that every goroutine is scheduled before it is due.
const burstLead = 20 * time.Millisecond

// edgeLead is the least time between the end of a burst's set-up and the
// first half of an edge burst.
const edgeLead = 50 * time.Millisecond

// errConnUsed is returned when a burst request's transport asks for a second
// connection: its one pre-opened connection was lost (the target closed it).
var errConnUsed = errors.New("the burst request's pre-opened connection is already used")

// oneConn is a DialContext that returns c once.
func oneConn(c net.Conn) func(context.Context, string, string) (net.Conn, error) {
	var used atomic.Bool
	return func(context.Context, string, string) (net.Conn, error) {
		if used.Swap(true) {
			return nil, errConnUsed
		}
		return c, nil
	}
}

// hostPort is the dial address of a base URL, with the scheme's default port.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// release is one planned send of a burst and its own connection.
type release struct {
	it       item
	id       uint64
	conn     net.Conn
	intended time.Time
}

// fire sends every release at its intended time, each over its own
// connection opened in advance (so the target sees as many concurrent
// connections as the burst has requests, and none is dialled during it).
// plan computes the intended times once every connection is open and every
// goroutine waits at the barrier, from the instant the barrier opens.
func (e *engine) fire(ctx context.Context, pi int, ph scenarios.Phase, items []item, plan func(ready time.Time) ([]time.Time, error)) error {
	firstID := e.ids(len(items))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	rels := make([]release, len(items))
	defer func() {
		for _, r := range rels {
			if r.conn != nil {
				r.conn.Close() // a no-op for connections the transports closed
			}
		}
	}()
	for i, it := range items {
		addr := hostPort(e.bases[it.instance])
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("phase %s: open connection to %s: %w", ph.Name, addr, err)
		}
		rels[i] = release{it: it, id: firstID + uint64(i), conn: c}
	}
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range rels {
		ready.Add(1)
		done.Add(1)
		go func(r *release) {
			defer done.Done()
			res := e.newResult(pi, ph, r.it, r.id)
			req, reqErr := e.request(ctx, r.it, r.id) // built before the barrier opens
			client := &http.Client{
				Transport: &http.Transport{
					DialContext:        oneConn(r.conn),
					DisableKeepAlives:  true,
					DisableCompression: true,
				},
				Timeout:       e.cfg.Timeout,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			}
			ready.Done()
			select {
			case <-start:
			case <-ctx.Done():
				return
			}
			res.Intended = r.intended
			if wait := time.Until(r.intended); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
			}
			if reqErr != nil {
				res.Sent, res.Err = time.Now(), reqErr.Error()
				res.Received = res.Sent
			} else {
				send(client, req, res)
			}
			e.coll.add(res)
		}(&rels[i])
	}
	ready.Wait()
	times, err := plan(time.Now())
	if err != nil {
		cancel()
		done.Wait()
		return err
	}
	for i := range rels {
		rels[i].intended = times[i]
	}
	close(start) // publishes the intended times to the goroutines
	done.Wait()
	return ctx.Err()
}

// spreadTimes places n sends evenly within spread from first.
func spreadTimes(first time.Time, n int, spread time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		var off time.Duration
		if n > 1 {
			off = time.Duration(int64(spread) * int64(i) / int64(n-1))
		}
		out[i] = first.Add(off)
	}
	return out
}

func (e *engine) runBurst(ctx context.Context, pi int, ph scenarios.Phase, rng *rand.Rand) error {
	items := e.planner(ph, rng).plan(ph.Requests)
	e.coll.phaseMeta(pi, func(m *PhaseStats) {
		m.Planned, m.PlannedDuration, m.Began = len(items), ph.Spread, time.Now()
	})
	return e.fire(ctx, pi, ph, items, func(ready time.Time) ([]time.Time, error) {
		return spreadTimes(ready.Add(burstLead), len(items), ph.Spread), nil
	})
}

// ErrEdgeTooFar is returned when the next window edge of an edge burst lies
// further ahead than MaxEdgeWait.
var ErrEdgeTooFar = errors.New("window edge too far ahead")

// MaxEdgeWait bounds how long an edge burst waits for its window edge: the
// edge lies within a lead and a window, both shorter than MaxEdgeWindow.
const MaxEdgeWait = 2 * scenarios.MaxEdgeWindow

// NextEdge returns the first edge of an aligned window of length w (windows
// start at multiples of w since the Unix epoch on the limiter's clock) that
// lies at least lead after now on the local clock, as an instant on the
// limiter's clock and on the local clock. offset is the limiter's clock
// minus the local one.
func NextEdge(now time.Time, offset, lead, w time.Duration) (limiterEdge, localEdge time.Time) {
	lim := now.Add(offset).Add(lead).UnixNano()
	edge := (lim/int64(w) + 1) * int64(w)
	if lim%int64(w) == 0 {
		edge = lim
	}
	limiterEdge = time.Unix(0, edge)
	localEdge = now.Add(time.Duration(edge - now.Add(offset).UnixNano()))
	return limiterEdge, localEdge
}

func (e *engine) runEdgeBurst(ctx context.Context, pi int, ph scenarios.Phase, rng *rand.Rand) error {
	items := e.planner(ph, rng).plan(2 * ph.Requests)
	e.coll.phaseMeta(pi, func(m *PhaseStats) {
		m.Planned, m.PlannedDuration, m.Began = len(items), 2*ph.Offset+ph.Spread, time.Now()
	})
	return e.fire(ctx, pi, ph, items, func(ready time.Time) ([]time.Time, error) {
		limEdge, localEdge := NextEdge(ready, e.cfg.ClockOffset, ph.Offset+edgeLead, ph.Window)
		if wait := localEdge.Sub(ready); wait > MaxEdgeWait {
			return nil, fmt.Errorf("phase %s: %w: %v away, more than %v", ph.Name, ErrEdgeTooFar, wait.Round(time.Second), MaxEdgeWait)
		}
		e.coll.phaseMeta(pi, func(m *PhaseStats) { m.Edge, m.EdgeLocal = limEdge, localEdge })
		return EdgeTimes(localEdge, ph.Requests, ph.Offset, ph.Spread), nil
	})
}

// EdgeTimes returns the send times of an edge burst around the local instant
// edge: n sends spread within spread from edge−offset, then n more from
// edge+offset.
func EdgeTimes(edge time.Time, n int, offset, spread time.Duration) []time.Time {
	return append(spreadTimes(edge.Add(-offset), n, spread), spreadTimes(edge.Add(offset), n, spread)...)
}
