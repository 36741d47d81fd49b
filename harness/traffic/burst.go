package traffic

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// Bursts do not go through vegeta, nor through an http.Client. A vegeta
// attack releases hits one by one from a single pacing goroutine to workers
// that it starts lazily and that open their connections on first use, and
// an http.Client starts a reader and a writer goroutine per connection on
// its first request: a 1,000-request burst would spend its milliseconds
// dialling and spawning, and would not arrive within a 5 ms spread. Here
// the requests of a burst are prepared shortly before it: each gets a
// connection of its own, opened (and, for https, its TLS handshake done) at
// most ConnLead before its planned send, its bytes encoded, and a goroutine
// already waiting on the connection for the answer. Once the whole group
// is ready (the start barrier), a few releasers write the encoded requests
// in planned order, each in one call at its planned instant: releasing a
// request costs one write, and nothing else runs until the answers come.
//
// No connection is opened earlier than that, so none idles long enough for
// a target to drop it (Go's http.Server applies ReadHeaderTimeout from the
// moment it accepts a connection; a server that sets it to 2 s closes a
// connection opened 2 s before its request and the request fails). A
// phase's sends are prepared in groups, each spanning less than ConnLead
// of the schedule: one group for a short burst, several for a burst spread
// wide, one per half of an edge burst whose halves lie far apart.

// burstLead is the time between the moment a burst's first group is ready
// and its first planned send, so that every goroutine is parked before it
// is due.
const burstLead = 20 * time.Millisecond

// edgeLead is the least time between the start of an edge burst and the
// moment its first group starts opening connections.
const edgeLead = 50 * time.Millisecond

// maxBurstConns bounds the burst connections open at once in a run: the
// two halves of the largest edge burst. A group waits until its
// connections fit, and is late by that wait (the lag shows it).
const maxBurstConns = 2 * scenarios.MaxBurstRequests

// releasers is the number of goroutines that write a group's requests,
// each taking the next request in planned order: twice the processors, so
// that while the operating system holds one releaser's thread the others
// go on (a fixed share per releaser would wait for it).
func releasers() int { return 2 * runtime.GOMAXPROCS(0) }

// dialers is the number of connections a group opens at once.
const dialers = 32

// dialTimeout bounds opening one burst connection.
const dialTimeout = 5 * time.Second

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

// BurstStats is what one burst achieved: one repetition of a burst phase,
// or one half of an edge burst. Times are on the local monotonic clock.
type BurstStats struct {
	// Requests is the number of sends the burst planned.
	Requests int
	// Intended is the burst's first planned send.
	Intended time.Time
	// Sent counts the requests handed to their connection; FirstSent and
	// LastSent bound those instants.
	Sent                int
	FirstSent, LastSent time.Time
	// Written counts the requests written whole to their connection;
	// FirstWritten and LastWritten bound the instants the writes returned,
	// when each request had left for the target.
	Written                   int
	FirstWritten, LastWritten time.Time
	// MaxIdle is the longest time any of the burst's connections was open
	// before its request was written: what a target that drops idle
	// connections has to tolerate.
	MaxIdle time.Duration
}

// SentSpread is the time from the burst's first send to its last; 0 with
// fewer than two.
func (b BurstStats) SentSpread() time.Duration {
	if b.Sent < 2 {
		return 0
	}
	return b.LastSent.Sub(b.FirstSent)
}

// WrittenSpread is the time from the first request written whole to the
// last; 0 with fewer than two.
func (b BurstStats) WrittenSpread() time.Duration {
	if b.Written < 2 {
		return 0
	}
	return b.LastWritten.Sub(b.FirstWritten)
}

// Achieved is the burst's achieved spread: the larger of SentSpread and
// WrittenSpread, so that a burst counts as tight only when its requests
// both started and finished leaving within it.
func (b BurstStats) Achieved() time.Duration { return max(b.SentSpread(), b.WrittenSpread()) }

