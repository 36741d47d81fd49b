package checker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter"
)

const (
	adm = history.Admitted
	rej = history.Rejected
	unk = history.Error
)

func TestBudget(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		build    func(h *hist)
		want     Verdict
		observed float64
		from, to time.Duration // the proof's interval, when want is Fail
		ids      int           // the proof's request count, when want is Fail
	}{
		{
			name:   "gcra exact burst then one per interval",
			policy: "gcra:5/1s,burst=5",
			build: func(h *hist) {
				for range 5 {
					h.add("k", 0, ms(1), adm)
				}
				for i := 1; i <= 5; i++ {
					h.add("k", ms(200*float64(i)), ms(200*float64(i)+1), adm)
				}
			},
			want: Pass, observed: 5,
		},
		{
			name:   "gcra one extra admission",
			policy: "gcra:5/1s,burst=5",
			build: func(h *hist) {
				h.add("k", ms(10), ms(20), adm) // outside the tight interval
				for range 6 {
					h.add("k", ms(500), ms(501), adm)
				}
			},
			want: Fail, observed: 6, from: ms(500), to: ms(501), ids: 6,
		},
		{
			name:   "overlapping intervals explain a sixth admission",
			policy: "gcra:5/1s,burst=5",
			build: func(h *hist) {
				for range 5 {
					h.add("k", 0, ms(1), adm)
				}
				h.add("k", 0, ms(250), adm) // may have been decided at 200 ms, after a token came back
			},
			want: Pass, observed: 5,
		},
		{
			name:   "token bucket fractional rate",
			policy: "token_bucket:0.5/1s,burst=1",
			build: func(h *hist) {
				h.add("k", 0, ms(1), adm)
				h.add("k", ms(1999), ms(2001), adm) // may be decided at 2 s
				h.add("k", ms(3000), ms(3001), adm) // 1 s later: no token yet
			},
			// 3 units within 3.001 s where 1 + 0.5·3.001 are allowed: the
			// worst excess spans the whole history.
			want: Fail, observed: 3, from: 0, to: ms(3001), ids: 3,
		},
		{
			name:   "sliding log exact",
			policy: "sliding_window_log:3/1s",
			build: func(h *hist) {
				for i := range 3 {
					h.add("k", ms(float64(i)), ms(float64(i)+1), adm)
				}
				h.add("k", ms(1003), ms(1004), adm)
			},
			want: Pass, observed: 3,
		},
		{
			name:   "sliding log one extra within the window",
			policy: "sliding_window_log:3/1s",
			build: func(h *hist) {
				for i := range 3 {
					h.add("k", ms(float64(i)), ms(float64(i)+1), adm)
				}
				h.add("k", ms(998), ms(998.5), adm)
			},
			want: Fail, observed: 4, from: 0, to: ms(998.5), ids: 4,
		},
		{
			name:   "sliding log extra only if decided early",
			policy: "sliding_window_log:3/1s",
			build: func(h *hist) {
				for i := range 3 {
					h.add("k", ms(float64(i)), ms(float64(i)+1), adm)
				}
				h.add("k", ms(500), ms(1002), adm)
			},
			want: Pass, observed: 3,
		},
		{
			name:   "leaky bucket as a meter",
			policy: "leaky_bucket:2/1s,burst=2",
			build: func(h *hist) {
				h.add("k", 0, ms(1), adm)
				h.add("k", 0, ms(1), adm)
				h.add("k", ms(400), ms(401), adm) // 0.8 units refilled: one too many
			},
			want: Fail, observed: 3, from: 0, to: ms(401), ids: 3,
		},
		{
			name:   "different keys do not pool",
			policy: "gcra:5/1s,burst=5",
			build: func(h *hist) {
				for i := range 10 {
					h.add(fmt.Sprint("k", i%2), 0, ms(1), adm)
				}
			},
			want: Pass, observed: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			tt.build(&h)
			res := result(t, h.check(t, tt.policy), CheckBudget)
			if got, want := res.Verdict, tt.want; got != want {
				t.Fatalf("Verdict = %s, want %s (%s)", got, want, res.Explanation)
			}
			if got, want := res.Observed, tt.observed; got != want {
				t.Errorf("Observed = %v, want %v (%s)", got, want, res.Explanation)
			}
			if tt.want != Fail {
				return
			}
			if got, want := time.Duration(res.Proof.FromNs), tt.from; got != want {
				t.Errorf("proof from = %v, want %v", got, want)
			}
			if got, want := time.Duration(res.Proof.ToNs), tt.to; got != want {
				t.Errorf("proof to = %v, want %v", got, want)
			}
			if got, want := len(res.Proof.RequestIDs), tt.ids; got != want {
				t.Errorf("proof has %d requests, want %d", got, want)
			}
		})
	}
}

