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
// most ConnLead before its planned send, its bytes encoded (HTTP/1.1), and
// a goroutine already waiting on the connection for the answer. Once the
// whole group is ready (the start barrier), one writer per processor takes
// the encoded requests in planned order and writes each in one call at its
// planned instant, waiting for it by spinning rather than on a timer: a
// release costs one write and two clock readings, and the writers never
// give up their processors to the rest of the program while the burst
// leaves. The goroutines waiting for answers stay out of their way: an
// answer that arrives during the release is only noted (when its headers
// arrived), and read once the whole group is written; deadlines are set
// then too, since each SetDeadline takes a lock of the runtime's poller.
//
// No connection is opened earlier than that, so none idles long enough for
// a target to drop it (Go's http.Server applies ReadHeaderTimeout from the
// moment it accepts a connection; a server that sets it to 2 s closes a
// connection opened 2 s before its request and the request fails). A
// target that closes connections sooner still gets every request: one
// whose connection the target had closed before the request was written
// (so the target cannot have read it) is sent again on a new connection
// once the group is released, late, and counted (BurstStats.Redialled). A
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
// each taking the next request in planned order (a fixed share per
// releaser would wait for whichever the operating system holds): one per
// processor, since a releaser keeps its processor busy until the group is
// written, and a second one on the same processor would only take turns
// with it.
func releasers() int { return runtime.GOMAXPROCS(0) }

// tightSpan is the longest planned span of a group released tightly: its
// releasers run at a raised priority (raisePriority) and wait for each
// send by spinning from spinWindow before it. A group planned wider is
// released at the process's priority, each releaser sleeping until its
// next send: its spread's tolerance (checker.SpreadBound) is then far
// wider than the scheduling delays this avoids, and spinning at a raised
// priority for longer would starve the target it sends to.
const tightSpan = 50 * time.Millisecond

// spinWindow is how long before a send a releaser of a tight group stops
// sleeping and spins: a timer wakes a goroutine up to a millisecond or more
// late on a busy machine, and a parked releaser hands its processor to
// others.
const spinWindow = 2 * time.Millisecond

// releaseNice is how much raisePriority lowers a releaser's nice value: by
// 10, a thread's weight with the Linux scheduler grows about tenfold, so
// that a releaser keeps its processor against the target's threads that
// its writes wake. Measured with a 1,000-request burst over three sample
// API instances on two cores at a load average of 12: without it, the
// writes took 30 to 65 µs each and the burst 11 to 36 ms; with it, 6 to
// 13 µs and 5 to 15 ms.
const releaseNice = 10

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
	// Redialled counts the requests sent again, after the burst, on a new
	// connection, because the target had closed theirs before they were
	// written; their sends, late, count in the spreads.
	Redialled int
	// Raised reports whether every request of the burst was written by a
	// releaser running at a raised priority (see tightSpan); false when
	// the process may not raise its threads' priority (it needs
	// CAP_SYS_NICE or RLIMIT_NICE on Linux) or the burst was spread wide.
	Raised bool

	added int // shots accounted
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
	b.Raised = s.raised && (b.added == 0 || b.Raised)
	b.added++
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
	if s.redialled {
		b.Redialled++
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
	// early is set by the shot's goroutine when the target answered on the
	// connection, or ended it, and the request may not have been written
	// yet: a releaser that sees it does not write. (Some servers answer a
	// connection that idles past their header timeout with a 408 and
	// close it.)
	early atomic.Bool
	// Set by the releaser before it closes wrote: sent and written are
	// when the request was handed to the connection and when the write
	// returned (zero when it never was); writeErr why the write failed;
	// unsent that the connection had closed before it, so it was not
	// written; skipped that the run was cancelled before the shot's time.
	sent, written time.Time
	writeErr      error
	unsent        bool
	skipped       bool
	wrote         chan struct{}
	// raised is set before the group is released when its releasers run
	// at a raised priority.
	raised bool
	// redialled is set by the shot's goroutine when it sent the request
	// again on a new connection (sent, written and opened are then the
	// new connection's).
	redialled bool
}

