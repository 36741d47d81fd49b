package traffic

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// arrivals is a loopback API that notes, per request ID (RequestIDHeader),
// how many times the request reached it and when its handler first ran,
// on the test's own monotonic clock.
type arrivals struct {
	mu   sync.Mutex
	seen map[string]int
	at   map[string]time.Time
}

func newArrivals() *arrivals {
	return &arrivals{seen: map[string]int{}, at: map[string]time.Time{}}
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	id := r.Header.Get(RequestIDHeader)
	a.mu.Lock()
	a.seen[id]++
	if _, ok := a.at[id]; !ok {
		a.at[id] = now
	}
	a.mu.Unlock()
	io.WriteString(w, "ok")
}

// fireAll runs sc's phases against urls as Run does, with the engine's TLS
// client configuration set to tlsCfg, and returns the results by ID.
func fireAll(t testing.TB, cfg Config, tlsCfg *tls.Config) ([]*Result, *Stats) {
	t.Helper()
	var results []*Result
	cfg.OnResult = func(r *Result) { results = append(results, r) }
	e, err := newEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.transport.CloseIdleConnections()
	e.transport.TLSClientConfig = tlsCfg
	e.coll.start(e.cfg.OnResult)
	for i, ph := range cfg.Scenario.Phases {
		if err := e.runPhase(context.Background(), i, ph); err != nil {
			t.Fatal(err)
		}
	}
	stats := e.coll.finish()
	sort.Slice(results, func(i, j int) bool { return results[i].ID < results[j].ID })
	return results, stats
}

// TestBurstSendsEachRequestOnce: every request of a burst reaches its
// instance exactly once and is answered once, and its record brackets the
// server's own sighting of it: sent ≤ the handler's start ≤ received, so
// that the limiter's decision, made in between, lies within [sent,
// received] as the checker assumes.
func TestBurstSendsEachRequestOnce(t *testing.T) {
	tests := []struct {
		name      string
		instances int
		tls       bool
		traffic   string
		want      int
	}{
		{"one instance, all at once", 1, false, "  - {kind: burst, requests: 50}", 50},
		{"three instances, 300 within 5ms", 3, false, "  - {kind: burst, requests: 300, spread: 5ms}", 300},
		{"repeated, spread wider than a tight group", 2, false, "  - {kind: burst, requests: 20, spread: 80ms, repeat: 2, gap: 50ms}", 40},
		{"https", 2, true, "  - {kind: burst, requests: 40, spread: 2ms}", 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				urls   []string
				srvs   []*arrivals
				tlsCfg *tls.Config
			)
			for range tt.instances {
				a := newArrivals()
				var srv *httptest.Server
				if tt.tls {
					srv = httptest.NewTLSServer(a)
					if tlsCfg == nil {
						tlsCfg = &tls.Config{RootCAs: x509.NewCertPool()}
					}
					tlsCfg.RootCAs.AddCert(srv.Certificate())
				} else {
					srv = httptest.NewServer(a)
				}
				t.Cleanup(srv.Close)
				urls, srvs = append(urls, srv.URL), append(srvs, a)
			}
			sc := scenario(t, tt.instances, oneRoute, "  count: 5", tt.traffic)
			results, stats := fireAll(t, Config{Scenario: sc, BaseURLs: urls}, tlsCfg)
			if got := len(results); got != tt.want {
				t.Fatalf("%d results, want %d", got, tt.want)
			}
			for _, r := range results {
				if r.Status != http.StatusOK || r.Err != "" {
					t.Errorf("request %d: status %d, error %q; want 200", r.ID, r.Status, r.Err)
					continue
				}
				a := srvs[r.Instance]
				id := strconv.FormatUint(r.ID, 10)
				a.mu.Lock()
				n, at := a.seen[id], a.at[id]
				a.mu.Unlock()
				if n != 1 {
					t.Errorf("request %d reached %s %d times, want once", r.ID, r.InstanceName, n)
					continue
				}
				if at.Before(r.Sent) || r.Received.Before(at) {
					t.Errorf("request %d: sent %v, handled %v, received %v after its planned time; want sent ≤ handled ≤ received",
						r.ID, r.Sent.Sub(r.Intended), at.Sub(r.Intended), r.Received.Sub(r.Intended))
				}
				if r.Sent.Before(r.Intended) {
					t.Errorf("request %d sent %v before its planned time", r.ID, r.Intended.Sub(r.Sent))
				}
			}
			var seen int
			for _, a := range srvs {
				a.mu.Lock()
				for _, n := range a.seen {
					seen += n
				}
				a.mu.Unlock()
			}
			if seen != tt.want {
				t.Errorf("the instances saw %d requests, want %d", seen, tt.want)
			}
			for k, b := range stats.Phases[0].Bursts {
				if b.Sent != b.Requests || b.Written != b.Requests || b.Redialled != 0 {
					t.Errorf("burst %d: Requests, Sent, Written, Redialled = %d, %d, %d, %d; want every request sent and written once", k, b.Requests, b.Sent, b.Written, b.Redialled)
				}
			}
		})
	}
}

