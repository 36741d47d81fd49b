package checker

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter"
)

// Fixtures of the models: each a synthetic history and the verdict the
// model owes it.

// ids returns the IDs from..to inclusive.
func ids(from, to uint64) []uint64 {
	var out []uint64
	for id := from; id <= to; id++ {
		out = append(out, id)
	}
	return out
}

// A fixed window passing itself off as a sliding window counter: 10
// admitted at 900–909 ms and 10 more at 1100–1109 ms, on windows aligned at
// 0 with the clock offset known exactly. At 100 ms into the second window
// the previous window's 10 still weigh 9: the counter admits one more
// (two, rounding the weight down), not ten.
func TestSlidingCounterFixedWindowBurstFails(t *testing.T) {
	var h hist
	for i := range 10 {
		h.add("k", ms(900+float64(i)), ms(900.5+float64(i)), adm)
	}
	for i := range 10 {
		h.add("k", ms(1100+float64(i)), ms(1100.5+float64(i)), adm)
	}
	res := result(t, h.check(t, "sliding_window_counter:10/1s"), CheckBudget)
	if res.Verdict != Fail {
		t.Fatalf("budget = %s, want fail: %s", res.Verdict, res.Explanation)
	}
	// The last admission, 109.5 ms into the window at the latest, found the
	// previous window's 10 (weighing floor(8.905) = 8) and 9 of its own.
	if res.Observed != 20 || res.Bound != 12 {
		t.Errorf("observed %v of bound %v, want 20 of 12: %s", res.Observed, res.Bound, res.Explanation)
	}
	if p := res.Proof; p.FromNs != int64(ms(900)) || p.ToNs != int64(ms(1109.5)) || !slices.Equal(p.RequestIDs, ids(1, 20)) {
		t.Errorf("proof [%d, %d] %v, want [900 ms, 1109.5 ms] and requests 1–20", p.FromNs, p.ToNs, p.RequestIDs)
	}
	if !strings.Contains(res.Explanation, "20 units admitted") {
		t.Errorf("explanation %q does not give the units admitted", res.Explanation)
	}

	// The same traffic decided by the reference limiter, which admits one
	// in the second window, passes every check with the headers it sends;
	// a counter rounding the weight down admits two, and passes the budget
	// too; three are a violation whatever the rounding.
	for _, tc := range []struct {
		name    string
		admit   int // admissions in the second window; -1: the reference decides
		verdict Verdict
	}{{"reference", -1, Pass}, {"weight rounded down", 2, Pass}, {"three", 3, Fail}} {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			l := mustRefLimit(t, "sliding_window_counter:10/1s")
			store := limiter.NewMemoryStore()
			for i := range 20 {
				at := ms(900 + float64(i))
				if i >= 10 {
					at = ms(1090 + float64(i))
				}
				d, err := store.AllowNAt("k", 1, epoch.Add(at), l)
				if err != nil {
					t.Fatal(err)
				}
				out := rej
				if d.Allowed && tc.admit < 0 || i < 10 || i-10 < tc.admit {
					out = adm
				}
				r := h.add("k", at, at+ms(0.5), out, header("ratelimit-limit", "10"))
				if tc.admit < 0 {
					setHeader(r, "ratelimit-remaining", strconv.FormatInt(d.Remaining, 10))
					setHeader(r, "ratelimit-reset", strconv.FormatInt(d.ResetAfterSeconds(), 10))
				}
				if out == rej {
					setHeader(r, "retry-after", strconv.FormatInt(max(d.RetryAfterSeconds(), 1), 10))
				}
			}
			rep := h.check(t, "sliding_window_counter:10/1s")
			if res := result(t, rep, CheckBudget); res.Verdict != tc.verdict {
				t.Fatalf("budget = %s, want %s: %s", res.Verdict, tc.verdict, res.Explanation)
			}
			if tc.admit < 0 {
				for _, r := range rep.Results {
					if r.Verdict != Pass {
						t.Errorf("%s = %s: %s", r.Name, r.Verdict, r.Explanation)
					}
				}
			}
		})
	}
}

