package checker

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// recorded is a history of a run with its run record: requests on route
// "/a" and its baseline "/b" in phase "steady", under a generous budget.
type recorded struct {
	hist
	rec runrecord.ScenarioRecord
}

func newRecorded() *recorded {
	return &recorded{rec: runrecord.ScenarioRecord{
		Name:   "sc",
		Checks: &runrecord.CheckSettings{LoadDelivered: 0.9, LagTolerance: 50 * time.Millisecond},
		Phases: []runrecord.PhaseRecord{{Name: "steady", Kind: runrecord.PhaseConstant}},
	}}
}

// send adds a request on route, meant for intended, sent lag later and
// answered took after that; it counts in the steady phase's plan.
func (r *recorded) send(route string, intended, lag, took time.Duration) *history.Record {
	q := r.add("k", intended+lag, intended+lag+took, history.Admitted, func(q *history.Record) {
		q.Route, q.Phase, q.IntendedNs = route, "steady", int64(intended)
	})
	r.rec.Phases[0].Planned++
	r.rec.Phases[0].Sent++
	return q
}

func (r *recorded) source() *memSource {
	src := r.hist.source()
	src.h.Scenario = r.rec.Name
	src.h.Policies = []history.RoutePolicy{{Route: "/a", Limits: []string{"gcra:1000/1s,burst=1000"}}}
	return src
}

func (r *recorded) check(t *testing.T) *Report {
	t.Helper()
	rep, err := CheckRun(r.source(), &r.rec, Policy{})
	if err != nil {
		t.Fatalf("CheckRun: %v", err)
	}
	return rep
}

// resultIn returns the result named name with scope scope, or fails.
func resultIn(t *testing.T, rep *Report, name, scope string) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Name == name && r.Scope == scope {
			return r
		}
	}
	t.Fatalf("no %s (%s) result in %+v", name, scope, rep.Results)
	return Result{}
}

func hasResult(rep *Report, name string) bool {
	for _, r := range rep.Results {
		if r.Name == name {
			return true
		}
	}
	return false
}

func TestLoadDelivered(t *testing.T) {
	tests := []struct {
		name     string
		build    func(r *recorded)
		observed float64
		verdict  Verdict
	}{
		{"every send on time", func(r *recorded) {
			for i := range 10 {
				r.send("/a", ms(float64(10*i)), 50*time.Millisecond, time.Millisecond) // a lag of exactly the tolerance is on time
			}
		}, 1, Pass},
		{"two of ten late", func(r *recorded) {
			for i := range 10 {
				lag := time.Millisecond
				if i < 2 {
					lag = 51 * time.Millisecond
				}
				r.send("/a", ms(float64(10*i)), lag, time.Millisecond)
			}
		}, 0.8, Fail},
		{"withheld requests are not owed", func(r *recorded) {
			for i := range 9 {
				r.send("/a", ms(float64(10*i)), 0, time.Millisecond)
			}
			r.rec.Phases[0].Planned++
			r.rec.Phases[0].Withheld = 1
		}, 1, Pass},
		{"planned but never sent", func(r *recorded) {
			for i := range 9 {
				r.send("/a", ms(float64(10*i)), 0, time.Millisecond)
			}
			r.rec.Phases[0].Planned += 3
		}, 0.75, Fail},
		{"closed-model phases do not count", func(r *recorded) {
			r.send("/a", 0, 0, time.Millisecond)
			r.add("k", time.Second, time.Second+time.Millisecond, history.Admitted, func(q *history.Record) {
				q.Route, q.Phase, q.IntendedNs = "/a", "burst", 0 // a second late
			})
			r.rec.Phases = append(r.rec.Phases, runrecord.PhaseRecord{Name: "burst", Kind: "burst", Planned: 1})
		}, 1, Pass},
		{"a name shared with a closed-model phase counts from the record", func(r *recorded) {
			r.send("/a", 0, 0, time.Millisecond)
			r.add("k", time.Second, time.Second+time.Millisecond, history.Admitted, func(q *history.Record) {
				q.Route, q.Phase, q.IntendedNs = "/a", "steady", 0
			})
			r.rec.Phases[0].OnTime = 1
			r.rec.Phases = append(r.rec.Phases, runrecord.PhaseRecord{Name: "steady", Kind: "burst", Planned: 1})
			r.rec.Phases[0].Planned = 2
		}, 0.5, Fail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorded()
			tc.build(r)
			got := resultIn(t, r.check(t), CheckLoadDelivered, "")
			if got.Observed != tc.observed || got.Verdict != tc.verdict || got.Bound != 0.9 {
				t.Errorf("load-delivered = %s %v (bound %v), want %s %v (bound 0.9): %s", got.Verdict, got.Observed, got.Bound, tc.verdict, tc.observed, got.Explanation)
			}
		})
	}
}

