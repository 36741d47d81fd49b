package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios"
)

// testTarget is a loopback API: it records every request it answers and,
// when limit is set, rejects with 429 and Retry-After what an in-memory
// limiter keyed by identity and path rejects.
type testTarget struct {
	header string
	limit  *limiter.Limit
	store  *limiter.MemoryStore

	mu      sync.Mutex
	seen    map[string]seenRequest // by RequestIDHeader
	remotes map[string]bool
}

type seenRequest struct {
	identity, path, remote string
	allowed                bool
}

func newTestTarget(t *testing.T, header, limit string) (*testTarget, *httptest.Server) {
	t.Helper()
	tt := &testTarget{header: header, store: limiter.NewMemoryStore(), seen: map[string]seenRequest{}, remotes: map[string]bool{}}
	if limit != "" {
		l, err := limiter.ParseLimit(limit)
		if err != nil {
			t.Fatal(err)
		}
		tt.limit = &l
	}
	srv := httptest.NewServer(tt)
	t.Cleanup(srv.Close)
	return tt, srv
}

func (tt *testTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	identity := r.Header.Get(tt.header)
	allowed := true
	if tt.limit != nil {
		d, err := tt.store.AllowN(r.Context(), identity+r.URL.Path, 1, *tt.limit)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		allowed = d.Allowed
		if !allowed {
			w.Header().Set("Retry-After", strconv.FormatInt(d.RetryAfterSeconds(), 10))
		}
	}
	tt.mu.Lock()
	tt.seen[r.Header.Get(RequestIDHeader)] = seenRequest{identity: identity, path: r.URL.Path, remote: r.RemoteAddr, allowed: allowed}
	tt.remotes[r.RemoteAddr] = true
	tt.mu.Unlock()
	if !allowed {
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	io.WriteString(w, "a body the generator reads and discards")
}

func (tt *testTarget) count() int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return len(tt.seen)
}

// scenario parses a scenario with n external instances and the given
// identities and traffic sections.
func scenario(t testing.TB, n int, routes, identities, traffic string) *scenarios.Scenario {
	t.Helper()
	ext := make([]string, n)
	for i := range ext {
		ext[i] = fmt.Sprintf("%q", fmt.Sprintf("http://127.0.0.1:%d", i+1))
	}
	src := fmt.Sprintf("name: test\ndescription: traffic test\nseed: 42\ntarget:\n  external: [%s]\n  routes:\n%s\nidentities:\n%s\ntraffic:\n%s\n",
		strings.Join(ext, ", "), routes, identities, traffic)
	s, err := scenarios.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return s
}

const oneRoute = `    - path: /api/items
      policies: ["gcra:10/1s,burst=10"]`

// collect runs cfg and returns the results sorted by ID.
func collect(t *testing.T, ctx context.Context, cfg Config) ([]*Result, *Stats, error) {
	t.Helper()
	var results []*Result
	cfg.OnResult = func(r *Result) { results = append(results, r) }
	stats, err := Run(ctx, cfg)
	sort.Slice(results, func(i, j int) bool { return results[i].ID < results[j].ID })
	return results, stats, err
}