// C1: 50 requests for one key at t=0 from several instances, GCRA burst 5,
// 5/s: exactly 5 admitted.
func TestFieldCaseC1(t *testing.T) {
	for _, admitted := range []int{5, 6} {
		t.Run(fmt.Sprint(admitted, " admitted"), func(t *testing.T) {
			var h hist
			for i := range 50 {
				out := rej
				if i < admitted {
					out = adm
				}
				h.add("key", ms(float64(i%7)*0.1), ms(5+float64(i%5)), out, inst(fmt.Sprint("api-", i%3)), retryAfter(1))
			}
			rep := h.check(t, "gcra:5/1s,burst=5")
			want := Pass
			if admitted > 5 {
				want = Fail
			}
			if got := result(t, rep, CheckBudget).Verdict; got != want {
				t.Errorf("budget = %s, want %s", got, want)
			}
			if got := result(t, rep, CheckFalseRejections).Verdict; got != Pass {
				t.Errorf("false rejections = %s, want pass", got)
			}
			if got := result(t, rep, CheckRetryAfter).Verdict; got != Pass {
				t.Errorf("retry-after = %s, want pass: %s", got, result(t, rep, CheckRetryAfter).Explanation)
			}
		})
	}
}

// C2: fixed window 5 per 5 s; 5 requests between 0 and 400 ms are all
// admitted and the 6th rejected.
func TestFieldCaseC2(t *testing.T) {
	tests := []struct {
		name      string
		outcomes  [6]history.Outcome
		budget    Verdict
		falseRejs Verdict
	}{
		{"right", [6]history.Outcome{adm, adm, adm, adm, adm, rej}, Pass, Pass},
		{"sixth admitted", [6]history.Outcome{adm, adm, adm, adm, adm, adm}, Fail, Pass},
		{"fifth rejected", [6]history.Outcome{adm, adm, adm, adm, rej, rej}, Pass, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			for i, out := range tt.outcomes {
				h.add("k", ms(80*float64(i)), ms(80*float64(i)+2), out, retryAfter(5))
			}
			rep := h.check(t, "fixed_window:5/5s")
			if got := result(t, rep, CheckBudget).Verdict; got != tt.budget {
				t.Errorf("budget = %s, want %s", got, tt.budget)
			}
			fr := result(t, rep, CheckFalseRejections)
			if got := fr.Verdict; got != tt.falseRejs {
				t.Errorf("false rejections = %s, want %s (%s)", got, tt.falseRejs, fr.Explanation)
			}
			if tt.falseRejs == Fail && !slices.Equal(fr.Proof.RequestIDs, []uint64{5, 6}) {
				t.Errorf("false rejections = %v, want [5 6]", fr.Proof.RequestIDs)
			}
		})
	}
}

// C4: sliding window log, 2 per minute, admitted at 0 s and 10 s; a third
// at 20 s is rejected with Retry-After 40 s (from the oldest entry), not 50 s.
func TestFieldCaseC4(t *testing.T) {
	for _, tt := range []struct {
		retryAfter int
		want       Verdict
	}{{40, Pass}, {41, Pass}, {50, Fail}, {39, Fail}} {
		t.Run(fmt.Sprint("Retry-After ", tt.retryAfter), func(t *testing.T) {
			var h hist
			h.add("k", 0, ms(1), adm)
			h.add("k", 10*time.Second, 10*time.Second+ms(1), adm)
			h.add("k", 20*time.Second, 20*time.Second+ms(1), rej, retryAfter(tt.retryAfter))
			rep := h.check(t, "sliding_window_log:2/1m")
			res := result(t, rep, CheckRetryAfter)
			if got := res.Verdict; got != tt.want {
				t.Errorf("retry-after = %s, want %s (%s)", got, tt.want, res.Explanation)
			}
			if got := result(t, rep, CheckFalseRejections).Verdict; got != Pass {
				t.Errorf("false rejections = %s, want pass", got)
			}
		})
	}
}

