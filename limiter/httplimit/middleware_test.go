package httplimit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rlbench/rlbench/limiter"
)

// t0 is the start of every timeline: a whole second, so reset epochs are exact.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fakeClock struct{ us atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.us.Store(t0.UnixMicro())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.UnixMicro(c.us.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.us.Add(d.Microseconds()) }

// fixture is a middleware over a memory store on a fake clock, with an
// authenticator that accepts the keys in plans.
type fixture struct {
	clock *fakeClock
	store *limiter.MemoryStore
	reg   *prometheus.Registry
	logs  *bytes.Buffer
	h     http.Handler
	calls atomic.Int64 // requests that reached the handler
}

var (
	minute = limiter.Limit{Name: "minute", Algorithm: limiter.TokenBucket, Rate: 10, Period: time.Minute, Burst: 3}
	month  = limiter.Window(limiter.FixedWindow, 4, 30*24*time.Hour)
)

func init() { month.Name = "month" }

func newFixture(t *testing.T, plans map[string][]limiter.Limit, opts ...Option) *fixture {
	t.Helper()
	f := &fixture{clock: newFakeClock(), reg: prometheus.NewRegistry(), logs: &bytes.Buffer{}}
	f.store = limiter.NewMemoryStore(limiter.WithClock(f.clock.Now))
	auth := func(r *http.Request) (Identity, error) {
		key := r.Header.Get("X-API-Key")
		if key == "" {
			return Identity{}, nil
		}
		limits, ok := plans[key]
		if !ok {
			return Identity{}, errors.New("unknown API key: " + ErrUnauthenticated.Error())
		}
		return Identity{Key: key, Limits: limits}, nil
	}
	auth2 := func(r *http.Request) (Identity, error) {
		id, err := auth(r)
		if err != nil {
			return id, errors.Join(ErrUnauthenticated, err)
		}
		return id, nil
	}
	base := []Option{
		WithAuthenticator(auth2),
		WithClock(f.clock.Now),
		WithMetrics(f.reg),
		WithLogger(slog.New(slog.NewTextHandler(f.logs, nil))),
	}
	m, err := New(f.store, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	f.h = m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	return f
}

func (f *fixture) do(method, path, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = "203.0.113.9:4000"
	if key != "" {
		r.Header.Set("X-API-Key", key)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func TestHeaderStyles(t *testing.T) {
	// minute: 10/min, burst 3, so one token every 6 s and w = 18 s.
	type want struct {
		status  int
		headers map[string]string
	}
	tests := []struct {
		name  string
		style HeaderStyle
		steps []want // consecutive requests at t0
	}{
		{
			name:  "ietf draft-10",
			style: HeadersIETF,
			steps: []want{
				{200, map[string]string{"RateLimit-Policy": `"minute";q=3;w=18`, "RateLimit": `"minute";r=2;t=6`, "Retry-After": ""}},
				{200, map[string]string{"RateLimit": `"minute";r=1;t=12`}},
				{200, map[string]string{"RateLimit": `"minute";r=0;t=18`}},
				{429, map[string]string{"RateLimit-Policy": `"minute";q=3;w=18`, "RateLimit": `"minute";r=0;t=18`, "Retry-After": "6", "RateLimit-Limit": ""}},
			},
		},
		{
			name:  "draft-06 triplet",
			style: HeadersDraft06,
			steps: []want{
				{200, map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": "2", "RateLimit-Reset": "6", "RateLimit": ""}},
				{200, map[string]string{"RateLimit-Remaining": "1", "RateLimit-Reset": "12"}},
				{200, map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "18"}},
				{429, map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": "0", "RateLimit-Reset": "18", "Retry-After": "6"}},
			},
		},
		{
			name:  "legacy X-RateLimit",
			style: HeadersLegacy,
			steps: []want{
				{200, map[string]string{"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": strconv.FormatInt(t0.Unix()+6, 10), "RateLimit-Policy": ""}},
				{200, map[string]string{"X-RateLimit-Remaining": "1"}},
				{200, map[string]string{"X-RateLimit-Remaining": "0"}},
				{429, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(t0.Unix()+18, 10), "Retry-After": "6"}},
			},
		},
		{
			name:  "combined",
			style: HeadersIETF | HeadersLegacy,
			steps: []want{
				{200, map[string]string{"RateLimit": `"minute";r=2;t=6`, "X-RateLimit-Remaining": "2", "RateLimit-Remaining": ""}},
			},
		},
		{
			name:  "none",
			style: 0,
			steps: []want{
				{200, map[string]string{"RateLimit": "", "RateLimit-Policy": "", "RateLimit-Limit": "", "X-RateLimit-Limit": ""}},
				{200, nil},
				{200, nil},
				{429, map[string]string{"Retry-After": "6", "RateLimit": ""}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string][]limiter.Limit{"k1": {minute}}, WithHeaders(tt.style))
			for i, step := range tt.steps {
				w := f.do("GET", "/v1/data", "k1")
				if w.Code != step.status {
					t.Fatalf("request %d: status = %d, want %d", i, w.Code, step.status)
				}
				for name, v := range step.headers {
					if got := w.Header().Get(name); got != v {
						t.Errorf("request %d: %s = %q, want %q", i, name, got, v)
					}
				}
			}
		})
	}
}

func TestTiersInOneCall(t *testing.T) {
	// minute (burst 3, one token per 6 s) and month (4 per 30 days): the
	// fourth request is rejected by minute, the fifth by month, and a
	// rejection charges neither tier.
	f := newFixture(t, map[string][]limiter.Limit{"k1": {minute, month}})
	// month is a fixed window aligned on the Unix epoch: it ends at monthEnd.
	const w = 30 * 24 * 3600
	monthEnd := (t0.Unix()/w + 1) * w
	untilEnd := func(elapsed int64) string { return strconv.FormatInt(monthEnd-t0.Unix()-elapsed, 10) }
	steps := []struct {
		advance   time.Duration
		status    int
		rateLimit string
		retry     string
	}{
		{0, 200, `"minute";r=2;t=6`, ""},
		{0, 200, `"minute";r=1;t=12`, ""},
		{0, 200, `"minute";r=0;t=18`, ""},
		{0, 429, `"minute";r=0;t=18`, "6"},
		{6 * time.Second, 200, `"month";r=0;t=` + untilEnd(6), ""},
		{60 * time.Second, 429, `"month";r=0;t=` + untilEnd(66), untilEnd(66)},
	}
	for i, s := range steps {
		f.clock.Advance(s.advance)
		w := f.do("GET", "/v1/data", "k1")
		if w.Code != s.status {
			t.Fatalf("step %d: status = %d, want %d", i, w.Code, s.status)
		}
		if got := w.Header().Get("RateLimit"); got != s.rateLimit {
			t.Errorf("step %d: RateLimit = %q, want %q", i, got, s.rateLimit)
		}
		if got := w.Header().Get("Retry-After"); got != s.retry {
			t.Errorf("step %d: Retry-After = %q, want %q", i, got, s.retry)
		}
	}
	if got, want := w0(f).Header().Get("RateLimit-Policy"), `"minute";q=3;w=18, "month";q=4;w=2592000`; got != want {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
}

func w0(f *fixture) *httptest.ResponseRecorder { return f.do("GET", "/v1/data", "k1") }

func TestRetryAfterRounding(t *testing.T) {
	// One unit per 1.5 s, burst 1: after the first request the wait is 1.5 s.
	slow := limiter.Limit{Name: "slow", Algorithm: limiter.GCRA, Rate: 1, Period: 1500 * time.Millisecond, Burst: 1}
	hourly := limiter.Limit{Name: "hourly", Algorithm: limiter.GCRA, Rate: 1, Period: time.Hour, Burst: 1}
	tests := []struct {
		name    string
		limit   limiter.Limit
		advance time.Duration // after the first, admitted request
		want    string
	}{
		{"1.5 s rounds up to 2", slow, 0, "2"},
		{"1.0 s stays 1", slow, 500 * time.Millisecond, "1"},
		{"0.1 s rounds up to 1", slow, 1400 * time.Millisecond, "1"},
		{"1 µs rounds up to 1", slow, 1500*time.Millisecond - time.Microsecond, "1"},
		{"1.000001 s rounds up to 2", slow, 500*time.Millisecond - time.Microsecond, "2"},
		{"an hour", hourly, 0, "3600"},
		{"an hour less 1.5 s", hourly, 1500 * time.Millisecond, "3599"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string][]limiter.Limit{"k1": {tt.limit}})
			if w := f.do("GET", "/x", "k1"); w.Code != 200 {
				t.Fatalf("first request: status = %d, want 200", w.Code)
			}
			f.clock.Advance(tt.advance)
			w := f.do("GET", "/x", "k1")
			if w.Code != http.StatusTooManyRequests {
				t.Fatalf("second request: status = %d, want 429", w.Code)
			}
			if got := w.Header().Get("Retry-After"); got != tt.want {
				t.Fatalf("Retry-After = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRejectionBody(t *testing.T) {
	f := newFixture(t, map[string][]limiter.Limit{"k1": {minute}})
	for range 3 {
		f.do("GET", "/v1/data", "k1")
	}
	w := f.do("GET", "/v1/data", "k1")
	if got, want := w.Header().Get("Content-Type"), "application/problem+json"; got != want {
		t.Fatalf("Content-Type = %q, want %q", got, want)
	}
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	want := Problem{Type: "about:blank", Title: "Too Many Requests", Status: 429,
		Detail: `rate limit "minute" exceeded; retry after 6 s`, Instance: "/v1/data", Policy: "minute", RetryAfter: 6}
	if p != want {
		t.Fatalf("problem = %+v, want %+v", p, want)
	}
	if got := f.calls.Load(); got != 3 {
		t.Fatalf("handler calls = %d, want 3", got)
	}
	if !strings.Contains(f.logs.String(), "rate limited") || !strings.Contains(f.logs.String(), HashKey("k1")) || strings.Contains(f.logs.String(), "k1 ") {
		t.Fatalf("log = %q, want a rejection line with the hashed key only", f.logs)
	}
}

func TestCostsAndSkips(t *testing.T) {
	big := limiter.Limit{Name: "big", Algorithm: limiter.TokenBucket, Rate: 1, Period: time.Hour, Burst: 25}
	f := newFixture(t, map[string][]limiter.Limit{"k1": {big}},
		WithRoutes(
			Route{Pattern: "POST /v1/reports/export", Name: "export", Cost: 10},
			Route{Pattern: "GET /v1/search", Name: "search", Cost: 2},
		),
		WithSkip("/healthz", "/docs/"),
	)
	steps := []struct {
		method, path string
		status       int
		remaining    string
	}{
		{"POST", "/v1/reports/export", 200, "15"},
		{"GET", "/v1/search", 200, "13"},
		{"POST", "/v1/reports/export", 200, "3"},
		{"POST", "/v1/reports/export", 429, "3"},
		{"GET", "/healthz", 200, ""},
		{"GET", "/docs/index.html", 200, ""},
		{"GET", "/v1/search", 200, "1"},
		{"GET", "/v1/search", 429, "1"},
		{"GET", "/v1/data", 200, "0"},
		{"GET", "/v1/search/other", 429, "0"}, // exact path only: the default route, cost 1
		{"GET", "/healthz", 200, ""},
	}
	for i, s := range steps {
		w := f.do(s.method, s.path, "k1")
		if w.Code != s.status {
			t.Fatalf("step %d %s %s: status = %d, want %d", i, s.method, s.path, w.Code, s.status)
		}
		got := ""
		if v := w.Header().Get("RateLimit"); v != "" {
			got = v[strings.Index(v, ";r=")+3 : strings.Index(v, ";t=")]
		}
		if got != s.remaining {
			t.Errorf("step %d %s %s: remaining = %q, want %q", i, s.method, s.path, got, s.remaining)
		}
	}
	if got, want := f.metric(t, "rejected", "export", "big"), 1.0; got != want {
		t.Errorf("rejected{export} = %v, want %v", got, want)
	}
	if got, want := f.metric(t, "admitted", "search", "big"), 2.0; got != want {
		t.Errorf("admitted{search} = %v, want %v", got, want)
	}
}

// metric returns the value of counter rlbench_httplimit_<name>_total for
// route and policy, or 0 when it was never incremented.
func (f *fixture) metric(t *testing.T, name, route, policy string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "rlbench_httplimit_"+name+"_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == route && labels["policy"] == policy {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestRouteMatching(t *testing.T) {
	m, err := New(limiter.NewMemoryStore(), WithRoutes(
		Route{Pattern: "/v1/", Name: "v1"},
		Route{Pattern: "GET /v1/data", Name: "data-get"},
		Route{Pattern: "/v1/data", Name: "data-any"},
		Route{Pattern: "POST /v1/reports/export", Name: "export"},
	))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ method, path, want string }{
		{"GET", "/v1/data", "data-get"},
		{"HEAD", "/v1/data", "data-get"},
		{"PUT", "/v1/data", "data-any"},
		{"POST", "/v1/reports/export", "export"},
		{"GET", "/v1/reports/export", "v1"},
		{"GET", "/v1/other", "v1"},
		{"GET", "/v2", "default"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.path, nil)
		if got := m.match(r).Name; got != tt.want {
			t.Errorf("%s %s: route = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestNewRejectsBadRoutes(t *testing.T) {
	tests := []struct {
		name  string
		route Route
		want  string
	}{
		{"no slash", Route{Pattern: "GET v1"}, "want \"[METHOD ]/path\""},
		{"negative cost", Route{Pattern: "/x", Cost: -1}, "cost -1"},
		{"bad limit", Route{Pattern: "/x", Limits: []limiter.Limit{{Algorithm: "nope"}}}, "invalid limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(limiter.NewMemoryStore(), WithRoutes(tt.route))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := New(limiter.NewMemoryStore(), WithRoutes(Route{Pattern: "/x"}, Route{Pattern: "/x"})); err == nil {
		t.Fatal("New accepted a duplicate pattern")
	}
}

func TestShadowMode(t *testing.T) {
	tight := limiter.Limit{Name: "tight", Algorithm: limiter.GCRA, Rate: 1, Period: time.Hour, Burst: 1}
	f := newFixture(t, map[string][]limiter.Limit{"k1": {tight}}, WithShadow(), WithDecisionTime())
	for i := range 3 {
		w := f.do("GET", "/v1/data", "k1")
		if w.Code != 200 {
			t.Fatalf("request %d: status = %d, want 200 in shadow mode", i, w.Code)
		}
		for _, h := range []string{"RateLimit", "RateLimit-Policy", "Retry-After", DecisionTimeHeader} {
			if v := w.Header().Get(h); v != "" {
				t.Fatalf("request %d: %s = %q, want none in shadow mode", i, h, v)
			}
		}
	}
	if got := f.calls.Load(); got != 3 {
		t.Fatalf("handler calls = %d, want 3", got)
	}
	if got, want := f.metric(t, "shadow_rejected", "default", "tight"), 2.0; got != want {
		t.Errorf("shadow_rejected = %v, want %v", got, want)
	}
	if got, want := f.metric(t, "rejected", "default", "tight"), 0.0; got != want {
		t.Errorf("rejected = %v, want %v", got, want)
	}
	if got, want := strings.Count(f.logs.String(), "rate limited (shadow)"), 2; got != want {
		t.Errorf("shadow log lines = %d, want %d", got, want)
	}
}

func TestUnauthenticatedNeverCounted(t *testing.T) {
	f := newFixture(t, map[string][]limiter.Limit{"k1": {minute}}, WithAnonymousLimits(minute))
	for range 10 {
		w := f.do("GET", "/v1/data", "wrong-key")
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("status = %d, want 401", w.Code)
		}
		if got, want := w.Header().Get("Content-Type"), "application/problem+json"; got != want {
			t.Fatalf("Content-Type = %q, want %q", got, want)
		}
		if strings.Contains(w.Body.String(), "wrong-key") {
			t.Fatalf("401 body %q echoes the key", w.Body)
		}
	}
	if got := f.store.Len(); got != 0 {
		t.Fatalf("store holds %d states after only rejected credentials, want 0", got)
	}
	// The anonymous budget of the same client IP is untouched, and so is k1's.
	for _, key := range []string{"", "k1"} {
		if w := f.do("GET", "/v1/data", key); w.Header().Get("RateLimit") != `"minute";r=2;t=6` {
			t.Fatalf("key %q: RateLimit = %q, want a full budget less one", key, w.Header().Get("RateLimit"))
		}
	}
	if got := f.calls.Load(); got != 2 {
		t.Fatalf("handler calls = %d, want 2", got)
	}
}

func TestAnonymousWithoutLimitsIsUnlimited(t *testing.T) {
	f := newFixture(t, map[string][]limiter.Limit{"k1": {minute}})
	for range 5 {
		if w := f.do("GET", "/v1/data", ""); w.Code != 200 || w.Header().Get("RateLimit") != "" {
			t.Fatalf("status = %d, RateLimit = %q; want 200 and no field", w.Code, w.Header().Get("RateLimit"))
		}
	}
}

type failingLimiter struct{ err error }

func (f failingLimiter) AllowN(context.Context, string, int64, ...limiter.Limit) (limiter.Decision, error) {
	return limiter.Decision{}, f.err
}
func (f failingLimiter) Peek(context.Context, string, ...limiter.Limit) (limiter.Decision, error) {
	return limiter.Decision{}, f.err
}
func (f failingLimiter) Reset(context.Context, string, ...limiter.Limit) error { return f.err }

func TestErrors(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		retryAfter string
	}{
		{"store down", errors.New("dial tcp 127.0.0.1:6379: connection refused"), 503, "1"},
		{"cost above capacity", limiter.ErrCostExceedsCapacity, 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := New(failingLimiter{tt.err}, WithAnonymousLimits(minute), WithMetrics(reg))
			if err != nil {
				t.Fatal(err)
			}
			called := false
			h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/data", nil))
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Fatalf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if called {
				t.Fatal("the handler ran for an undecided request")
			}
			if strings.Contains(w.Body.String(), "6379") || strings.Contains(w.Body.String(), "goroutine") {
				t.Fatalf("body %q leaks the error", w.Body)
			}
			if got, want := counterValue(t, m.metrics.errors.WithLabelValues("default")), 1.0; got != want {
				t.Fatalf("errors_total = %v, want %v", got, want)
			}
		})
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestCustomHandlers(t *testing.T) {
	tight := limiter.Limit{Name: "tight", Algorithm: limiter.GCRA, Rate: 1, Period: time.Minute, Burst: 1}
	f := newFixture(t, map[string][]limiter.Limit{"k1": {tight}},
		WithRejectHandler(func(w http.ResponseWriter, r *http.Request, d limiter.Decision) {
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte("slow down, " + d.Limit.ID()))
		}),
		WithDecisionTime(),
	)
	f.clock.Advance(1234 * time.Microsecond)
	w := f.do("GET", "/v1/data", "k1")
	if got, want := w.Header().Get(DecisionTimeHeader), strconv.FormatInt(t0.UnixMicro()+1234, 10); got != want {
		t.Fatalf("%s = %q, want %q", DecisionTimeHeader, got, want)
	}
	w = f.do("GET", "/v1/data", "k1")
	if w.Code != 429 || w.Body.String() != "slow down, tight" {
		t.Fatalf("rejection = %d %q, want 429 from the custom handler", w.Code, w.Body)
	}
	if got, want := w.Header().Get("Retry-After"), "60"; got != want {
		t.Fatalf("Retry-After = %q, want %q set before the custom handler", got, want)
	}
}

func TestParseHeaderStyle(t *testing.T) {
	tests := []struct {
		in   string
		want HeaderStyle
		ok   bool
	}{
		{"ietf", HeadersIETF, true},
		{"ietf,legacy", HeadersIETF | HeadersLegacy, true},
		{" draft06 ", HeadersDraft06, true},
		{"none", 0, true},
		{"x-ratelimit", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseHeaderStyle(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseHeaderStyle(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestSFStringEscapes(t *testing.T) {
	var b strings.Builder
	writeSFString(&b, "a\"b\\cé")
	if got, want := b.String(), `"a\"b\\c??"`; got != want {
		t.Fatalf("sf-string = %s, want %s", got, want)
	}
}

func BenchmarkMiddleware(b *testing.B) {
	store := limiter.NewMemoryStore()
	lim := limiter.PerSecond(1e5, 1<<30)
	m, err := New(store, WithAnonymousLimits(lim), WithMetrics(prometheus.NewRegistry()))
	if err != nil {
		b.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "/v1/data", nil)
		for pb.Next() {
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
	})
}

// degradedLimiter answers every call with a decision taken without the
// shared store, as a resilience wrapper does while Redis is down.
type degradedLimiter struct{ allowed bool }

func (l degradedLimiter) AllowN(_ context.Context, _ string, _ int64, limits ...limiter.Limit) (limiter.Decision, error) {
	d := limiter.NewDecision(limits[0], l.allowed, 0, 2_500_000, 2_500_000, 0)
	d.Degraded = true
	return d, nil
}
func (l degradedLimiter) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	return l.AllowN(ctx, key, 1, limits...)
}
func (degradedLimiter) Reset(context.Context, string, ...limiter.Limit) error { return nil }

func TestDegradedDecisions(t *testing.T) {
	tests := []struct {
		name       string
		allowed    bool
		opts       []Option
		status     int
		retryAfter string
		outcome    string
	}{
		{"fail-open admits", true, nil, 200, "", "admitted"},
		{"fail-closed answers 503", false, nil, 503, "3", "rejected"},
		{"fallback share exceeded answers 429", false, []Option{WithDegradedStatus(http.StatusTooManyRequests)}, 429, "3", "rejected"},
		{"shadow mode lets it through", false, []Option{WithShadow()}, 200, "", "rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := New(degradedLimiter{tt.allowed}, append([]Option{WithAnonymousLimits(minute), WithMetrics(reg), WithDecisionTime()}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/data", nil))
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Fatalf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			for _, name := range []string{"RateLimit", "RateLimit-Policy"} {
				if v := w.Header().Get(name); v != "" {
					t.Fatalf("%s = %q on a degraded decision, want none", name, v)
				}
			}
			if got := counterValue(t, m.metrics.degraded.WithLabelValues("default", tt.outcome)); got != 1 {
				t.Fatalf("degraded_total{%s} = %v, want 1", tt.outcome, got)
			}
		})
	}
}