func TestRunConstant(t *testing.T) {
	t1, s1 := newTestTarget(t, "X-API-Key", "")
	t2, s2 := newTestTarget(t, "X-API-Key", "")
	sc := scenario(t, 2, oneRoute, "  count: 4", "  - {kind: constant, rate: 200/1s, duration: 500ms}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{s1.URL, s2.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ps := stats.Phases[0]
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"results", len(results), 100},
		{"Planned", ps.Planned, 100},
		{"Sent", ps.Sent, 100},
		{"Admitted", ps.Admitted, 100},
		{"Errors", ps.Errors, 0},
		{"instance 0 requests", t1.count(), 50},
		{"instance 1 requests", t2.count(), 50},
		{"Dropped", stats.Dropped, 0},
		{"latency count", int(ps.Latency.FromSent.TotalCount()), 100},
		{"intended latency count", int(ps.Routes["/api/items"].FromIntended.TotalCount()), 100},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	// Every result must describe the request the target saw under its ID.
	for i, r := range results {
		if got, want := r.ID, uint64(i+1); got != want {
			t.Fatalf("result %d has ID %d, want %d", i, got, want)
		}
		tt := []*testTarget{t1, t2}[r.Instance]
		tt.mu.Lock()
		seen, ok := tt.seen[strconv.FormatUint(r.ID, 10)]
		tt.mu.Unlock()
		if !ok {
			t.Fatalf("result %d: instance %d never saw request %d", i, r.Instance, r.ID)
		}
		if seen.identity != r.Identity || seen.path != r.Route {
			t.Errorf("result %d: identity, route = %s %s; the target saw %s %s", r.ID, r.Identity, r.Route, seen.identity, seen.path)
		}
		if r.Status != http.StatusOK || r.Err != "" || r.Cost != 1 {
			t.Errorf("result %d: status %d, err %q, cost %d", r.ID, r.Status, r.Err, r.Cost)
		}
		if r.Received.Before(r.Sent) || r.Intended.IsZero() {
			t.Errorf("result %d: intended %v, sent %v, received %v out of order", r.ID, r.Intended, r.Sent, r.Received)
		}
		if r.InstanceName != scenarios.InstanceName(r.Instance) || r.InstanceName != "instance-"+strconv.Itoa(r.Instance+1) {
			t.Errorf("result %d: InstanceName = %q", r.ID, r.InstanceName)
		}
	}
}