// C5: fixed window, 3 per 10 s: exhaust the key, retry at Retry-After, keep
// retrying while rejected: admitted at Retry-After; Retry-After always >= 1
// and never epoch-sized.
func TestFieldCaseC5(t *testing.T) {
	build := func(ras ...int) *hist {
		var h hist
		for i := range 3 {
			h.add("k", ms(float64(i)), ms(float64(i)+1), adm)
		}
		for i, ra := range ras {
			at := ms(9000 + 300*float64(i))
			h.add("k", at, at+ms(1), rej, retryAfter(ra))
		}
		h.add("k", 10*time.Second, 10*time.Second+ms(1), adm)
		return &h
	}
	tests := []struct {
		name string
		h    *hist
		want Verdict
	}{
		{"honest", build(1, 1, 1, 1), Pass},
		{"zero", build(1, 0, 1, 1), Fail},
		{"epoch sized", build(1, 1, 1_700_000_010, 1), Fail},
		{"a second above a 1 s wait", build(2, 1, 1, 1), Pass},
		{"a second above a 0.7 s wait", build(1, 2, 1, 1), Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := tt.h.check(t, "fixed_window:3/10s")
			res := result(t, rep, CheckRetryAfter)
			if got := res.Verdict; got != tt.want {
				t.Errorf("retry-after = %s, want %s (%s)", got, tt.want, res.Explanation)
			}
			if got := result(t, rep, CheckBudget).Verdict; got != Pass {
				t.Errorf("budget = %s, want pass", got)
			}
		})
	}
}

func TestRetryAfterBucket(t *testing.T) {
	// gcra 1 per 10 s, burst 1: admitted at 0, rejected at 100 ms: the
	// ideal wait is 9.9 s, so Retry-After must be 10 (or 11).
	tests := []struct {
		ra   int
		want Verdict
	}{{10, Pass}, {9, Fail}, {11, Fail}, {12, Fail}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.ra), func(t *testing.T) {
			var h hist
			h.add("k", 0, ms(1), adm)
			h.add("k", ms(100), ms(101), rej, retryAfter(tt.ra))
			res := result(t, h.check(t, "gcra:1/10s,burst=1"), CheckRetryAfter)
			if got := res.Verdict; got != tt.want {
				t.Errorf("retry-after = %s, want %s (%s)", got, tt.want, res.Explanation)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		var h hist
		h.add("k", 0, ms(1), adm)
		h.add("k", ms(100), ms(101), rej)
		if got := result(t, h.check(t, "gcra:1/10s,burst=1"), CheckRetryAfter).Verdict; got != Fail {
			t.Errorf("retry-after = %s, want fail", got)
		}
	})
}

func TestFalseRejection(t *testing.T) {
	var h hist
	for range 3 {
		h.add("k", 0, ms(1), adm)
	}
	h.add("k", ms(2), ms(3), rej, retryAfter(1)) // two tokens were left
	h.add("k", ms(4), ms(5), adm)
	h.add("k", ms(4), ms(5), adm)
	res := result(t, h.check(t, "gcra:5/1s,burst=5"), CheckFalseRejections)
	if got, want := res.Verdict, Fail; got != want {
		t.Fatalf("Verdict = %s, want %s (%s)", got, want, res.Explanation)
	}
	if got, want := res.Proof.RequestIDs, []uint64{4}; !slices.Equal(got, want) {
		t.Errorf("false rejections = %v, want %v", got, want)
	}
	// The same rejection while the two admissions overlap it is explained:
	// they may have taken the last tokens first.
	var h2 hist
	for range 3 {
		h2.add("k", 0, ms(1), adm)
	}
	h2.add("k", ms(2), ms(3), rej, retryAfter(1))
	h2.add("k", ms(2), ms(3), adm)
	h2.add("k", ms(2.5), ms(4), adm)
	if got := result(t, h2.check(t, "gcra:5/1s,burst=5"), CheckFalseRejections).Verdict; got != Pass {
		t.Errorf("overlapping: Verdict = %s, want pass", got)
	}
}

func TestThreeInstances(t *testing.T) {
	var h hist
	for i := range 15 {
		h.add("k", ms(float64(i)*0.2), ms(float64(i)*0.2+3), adm, inst(fmt.Sprint("api-", i%3)))
	}
	res := result(t, h.check(t, "gcra:10/1s,burst=10"), CheckBudget)
	if got, want := res.Verdict, Fail; got != want {
		t.Fatalf("Verdict = %s, want %s", got, want)
	}
	if got, want := res.Observed, 15.0; got != want {
		t.Errorf("Observed = %v, want %v", got, want)
	}
	want := []InstanceShare{{"api-0", 5, 5}, {"api-1", 5, 5}, {"api-2", 5, 5}}
	if got := res.Proof.Instances; !slices.Equal(got, want) {
		t.Errorf("Instances = %v, want %v", got, want)
	}
}