// impatientServer answers one request per connection and closes it, but
// gives each of the first `impatient` connections it accepts only patience
// to bring its request: past it, it closes the connection, with a 408
// first when answer408 is set (as Node's http server does past its
// headersTimeout; Go's closes silently). Later connections wait as long
// as the request takes.
type impatientServer struct {
	ln        net.Listener
	impatient int
	patience  time.Duration
	answer408 bool

	*arrivals
	dropped atomic.Int64 // connections closed for want of a request
}

func newImpatientServer(t *testing.T, impatient int, patience time.Duration, answer408 bool) *impatientServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &impatientServer{ln: ln, impatient: impatient, patience: patience, answer408: answer408, arrivals: newArrivals()}
	go s.serve()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *impatientServer) URL() string { return "http://" + s.ln.Addr().String() }

func (s *impatientServer) serve() {
	for n := 0; ; n++ {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(c, n < s.impatient)
	}
}

func (s *impatientServer) handle(c net.Conn, impatient bool) {
	defer c.Close()
	if impatient {
		c.SetReadDeadline(time.Now().Add(s.patience))
	}
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		s.dropped.Add(1)
		if s.answer408 {
			io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		}
		return
	}
	rec := httptest.NewRecorder()
	s.arrivals.ServeHTTP(rec, req)
	fmt.Fprintf(c, "HTTP/1.1 %d OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", rec.Code, rec.Body.Len(), rec.Body)
}

// TestBurstRedialsConnectionsClosedBeforeRelease: a target that closes
// connections idle for 5 ms, shorter than the lead between a burst's
// connections opening and its release, has closed every one of them
// before its request was written, so it read none; each request is sent
// again on a new connection, answered once, and counted as redialled.
func TestBurstRedialsConnectionsClosedBeforeRelease(t *testing.T) {
	const n = 20
	tests := []struct {
		name      string
		answer408 bool
	}{
		{"closed silently", false},
		{"closed after a 408", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newImpatientServer(t, n, 5*time.Millisecond, tt.answer408)
			sc := scenario(t, 1, oneRoute, "  count: 1", fmt.Sprintf("  - {kind: burst, requests: %d}", n))
			results, stats := fireAll(t, Config{Scenario: sc, BaseURLs: []string{srv.URL()}}, nil)
			if got := len(results); got != n {
				t.Fatalf("%d results, want %d", got, n)
			}
			if got := srv.dropped.Load(); got != n {
				t.Fatalf("the server dropped %d connections, want all %d it was impatient with", got, n)
			}
			for _, r := range results {
				id := strconv.FormatUint(r.ID, 10)
				srv.mu.Lock()
				seen, at := srv.seen[id], srv.at[id]
				srv.mu.Unlock()
				if r.Status != http.StatusOK || r.Err != "" || seen != 1 {
					t.Errorf("request %d: status %d, error %q, seen %d times; want 200, seen once", r.ID, r.Status, r.Err, seen)
					continue
				}
				if at.Before(r.Sent) || r.Received.Before(at) {
					t.Errorf("request %d: sent %v, handled %v, received %v after its planned time; want sent ≤ handled ≤ received",
						r.ID, r.Sent.Sub(r.Intended), at.Sub(r.Intended), r.Received.Sub(r.Intended))
				}
			}
			b := stats.Phases[0].Bursts[0]
			if b.Requests != n || b.Sent != n || b.Written != n || b.Redialled != n {
				t.Errorf("Requests, Sent, Written, Redialled = %d, %d, %d, %d; want %d each", b.Requests, b.Sent, b.Written, b.Redialled, n)
			}
		})
	}
}

// BenchmarkBurst1000 fires a burst of 1,000 requests planned within 5 ms
// at three loopback instances and reports the achieved spread (the larger
// of the first-to-last send and the first-to-last write, as load-delivered
// judges it) in ms: the mean over iterations, and the widest.
func BenchmarkBurst1000(b *testing.B) {
	var urls []string
	for range 3 {
		srv := httptest.NewServer(newArrivals())
		b.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	sc := scenario(b, 3, oneRoute, "  count: 1", "  - {kind: burst, requests: 1000, spread: 5ms}")
	var sum, widest time.Duration
	var raised int
	b.ReportAllocs()
	for b.Loop() {
		_, stats := fireAll(b, Config{Scenario: sc, BaseURLs: urls}, nil)
		bs := stats.Phases[0].Bursts[0]
		if bs.Sent != 1000 {
			b.Fatalf("%d of 1000 sent", bs.Sent)
		}
		sum += bs.Achieved()
		widest = max(widest, bs.Achieved())
		if bs.Raised {
			raised++
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(sum)/float64(b.N), "spread-ms")
	b.ReportMetric(ms(widest), "widest-spread-ms")
	b.ReportMetric(float64(raised)/float64(b.N), "raised")
}
