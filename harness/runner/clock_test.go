//go:build unix

package runner

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/scenarios"
)

// aheadWindow is an external target's fixed window limiter admitting limit
// requests per key and window, its windows aligned on its own clock, which
// runs ahead of the harness's: the target of the clock-offset tests. It
// answers with RateLimit-Limit/-Remaining/-Reset (claiming 5 per window)
// and, on a 429, an honest Retry-After; with date it sends a Date header of
// its own clock, else none.
type aheadWindow struct {
	ahead  time.Duration
	window time.Duration
	limit  int // what the limiter admits per window (above the claim: it over-admits)
	date   bool
	mu     sync.Mutex
	counts map[string]int // "key/window" → admitted
}

func (a *aheadWindow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now().Add(a.ahead)
	if a.date {
		w.Header().Set("Date", now.UTC().Format(http.TimeFormat))
	} else {
		w.Header()["Date"] = nil
	}
	win := now.UnixNano() / int64(a.window)
	reset := time.Duration((win+1)*int64(a.window) - now.UnixNano())
	slot := fmt.Sprintf("%s/%d", r.Header.Get("X-API-Key"), win)
	a.mu.Lock()
	n := a.counts[slot]
	ok := n < a.limit
	if ok {
		n++
		a.counts[slot] = n
	}
	a.mu.Unlock()
	resetS := strconv.Itoa(int(math.Ceil(reset.Seconds())))
	w.Header().Set("RateLimit-Limit", "5")
	w.Header().Set("RateLimit-Remaining", strconv.Itoa(max(5-n, 0)))
	w.Header().Set("RateLimit-Reset", resetS)
	if !ok {
		w.Header().Set("Retry-After", resetS)
		http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// aheadScenario is an external-target scenario against url: a fixed window
// of 5 per 5 s claimed for two keys sending 4 requests a second each for
// 11 s, across two window edges of the target's clock; or, with few, three
// requests at once. extra goes under target: and redis is the redis
// section.
func aheadScenario(t *testing.T, url, redis, extra string, few bool) *scenarios.Scenario {
	t.Helper()
	traffic := "{kind: constant, name: steady, rate: 8/1s, duration: 11s}"
	if few {
		traffic = "{kind: burst, name: few, requests: 3}"
	}
	src := `name: ahead
description: a fixed window on a clock ahead of the harness's
redis: ` + redis + `
target:
  external: [` + url + `]
` + extra + `  routes:
    - path: /api/items
      policies: ["fixed_window:5/5s"]
identities:
  count: 2
traffic:
  - ` + traffic + `
checks:
  budget: {max_excess: 0}
  false_rejections: {max_rate: 0}
  headers: true
`
	sc, err := scenarios.Parse("ahead.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestExternalClockAhead: a correct fixed window on a target whose clock
// is 700 ms ahead passes the budget, false-rejection, retry-after and
// ratelimit-fields checks whether its offset is measured from its Date
// headers or unknown (it has none); a target that really admits 7 per
// window fails the budget with a measured offset, and one that admits 11
// (above the 2L that any window length holds under every offset) fails it
// with none. Before the offset was measured or
// left unknown, the correct target failed all four checks (the run
// recorded an unmeasured offset of 0 ± 0).
func TestExternalClockAhead(t *testing.T) {
	const ahead = 700 * time.Millisecond
	for _, tt := range []struct {
		name   string
		date   bool
		limit  int
		source string
		pass   bool
	}{
		{"Date headers", true, 5, history.ClockHTTPDate, true},
		{"no Date header", false, 5, runrecord.ClockUnknown, true},
		{"over-admitting, Date headers", true, 7, history.ClockHTTPDate, false},
		// Without an offset the bound is 2L in any interval shorter than a
		// window, so the over-admission must exceed 2L to be provable.
		{"over-admitting, no Date header", false, 11, runrecord.ClockUnknown, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(&aheadWindow{ahead: ahead, window: 5 * time.Second, limit: tt.limit, date: tt.date, counts: map[string]int{}})
			defer srv.Close()
			sc := aheadScenario(t, srv.URL, "{provider: none}", "", false)
			o, err := New(Options{OutDir: t.TempDir()}).Run(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			rec := o.Record()
			if rec.ClockSource != tt.source {
				t.Fatalf("clock source = %q, want %q", rec.ClockSource, tt.source)
			}
			if tt.date {
				// Sound: the true offset lies within the measured one's uncertainty.
				if d := o.ClockOffset - ahead; d.Abs() > o.ClockUncertainty || o.ClockUncertainty > 500*time.Millisecond {
					t.Errorf("offset %v ± %v does not hold %v within half a second", o.ClockOffset, o.ClockUncertainty, ahead)
				}
			} else if o.ClockOffset != 0 || o.ClockUncertainty != 0 || !strings.Contains(strings.Join(o.Report.Notes, " "), "clock offset unknown") {
				t.Errorf("offset %v ± %v, notes %q; want 0 ± 0 and a note that it is unknown", o.ClockOffset, o.ClockUncertainty, o.Report.Notes)
			}
			verdicts := map[string]checker.Verdict{}
			var table strings.Builder
			for _, r := range o.Report.Results {
				verdicts[r.Name] = r.Verdict
				fmt.Fprintf(&table, "  %s %s %s: %s\n", r.Name, r.Scope, r.Verdict, r.Explanation)
			}
			t.Logf("clock %v ± %v (%s)\n%s", o.ClockOffset, o.ClockUncertainty, rec.ClockSource, table.String())
			if tt.pass {
				for _, name := range []string{checker.CheckBudget, checker.CheckFalseRejections, checker.CheckRetryAfter, checker.CheckRateLimitFields} {
					if verdicts[name] != checker.Pass {
						t.Errorf("%s = %s, want pass\n%s", name, verdicts[name], table.String())
					}
				}
			} else if verdicts[checker.CheckBudget] != checker.Fail {
				t.Errorf("budget = %s, want fail\n%s", verdicts[checker.CheckBudget], table.String())
			}
		})
	}
}

// TestExternalTargetRedisTime: an external target whose scenario gives its
// Redis (provider external, redis.url) has its clock offset measured on
// that Redis's TIME, before the traffic, and recorded in the history's
// header as well as in run.json.
func TestExternalTargetRedisTime(t *testing.T) {
	red := redistest.StartForTest(t)
	srv := httptest.NewServer(&aheadWindow{window: 5 * time.Second, limit: 5, counts: map[string]int{}})
	defer srv.Close()
	sc := aheadScenario(t, srv.URL, "{provider: external, url: \""+red.URL()+"\"}", "", true)
	o, err := New(Options{OutDir: t.TempDir()}).Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if o.ClockSource != history.ClockRedisTime || o.ClockOffset.Abs() > time.Second || o.ClockUncertainty > 100*time.Millisecond {
		t.Errorf("clock %v ± %v from %q, want a small offset from %q", o.ClockOffset, o.ClockUncertainty, o.ClockSource, history.ClockRedisTime)
	}
	if got := o.Record().Redis.Provider; got != string(scenarios.ProviderExternal) {
		t.Errorf("redis provider = %q, want external", got)
	}
}

// TestDeclaredClock: a scenario's target.clock is the offset the history
// header and run.json carry, and the resolution it declares is the
// header's.
func TestDeclaredClock(t *testing.T) {
	srv := httptest.NewServer(&aheadWindow{ahead: 700 * time.Millisecond, window: 5 * time.Second, limit: 5, date: true, counts: map[string]int{}})
	defer srv.Close()
	sc := aheadScenario(t, srv.URL, "{provider: none}", "  clock_resolution: 1ms\n  clock: {offset: 700ms, uncertainty: 5ms}\n", true)
	dir := t.TempDir()
	o, err := New(Options{OutDir: dir}).Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	rec := o.Record()
	if rec.ClockSource != history.ClockDeclared || rec.ClockOffset != 700*time.Millisecond || rec.ClockUncertainty != 5*time.Millisecond {
		t.Errorf("run.json clock %v ± %v from %q, want 700ms ± 5ms declared", rec.ClockOffset, rec.ClockUncertainty, rec.ClockSource)
	}
	h := readHeader(t, dir+"/"+o.HistoryPath)
	if h.ClockOffsetNs == nil || *h.ClockOffsetNs != int64(700*time.Millisecond) || h.ClockUncertaintyNs != int64(5*time.Millisecond) ||
		h.ClockSource != history.ClockDeclared || h.ClockResolutionNs != int64(time.Millisecond) {
		t.Errorf("header clock %v ± %d ns from %q at %d ns resolution, want 700ms ± 5ms declared at 1ms", h.ClockOffsetNs, h.ClockUncertaintyNs, h.ClockSource, h.ClockResolutionNs)
	}
}

func readHeader(t *testing.T, path string) history.Header {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := history.NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return r.Header()
}

// TestDateClock: the Date headers of responses bound the offset, narrowing
// as their seconds tick at different points of the requests; Dates that
// contradict each other leave it unknown; instances are bounded apart and
// the offset spans them.
func TestDateClock(t *testing.T) {
	start := time.Now()
	const ahead = 700 * time.Millisecond
	at := func(d time.Duration) time.Time { return start.Add(d) }
	dateAt := func(d, offset time.Duration) http.Header {
		return http.Header{"Date": {at(d).Add(offset).UTC().Format(http.TimeFormat)}}
	}
	c := newDateClock(start, start)
	if _, _, ok := c.estimate(); ok {
		t.Fatal("estimate with no Date: ok, want unknown")
	}
	for i := range 40 {
		s := time.Duration(i) * 130 * time.Millisecond
		c.observe(0, dateAt(s, ahead), at(s-time.Millisecond), at(s+time.Millisecond))
	}
	off, unc, ok := c.estimate()
	if !ok || (off-ahead).Abs() > unc || unc > 70*time.Millisecond {
		t.Errorf("estimate = %v ± %v, %v; want about %v, within 70ms", off, unc, ok, ahead)
	}
	c.observe(0, http.Header{"Date": {"not a date"}}, at(0), at(time.Millisecond))
	if off2, unc2, _ := c.estimate(); off2 != off || unc2 != unc {
		t.Errorf("an unparsable Date changed the estimate to %v ± %v", off2, unc2)
	}
	// Another instance 2 s ahead: the offset spans both.
	for i := range 40 {
		s := time.Duration(i) * 130 * time.Millisecond
		c.observe(1, dateAt(s, 2*time.Second), at(s-time.Millisecond), at(s+time.Millisecond))
	}
	off, unc, ok = c.estimate()
	if !ok || off-unc > ahead || off+unc < 2*time.Second {
		t.Errorf("two instances: %v ± %v, %v; want an interval holding %v and 2s", off, unc, ok, ahead)
	}
	// A Date a minute off on instance 0 contradicts its others.
	c.observe(0, dateAt(time.Second, time.Minute), at(time.Second), at(time.Second+time.Millisecond))
	if _, _, ok := c.estimate(); ok {
		t.Error("contradicting Dates: ok, want unknown")
	}
}