func TestRunRejectionsAreOutcomes(t *testing.T) {
	tt, srv := newTestTarget(t, "X-API-Key", "gcra:1/1m,burst=5")
	sc := scenario(t, 1, oneRoute, "  count: 3", "  - {kind: ramp, from: 0/1s, to: 200/1s, duration: 500ms}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ps := stats.Phases[0]
	if got, want := ps.Sent, 50; got != want {
		t.Fatalf("Sent = %d, want %d", got, want)
	}
	if ps.Errors != 0 || ps.Admitted+ps.Rejected != ps.Sent {
		t.Errorf("Admitted %d + Rejected %d + Errors %d != Sent %d", ps.Admitted, ps.Rejected, ps.Errors, ps.Sent)
	}
	admitted := map[string]int{}
	for _, r := range results {
		tt.mu.Lock()
		seen := tt.seen[strconv.FormatUint(r.ID, 10)]
		tt.mu.Unlock()
		if got, want := r.Status == http.StatusOK, seen.allowed; got != want {
			t.Errorf("result %d: admitted = %v, the target decided %v", r.ID, got, want)
		}
		if r.Status == http.StatusTooManyRequests {
			if r.Err != "" {
				t.Errorf("result %d: a 429 carries error %q; it is an outcome", r.ID, r.Err)
			}
			if _, ok := RetryAfter(r.Header); !ok {
				t.Errorf("result %d: 429 without a Retry-After header in the result", r.ID)
			}
		} else {
			admitted[r.Identity]++
		}
	}
	for id, n := range admitted {
		if n != 5 {
			t.Errorf("identity %s: %d admitted, want the burst of 5", id, n)
		}
	}
}

func TestRunBurst(t *testing.T) {
	tt, srv := newTestTarget(t, "X-API-Key", "gcra:10/1m,burst=10")
	sc := scenario(t, 1, oneRoute, "  count: 1", "  - {kind: burst, requests: 100, spread: 5ms}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(results), 100; got != want {
		t.Fatalf("%d results, want %d", got, want)
	}
	if got, want := stats.Phases[0].Admitted, 10; got != want {
		t.Errorf("Admitted = %d, want %d", got, want)
	}
	tt.mu.Lock()
	conns := len(tt.remotes)
	tt.mu.Unlock()
	if got, want := conns, 100; got != want {
		t.Errorf("the target saw %d connections, want one per request: %d", got, want)
	}
	first, last := results[0].Intended, results[0].Intended
	for _, r := range results {
		if r.Intended.Before(first) {
			first = r.Intended
		}
		if r.Intended.After(last) {
			last = r.Intended
		}
	}
	if got, want := last.Sub(first), 5*time.Millisecond; got != want {
		t.Errorf("intended sends span %v, want the spread %v", got, want)
	}
	ps := stats.Phases[0]
	if got, want := ps.Spread, 5*time.Millisecond; got != want {
		t.Errorf("Spread = %v, want %v", got, want)
	}
	if len(ps.Bursts) != 1 {
		t.Fatalf("%d bursts recorded, want 1", len(ps.Bursts))
	}
	b := ps.Bursts[0]
	if b.Requests != 100 || b.Sent != 100 || b.Written != 100 {
		t.Errorf("Requests, Sent, Written = %d, %d, %d; want 100 each", b.Requests, b.Sent, b.Written)
	}
	if !b.Intended.Equal(first) {
		t.Errorf("burst Intended = %v, want the first planned send %v", b.Intended, first)
	}
	sent0, sent1 := results[0].Sent, results[0].Sent
	for _, r := range results {
		if r.Sent.Before(sent0) {
			sent0 = r.Sent
		}
		if r.Sent.After(sent1) {
			sent1 = r.Sent
		}
	}
	if !b.FirstSent.Equal(sent0) || !b.LastSent.Equal(sent1) {
		t.Errorf("FirstSent, LastSent = %v, %v after the planned start; want the results' %v, %v",
			b.FirstSent.Sub(first), b.LastSent.Sub(first), sent0.Sub(first), sent1.Sub(first))
	}
	if got, want := ps.AchievedSpread(), max(b.LastSent.Sub(b.FirstSent), b.LastWritten.Sub(b.FirstWritten)); got != want {
		t.Errorf("AchievedSpread = %v, want %v", got, want)
	}
}

func TestRunEdgeBurst(t *testing.T) {
	_, srv := newTestTarget(t, "X-API-Key", "")
	const offset = 3*time.Second + 123*time.Microsecond
	sc := scenario(t, 1, `    - path: /api/items
      policies: ["fixed_window:10/200ms"]`, "  count: 1",
		"  - {kind: edge_burst, requests: 5, offset: 30ms, spread: 2ms}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}, ClockOffset: offset})
	if err != nil {
		t.Fatal(err)
	}
	ps := stats.Phases[0]
	if got := ps.Edge.UnixNano() % int64(200*time.Millisecond); got != 0 {
		t.Errorf("Edge %v is %dns past a 200ms window edge, want 0", ps.Edge, got)
	}
	if got, want := ps.Edge.Sub(ps.EdgeLocal.Round(0)), offset; got != want {
		t.Errorf("Edge - EdgeLocal = %v, want the clock offset %v", got, want)
	}
	if got, want := len(results), 10; got != want {
		t.Fatalf("%d results, want %d", got, want)
	}
	want := EdgeTimes(ps.EdgeLocal, 5, 30*time.Millisecond, 2*time.Millisecond)
	for i, r := range results {
		if !r.Intended.Equal(want[i]) {
			t.Errorf("request %d intended at edge%+v, want edge%+v", i, r.Intended.Sub(ps.EdgeLocal), want[i].Sub(ps.EdgeLocal))
		}
	}
}

func TestRunHonouringRetryAfter(t *testing.T) {
	_, srv := newTestTarget(t, "X-API-Key", "gcra:2/1s,burst=2")
	sc := scenario(t, 1, oneRoute, "  count: 2", "  - {kind: constant, rate: 40/1s, duration: 1500ms, honor_retry_after: true}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ps := stats.Phases[0]
	if ps.Withheld == 0 || ps.Rejected == 0 {
		t.Fatalf("Withheld = %d, Rejected = %d; want both above 0", ps.Withheld, ps.Rejected)
	}
	if got, want := ps.Sent+ps.Withheld, ps.Planned; got != want {
		t.Errorf("Sent + Withheld = %d, want Planned %d", got, want)
	}
	if ps.Delivered() != float64(ps.OnTime)/float64(ps.Planned-ps.Withheld) {
		t.Errorf("Delivered() = %v does not discount withheld requests", ps.Delivered())
	}
	// No client sends while it has been told to wait.
	for _, rej := range results {
		wait, ok := RetryAfter(rej.Header)
		if rej.Status != http.StatusTooManyRequests || !ok {
			continue
		}
		for _, r := range results {
			if r.Identity == rej.Identity && r.Sent.After(rej.Received) && r.Sent.Before(rej.Received.Add(wait)) {
				t.Fatalf("request %d of %s sent %v after rejection %d told it to wait %v", r.ID, r.Identity, r.Sent.Sub(rej.Received), rej.ID, wait)
			}
		}
	}
}

func TestRunProbe(t *testing.T) {
	_, srv := newTestTarget(t, "X-API-Key", "gcra:1/1s,burst=3")
	sc := scenario(t, 2, oneRoute, "  count: 5", "  - {kind: retry_after_probe, requests: 10}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL, srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ps := stats.Phases[0]
	if !ps.ProbeRejected || !ps.ProbeRetried || !ps.ProbeAdmitted || ps.ProbeWait != time.Second {
		t.Fatalf("ProbeRejected, ProbeAdmitted, ProbeWait = %v, %v, %v; want true, true, 1s", ps.ProbeRejected, ps.ProbeAdmitted, ps.ProbeWait)
	}
	if got, want := len(results), 5; got != want {
		t.Fatalf("%d results, want 3 admitted, 1 rejected and the retry", got)
	}
	last := results[len(results)-1]
	if last.Probe != ProbeRetry || last.Status != http.StatusOK || last.Waited < time.Second {
		t.Errorf("retry: role %d, status %d, waited %v", last.Probe, last.Status, last.Waited)
	}
	for _, r := range results {
		if r.Identity != "key-0005" {
			t.Errorf("probe request %d used identity %s, want the unused key-0005", r.ID, r.Identity)
		}
	}
}

func TestCollectorCountsDrops(t *testing.T) {
	ph := []scenarios.Phase{{Name: "p", Kind: scenarios.Burst}}
	c := newCollector(ph, Config{HandoffBuffer: 1, LagTolerance: DefaultLagTolerance})
	inCallback := make(chan struct{})
	release := make(chan struct{})
	consumed := 0
	c.start(func(*Result) {
		consumed++
		if consumed == 1 {
			close(inCallback)
			<-release
		}
	})
	now := time.Now()
	res := func() *Result { return &Result{Route: "/", Status: 200, Intended: now, Sent: now, Received: now} }
	c.add(res())
	<-inCallback
	for range 19 {
		c.add(res())
	}
	// The statistics goroutine drains c.in whatever the consumer does.
	for c.dropped.Load() < 18 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	stats := c.finish()
	if stats.Dropped != 18 || consumed != 2 || stats.Phases[0].Sent != 20 {
		t.Errorf("Dropped, consumed, Sent = %d, %d, %d; want 18, 2, 20", stats.Dropped, consumed, stats.Phases[0].Sent)
	}
}

func TestRunCancel(t *testing.T) {
	_, srv := newTestTarget(t, "X-API-Key", "")
	sc := scenario(t, 1, oneRoute, "  count: 1", "  - {kind: constant, rate: 100/1s, duration: 1m}\n  - {kind: idle, duration: 1m}")
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	cfg := Config{Scenario: sc, BaseURLs: []string{srv.URL}, OnResult: func(*Result) { once.Do(cancel) }}
	stats, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	if ps := stats.Phases[0]; ps.Sent == 0 || ps.Sent >= ps.Planned {
		t.Errorf("Sent = %d of %d planned; want a cancelled phase", ps.Sent, ps.Planned)
	}
}

func TestRunConfigErrors(t *testing.T) {
	sc := scenario(t, 2, oneRoute, "  count: 1", "  - {kind: idle, duration: 1ms}")
	for _, cfg := range []Config{
		{BaseURLs: []string{"http://127.0.0.1:1"}},
		{Scenario: sc, BaseURLs: []string{"http://127.0.0.1:1"}},
		{Scenario: sc, BaseURLs: []string{"http://127.0.0.1:1", "ftp://x"}},
		{Scenario: sc, BaseURLs: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, InstanceNames: []string{"a"}},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) error = %v, want ErrConfig", cfg.BaseURLs, err)
		}
	}
}

func TestPlannerDistributions(t *testing.T) {
	tests := []struct {
		name       string
		identities string
		hotMin     float64
		hotMax     float64
	}{
		{"uniform", "  count: 10", 0.08, 0.12},
		{"hot", "  count: 10\n  distribution: hot\n  share: 0.8", 0.78, 0.82},
		{"zipf", "  count: 100\n  distribution: zipf\n  s: 2", 0.55, 0.67},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := scenario(t, 3, oneRoute, tt.identities, "  - {kind: constant, rate: 1/1s, duration: 1s}")
			p := newPlanner(sc, sc.Phases[0], newRand(sc.Seed, 0), 0)
			items := p.plan(20000)
			hot, perInstance := 0, [3]int{}
			for _, it := range items {
				if it.identity == 0 {
					hot++
				}
				if it.identity < 0 || it.identity >= sc.Identities.Count {
					t.Fatalf("identity %d out of range", it.identity)
				}
				perInstance[it.instance]++
			}
			if share := float64(hot) / float64(len(items)); share < tt.hotMin || share > tt.hotMax {
				t.Errorf("identity 0 got %.3f of requests, want [%v, %v]", share, tt.hotMin, tt.hotMax)
			}
			if perInstance[0] != perInstance[1] || perInstance[1] < perInstance[2] || perInstance[1]-perInstance[2] > 1 {
				t.Errorf("round robin gave %v", perInstance)
			}
			// The same seed gives the same plan.
			again := newPlanner(sc, sc.Phases[0], newRand(sc.Seed, 0), 0).plan(100)
			for i := range again {
				if again[i].identity != items[i].identity || again[i].route != items[i].route {
					t.Fatalf("plan differs at %d with the same seed", i)
				}
			}
		})
	}
}