// A burst whose requests all overlap (each answered after every other was
// sent) is bounded as a set: the one decided last saw the others charged.
// Ten admitted at 900–909 ms, then ten sent together at 1100–1109 ms and
// answered at 1112–1113 ms: a counter admits two at most (the previous 10
// weigh floor(8.87) = 8 by 1113 ms), so ten is a violation, two is not.
func TestSlidingCounterConcurrentBurst(t *testing.T) {
	tests := []struct {
		name     string
		admitted int // of the concurrent ten
		want     Verdict
		observed float64
	}{
		{"a fixed window admits ten", 10, Fail, 20},
		{"three admitted", 3, Fail, 13},
		{"two, the weight rounded down", 2, Pass, 0},
		{"one, the exact estimate", 1, Pass, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			for i := range 10 {
				h.add("k", ms(900+float64(i)), ms(900.5+float64(i)), adm)
			}
			for i := range 10 {
				out := rej
				if i < tt.admitted {
					out = adm
				}
				h.add("k", ms(1100+float64(i)), ms(1112+0.1*float64(i)), out, retryAfter(1))
			}
			res := result(t, h.check(t, "sliding_window_counter:10/1s"), CheckBudget)
			if res.Verdict != tt.want {
				t.Fatalf("budget = %s, want %s: %s", res.Verdict, tt.want, res.Explanation)
			}
			if tt.want == Fail && (res.Observed != tt.observed || res.Bound != 12) {
				t.Errorf("observed %v of bound %v, want %v of 12: %s", res.Observed, res.Bound, tt.observed, res.Explanation)
			}
		})
	}
}

// The counter's false rejections and waits use the previous window: a
// rejection that the estimate allows at every possible time is false, one
// it forbids at some time is not; a Retry-After shorter than the estimate
// lets the request through is a lie.
func TestSlidingCounterRoomAndWaits(t *testing.T) {
	tests := []struct {
		name      string
		at        float64 // the 429's sent time, ms (received 0.5 ms later)
		ra        int
		falseRej  Verdict
		retryWant Verdict
	}{
		// prev 10 weighs 10·(1 − 0.5) = 5 at 1500 ms: room for 5 more.
		{"half the previous window gone", 1500, 1, Fail, Pass},
		// At 1050 ms the previous 10 weigh 9.5: no room; the request fits
		// once they weigh 9, at 1100 ms (the reference: Retry-After 1).
		{"previous window full", 1050, 1, Pass, Pass},
		// A Retry-After of 2 s is more than a second above a wait of at
		// most 50 ms.
		{"wait overstated", 1050, 2, Pass, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			for i := range 10 {
				h.add("k", ms(900+float64(i)), ms(900.5+float64(i)), adm)
			}
			h.add("k", ms(tt.at), ms(tt.at+0.5), rej, retryAfter(tt.ra))
			rep := h.check(t, "sliding_window_counter:10/1s")
			if res := result(t, rep, CheckFalseRejections); res.Verdict != tt.falseRej {
				t.Errorf("false rejections = %s, want %s: %s", res.Verdict, tt.falseRej, res.Explanation)
			}
			if res := result(t, rep, CheckRetryAfter); res.Verdict != tt.retryWant {
				t.Errorf("retry-after = %s, want %s: %s", res.Verdict, tt.retryWant, res.Explanation)
			}
		})
	}
}