// add accounts one shot of the burst.
func (b *BurstStats) add(s *shot) {
	if b.Intended.IsZero() || s.intended.Before(b.Intended) {
		b.Intended = s.intended
	}
	if !s.sent.IsZero() {
		b.Sent++
		b.FirstSent, b.LastSent = widen(b.FirstSent, b.LastSent, s.sent)
	}
	if !s.written.IsZero() {
		b.Written++
		b.FirstWritten, b.LastWritten = widen(b.FirstWritten, b.LastWritten, s.written)
		b.MaxIdle = max(b.MaxIdle, s.written.Sub(s.opened))
	}
}

// widen returns the bounds [first, last] grown to hold t; zero bounds hold
// nothing yet.
func widen(first, last, t time.Time) (time.Time, time.Time) {
	if first.IsZero() || t.Before(first) {
		first = t
	}
	if t.After(last) {
		last = t
	}
	return first, last
}

// volley is what a run sends of a burst phase: plan[i] (Plan) is sent
// plan[i].Intended after the phase's anchor, as part of its burst, one of
// bursts, with result ID firstID+i. Intended does not decrease with i.
type volley struct {
	plan    []Planned
	firstID uint64
	bursts  int
}

func (v volley) at(i int) time.Duration { return v.plan[i].Intended }

// shot is one send of a volley while it is fired. Its fields are written
// in the order of its life, each before the step that reads it: the group
// opens its connection, its own goroutine prepares the request and waits
// for the answer, a releaser writes the request and closes wrote.
type shot struct {
	it    item
	id    uint64
	burst int
	// conn is the shot's own connection, or dialErr why it could not be
	// opened; opened is when it was ready.
	conn    net.Conn
	dialErr error
	opened  time.Time
	// wire is the request encoded, or prepErr why it could not be.
	wire    []byte
	prepErr error
	// intended is set before the group is released.
	intended time.Time
	// Set by the releaser before it closes wrote: sent and written are
	// when the request was handed to the connection and when the write
	// returned (zero when it never was); writeErr why the write failed;
	// skipped that the run was cancelled before the shot's time.
	sent, written time.Time
	writeErr      error
	skipped       bool
	wrote         chan struct{}
}

// fire sends every request of v at its planned time, each over its own
// connection. With a zero anchor the phase's schedule starts burstLead
// after its first group is ready (a burst); otherwise send i is planned at
// anchor+at(i) (an edge burst, around a window edge). Each group opens its
// connections ConnLead before its first planned send, and starts a
// goroutine per request that encodes it and then waits for its answer; a
// few releasers then write the encoded requests in their planned order,
// each at its planned time. Writing is all a release does, so a burst
// leaves as fast as the machine writes to its sockets. fire returns when every answer is in, with ctx's error; what each burst
// achieved goes into the phase's statistics.
func (e *engine) fire(ctx context.Context, pi int, ph scenarios.Phase, v volley, anchor time.Time) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		bursts = make([]BurstStats, v.bursts)
	)
	for _, p := range v.plan {
		bursts[p.Burst].Requests++
	}
	done := func(s *shot) {
		mu.Lock()
		bursts[s.burst].add(s)
		mu.Unlock()
	}
	lead := e.cfg.ConnLead
	for lo := 0; lo < len(v.plan); {
		hi := lo + 1
		for hi < len(v.plan) && hi-lo < maxBurstConns && v.at(hi)-v.at(lo) < lead {
			hi++
		}
		if !anchor.IsZero() && !sleepUntil(ctx, anchor.Add(v.at(lo)-lead)) {
			break
		}
		if err := e.acquireConns(ctx, hi-lo); err != nil {
			break
		}
		g := make([]shot, hi-lo)
		for j := range g {
			p := v.plan[lo+j]
			g[j] = shot{it: p.item(), id: v.firstID + uint64(lo+j), burst: p.Burst, wrote: make(chan struct{})}
		}
		e.open(ctx, g)
		context.AfterFunc(ctx, func() { // unblocks the reads of a cancelled run
			for i := range g {
				if g[i].conn != nil {
					g[i].conn.Close()
				}
			}
		})
		var ready, releasing sync.WaitGroup
		released := make(chan struct{})
		for j := range g {
			ready.Add(1)
			wg.Add(1)
			go func(s *shot) {
				defer wg.Done()
				e.await(ctx, pi, ph, s, &ready, released)
				done(s)
			}(&g[j])
		}
		ready.Wait()
		if anchor.IsZero() {
			anchor = time.Now().Add(burstLead - v.at(lo))
		}
		for j := range g {
			g[j].intended = anchor.Add(v.at(lo + j))
		}
		var cursor atomic.Int64
		for range min(releasers(), len(g)) {
			releasing.Add(1)
			go func() {
				defer releasing.Done()
				for {
					j := int(cursor.Add(1) - 1)
					if j >= len(g) {
						return
					}
					e.release(ctx, &g[j])
				}
			}()
		}
		go func() {
			releasing.Wait()
			close(released)
		}()
		lo = hi
	}
	wg.Wait()
	e.coll.phaseMeta(pi, func(m *PhaseStats) { m.Bursts = bursts })
	return ctx.Err()
}