func TestRouteWeights(t *testing.T) {
	sc := scenario(t, 1, `    - path: /cheap
      policies: ["gcra:10/1s,burst=10"]
    - path: /dear
      cost: 5
      policies: ["gcra:10/1s,burst=10"]`, "  count: 1",
		"  - {kind: constant, rate: 1/1s, duration: 1s, routes: [{path: /cheap, weight: 3}, {path: /dear, weight: 1}]}")
	e, err := newEngine(Config{Scenario: sc, BaseURLs: []string{"http://a"}})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, it := range newPlanner(sc, sc.Phases[0], newRand(1, 0), 0).plan(40000) {
		counts[sc.Target.Routes[it.route].Path]++
	}
	if share := float64(counts["/cheap"]) / 40000; share < 0.74 || share > 0.76 {
		t.Errorf("/cheap got %.3f of requests, want 0.75", share)
	}
	if r := e.newResult(0, sc.Phases[0], item{route: 1}, 7); r.Cost != 5 || r.Route != "/dear" {
		t.Errorf("result for /dear: cost %d route %s", r.Cost, r.Route)
	}
}

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"1", time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"0", 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.in != "" {
			h.Set("Retry-After", tt.in)
		}
		got, ok := RetryAfter(h)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
	h := http.Header{"Retry-After": {future}}
	if got, ok := RetryAfter(h); !ok || got < 59*time.Minute || got > time.Hour {
		t.Errorf("RetryAfter(HTTP-date an hour ahead) = %v, %v", got, ok)
	}
}