// A leaky bucket as a queue holds each admission until its slot: three
// requests sent together to leaky_bucket:1/1s,burst=6 have slots at 0, 1 s
// and 2 s.
func TestQueueDelay(t *testing.T) {
	tests := []struct {
		name     string
		answers  []float64 // ms
		decided  float64   // the reported decision time, ms; 0 for none
		want     Verdict
		unit     string
		observed float64
		bound    float64
		proof    []uint64
	}{
		{name: "answered at once", answers: []float64{0.2, 0.5, 1}, want: Fail, unit: "units", observed: 3, bound: 1.003, proof: []uint64{1, 2, 3}},
		{name: "answered at their slots", answers: []float64{0.5, 1000.5, 2000.5}, want: Pass, unit: "units"},
		// A millisecond clock and a delay in whole milliseconds (NGINX)
		// may each release up to 1 ms before the slot.
		{name: "answered within the timers' 2 ms", answers: []float64{0.5, 998.5, 1998.2}, want: Pass, unit: "units"},
		{name: "answered beyond the timers' 2 ms", answers: []float64{0.5, 997.5, 2000.5}, want: Fail, unit: "units", observed: 2, bound: 1.9995, proof: []uint64{1, 2}},
		{name: "second one early", answers: []float64{0.5, 900, 2000.5}, want: Fail, unit: "units", observed: 2, bound: 1.902, proof: []uint64{1, 2}},
		// Decided at 0.1 ms, the third's slot is at 2 s at the latest: an
		// answer at 2.5 s is 500 ms late, beyond the 100 ms slack.
		{name: "answered late", answers: []float64{0.5, 1000.5, 2500}, decided: 0.1, want: Fail, unit: "ms", observed: 499.898, bound: 100, proof: []uint64{3}},
		{name: "answered within the slack", answers: []float64{0.5, 1000.5, 2050}, decided: 0.1, want: Pass, unit: "units"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			for _, a := range tt.answers {
				h.add("k", 0, ms(a), adm, func(r *history.Record) {
					if tt.decided > 0 {
						r.DecisionUs = epoch.Add(ms(tt.decided)).UnixMicro()
					}
				})
			}
			p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, "leaky_bucket:1/1s,burst=6")}}}, TrustDecisionTime: tt.decided > 0}
			rep, err := Check(h.source(), p)
			if err != nil {
				t.Fatal(err)
			}
			if res := result(t, rep, CheckBudget); res.Verdict != Pass {
				t.Errorf("budget = %s, want pass: %s", res.Verdict, res.Explanation)
			}
			res := result(t, rep, CheckQueueDelay)
			if res.Verdict != tt.want || res.Unit != tt.unit {
				t.Fatalf("queue-delay = %s in %s, want %s in %s: %s", res.Verdict, res.Unit, tt.want, tt.unit, res.Explanation)
			}
			if !strings.Contains(res.Scope, "as a queue") {
				t.Errorf("scope %q does not say the bucket is a queue", res.Scope)
			}
			if tt.want != Fail {
				return
			}
			if math.Abs(res.Observed-tt.observed) > 0.01 || math.Abs(res.Bound-tt.bound) > 1e-6 {
				t.Errorf("observed %v of bound %v, want %v of %v: %s", res.Observed, res.Bound, tt.observed, tt.bound, res.Explanation)
			}
			if !slices.Equal(res.Proof.RequestIDs, tt.proof) {
				t.Errorf("proof requests %v, want %v", res.Proof.RequestIDs, tt.proof)
			}
		})
	}
}