func TestMaxLatency(t *testing.T) {
	tests := []struct {
		name     string
		lag      time.Duration
		late     int // sends beyond the lag tolerance, out of 10
		observed float64
		verdict  Verdict
	}{
		// Latency runs from the intended send: a 30 ms lag plus 80 ms.
		{"within the bound", 30 * time.Millisecond, 0, 110, Pass},
		{"beyond the bound", 150 * time.Millisecond, 0, 230, Fail},
		{"generator behind", 30 * time.Millisecond, 2, 110, Unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorded()
			r.rec.Checks.MaxLatency = 200 * time.Millisecond
			for i := range 10 {
				took, lag := 5*time.Millisecond, time.Duration(0)
				if i == 4 {
					took, lag = 80*time.Millisecond, tc.lag
				}
				if i < tc.late {
					lag = 60 * time.Millisecond
				}
				r.send("/a", ms(float64(100*i)), lag, took)
			}
			got := resultIn(t, r.check(t), CheckMaxLatency, "")
			if got.Observed != tc.observed || got.Verdict != tc.verdict || got.Bound != 200 {
				t.Errorf("max-latency = %s %v ms (bound %v), want %s %v ms: %s", got.Verdict, got.Observed, got.Bound, tc.verdict, tc.observed, got.Explanation)
			}
			if got.Proof == nil || got.Proof.RequestIDs[0] != 5 {
				t.Errorf("proof = %+v, want request 5", got.Proof)
			}
		})
	}
	r := newRecorded()
	r.send("/a", 0, 0, time.Second)
	if rep := r.check(t); hasResult(rep, CheckMaxLatency) {
		t.Errorf("a scenario without max_latency got a max-latency check: %+v", rep.Results)
	}
}