func TestNextEdge(t *testing.T) {
	base := time.Unix(1_700_000_000, 0) // a multiple of 1s and 100ms
	tests := []struct {
		name                 string
		now                  time.Time
		offset, lead, window time.Duration
		wantLimiter          time.Time
	}{
		{"on an edge with no lead", base, 0, 0, time.Second, base},
		{"just past an edge", base.Add(time.Nanosecond), 0, 0, time.Second, base.Add(time.Second)},
		{"lead pushes past the edge", base.Add(900 * time.Millisecond), 0, 150 * time.Millisecond, time.Second, base.Add(2 * time.Second)},
		{"limiter ahead", base, 250 * time.Millisecond, 0, time.Second, base.Add(time.Second)},
		{"limiter behind", base, -250 * time.Millisecond, 0, time.Second, base},
		{"short window", base.Add(30 * time.Millisecond), 0, 0, 100 * time.Millisecond, base.Add(100 * time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim, local := NextEdge(tt.now, tt.offset, tt.lead, tt.window)
			if !lim.Equal(tt.wantLimiter) {
				t.Errorf("limiter edge = %v, want %v", lim.Sub(base), tt.wantLimiter.Sub(base))
			}
			if got := lim.Sub(local); got != tt.offset {
				t.Errorf("limiter - local = %v, want the offset %v", got, tt.offset)
			}
			if local.Sub(tt.now) < tt.lead {
				t.Errorf("local edge %v after now, want at least the lead %v", local.Sub(tt.now), tt.lead)
			}
		})
	}
}