// Every RateLimit field has both bounds its model allows.
func TestRateLimitFieldBounds(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		headers map[string]string // on the 429 at 1 s, after an admission at 0
		want    Verdict
		why     string // in the explanation
	}{
		// gcra:1/10s,burst=1: the 429 at 1 s waits 9 s.
		{"reset below the wait", "gcra:1/10s,burst=1", map[string]string{"ratelimit": `"default";r=0;t=0`}, Fail, "reset 0 s, shorter than the ideal wait"},
		{"reset at the wait", "gcra:1/10s,burst=1", map[string]string{"ratelimit": `"default";r=0;t=9`}, Pass, ""},
		{"reset rounded down", "gcra:1/10s,burst=1", map[string]string{"ratelimit": `"default";r=0;t=8`}, Pass, ""},
		{"reset beyond a refill", "gcra:1/10s,burst=1", map[string]string{"ratelimit": `"default";r=0;t=12`}, Fail, "longer than a full refill"},
		{"draft-06 reset below the wait", "gcra:1/10s,burst=1", map[string]string{"ratelimit-limit": "1", "ratelimit-remaining": "0", "ratelimit-reset": "0"}, Fail, "shorter than the ideal wait"},
		{"X-RateLimit reset below the wait", "gcra:1/10s,burst=1", map[string]string{"x-ratelimit-limit": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "3"}, Fail, "shorter than the ideal wait"},
		// The reset of 2^64 s + 10 s, which wrapped to 0.29 s.
		{"reset past the int64 of ns", "gcra:1/10s,burst=1", map[string]string{"ratelimit-reset": "18446744074"}, Fail, "longer than a full refill"},
		{"policy of the bucket", "gcra:1/10s,burst=1", map[string]string{"ratelimit": `"default";r=0;t=9`, "ratelimit-policy": `"default";q=1;w=10`}, Pass, ""},
		{"policy with the wrong window", "gcra:1/10s,burst=1", map[string]string{"ratelimit": `"default";r=0;t=9`, "ratelimit-policy": `"default";q=1;w=1`}, Fail, "w=1"},
		{"policy with the wrong quota", "gcra:1/10s,burst=1", map[string]string{"ratelimit": `"default";r=0;t=9`, "ratelimit-policy": `"default";q=5;w=10`}, Fail, "limit 5 is not the capacity"},
		{"second policy with the wrong quota", "gcra:1/10s,burst=1", map[string]string{"ratelimit": `"default";r=0;t=9`, "ratelimit-policy": `"default";q=1;w=10, "day";q=50;w=86400`}, Fail, "q=50 is not the quota"},
		{"policy as rate per period", "gcra:2/10s,burst=4", map[string]string{"ratelimit-policy": `"p";q=2;w=10`}, Pass, ""},
		{"policy of a window, older form", "fixed_window:10/5s", map[string]string{"ratelimit-policy": `10;w=5`}, Pass, ""},
		{"policy of a window, wrong window", "fixed_window:10/5s", map[string]string{"ratelimit-policy": `"a,b";q=10;w=60`}, Fail, "w=60"},
		{"policy that does not parse", "fixed_window:10/5s", map[string]string{"ratelimit-policy": `"x";q=10;w=0`}, Fail, "not a whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.add("k", 0, ms(1), adm)
			r := h.add("k", time.Second, time.Second+ms(1), rej, retryAfter(9))
			if strings.HasPrefix(tt.spec, "fixed") {
				r = h.add("k", ms(2), ms(3), adm)
			}
			for k, v := range tt.headers {
				if k == "x-ratelimit-reset" { // an epoch time, 3 s after the response
					v = strconv.FormatInt(epoch.Add(time.Duration(r.ReceivedNs)).Unix()+3, 10)
				}
				setHeader(r, k, v)
			}
			res := result(t, h.check(t, tt.spec), CheckRateLimitFields)
			if res.Verdict != tt.want || !strings.Contains(res.Explanation, tt.why) {
				t.Errorf("ratelimit-fields = %s (%s), want %s naming %q", res.Verdict, res.Explanation, tt.want, tt.why)
			}
		})
	}
}

// expressHistory is what express-rate-limit on rate-limit-redis (a fixed
// window of 10 per 5 s from each key's first request) answers: one request
// at 2 s opens the window, twelve at 6.8 s find 9 left, twelve at 7.2 s a
// window that opened at 7.2 s.
func expressHistory() *hist {
	var h hist
	h.add("k", 2*time.Second, 2*time.Second+ms(0.5), adm)
	for burst, at := range []float64{6800, 7200} {
		admit, reset := 9, 7000.0
		if burst == 1 {
			admit, reset = 10, 12200
		}
		for i := range 12 {
			s := at + 0.4*float64(i)
			if i < admit {
				h.add("k", ms(s), ms(s+0.5), adm)
				continue
			}
			h.add("k", ms(s), ms(s+0.5), rej, retryAfter(int(math.Ceil((reset-s)/1000))))
		}
	}
	return &h
}