func TestOverhead(t *testing.T) {
	// lat gives request i of n its latency on the limited route and on the
	// baseline route.
	type lat func(i, n int) (limited, baseline time.Duration)
	tests := []struct {
		name    string
		n       int
		lat     lat
		want    map[string]Verdict
		observe map[string]float64
	}{{
		// 5 % of the limited route's requests 10 ms against the baseline's
		// 1 % at 2 ms: the p99 overhead is 9 ms (rank 990 of the baseline
		// is still 1 ms), at least 8 ms at 99 %.
		name: "a slow tail proven",
		n:    1000,
		lat: func(i, n int) (time.Duration, time.Duration) {
			limited, baseline := 2500*time.Microsecond, time.Millisecond
			if i >= n-n/20 {
				limited = 10 * time.Millisecond
			}
			if i >= n-n/100 {
				baseline = 2 * time.Millisecond
			}
			return limited, baseline
		},
		want:    map[string]Verdict{"p50": Pass, "p99": Fail},
		observe: map[string]float64{"p50": 1.5, "p99": 9},
	}, {
		// The same 8 ms at rank 99 of 100 rests on two requests: a busy
		// machine's tail, not proven.
		name: "a tail of two requests",
		n:    100,
		lat: func(i, n int) (time.Duration, time.Duration) {
			if i >= 98 {
				return 10 * time.Millisecond, 2 * time.Millisecond
			}
			return 2500 * time.Microsecond, time.Millisecond
		},
		want:    map[string]Verdict{"p50": Pass, "p99": Pass},
		observe: map[string]float64{"p50": 1.5, "p99": 8},
	}, {
		// A machine too busy for either route: the limited route's 9
		// slowest at 60 ms, the baseline's 5 at 80 ms, as seen at a load
		// of ten on two cores. The p99 point estimates differ by 59 ms.
		name: "a busy machine's tail",
		n:    800,
		lat: func(i, n int) (time.Duration, time.Duration) {
			limited, baseline := 1500*time.Microsecond, time.Millisecond
			if i >= n-9 {
				limited = 60 * time.Millisecond
			}
			if i >= n-5 {
				baseline = 80 * time.Millisecond
			}
			return limited, baseline
		},
		want:    map[string]Verdict{"p50": Pass, "p99": Pass},
		observe: map[string]float64{"p50": 0.5, "p99": 59},
	}, {
		// Every request 20 ms slower: proven at every percentile the
		// samples can bound.
		name: "a slow limiter",
		n:    1000,
		lat: func(i, n int) (time.Duration, time.Duration) {
			return 21 * time.Millisecond, time.Millisecond
		},
		want:    map[string]Verdict{"p50": Fail, "p99": Fail},
		observe: map[string]float64{"p50": 20, "p99": 20},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorded()
			r.rec.Checks.Overhead = &runrecord.OverheadBounds{Route: "/a", Baseline: "/b", P50: 2 * time.Millisecond, P99: 5 * time.Millisecond}
			for i := range tc.n {
				at := ms(float64(10 * i))
				limited, baseline := tc.lat(i, tc.n)
				r.send("/a", at, 0, limited)
				r.send("/b", at, 0, baseline)
			}
			rep := r.check(t)
			for scope, verdict := range tc.want {
				got := resultIn(t, rep, CheckOverhead, scope)
				if got.Observed != tc.observe[scope] || got.Verdict != verdict {
					t.Errorf("%s overhead = %s %v ms, want %s %v ms: %s", scope, got.Verdict, got.Observed, verdict, tc.observe[scope], got.Explanation)
				}
				if got.Verdict == Pass && got.Observed > got.Bound && !strings.Contains(got.Explanation, "not beyond what sampling noise") {
					t.Errorf("%s passes above its bound without saying why: %s", scope, got.Explanation)
				}
				if !strings.Contains(got.Explanation, "99 % interval of the difference") {
					t.Errorf("%s: the explanation gives no interval: %s", scope, got.Explanation)
				}
			}
			for _, res := range rep.Results {
				if res.Name == CheckOverhead && res.Scope == "p99.9" {
					t.Errorf("p99.9 has no bound, yet was checked: %+v", res)
				}
			}
		})
	}

	r := newRecorded()
	r.rec.Checks.Overhead = &runrecord.OverheadBounds{Route: "/a", Baseline: "/b", P50: time.Millisecond}
	r.send("/a", 0, 0, time.Millisecond)
	if got := resultIn(t, r.check(t), CheckOverhead, ""); got.Verdict != Unknown || !strings.Contains(got.Explanation, "/b") {
		t.Errorf("no baseline traffic: %+v, want unknown naming /b", got)
	}
}

func TestQuantileRanks(t *testing.T) {
	tests := []struct {
		n      int
		q      float64
		lo, hi int
	}{
		// The median of 100: ranks 37 and 64 (the binomial table's 99 %
		// interval for n = 100, p = 0.5 is [37, 63] below, so X(37) to
		// X(64)).
		{n: 100, q: 0.5, lo: 37, hi: 64},
		// p99 of 100: no sample bounds it from above.
		{n: 100, q: 0.99, lo: 96, hi: 101},
		// p99.9 of 800: neither from above.
		{n: 800, q: 0.999, lo: 796, hi: 801},
		{n: 1000, q: 0.99, lo: 981, hi: 998},
		{n: 1, q: 0.5, lo: 0, hi: 2},
	}
	for _, tc := range tests {
		lo, hi := quantileRanks(tc.n, tc.q, 0.99)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("quantileRanks(%d, %v) = %d, %d; want %d, %d", tc.n, tc.q, lo, hi, tc.lo, tc.hi)
		}
	}
	// The coverage the ranks promise, by simulation: the uniform
	// distribution's q-quantile is q.
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 2000
	for _, tc := range []struct {
		n int
		q float64
	}{{200, 0.5}, {1000, 0.99}} {
		lo, hi := quantileRanks(tc.n, tc.q, 0.99)
		missLo, missHi := 0, 0
		xs := make([]float64, tc.n)
		for range trials {
			for i := range xs {
				xs[i] = rng.Float64()
			}
			slices.Sort(xs)
			if xs[lo-1] > tc.q {
				missLo++
			}
			if xs[hi-1] < tc.q {
				missHi++
			}
		}
		// Each side may miss 0.5 % of the time: 10 of 2000, allow 25.
		if missLo > 25 || missHi > 25 {
			t.Errorf("n=%d q=%v: the bounds missed the quantile %d (below) and %d (above) times in %d", tc.n, tc.q, missLo, missHi, trials)
		}
	}
}

