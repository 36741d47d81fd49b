package traffic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// windowServer is a correct fixed window of limit requests per window per
// API key, windows aligned on Unix time on the server's own clock, served
// by an http.Server with the given ReadHeaderTimeout and IdleTimeout. It
// notes, per connection, when it was accepted and when its request's
// headers had arrived, so that a test can see how long a connection sat
// idle.
type windowServer struct {
	limit  int
	window time.Duration

	mu       sync.Mutex
	counts   map[string]int // by key and window start
	admitted map[int64]int  // by window start, in ns since the epoch
	accepted map[string]time.Time
	maxIdle  time.Duration
}

func newWindowServer(t *testing.T, limit int, window, headerTimeout time.Duration) (*windowServer, *httptest.Server) {
	t.Helper()
	ws := &windowServer{limit: limit, window: window, counts: map[string]int{}, admitted: map[int64]int{}, accepted: map[string]time.Time{}}
	srv := httptest.NewUnstartedServer(ws)
	srv.Config.ReadHeaderTimeout = headerTimeout
	srv.Config.IdleTimeout = headerTimeout
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			ws.mu.Lock()
			ws.accepted[c.RemoteAddr().String()] = time.Now()
			ws.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return ws, srv
}

func (ws *windowServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	start := now.UnixNano() / int64(ws.window) * int64(ws.window)
	key := r.Header.Get("X-API-Key") + "@" + strconv.FormatInt(start, 10)
	ws.mu.Lock()
	if acc, ok := ws.accepted[r.RemoteAddr]; ok {
		ws.maxIdle = max(ws.maxIdle, now.Sub(acc))
	}
	allowed := ws.counts[key] < ws.limit
	if allowed {
		ws.counts[key]++
		ws.admitted[start]++
	}
	ws.mu.Unlock()
	if !allowed {
		reset := time.Unix(0, start).Add(ws.window).Sub(now)
		w.Header().Set("Retry-After", strconv.FormatInt(int64((reset+time.Second-1)/time.Second), 10))
		w.WriteHeader(http.StatusTooManyRequests)
	}
}

// TestEdgeBurstReadHeaderTimeout is field case C20: a server that drops a
// connection whose request headers have not arrived within 2 s of its
// accept (Go's ReadHeaderTimeout) and that keeps a correct fixed window of
// 5 per 5 s sees every request of an edge burst around its 5 s window's
// edge, since no connection is opened long before its request. Run it with
// -count=20 to see every run pass.
func TestEdgeBurstReadHeaderTimeout(t *testing.T) {
	const headerTimeout = 2 * time.Second
	ws, srv := newWindowServer(t, 5, 5*time.Second, headerTimeout)
	sc := scenario(t, 1, `    - path: /api/items
      policies: ["fixed_window:5/5s"]`, "  count: 1", "  - {kind: edge_burst, requests: 5}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(results), 10; got != want {
		t.Fatalf("%d results, want %d", got, want)
	}
	for _, r := range results {
		if r.Status == 0 || r.Err != "" {
			t.Errorf("request %d, sent at edge%+v: status %d, error %q; want an answer", r.ID, r.Sent.Sub(stats.Phases[0].EdgeLocal), r.Status, r.Err)
		}
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.maxIdle >= headerTimeout {
		t.Errorf("a connection waited %v for its request, not under the server's ReadHeaderTimeout %v", ws.maxIdle, headerTimeout)
	}
	// Each half lands in its own window, whose 5 it fills.
	var total int
	for start, n := range ws.admitted {
		if n > 5 {
			t.Errorf("window from %v admitted %d, want at most 5", time.Unix(0, start), n)
		}
		total += n
	}
	if got, want := total, 10; got != want {
		t.Errorf("%d admitted, want 5 on each side of the edge: %d", got, want)
	}
	ps := stats.Phases[0]
	if got, want := len(ps.Bursts), 2; got != want {
		t.Fatalf("%d bursts recorded, want the edge burst's two halves", got)
	}
	for i, b := range ps.Bursts {
		if b.Requests != 5 || b.Sent != 5 || b.Written != 5 {
			t.Errorf("half %d: Requests, Sent, Written = %d, %d, %d; want 5 each", i, b.Requests, b.Sent, b.Written)
		}
		if b.MaxIdle >= headerTimeout {
			t.Errorf("half %d: MaxIdle = %v, want under %v", i, b.MaxIdle, headerTimeout)
		}
	}
}

// TestBurstSpreadOpensConnectionsLate: a burst spread over a second opens
// each connection shortly before its own send, not every connection before
// the first; the server sees none wait long for its request.
func TestBurstSpreadOpensConnectionsLate(t *testing.T) {
	ws, srv := newWindowServer(t, 100, time.Minute, 2*time.Second)
	sc := scenario(t, 1, oneRoute, "  count: 1", "  - {kind: burst, requests: 6, spread: 1s}")
	const lead = 50 * time.Millisecond
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}, ConnLead: lead})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(results), 6; got != want {
		t.Fatalf("%d results, want %d", got, want)
	}
	for _, r := range results {
		if r.Status != http.StatusOK {
			t.Errorf("request %d: status %d, error %q", r.ID, r.Status, r.Err)
		}
	}
	// The sends lie 200ms apart; a connection opened with the first group
	// would wait at least that long.
	ws.mu.Lock()
	idle := ws.maxIdle
	ws.mu.Unlock()
	if idle >= 200*time.Millisecond {
		t.Errorf("a connection waited %v for its request; with sends 200ms apart and a lead of %v, each opens shortly before its own", idle, lead)
	}
	if got := stats.Phases[0].Bursts[0].MaxIdle; got >= 200*time.Millisecond {
		t.Errorf("MaxIdle = %v, want under 200ms", got)
	}
}