func TestUnknownOutcomes(t *testing.T) {
	t.Run("budget", func(t *testing.T) {
		var h hist
		for range 5 {
			h.add("k", 0, ms(1), adm)
		}
		h.add("k", 0, ms(1), unk)
		if got := result(t, h.check(t, "gcra:5/1s,burst=5"), CheckBudget).Verdict; got != Unknown {
			t.Errorf("budget = %s, want unknown", got)
		}
	})
	t.Run("budget decided without them", func(t *testing.T) {
		var h hist
		for range 6 {
			h.add("k", 0, ms(1), adm)
		}
		h.add("k", 0, ms(1), unk)
		if got := result(t, h.check(t, "gcra:5/1s,burst=5"), CheckBudget).Verdict; got != Fail {
			t.Errorf("budget = %s, want fail", got)
		}
	})
	t.Run("false rejection", func(t *testing.T) {
		var h hist
		for range 4 {
			h.add("k", 0, ms(1), adm)
		}
		h.add("k", 0, ms(1), unk)
		h.add("k", ms(2), ms(3), rej, retryAfter(1))
		rep := h.check(t, "gcra:5/1s,burst=5")
		if got := result(t, rep, CheckFalseRejections).Verdict; got != Unknown {
			t.Errorf("false rejections = %s, want unknown", got)
		}
		if got := result(t, rep, CheckBudget).Verdict; got != Pass {
			t.Errorf("budget = %s, want pass", got)
		}
	})
}

// A fixed window admits 2L around a window edge: that passes a fixed window
// policy and fails a declared sliding window log.
func TestFixedWindowEdgeBurst(t *testing.T) {
	build := func(noClock bool) *hist {
		h := &hist{noClock: noClock}
		for range 5 {
			h.add("k", ms(990), ms(991), adm)
		}
		for range 5 {
			h.add("k", ms(1000.5), ms(1002), adm)
		}
		return h
	}
	tests := []struct {
		policy  string
		noClock bool
		want    Verdict
	}{
		{"fixed_window:5/1s", false, Pass},
		{"fixed_window:5/1s", true, Pass},
		// The counter's previous window of 5 still weighs floor(4.99) = 4
		// 2 ms into the next: one more, not five.
		{"sliding_window_counter:5/1s", false, Fail},
		{"sliding_window_log:5/1s", false, Fail},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.policy, " clock known ", !tt.noClock), func(t *testing.T) {
			rep := build(tt.noClock).check(t, tt.policy)
			res := result(t, rep, CheckBudget)
			if got := res.Verdict; got != tt.want {
				t.Errorf("budget = %s, want %s (%s)", got, tt.want, res.Explanation)
			}
			if tt.policy == "sliding_window_log:5/1s" {
				return
			}
			ratio := result(t, rep, CheckBurstRatio)
			if got, want := ratio.Observed, 2.0; got != want {
				t.Errorf("burst ratio = %v, want %v", got, want)
			}
		})
	}
	t.Run("straddling the edge under uncertainty", func(t *testing.T) {
		h := &hist{uncertain: ms(2)}
		for range 6 {
			h.add("k", ms(999.5), ms(1000.5), adm) // each may fall in either window
		}
		if got := result(t, h.check(t, "fixed_window:5/1s"), CheckBudget).Verdict; got != Pass {
			t.Errorf("budget = %s, want pass", got)
		}
	})
	t.Run("over the window", func(t *testing.T) {
		h := &hist{}
		for range 6 {
			h.add("k", ms(100), ms(101), adm)
		}
		res := result(t, h.check(t, "fixed_window:5/1s"), CheckBudget)
		if got := res.Verdict; got != Fail {
			t.Fatalf("budget = %s, want fail", got)
		}
		if got, want := time.Duration(res.Proof.FromNs), time.Duration(0); got != want {
			t.Errorf("window from %v, want %v", got, want)
		}
	})
}