// Fixed windows from each key's first request: the express peer's history
// passes when claimed so, and fails as windows aligned on the clock; twenty
// admissions within 10 ms fail whatever the anchors.
func TestFirstRequestWindows(t *testing.T) {
	t.Run("express claimed from first request", func(t *testing.T) {
		rep := expressHistory().check(t, "fixed_window:10/5s,start=first")
		for _, r := range rep.Results {
			if r.Verdict != Pass {
				t.Errorf("%s = %s: %s", r.Name, r.Verdict, r.Explanation)
			}
		}
		if res := result(t, rep, CheckBudget); !strings.Contains(res.Scope, "from first request") {
			t.Errorf("budget scope %q does not name the windows' start", res.Scope)
		}
	})
	t.Run("express claimed aligned", func(t *testing.T) {
		res := result(t, expressHistory().check(t, "fixed_window:10/5s"), CheckBudget)
		if res.Verdict != Fail || res.Observed != 19 || res.Proof.FromNs != int64(5*time.Second) {
			t.Errorf("budget = %s, %v units from %d ns, want fail, 19 units in the window from 5 s: %s", res.Verdict, res.Observed, res.Proof.FromNs, res.Explanation)
		}
	})
	t.Run("twenty within 10 ms", func(t *testing.T) {
		var h hist
		for i := range 20 {
			h.add("k", ms(0.5*float64(i)), ms(0.5*float64(i)+0.4), adm)
		}
		res := result(t, h.check(t, "fixed_window:10/5s,start=first"), CheckBudget)
		// The first may be the anchor, decided up to 0.4 ms: the other 19
		// surely lie in its window.
		if res.Verdict != Fail || res.Observed != 19 || res.Bound != 10 || !slices.Equal(res.Proof.RequestIDs, ids(2, 20)) {
			t.Errorf("budget = %s, %v of %v, proof %v; want fail, 19 of 10, requests 2–20: %s", res.Verdict, res.Observed, res.Bound, res.Proof.RequestIDs, res.Explanation)
		}
	})
	t.Run("ten then ten after the expiry", func(t *testing.T) {
		var h hist
		for _, at := range []float64{0, 5000} {
			for i := range 10 {
				h.add("k", ms(at+0.5*float64(i)), ms(at+0.5*float64(i)+0.4), adm)
			}
		}
		if res := result(t, h.check(t, "fixed_window:10/5s,start=first"), CheckBudget); res.Verdict != Pass {
			t.Errorf("budget = %s, want pass: %s", res.Verdict, res.Explanation)
		}
	})
	t.Run("eleven in the second window", func(t *testing.T) {
		// The second window opens at the first request decided 5 s after
		// the first anchor (0 to 0.4 ms): no later than the one received at
		// 5.0009 s, so the eleven after it surely lie in one window.
		var h hist
		h.add("k", 0, ms(0.4), adm)
		for i := range 13 {
			h.add("k", ms(5000+0.5*float64(i)), ms(5000+0.5*float64(i)+0.4), adm)
		}
		res := result(t, h.check(t, "fixed_window:10/5s,start=first"), CheckBudget)
		if res.Verdict != Fail || res.Observed != 11 {
			t.Errorf("budget = %s, %v units, want fail, 11: %s", res.Verdict, res.Observed, res.Explanation)
		}
	})
	t.Run("a window of unknown expiry", func(t *testing.T) {
		// A request lasting from 4.9 s to 5.1 s may count in the first
		// window or open the second: the ten after it fit either way.
		var h hist
		h.add("k", 0, ms(0.4), adm)
		h.add("k", ms(4900), ms(5100), adm)
		for i := range 10 {
			h.add("k", ms(5200+0.5*float64(i)), ms(5200+0.5*float64(i)+0.4), adm)
		}
		if res := result(t, h.check(t, "fixed_window:10/5s,start=first"), CheckBudget); res.Verdict != Pass {
			t.Errorf("budget = %s, want pass: %s", res.Verdict, res.Explanation)
		}
	})
}