func TestQuantile(t *testing.T) {
	sorted := []int64{1000, 2000, 3000, 4000}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0, time.Microsecond}, {0.5, 2 * time.Microsecond}, {0.6, 2 * time.Microsecond}, {0.63, 3 * time.Microsecond}, {0.99, 4 * time.Microsecond}, {1, 4 * time.Microsecond}} {
		if got := quantile(sorted, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name    string
		probe   *runrecord.ProbeRecord
		verdict Verdict
	}{
		{"admitted after Retry-After", &runrecord.ProbeRecord{Rejected: true, Retried: true, Admitted: true, Wait: time.Second}, Pass},
		{"rejected again", &runrecord.ProbeRecord{Rejected: true, Retried: true, Wait: time.Second}, Fail},
		{"no usable Retry-After", &runrecord.ProbeRecord{Rejected: true}, Fail},
		{"never rejected", &runrecord.ProbeRecord{}, Unknown},
		{"never rejected, in an older record", nil, Unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorded()
			r.send("/a", 0, 0, time.Millisecond)
			r.rec.Phases = append(r.rec.Phases, runrecord.PhaseRecord{Name: "probe", Kind: runrecord.PhaseRetryAfterProbe, Probe: tc.probe})
			if got := resultIn(t, r.check(t), CheckProbe, "probe"); got.Verdict != tc.verdict {
				t.Errorf("probe = %s (%s), want %s", got.Verdict, got.Explanation, tc.verdict)
			}
		})
	}
	// A shard that planned none of the probe's requests left it to shard
	// 0: no verdict here; a shard that ran it is judged as a whole run.
	for _, tc := range []struct {
		name    string
		shard   history.Shard
		planned int
		probe   *runrecord.ProbeRecord
		want    bool
	}{
		{"another shard's", history.Shard{Index: 1, Count: 2}, 0, nil, false},
		{"this shard's", history.Shard{Index: 0, Count: 2}, 12, &runrecord.ProbeRecord{}, true},
	} {
		r := newRecorded()
		r.send("/a", 0, 0, time.Millisecond)
		r.rec.Shard = &tc.shard
		r.rec.Phases = append(r.rec.Phases, runrecord.PhaseRecord{Name: "probe", Kind: runrecord.PhaseRetryAfterProbe, Planned: tc.planned, Probe: tc.probe})
		got := false
		for _, res := range r.check(t).Results {
			got = got || res.Name == CheckProbe
		}
		if got != tc.want {
			t.Errorf("%s: a retry-after-probe verdict = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFaultInjected(t *testing.T) {
	r := newRecorded()
	r.send("/a", 0, 0, time.Millisecond)
	r.rec.Faults = []runrecord.FaultWindow{
		{Kind: "redis_kill", At: time.Second, FromNs: 1e9, ToNs: 2e9},
		{Kind: "redis_pause", At: time.Hour},
		{Kind: "redis_pause", At: time.Second, FromNs: 1e9},
		{Kind: "redis_latency", At: time.Second, FromNs: 1e9, ToNs: 2e9, Err: "proxy gone"},
	}
	rep := r.check(t)
	for _, tc := range []struct {
		scope    string
		verdict  Verdict
		observed float64
		explains string
	}{
		{"redis_kill #1", Pass, 1, "injected at 1s, healed at 2s"},
		{"redis_pause #2", Fail, 0, "traffic ended before 1h0m0s"},
		{"redis_pause #3", Fail, 1, "never healed"},
		{"redis_latency #4", Fail, 0, "proxy gone"},
	} {
		got := resultIn(t, rep, CheckFaultInjected, tc.scope)
		if got.Verdict != tc.verdict || got.Observed != tc.observed || !strings.Contains(got.Explanation, tc.explains) {
			t.Errorf("%s = %s %v (%s), want %s %v explaining %q", tc.scope, got.Verdict, got.Observed, got.Explanation, tc.verdict, tc.observed, tc.explains)
		}
	}
}

func TestKeyTTL(t *testing.T) {
	tests := []struct {
		name    string
		scan    *runrecord.KeyScan
		verdict Verdict
		explain string
	}{
		{"every key expires", &runrecord.KeyScan{}, Pass, "has a TTL"},
		{"keys without a TTL", &runrecord.KeyScan{WithoutTTL: 3, Examples: []string{"rl:{a}:x", "rl:{b}:x"}}, Fail, "3 keys left in Redis without a TTL, such as rl:{a}:x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorded()
			r.send("/a", 0, 0, time.Millisecond)
			r.rec.KeyScan = tc.scan
			rep := r.check(t)
			got := rep.Results[len(rep.Results)-1]
			if got.Name != CheckKeyTTL || got.Verdict != tc.verdict || got.Observed != float64(tc.scan.WithoutTTL) || !strings.Contains(got.Explanation, tc.explain) {
				t.Errorf("last result = %+v, want key-ttl %s observing %d, explaining %q", got, tc.verdict, tc.scan.WithoutTTL, tc.explain)
			}
		})
	}
	r := newRecorded()
	r.send("/a", 0, 0, time.Millisecond)
	if rep := r.check(t); hasResult(rep, CheckKeyTTL) {
		t.Errorf("a run that scanned no keys got a key-ttl check")
	}
}

// TestCheckRunTakesTheRecord: the drill, the clock offset and a fail-closed
// target's 503s come from the record; a history of another scenario is
// refused; a nil record is Check alone.
func TestCheckRunTakesTheRecord(t *testing.T) {
	r := newRecorded()
	r.rec.FailureMode = runrecord.FailClosed
	r.send("/a", 0, 0, time.Millisecond)
	r.add("k", time.Second, time.Second+time.Millisecond, history.Error, status(http.StatusServiceUnavailable), func(q *history.Record) { q.Route = "/a" })
	if got := resultIn(t, r.check(t), CheckStatus, ""); got.Verdict != Pass {
		t.Errorf("a fail-closed target's 503: status %s (%s), want pass", got.Verdict, got.Explanation)
	}
	r.rec.FailureMode = runrecord.FailOpen
	if got := resultIn(t, r.check(t), CheckStatus, ""); got.Verdict != Fail {
		t.Errorf("a fail-open target's 503: status %s (%s), want fail", got.Verdict, got.Explanation)
	}

	r.rec.Drill = &runrecord.Drill{Mode: runrecord.FailOpen, Instances: 1, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond,
		Windows: []runrecord.FaultWindow{{Kind: "redis_kill", FromNs: int64(900 * time.Millisecond), ToNs: int64(1100 * time.Millisecond), Unavailable: true}}}
	rep := r.check(t)
	if got := resultIn(t, rep, CheckFailureMode, "redis_kill #1 open"); got.Verdict != Fail {
		t.Errorf("a 503 within a fail-open fault: failure-mode %s (%s), want fail", got.Verdict, got.Explanation)
	}

	src := r.source()
	r.rec.Name = "other"
	if _, err := CheckRun(src, &r.rec, Policy{}); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("a history of scenario sc with the record of other: error %v, want one naming both", err)
	}

	rep, err := CheckRun(r.source(), nil, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if hasResult(rep, CheckHistoryComplete) || hasResult(rep, CheckFailureMode) {
		t.Errorf("without a record: %+v, want the history's checks only", rep.Results)
	}
}

func TestCompareResults(t *testing.T) {
	a := Result{Name: "budget", Scope: "x", Verdict: Pass, Observed: 3, Bound: 5, Explanation: "one"}
	b := Result{Name: "status", Verdict: Pass}
	changed := a
	changed.Observed = 4
	reworded := a
	reworded.Explanation, reworded.Proof = "other words", &Proof{}
	tests := []struct {
		name      string
		got, want []Result
		diffs     []string
	}{
		{"equal", []Result{a, b}, []Result{a, b}, nil},
		{"prose differs only", []Result{reworded, b}, []Result{a, b}, nil},
		{"observed differs", []Result{changed, b}, []Result{a, b}, []string{"budget (x) pass, observed 4, bound 5, want budget (x) pass, observed 3, bound 5"}},
		{"missing", []Result{b}, []Result{a, b}, []string{"missing: budget (x) pass, observed 3, bound 5"}},
		{"extra", []Result{a, b}, []Result{a}, []string{"extra: status pass, observed 0, bound 0"}},
		{"order", []Result{b, a}, []Result{a, b}, []string{"the checks come in another order: row 1 is status pass, observed 0, bound 0, want budget (x) pass, observed 3, bound 5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareResults(tc.got, tc.want)
			if strings.Join(got, "\n") != strings.Join(tc.diffs, "\n") {
				t.Errorf("CompareResults =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.diffs, "\n"))
			}
		})
	}
}

// TestOverheadRatio compares two limited routes, each against the
// baseline requests of its own phases: in the first phase the machine is
// fast (baseline 1 ms, /a 0.2 ms more), in the second slow (baseline 2 ms,
// /v 0.5 ms more), so /a's overhead is 0.4 of /v's at every percentile,
// which a baseline pooled over both phases would not show.
func TestOverheadRatio(t *testing.T) {
	build := func(ratio float64, versusExtra time.Duration) *recorded {
		r := newRecorded()
		r.rec.Phases = []runrecord.PhaseRecord{{Name: "reference", Kind: runrecord.PhaseConstant}, {Name: "versus", Kind: runrecord.PhaseConstant}}
		r.rec.Checks.Overhead = &runrecord.OverheadBounds{Route: "/a", Baseline: "/b", P50: time.Millisecond, Versus: "/v", RatioP50: ratio, RatioP99: ratio}
		send := func(phase int, route string, at, took time.Duration) {
			r.add("k", at, at+took, history.Admitted, func(q *history.Record) {
				q.Route, q.Phase, q.IntendedNs = route, r.rec.Phases[phase].Name, int64(at)
			})
			r.rec.Phases[phase].Planned++
		}
		for i := range 100 {
			at := ms(float64(10 * i))
			send(0, "/a", at, 1200*time.Microsecond)
			send(0, "/b", at, time.Millisecond)
			send(1, "/v", ms(2000)+at, 2*time.Millisecond+versusExtra)
			send(1, "/b", ms(2000)+at, 2*time.Millisecond)
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		bound    float64
		extra    time.Duration
		verdict  Verdict
		observed float64
	}{
		{"within", 0.6, 500 * time.Microsecond, Pass, 0.4},
		{"above", 0.3, 500 * time.Microsecond, Fail, 0.4},
		{"versus adds nothing", 0.6, 0, Unknown, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := build(tc.bound, tc.extra).check(t)
			for _, scope := range []string{"p50", "p99"} {
				got := resultIn(t, rep, CheckOverheadRatio, scope)
				if got.Verdict != tc.verdict || got.Observed != tc.observed || got.Bound != tc.bound {
					t.Errorf("%s ratio = %s %v (bound %v), want %s %v: %s", scope, got.Verdict, got.Observed, got.Bound, tc.verdict, tc.observed, got.Explanation)
				}
			}
			if got := resultIn(t, rep, CheckOverhead, "p50"); got.Observed != 0.2 || got.Verdict != Pass {
				t.Errorf("p50 overhead of /a = %s %v ms, want pass 0.2 ms against its own phase's baseline: %s", got.Verdict, got.Observed, got.Explanation)
			}
		})
	}
	r := build(0.6, time.Millisecond)
	r.rec.Checks.Overhead.Versus = "/none"
	if got := resultIn(t, r.check(t), CheckOverheadRatio, ""); got.Verdict != Unknown || !strings.Contains(got.Explanation, "/none") {
		t.Errorf("no traffic on the versus route: %+v, want unknown naming /none", got)
	}
}