func TestMultiLimit(t *testing.T) {
	// 10 per second with a burst of 10, and 3 per 100 ms: each limit checked.
	var h hist
	for range 4 {
		h.add("k", 0, ms(1), adm)
	}
	rep := h.check(t, "gcra:10/1s,burst=10", "sliding_window_log:3/100ms")
	var verdicts []Verdict
	for _, r := range rep.Results {
		if r.Name == CheckBudget {
			verdicts = append(verdicts, r.Verdict)
		}
	}
	if want := []Verdict{Pass, Fail}; !slices.Equal(verdicts, want) {
		t.Errorf("budgets = %v, want %v", verdicts, want)
	}
	// A rejection only the tighter limit explains is not false.
	var h2 hist
	for range 3 {
		h2.add("k", 0, ms(1), adm)
	}
	h2.add("k", ms(2), ms(3), rej, retryAfter(1))
	if got := result(t, h2.check(t, "gcra:10/1s,burst=10", "sliding_window_log:3/100ms"), CheckFalseRejections).Verdict; got != Pass {
		t.Errorf("false rejections = %s, want pass", got)
	}
}

func TestHeaders(t *testing.T) {
	tests := []struct {
		name  string
		build func(h *hist)
		check string
		want  Verdict
	}{
		{"consistent IETF", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit-limit", "5"), header("ratelimit-remaining", "4"), header("ratelimit-reset", "1"))
		}, CheckRateLimitFields, Pass},
		{"remaining above the model", func(h *hist) {
			h.add("k", 0, ms(1), adm)
			h.add("k", ms(2), ms(3), adm, header("ratelimit-limit", "5"), header("ratelimit-remaining", "4"))
		}, CheckRateLimitFields, Fail},
		{"remaining below the model", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit-limit", "5"), header("ratelimit-remaining", "3"))
		}, CheckRateLimitFields, Fail},
		{"remaining below the model unless overlapping requests came first", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit-limit", "5"), header("ratelimit-remaining", "3"))
			h.add("k", ms(0.5), ms(2), adm, header("ratelimit-limit", "5"), header("ratelimit-remaining", "3"))
		}, CheckRateLimitFields, Pass},
		{"limit not in the policy", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit-limit", "50"))
		}, CheckRateLimitFields, Fail},
		{"rejection with room", func(h *hist) {
			h.add("k", 0, ms(1), rej, retryAfter(1), header("ratelimit", "limit=5, remaining=2, reset=1"))
		}, CheckRateLimitFields, Fail},
		{"structured fields", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit", `"default";r=4;t=1`), header("ratelimit-policy", `"default";q=5;w=1`))
		}, CheckRateLimitFields, Pass},
		{"reset beyond a refill", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("x-ratelimit-reset", "30"))
		}, CheckRateLimitFields, Fail},
		{"IETF and X disagree", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit-remaining", "4"), header("x-ratelimit-remaining", "3"))
		}, CheckHeaderStyle, Fail},
		{"mixed families", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit-remaining", "4"))
			h.add("k", ms(300), ms(301), adm, header("x-ratelimit-remaining", "4"))
		}, CheckHeaderStyle, Fail},
		{"malformed", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit-remaining", "four"))
		}, CheckHeaderStyle, Fail},
		{"one family", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("x-ratelimit-remaining", "4"))
			h.add("k", ms(300), ms(301), adm, header("x-ratelimit-remaining", "4"))
		}, CheckHeaderStyle, Pass},
		{"unexpected 5xx", func(h *hist) {
			h.add("k", 0, ms(1), unk, status(500))
		}, CheckStatus, Fail},
		{"transport error: a target that does not answer fails", func(h *hist) {
			h.add("k", 0, ms(1), history.Admitted)
			h.add("k", ms(2), ms(3), unk)
		}, CheckStatus, Fail},
		{"401: traffic that never reached the limiter fails", func(h *hist) {
			h.add("k", 0, ms(1), history.Admitted, status(401))
		}, CheckStatus, Fail},
		{"429 and 200 pass", func(h *hist) {
			h.add("k", 0, ms(1), history.Admitted)
			h.add("k", ms(2), ms(3), history.Rejected, retryAfter(1))
		}, CheckStatus, Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			tt.build(&h)
			res := result(t, h.check(t, "gcra:5/1s,burst=5"), tt.check)
			if got := res.Verdict; got != tt.want {
				t.Errorf("%s = %s, want %s (%s)", tt.check, got, tt.want, res.Explanation)
			}
		})
	}
}