// TestRunRepeatedBurst: a burst repeated N times sends N×requests in N
// groups, each within its spread, gap apart; an idle phase before it works
// as a pause.
func TestRunRepeatedBurst(t *testing.T) {
	_, srv := newTestTarget(t, "X-API-Key", "")
	const (
		n, reps = 8, 4
		spread  = 2 * time.Millisecond
		gap     = 300 * time.Millisecond
	)
	sc := scenario(t, 1, oneRoute, "  count: 3", "  - {kind: idle, duration: 100ms}\n  - {kind: burst, requests: 8, spread: 2ms, repeat: 4, gap: 300ms}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(results), n*reps; got != want {
		t.Fatalf("%d results, want %d", got, want)
	}
	idle, ps := stats.Phases[0], stats.Phases[1]
	if !ps.Began.After(idle.Began.Add(100 * time.Millisecond)) {
		t.Errorf("the burst began %v after the idle phase, want at least 100ms", ps.Began.Sub(idle.Began))
	}
	if got, want := ps.Planned, n*reps; got != want {
		t.Errorf("Planned = %d, want %d", got, want)
	}
	if got, want := ps.PlannedDuration, reps*spread+(reps-1)*gap; got != want {
		t.Errorf("PlannedDuration = %v, want %v", got, want)
	}
	// The plan: burst k's sends at first + k·(spread+gap) + i·spread/(n−1).
	first := results[0].Intended
	for i, r := range results {
		k, j := i/n, i%n
		want := first.Add(time.Duration(k)*(spread+gap) + spread*time.Duration(j)/(n-1))
		if !r.Intended.Equal(want) {
			t.Errorf("request %d (burst %d, send %d) intended at +%v, want +%v", r.ID, k, j, r.Intended.Sub(first), want.Sub(first))
		}
		if r.Status != http.StatusOK {
			t.Errorf("request %d: status %d, error %q", r.ID, r.Status, r.Err)
		}
	}
	if got, want := len(ps.Bursts), reps; got != want {
		t.Fatalf("%d bursts recorded, want %d", got, want)
	}
	for k, b := range ps.Bursts {
		if b.Requests != n || b.Sent != n || b.Written != n {
			t.Errorf("burst %d: Requests, Sent, Written = %d, %d, %d; want %d each", k, b.Requests, b.Sent, b.Written, n)
		}
		if want := first.Add(time.Duration(k) * (spread + gap)); !b.Intended.Equal(want) {
			t.Errorf("burst %d: Intended +%v, want +%v", k, b.Intended.Sub(first), want.Sub(first))
		}
		if b.FirstSent.Before(b.Intended) {
			t.Errorf("burst %d: first send %v before its planned time", k, b.Intended.Sub(b.FirstSent))
		}
		if got, want := b.SentSpread(), b.LastSent.Sub(b.FirstSent); got != want {
			t.Errorf("burst %d: SentSpread = %v, want %v", k, got, want)
		}
		if k == 0 {
			continue
		}
		// Groups apart by about the gap: sends never precede their plan,
		// and a loaded machine delays them by far less than the gap.
		if got := b.FirstSent.Sub(ps.Bursts[k-1].LastSent); got < gap/2 || got > 3*gap/2 {
			t.Errorf("burst %d began %v after burst %d ended, want about the gap %v", k, got, k-1, gap)
		}
	}
	if got, want := ps.AchievedSpread(), maxAchieved(ps.Bursts); got != want {
		t.Errorf("AchievedSpread = %v, want the widest burst's %v", got, want)
	}
}