// acquireConns reserves n of the maxBurstConns burst connections; await
// returns each.
func (e *engine) acquireConns(ctx context.Context, n int) error {
	for i := range n {
		select {
		case e.burstConns <- struct{}{}:
		case <-ctx.Done():
			for range i {
				<-e.burstConns
			}
			return ctx.Err()
		}
	}
	return nil
}

// open opens the connections of a group, dialers at a time, and completes
// the TLS handshake of https ones; a shot whose connection cannot be opened
// keeps why in dialErr and is recorded as a failed request.
func (e *engine) open(ctx context.Context, g []shot) {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(dialers, len(g)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(g) {
					return
				}
				s := &g[i]
				u := e.bases[s.it.instance]
				c, err := dial(ctx, d, u, e.transport.TLSClientConfig)
				if err != nil {
					s.dialErr = fmt.Errorf("open connection to %s: %w", hostPort(u), err)
					continue
				}
				s.conn, s.opened = c, time.Now()
			}
		}()
	}
	wg.Wait()
}

// dial opens a connection to the host of u, over TLS for https with a
// copy of base (nil: the defaults), as the shared transport would.
func dial(ctx context.Context, d *net.Dialer, u *url.URL, base *tls.Config) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", hostPort(u))
	if err != nil || u.Scheme != "https" {
		return c, err
	}
	cfg := &tls.Config{}
	if base != nil {
		cfg = base.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// await prepares s's request, marks itself ready and waits for the
// answer (a read blocked on a connection costs nothing until the answer
// arrives), then, once the releaser has written the request, builds the
// result; it reads the body and hands the result to the collector only
// once the whole group is released, so that the processing of early
// answers does not hold up the writes of later requests. A request whose
// time the run was cancelled before is not recorded.
func (e *engine) await(ctx context.Context, pi int, ph scenarios.Phase, s *shot, ready *sync.WaitGroup, released <-chan struct{}) {
	defer func() { <-e.burstConns }()
	if s.conn != nil {
		defer s.conn.Close()
	}
	res := e.newResult(pi, ph, s.it, s.id)
	req, err := e.request(ctx, s.it, s.id)
	if err == nil {
		s.wire, err = encode(req)
	}
	s.prepErr = err
	ready.Done()
	var (
		resp     *http.Response
		readErr  error
		received time.Time
	)
	if s.conn != nil && s.prepErr == nil {
		resp, readErr = readResponse(bufio.NewReader(s.conn), req)
		received = time.Now()
	}
	<-s.wrote
	if s.skipped {
		return
	}
	woke := time.Now() // the planned time of a request that could not be written
	<-released
	res.Intended = s.intended
	switch {
	case s.dialErr != nil || s.prepErr != nil:
		res.Sent, res.Received, res.Err = woke, woke, errors.Join(s.dialErr, s.prepErr).Error()
	case s.writeErr != nil:
		res.Sent, res.Received, res.Err = s.sent, woke, requestError(req, s.writeErr)
	case readErr != nil:
		res.Sent, res.Received, res.Err = s.sent, received, requestError(req, readErr)
	default:
		res.Sent, res.Received = s.sent, received
		_, err = discard(resp)
		res.Status, res.Header = resp.StatusCode, resp.Header
		if err != nil {
			res.Err = requestError(req, err)
		}
	}
	e.coll.add(res)
}

// release writes s's encoded request in one call at its planned time, and
// from then on bounds the exchange by Timeout. It closes s.wrote in every
// case: for a shot that could not be prepared at its planned time, for a
// cancelled one at once.
func (e *engine) release(ctx context.Context, s *shot) {
	defer close(s.wrote)
	if !sleepUntil(ctx, s.intended) {
		s.skipped = true
		return
	}
	if s.conn == nil || s.prepErr != nil {
		return
	}
	s.sent = time.Now()
	if _, err := s.conn.Write(s.wire); err != nil {
		s.writeErr = err
		s.conn.Close() // ends the wait for an answer
		return
	}
	s.written = time.Now()
	s.conn.SetDeadline(s.sent.Add(e.cfg.Timeout))
}

// encode returns req as HTTP/1.1 bytes on the wire, asking the target to
// close the connection after its answer.
func encode(req *http.Request) ([]byte, error) {
	req.Close = true
	var b bytes.Buffer
	if err := req.Write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readResponse reads the final answer to req, skipping informational ones
// (such as 103 Early Hints) as an http.Transport does.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// requestError describes a failed exchange as an http.Client does:
// `Get "http://host/path": cause`.
func requestError(req *http.Request, err error) string {
	op := req.Method
	if op == "" {
		op = http.MethodGet
	}
	op = op[:1] + strings.ToLower(op[1:])
	return (&url.Error{Op: op, URL: req.URL.String(), Err: err}).Error()
}

// sleepUntil waits until t and reports whether t came before ctx was done.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// spreadOffset is the planned offset of send i of n spread evenly within
// spread.
func spreadOffset(i, n int, spread time.Duration) time.Duration {
	if n < 2 {
		return 0
	}
	return time.Duration(int64(spread) * int64(i) / int64(n-1))
}

// runBurst releases a burst phase: Repeats bursts of Requests requests,
// burst k planned BurstStart(k) after the first; of them plan, the
// requests this run sends (Plan), each at its planned offset.
func (e *engine) runBurst(ctx context.Context, pi int, ph scenarios.Phase, plan []Planned) error {
	e.coll.phaseMeta(pi, func(m *PhaseStats) {
		m.Planned, m.PlannedDuration, m.Spread, m.Began = len(plan), ph.Length(), ph.Spread, time.Now()
	})
	return e.fire(ctx, pi, ph, volley{plan: plan, firstID: e.ids(len(plan)), bursts: ph.Repeats()}, time.Time{})
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

// runEdgeBurst releases an edge burst: Requests requests Offset before the
// next window edge and as many Offset after it, each half its own burst
// whose connections open ConnLead before it; of them plan, the requests
// this run sends (Plan).
func (e *engine) runEdgeBurst(ctx context.Context, pi int, ph scenarios.Phase, plan []Planned) error {
	began := time.Now()
	limEdge, localEdge := NextEdge(began, e.cfg.ClockOffset, ph.Offset+e.cfg.ConnLead+edgeLead, ph.Window)
	if wait := localEdge.Sub(began); wait > MaxEdgeWait {
		return fmt.Errorf("phase %s: %w: %v away, more than %v", ph.Name, ErrEdgeTooFar, wait.Round(time.Second), MaxEdgeWait)
	}
	e.coll.phaseMeta(pi, func(m *PhaseStats) {
		m.Planned, m.PlannedDuration, m.Spread, m.Began = len(plan), 2*ph.Offset+ph.Spread, ph.Spread, began
		m.Edge, m.EdgeLocal = limEdge, localEdge
	})
	return e.fire(ctx, pi, ph, volley{plan: plan, firstID: e.ids(len(plan)), bursts: 2}, localEdge)
}

// edgeOffset is the planned offset from the window edge of send i of an
// edge burst of n requests per half.
func edgeOffset(i, n int, offset, spread time.Duration) time.Duration {
	if i < n {
		return -offset + spreadOffset(i, n, spread)
	}
	return offset + spreadOffset(i-n, n, spread)
}

// EdgeTimes returns the send times of an edge burst around the local instant
// edge: n sends spread within spread from edge−offset, then n more from
// edge+offset.
func EdgeTimes(edge time.Time, n int, offset, spread time.Duration) []time.Time {
	out := make([]time.Time, 2*n)
	for i := range out {
		out[i] = edge.Add(edgeOffset(i, n, offset, spread))
	}
	return out
}