func TestMeasureClockOffset(t *testing.T) {
	const skew = 5*time.Second + 7*time.Millisecond
	off, unc, err := MeasureClockOffset(context.Background(), func(context.Context) (time.Time, error) {
		return time.Now().Add(skew).Round(0), nil
	}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if d := (off - skew).Abs(); d > unc {
		t.Errorf("offset %v is %v from the true %v, beyond the uncertainty %v", off, d, skew, unc)
	}
	boom := errors.New("boom")
	if _, _, err := MeasureClockOffset(context.Background(), func(context.Context) (time.Time, error) { return time.Time{}, boom }, 0); !errors.Is(err, boom) {
		t.Errorf("error = %v, want it to wrap %v", err, boom)
	}
}

func TestCalibrate(t *testing.T) {
	cal, err := Calibrate(context.Background(), 200*time.Millisecond, 8)
	if err != nil {
		t.Fatal(err)
	}
	if cal.Requests == 0 || cal.Rate <= 0 || cal.Errors != 0 || cal.P99 < cal.P50 {
		t.Errorf("Calibrate = %+v", cal)
	}
}

func TestResultRecord(t *testing.T) {
	start := time.Now()
	r := &Result{
		ID: 3, Identity: "key-0001", InstanceName: "instance-1", Route: "/api/items", Cost: 2, Phase: "steady",
		Intended: start.Add(time.Millisecond), Sent: start.Add(2 * time.Millisecond), Received: start.Add(5 * time.Millisecond),
		Status: 429, Header: http.Header{"Retry-After": {"1"}, "Content-Type": {"text/plain"}},
	}
	rec := r.Record(start)
	if rec.IntendedNs != 1e6 || rec.SentNs != 2e6 || rec.ReceivedNs != 5e6 {
		t.Errorf("times = %d %d %d", rec.IntendedNs, rec.SentNs, rec.ReceivedNs)
	}
	if rec.Outcome.String() != "rejected" || rec.Headers["retry-after"] != "1" || len(rec.Headers) != 1 {
		t.Errorf("outcome %v, headers %v", rec.Outcome, rec.Headers)
	}
	if err := rec.Validate(); err != nil {
		t.Error(err)
	}
}

func TestRunBurstUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	sc := scenario(t, 1, oneRoute, "  count: 1", "  - {kind: burst, requests: 5}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	if ps := stats.Phases[0]; ps.Errors != 5 || ps.Sent != 5 {
		t.Fatalf("Errors, Sent = %d, %d; want 5, 5", ps.Errors, ps.Sent)
	}
	for _, r := range results {
		// The checker counts a refused connection as a request that never
		// reached the limiter.
		if r.Status != 0 || !strings.Contains(r.Err, "open connection") || !strings.Contains(r.Err, "connection refused") {
			t.Errorf("result %d: status %d, err %q; want an error opening the connection, refused", r.ID, r.Status, r.Err)
		}
	}
}