// The overflows found at the edges of the accepted values.
func TestModelOverflows(t *testing.T) {
	t.Run("sliding window counter's estimate of a huge cost", func(t *testing.T) {
		// An admission of 2^38 units, then a rejection: the estimate
		// 2^38·W µs once wrapped negative, and the rejection looked false.
		// It waits for the next window and most of the one after it.
		var h hist
		h.add("k", 0, ms(0.5), adm, func(r *history.Record) { r.Cost = 1 << 38 })
		h.add("k", time.Second, time.Second+ms(0.5), rej, retryAfter(199))
		rep := h.check(t, "sliding_window_counter:1000/100s")
		if res := result(t, rep, CheckFalseRejections); res.Verdict != Pass {
			t.Errorf("false rejections = %s, want pass: %s", res.Verdict, res.Explanation)
		}
		if res := result(t, rep, CheckRetryAfter); res.Verdict != Pass {
			t.Errorf("retry-after = %s, want pass: %s", res.Verdict, res.Explanation)
		}
		if res := result(t, rep, CheckBudget); res.Verdict != Fail {
			t.Errorf("budget = %s, want fail: %s", res.Verdict, res.Explanation)
		}
	})
	t.Run("bucket's sum of costs", func(t *testing.T) {
		// 2^24 − 1 requests of 2^40 units and a burst of 2^40 − 2 once
		// summed to 0 with the burst and 2, dividing by it. (Here two
		// requests of larger costs stand for them.)
		reqs := []request{{cost: math.MaxInt64 - history.MaxCost}, {cost: history.MaxCost}, {cost: history.MaxCost}}
		total := costOf(reqs, []int32{0, 1, 2})
		if total != math.MaxInt64 {
			t.Fatalf("costOf = %d, want it saturated at %d", total, int64(math.MaxInt64))
		}
		b := &bucketModel{lim: Limit{Algorithm: GCRA, Rate: 1, Period: time.Second, Burst: maxCapacity - 2}}
		if got := b.tFast(total); got != 1 {
			t.Errorf("tFast = %d, want 1", got)
		}
		if _, ok := b.tSlow(total); ok {
			t.Errorf("tSlow ok with a saturated total, want no refill assumed")
		}
	})
	t.Run("policy values beyond a history's range", func(t *testing.T) {
		var h hist
		h.add("k", 0, ms(1), adm)
		lim := mustLimit(t, "gcra:1/1s,burst=1")
		long := Limit{Algorithm: GCRA, Rate: 1, Period: 40 * 365 * 24 * time.Hour, Burst: 1}
		far := time.Duration(history.MaxTimeNs) + 1
		for _, tc := range []struct {
			name string
			p    Policy
			want string
		}{
			{"resolution", Policy{Rules: []Rule{{Limits: []Limit{lim}}}, Resolution: 2 * time.Second}, "resolution"},
			{"clock offset", Policy{Rules: []Rule{{Limits: []Limit{lim}}}, ClockOffset: &far}, "clock offset"},
			{"negative clock offset", Policy{Rules: []Rule{{Limits: []Limit{lim}}}, ClockOffset: func() *time.Duration { d := -far; return &d }()}, "clock offset"},
			{"clock uncertainty", Policy{Rules: []Rule{{Limits: []Limit{lim}}}, ClockUncertainty: far}, "clock uncertainty"},
			{"period", Policy{Rules: []Rule{{Limits: []Limit{long}}}}, "period"},
			{"queue slack", Policy{Rules: []Rule{{Limits: []Limit{lim}}}, QueueSlack: -time.Second}, "queue slack"},
		} {
			_, err := Check(h.source(), tc.p)
			if !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: Check error %v, want ErrInvalidPolicy naming %s", tc.name, err, tc.want)
			}
		}
	})
}