func maxAchieved(bs []BurstStats) time.Duration {
	var d time.Duration
	for _, b := range bs {
		if a := max(b.LastSent.Sub(b.FirstSent), b.LastWritten.Sub(b.FirstWritten)); a > d {
			d = a
		}
	}
	return d
}

func TestBurstStatsSpreads(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	tests := []struct {
		name                   string
		shots                  []shot
		sent, written, achieve time.Duration
		idle                   time.Duration
	}{
		{"none sent", []shot{{intended: at(0)}, {intended: at(1)}}, 0, 0, 0, 0},
		{"one sent", []shot{{intended: at(0), sent: at(0), written: at(0.1), opened: at(-50)}}, 0, 0, 0, 50100 * time.Microsecond},
		{"writes wider than sends", []shot{
			{intended: at(0), opened: at(-100), sent: at(0), written: at(0.5)},
			{intended: at(1), opened: at(-99), sent: at(2), written: at(9)},
			{intended: at(2), opened: at(-98), sent: at(3), written: at(3.5)},
		}, 3 * time.Millisecond, 8500 * time.Microsecond, 8500 * time.Microsecond, 108 * time.Millisecond},
		{"a write that failed", []shot{
			{intended: at(0), opened: at(-10), sent: at(0), written: at(1)},
			{intended: at(0), opened: at(-10), sent: at(7)},
		}, 7 * time.Millisecond, 0, 7 * time.Millisecond, 11 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b BurstStats
			for i := range tt.shots {
				b.add(&tt.shots[i])
			}
			if got := b.SentSpread(); got != tt.sent {
				t.Errorf("SentSpread = %v, want %v", got, tt.sent)
			}
			if got := b.WrittenSpread(); got != tt.written {
				t.Errorf("WrittenSpread = %v, want %v", got, tt.written)
			}
			if got := b.Achieved(); got != tt.achieve {
				t.Errorf("Achieved = %v, want %v", got, tt.achieve)
			}
			if got := b.MaxIdle; got != tt.idle {
				t.Errorf("MaxIdle = %v, want %v", got, tt.idle)
			}
			if !b.Intended.Equal(t0) {
				t.Errorf("Intended = %v, want the first planned send %v", b.Intended, t0)
			}
		})
	}
}

// TestRunBurstHTTPS: an https burst completes each TLS handshake before
// its send, verifying the server as the shared transport does.
func TestRunBurstHTTPS(t *testing.T) {
	tt := &testTarget{header: "X-API-Key", seen: map[string]seenRequest{}, remotes: map[string]bool{}}
	srv := httptest.NewTLSServer(tt)
	defer srv.Close()
	sc := scenario(t, 1, oneRoute, "  count: 1", "  - {kind: burst, requests: 3}")
	run := func(roots *x509.CertPool) []*Result {
		var results []*Result
		e, err := newEngine(Config{Scenario: sc, BaseURLs: []string{srv.URL}, OnResult: func(r *Result) { results = append(results, r) }})
		if err != nil {
			t.Fatal(err)
		}
		e.transport.TLSClientConfig = &tls.Config{RootCAs: roots}
		e.coll.start(e.cfg.OnResult)
		if err := e.runPhase(context.Background(), 0, sc.Phases[0]); err != nil {
			t.Fatal(err)
		}
		e.coll.finish()
		return results
	}
	trusted := x509.NewCertPool()
	trusted.AddCert(srv.Certificate())
	for _, r := range run(trusted) {
		if r.Status != http.StatusOK {
			t.Errorf("request %d: status %d, error %q; want 200", r.ID, r.Status, r.Err)
		}
	}
	if got, want := tt.count(), 3; got != want {
		t.Errorf("the target answered %d requests, want %d", got, want)
	}
	for _, r := range run(x509.NewCertPool()) {
		if r.Status != 0 || !strings.Contains(r.Err, "certificate") {
			t.Errorf("request %d against an untrusted certificate: status %d, error %q; want a certificate error", r.ID, r.Status, r.Err)
		}
	}
	if got, want := tt.count(), 3; got != want {
		t.Errorf("the target answered %d requests in all, want %d: none over an unverified connection", got, want)
	}
}