// fire sends every request of v at its planned time, each over its own
// connection. With a zero anchor the phase's schedule starts burstLead
// after its first group is ready (a burst); otherwise send i is planned at
// anchor+at(i) (an edge burst, around a window edge). Each group opens its
// connections ConnLead before its first planned send, and starts a
// goroutine per request that encodes it and then waits for its answer;
// releasers (one per processor) then write the encoded requests in their
// planned order, each at its planned time. Writing is all a release does,
// so a burst leaves as fast as the machine writes to its sockets. fire
// returns when every answer is in, with ctx's error; what each burst
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
		var ready sync.WaitGroup
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
		tight := v.at(hi-1)-v.at(lo) <= tightSpan
		ready.Wait()
		if anchor.IsZero() {
			anchor = time.Now().Add(burstLead - v.at(lo))
		}
		for j := range g {
			g[j].intended = anchor.Add(v.at(lo + j))
		}
		go func() {
			e.releaseGroup(ctx, g, tight)
			close(released)
		}()
		lo = hi
	}
	wg.Wait()
	e.coll.phaseMeta(pi, func(m *PhaseStats) { m.Bursts = bursts })
	return ctx.Err()
}

// releaseGroup writes the requests of g at their planned times from
// releasers() goroutines, each taking the next request in planned order,
// and returns once every shot's wrote is closed. A tight group's releasers
// raise their priority and spin (see tightSpan); its shots record whether
// all of them could. Only once every request is written does it bound each
// exchange by Timeout from its send: a deadline set between two writes
// would hold up the next.
func (e *engine) releaseGroup(ctx context.Context, g []shot, tight bool) {
	var (
		cursor    atomic.Int64
		releasing sync.WaitGroup
		ready     sync.WaitGroup // every releaser has tried to raise its priority
		start     = make(chan struct{})
		unraised  atomic.Bool
	)
	n := min(releasers(), len(g))
	ready.Add(n)
	for range n {
		releasing.Add(1)
		go func() {
			defer releasing.Done()
			if tight {
				restore, raised := raisePriority()
				defer restore()
				if !raised {
					unraised.Store(true)
				}
			} else {
				unraised.Store(true)
			}
			ready.Done()
			<-start
			for {
				j := int(cursor.Add(1) - 1)
				if j >= len(g) {
					return
				}
				e.release(ctx, &g[j], tight)
			}
		}()
	}
	ready.Wait()
	for i := range g {
		g[i].raised = !unraised.Load()
	}
	close(start)
	releasing.Wait()
	for i := range g {
		if s := &g[i]; !s.written.IsZero() {
			s.conn.SetDeadline(s.sent.Add(e.cfg.Timeout))
		}
	}
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
// arrives). An answer that arrives while the group is being released is
// only noted: when it came, and whether its headers had all arrived by
// then; it tells a releaser not yet at s not to write. Once the whole
// group is released, await reads the answer, or sends the request again
// on a new connection when the target had answered or closed s's before
// the request was written (it did not read it there), and hands the
// result to the collector. A request whose time the run was cancelled
// before is not recorded.
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
	var br *bufio.Reader
	if s.conn != nil {
		br = bufio.NewReader(s.conn)
	}
	ready.Done()
	var (
		arrived  time.Time // when the first bytes of the answer, or the end of the connection, were seen
		whole    bool      // whether the final answer's headers had all arrived by then
		readErr  error
		received time.Time
	)
	if s.conn != nil && s.prepErr == nil {
		_, readErr = br.Peek(1)
		arrived = time.Now()
		s.early.Store(true)
		whole = readErr == nil && headersArrived(br)
	}
	<-s.wrote
	if s.skipped {
		return
	}
	woke := time.Now() // the planned time of a request that could not be written
	<-released
	res.Intended = s.intended
	if s.unsent || (!s.sent.IsZero() && arrived.Before(s.sent)) {
		// The target answered or closed the connection before the request
		// left, so it did not read it there: send it on a new one.
		s.redialled = true
		c, err := e.resend(ctx, s)
		if c == nil {
			res.Sent, res.Received, res.Err = woke, time.Now(), err.Error()
			e.coll.add(res)
			return
		}
		defer c.Close()
		if err != nil {
			res.Sent, res.Received, res.Err = s.sent, time.Now(), requestError(req, err)
			e.coll.add(res)
			return
		}
		br, readErr, whole = bufio.NewReader(c), nil, false
	}
	var resp *http.Response
	if readErr == nil && s.conn != nil && s.prepErr == nil && s.writeErr == nil {
		resp, readErr = readResponse(br, req)
		received = time.Now()
		if readErr == nil && whole {
			received = arrived
		}
	}
	switch {
	case s.dialErr != nil || s.prepErr != nil:
		res.Sent, res.Received, res.Err = woke, woke, errors.Join(s.dialErr, s.prepErr).Error()
	case s.writeErr != nil:
		res.Sent, res.Received, res.Err = s.sent, woke, requestError(req, s.writeErr)
	case readErr != nil:
		if received.IsZero() { // the connection ended before the release
			received = arrived
		}
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

// resend sends s's request again on a new connection, bounded by Timeout
// from its send, and returns the connection, which the caller closes; it
// is also closed when ctx is done. It sets s.opened, s.sent and s.written
// to the new connection's. Errors: a nil connection with why it could not
// be opened, or the connection with why the write failed.
func (e *engine) resend(ctx context.Context, s *shot) (net.Conn, error) {
	u := e.bases[s.it.instance]
	c, err := dial(ctx, &net.Dialer{Timeout: dialTimeout}, u, e.transport.TLSClientConfig)
	if err != nil {
		return nil, fmt.Errorf("open connection to %s: %w", hostPort(u), err)
	}
	context.AfterFunc(ctx, func() { c.Close() })
	s.opened = time.Now()
	s.sent = s.opened
	c.SetDeadline(s.sent.Add(e.cfg.Timeout))
	if _, err := c.Write(s.wire); err != nil {
		return c, err
	}
	s.written = time.Now()
	return c, nil
}

// headersArrived reports whether the bytes br holds already contain the
// whole header block of a final (not 1xx) answer.
func headersArrived(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	if bytes.HasPrefix(b, []byte("HTTP/1.")) && len(b) > 9 && b[9] == '1' {
		return false // an informational answer: the final one comes later
	}
	return bytes.Contains(b, []byte("\r\n\r\n"))
}

// release writes s's encoded request in one call at its planned time,
// spinning for it when spin is set (waitUntil). It closes s.wrote in every
// case: for a shot that could not be prepared at its planned time, for a
// cancelled one at once.
func (e *engine) release(ctx context.Context, s *shot, spin bool) {
	defer close(s.wrote)
	if !waitUntil(ctx, s.intended, spin) {
		s.skipped = true
		return
	}
	if s.conn == nil || s.prepErr != nil {
		return
	}
	if s.early.Load() {
		s.unsent = true
		return
	}
	s.sent = time.Now()
	if _, err := s.conn.Write(s.wire); err != nil {
		s.writeErr = err
		s.conn.Close() // ends the wait for an answer
		return
	}
	s.written = time.Now()
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

// waitUntil waits until t and reports whether t came before ctx was done.
// With spin it sleeps until spinWindow before t and spins from then on,
// keeping its processor (a releaser locked to its thread that yielded it
// would put the thread to sleep until its next turn); without, it sleeps
// (sleepUntil).
func waitUntil(ctx context.Context, t time.Time, spin bool) bool {
	if !spin {
		return sleepUntil(ctx, t)
	}
	if time.Until(t) > spinWindow && !sleepUntil(ctx, t.Add(-spinWindow)) {
		return false
	}
	for time.Now().Before(t) {
	}
	return ctx.Err() == nil
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