func TestPolicyRoutes(t *testing.T) {
	var h hist
	for range 6 {
		h.add("k", 0, ms(1), adm, func(r *history.Record) { r.Route = "/a" })
	}
	for range 6 {
		h.add("k", 0, ms(1), adm, func(r *history.Record) { r.Route = "/b/1" })
	}
	p := Policy{Rules: []Rule{
		{Route: "/a", Limits: []Limit{mustLimit(t, "gcra:10/1s,burst=10")}},
		{Route: "/b/*", Limits: []Limit{mustLimit(t, "gcra:10/1s,burst=10")}},
	}}
	rep, err := Check(h.source(), p)
	if err != nil {
		t.Fatal(err)
	}
	// Both routes share one limit, hence one budget: 12 > 10.
	if got := result(t, rep, CheckBudget).Verdict; got != Fail {
		t.Errorf("budget = %s, want fail", got)
	}
	p.Rules[1].Limits[0].Name = "other"
	rep, err = Check(h.source(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Name == CheckBudget && r.Verdict != Pass {
			t.Errorf("separate limits: budget %s = %s, want pass", r.Scope, r.Verdict)
		}
	}
}

// A Retry-After one second too short: GCRA 1 per 5 s, the key emptied at 0
// and rejected at 1 s, when the ideal wait is 4 s.
func TestRetryAfterOneSecondShort(t *testing.T) {
	for _, tt := range []struct {
		ra   int
		want Verdict
	}{{4, Pass}, {3, Fail}} {
		var h hist
		h.add("k", 0, ms(1), adm)
		h.add("k", time.Second, time.Second+ms(1), rej, retryAfter(tt.ra))
		res := result(t, h.check(t, "gcra:1/5s,burst=1"), CheckRetryAfter)
		if got := res.Verdict; got != tt.want {
			t.Errorf("Retry-After %d: %s, want %s (%s)", tt.ra, got, tt.want, res.Explanation)
		}
	}
}

func TestRemainingWindows(t *testing.T) {
	tests := []struct {
		policy    string
		remaining []string
		want      Verdict
	}{
		{"fixed_window:3/1s", []string{"2", "1", "0"}, Pass},
		{"fixed_window:3/1s", []string{"2", "0", "0"}, Fail},
		{"fixed_window:3/1s", []string{"2", "2", "0"}, Fail},
		{"sliding_window_log:3/1s", []string{"2", "1", "0"}, Pass},
		{"sliding_window_log:3/1s", []string{"1", "1", "0"}, Fail},
		{"sliding_window_counter:3/1s", []string{"2", "1", "0"}, Pass},
		{"sliding_window_counter:3/1s", []string{"2", "1", "1"}, Fail},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.policy, tt.remaining), func(t *testing.T) {
			var h hist
			for i, rem := range tt.remaining {
				h.add("k", ms(100+10*float64(i)), ms(101+10*float64(i)), adm, header("ratelimit-remaining", rem))
			}
			res := result(t, h.check(t, tt.policy), CheckRateLimitFields)
			if got := res.Verdict; got != tt.want {
				t.Errorf("ratelimit-fields = %s, want %s (%s)", got, tt.want, res.Explanation)
			}
		})
	}
}

func TestPolicyKeysAndCosts(t *testing.T) {
	var h hist
	for range 4 {
		h.add("free-1", 0, ms(1), adm)
		h.add("pro-1", 0, ms(1), adm)
	}
	p := Policy{Rules: []Rule{
		{Key: "free-*", Limits: []Limit{mustLimit(t, "gcra:3/1s,burst=3")}},
		{Key: "pro-*", Cost: 2, Limits: []Limit{mustLimit(t, "gcra:10/1s,burst=10")}},
	}}
	rep, err := Check(h.source(), p)
	if err != nil {
		t.Fatal(err)
	}
	var got []Verdict
	for _, r := range rep.Results {
		if r.Name == CheckBudget {
			got = append(got, r.Verdict)
			if r.Verdict == Pass && r.Observed != 8 {
				t.Errorf("pro budget observed %v, want 8 (4 requests of cost 2)", r.Observed)
			}
		}
	}
	if want := []Verdict{Fail, Pass}; !slices.Equal(got, want) {
		t.Errorf("budgets = %v, want %v", got, want)
	}
}

// C7: fixed window, 2 per 6 s, one request every 5 s for a minute: all
// admitted; a rejection among them is false.
func TestFieldCaseC7(t *testing.T) {
	for _, rejectAt := range []int{-1, 7} {
		var h hist
		for i := range 12 {
			out := adm
			if i == rejectAt {
				out = rej
			}
			at := time.Duration(i) * 5 * time.Second
			h.add("k", at, at+ms(2), out, retryAfter(1))
		}
		rep := h.check(t, "fixed_window:2/6s")
		want := Pass
		if rejectAt >= 0 {
			want = Fail
		}
		if got := result(t, rep, CheckFalseRejections).Verdict; got != want {
			t.Errorf("reject %d: false rejections = %s, want %s", rejectAt, got, want)
		}
		if got := result(t, rep, CheckBudget).Verdict; got != Pass {
			t.Errorf("reject %d: budget = %s, want pass", rejectAt, got)
		}
	}
}