func TestRunConstantUnreachableIsErrorOutcome(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	sc := scenario(t, 1, oneRoute, "  count: 1", "  - {kind: constant, rate: 100/1s, duration: 100ms}")
	results, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	if ps := stats.Phases[0]; ps.Errors != 10 || ps.Sent != 10 {
		t.Fatalf("Errors, Sent = %d, %d; want 10, 10", ps.Errors, ps.Sent)
	}
	for _, r := range results {
		if r.Status != 0 || r.Err == "" || r.Identity != "key-0000" {
			t.Errorf("result %d: status %d, err %q, identity %q", r.ID, r.Status, r.Err, r.Identity)
		}
	}
}

func TestRunIDNamesIdentities(t *testing.T) {
	tt, srv := newTestTarget(t, "X-API-Key", "")
	tests := []struct {
		name, identities string
		run              scenarios.RunID
		want             []string
	}{
		{"fresh", "  count: 2", "3f9a1c07", []string{"key-3f9a1c07-0000", "key-3f9a1c07-0001"}},
		{"fixed", "  count: 2\n  fixed: true", "3f9a1c07", []string{"key-0000", "key-0001"}},
		{"no run id", "  count: 2", "", []string{"key-0000", "key-0001"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario(t, 1, oneRoute, tc.identities, "  - {kind: burst, requests: 8}")
			results, _, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}, RunID: tc.run})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, r := range results {
				got[r.Identity] = true
				tt.mu.Lock()
				seen := tt.seen[strconv.FormatUint(r.ID, 10)].identity
				tt.mu.Unlock()
				if seen != r.Identity {
					t.Errorf("result %d: the target saw identity %q, the result says %q", r.ID, seen, r.Identity)
				}
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("identities sent %v; %s missing", got, w)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("identities sent %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRunProbeVerdicts(t *testing.T) {
	tests := []struct {
		name                               string
		retryAfter                         string // on every 429
		wantRejected, wantRetried, wantAdm bool
	}{
		{"lying Retry-After", "0", true, true, false},
		{"no Retry-After", "", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			served := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				served++
				n := served
				mu.Unlock()
				if n <= 2 {
					return // the first two are admitted, the rest rejected
				}
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(http.StatusTooManyRequests)
			}))
			defer srv.Close()
			sc := scenario(t, 1, oneRoute, "  count: 1", "  - {kind: retry_after_probe, requests: 10}")
			_, stats, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}})
			if err != nil {
				t.Fatal(err)
			}
			ps := stats.Phases[0]
			if ps.ProbeRejected != tt.wantRejected || ps.ProbeRetried != tt.wantRetried || ps.ProbeAdmitted != tt.wantAdm {
				t.Errorf("ProbeRejected, ProbeRetried, ProbeAdmitted = %v, %v, %v; want %v, %v, %v",
					ps.ProbeRejected, ps.ProbeRetried, ps.ProbeAdmitted, tt.wantRejected, tt.wantRetried, tt.wantAdm)
			}
			wantSent := 3
			if tt.wantRetried {
				wantSent = 4
			}
			if ps.Sent != wantSent || ps.Planned != wantSent {
				t.Errorf("Sent, Planned = %d, %d; want %d", ps.Sent, ps.Planned, wantSent)
			}
		})
	}
}

func TestHostPort(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:8080", "127.0.0.1:8080"},
		{"http://localhost", "localhost:80"},
		{"https://api.example", "api.example:443"},
		{"http://[::1]", "[::1]:80"},
		{"http://[::1]:9000", "[::1]:9000"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostPort(u); got != tt.want {
			t.Errorf("hostPort(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