// C11: token bucket, rate 1e-10/s, burst 1; two requests at t=0: admitted,
// then rejected with a finite Retry-After of about 317 years.
func TestFieldCaseC11(t *testing.T) {
	tests := []struct {
		name string
		ra   string
		want Verdict
	}{
		{"exact", "10000000000", Pass},
		{"a day", "86400", Fail},
		{"wrapped around", "1", Fail},
		{"negative", "-9223372036", Fail},
		{"beyond int64", "99999999999999999999", Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.add("k", 0, ms(1), adm)
			h.add("k", ms(2), ms(3), rej, header("retry-after", tt.ra))
			rep := h.check(t, "token_bucket:1e-10/1s,burst=1")
			if got := result(t, rep, CheckRetryAfter).Verdict; got != tt.want {
				t.Errorf("retry-after = %s, want %s (%s)", got, tt.want, result(t, rep, CheckRetryAfter).Explanation)
			}
			if got := result(t, rep, CheckBudget).Verdict; got != Pass {
				t.Errorf("budget = %s, want pass", got)
			}
		})
	}
}

// With the window alignment unknown, the sliding window counter's previous
// window still weighs on a decision: a rejection after a full earlier window
// is not provably false.
func TestSlidingCounterUnalignedRejection(t *testing.T) {
	h := &hist{noClock: true}
	for range 4 {
		h.add("k", ms(100), ms(101), adm)
	}
	h.add("k", ms(1500), ms(1501), rej, retryAfter(1)) // prev 4 weighted by about 0.5
	rep := h.check(t, "sliding_window_counter:4/1s")
	if got := result(t, rep, CheckFalseRejections).Verdict; got != Pass {
		t.Errorf("false rejections = %s, want pass", got)
	}
	h.add("k", ms(2500), ms(2501), rej, retryAfter(1)) // two windows later: room for sure
	rep = h.check(t, "sliding_window_counter:4/1s")
	if got := result(t, rep, CheckFalseRejections).Verdict; got != Fail {
		t.Errorf("false rejections = %s, want fail", got)
	}
}

// The reference limiter reads its clock in whole microseconds, so two
// decisions less than a window or an emission interval apart (by under a
// microsecond) may both be admitted; the checker's resolution margin keeps
// that from being reported.
func TestClockResolution(t *testing.T) {
	for _, spec := range []string{"gcra:1/1ms,burst=1", "token_bucket:1/1ms,burst=1", "sliding_window_log:1/1ms"} {
		t.Run(spec, func(t *testing.T) {
			l := mustRefLimit(t, spec)
			store := limiter.NewMemoryStore()
			var h hist
			for _, d := range []time.Duration{999, time.Millisecond} { // 999 ns reads as 0 µs
				dec, err := store.AllowNAt("k", 1, epoch.Add(d), l)
				if err != nil || !dec.Allowed {
					t.Fatalf("reference at %v: allowed %v, err %v; want admitted", d, dec.Allowed, err)
				}
				h.add("k", d, d, adm)
			}
			if got := result(t, h.check(t, spec), CheckBudget).Verdict; got != Pass {
				t.Errorf("budget = %s, want pass", got)
			}
			rep, err := Check(h.source(), Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, spec)}}}, Resolution: time.Nanosecond})
			if err != nil {
				t.Fatal(err)
			}
			if got := result(t, rep, CheckBudget).Verdict; got != Fail {
				t.Errorf("budget with a 1 ns resolution = %s, want fail", got)
			}
		})
	}
}

func TestTrustDecisionTime(t *testing.T) {
	var h hist
	for _, d := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		h.add("k", 0, 2*time.Second, adm, func(r *history.Record) { r.DecisionUs = epoch.Add(d).UnixMicro() })
	}
	h.add("k", 0, 2*time.Second, adm, func(r *history.Record) { r.DecisionUs = epoch.Add(time.Hour).UnixMicro() }) // outside its interval: ignored
	l := mustLimit(t, "gcra:1/1s,burst=1")
	for _, trust := range []bool{false, true} {
		rep, err := Check(h.source(), Policy{Rules: []Rule{{Limits: []Limit{l}}}, TrustDecisionTime: trust})
		if err != nil {
			t.Fatal(err)
		}
		want := Pass // three admissions within 2 s may be a second apart each
		if trust {
			want = Fail // two of them 100 ms apart
		}
		res := result(t, rep, CheckBudget)
		if res.Verdict != want {
			t.Errorf("trust %v: budget = %s, want %s (%s)", trust, res.Verdict, want, res.Explanation)
		}
		if trust && !slices.Equal(res.Proof.RequestIDs, []uint64{1, 2}) {
			t.Errorf("proof = %v, want [1 2]", res.Proof.RequestIDs)
		}
	}
}

func TestRetryAfterUnknownOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		first history.Outcome
		ra    int
		want  Verdict
	}{
		{"admitted, honest", adm, 10, Pass},
		{"admitted, short", adm, 1, Fail},
		{"unknown, right only if it was admitted", unk, 10, Unknown},
		{"unknown, right only if it was not", unk, 1, Unknown},
		{"unknown, wrong either way", unk, 12, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.add("k", 0, ms(1), tt.first)
			h.add("k", ms(100), ms(101), rej, retryAfter(tt.ra))
			res := result(t, h.check(t, "gcra:1/10s,burst=1"), CheckRetryAfter)
			if got := res.Verdict; got != tt.want {
				t.Errorf("retry-after = %s, want %s (%s)", got, tt.want, res.Explanation)
			}
		})
	}
}

// A response whose rate-limit field does not parse (X-RateLimit-Reset as an
// RFC 1123 date, as sethvargo/go-limiter sends it) is the header-style
// check's finding; the RateLimit fields check judges it on the fields that
// parse but does not count it judged in full, and judging none in full is
// unknown, not a pass.
func TestRateLimitFieldsUnparsed(t *testing.T) {
	const date = "Tue, 01 Dec 2026 03:22:50 UTC"
	tests := []struct {
		name      string
		build     func(h *hist)
		want      Verdict
		explained string
	}{
		{"every reset a date", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("x-ratelimit-limit", "10"), header("x-ratelimit-remaining", "9"), header("x-ratelimit-reset", date))
			h.add("k", ms(2), ms(3), adm, header("x-ratelimit-limit", "10"), header("x-ratelimit-remaining", "8"), header("x-ratelimit-reset", date))
		}, Unknown, "0 of 2 responses with RateLimit fields judged in full: 2 carry a reset that does not parse (see header-style)"},
		{"only field malformed", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("ratelimit-remaining", "four"))
		}, Unknown, "0 of 1 response with RateLimit fields judged in full: 1 carry a rate-limit field that does not parse"},
		{"one of two a date", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("x-ratelimit-limit", "10"), header("x-ratelimit-remaining", "9"), header("x-ratelimit-reset", "5"))
			h.add("k", ms(2), ms(3), adm, header("x-ratelimit-limit", "10"), header("x-ratelimit-remaining", "8"), header("x-ratelimit-reset", date))
		}, Pass, "1 of 2 responses with RateLimit fields judged in full, each as the model allows; 1 carry"},
		{"a date beside a remaining the model forbids", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("x-ratelimit-limit", "10"), header("x-ratelimit-remaining", "10"), header("x-ratelimit-reset", date))
			h.add("k", ms(2), ms(3), adm, header("x-ratelimit-limit", "10"), header("x-ratelimit-remaining", "8"), header("x-ratelimit-reset", date))
		}, Fail, "; 2 carry a reset that does not parse"},
		{"every field parses", func(h *hist) {
			h.add("k", 0, ms(1), adm, header("x-ratelimit-limit", "10"), header("x-ratelimit-remaining", "9"), header("x-ratelimit-reset", "5"))
		}, Pass, "1 response with RateLimit fields, each as the model allows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			tt.build(&h)
			rep := h.check(t, "fixed_window:10/5s,start=first")
			res := result(t, rep, CheckRateLimitFields)
			if got := res.Verdict; got != tt.want {
				t.Errorf("ratelimit-fields = %s, want %s (%s)", got, tt.want, res.Explanation)
			}
			if !strings.Contains(res.Explanation, tt.explained) {
				t.Errorf("ratelimit-fields explanation %q lacks %q", res.Explanation, tt.explained)
			}
			if strings.Contains(res.Explanation, "does not parse") {
				style := result(t, rep, CheckHeaderStyle)
				if got := style.Verdict; got != Fail {
					t.Errorf("header-style = %s, want fail beside an unparsed field", got)
				}
				if want := "a -Reset field is neither"; strings.Contains(tt.explained, "a reset") && !strings.Contains(style.Explanation, want) {
					t.Errorf("header-style explanation %q lacks %q", style.Explanation, want)
				}
			}
		})
	}
}
