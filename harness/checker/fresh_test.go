package checker

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter"
)

// checkFresh runs the checker with one rule of the given limits, the
// header saying whether the identities were fresh and the Policy leaving
// it to the header.
func (h *hist) checkFresh(t testing.TB, fresh bool, specs ...string) *Report {
	t.Helper()
	src := h.source()
	src.h.IdentitiesFresh = &fresh
	rule := Rule{}
	for _, s := range specs {
		rule.Limits = append(rule.Limits, mustLimit(t, s))
	}
	rep, err := Check(src, Policy{Rules: []Rule{rule}})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

// decide has the reference store decide a request of key k at at, and
// records it sent at at and received 1 ms later, with the reference
// middleware's headers.
func decide(t *testing.T, h *hist, store *limiter.MemoryStore, l limiter.Limit, k string, at time.Duration) *history.Record {
	t.Helper()
	d, err := store.AllowNAt(k, 1, epoch.Add(at), l)
	if err != nil {
		t.Fatalf("AllowNAt: %v", err)
	}
	out := rej
	if d.Allowed {
		out = adm
	}
	r := h.add(k, at, at+ms(1), out,
		header("ratelimit-limit", strconv.FormatInt(d.Limit.Capacity(), 10)),
		header("ratelimit-remaining", strconv.FormatInt(d.Remaining, 10)),
		header("ratelimit-reset", strconv.FormatInt(d.ResetAfterSeconds(), 10)))
	if !d.Allowed {
		setHeader(r, "retry-after", strconv.FormatInt(d.RetryAfterSeconds(), 10))
	}
	return r
}

// verdicts maps each check of rep to its verdict.
func verdicts(rep *Report) map[string]Verdict {
	out := map[string]Verdict{}
	for _, r := range rep.Results {
		out[r.Name] = r.Verdict
	}
	return out
}

// A second run against a long-running limiter with a fixed key: the bucket
// begins the history empty, so the first requests are rejected with long
// waits and the admissions come as it refills. Taken for fresh, the key's
// first rejections had room, their Retry-After is too long and the first
// admission's remaining too low; with identities_fresh false none of it is
// judged, until an idle gap of a full refill after which a false rejection
// is caught again.
func TestSpentKeyBucket(t *testing.T) {
	const spec = "token_bucket:1/10s,burst=2"
	l := mustRefLimit(t, spec)
	store := limiter.NewMemoryStore()
	for _, at := range []time.Duration{-ms(2), -ms(1)} { // the previous run's
		if _, err := store.AllowNAt("k", 1, epoch.Add(at), l); err != nil {
			t.Fatal(err)
		}
	}
	var h hist
	for s := 0; s <= 40; s += 2 {
		decide(t, &h, store, l, "k", time.Duration(s)*time.Second)
	}
	if first := h.recs[0]; first.Outcome != rej || first.Headers["retry-after"] != "10" {
		t.Fatalf("the reference decided the first request %s with Retry-After %q, want rejected with 10", first.Outcome, first.Headers["retry-after"])
	}

	for _, tc := range []struct {
		fresh bool
		want  map[string]Verdict
	}{
		{true, map[string]Verdict{CheckBudget: Pass, CheckFalseRejections: Fail, CheckRetryAfter: Fail, CheckRateLimitFields: Fail}},
		{false, map[string]Verdict{CheckBudget: Pass, CheckFalseRejections: Pass, CheckRetryAfter: Pass, CheckRateLimitFields: Pass}},
	} {
		got := verdicts(h.checkFresh(t, tc.fresh, spec))
		for name, want := range tc.want {
			if got[name] != want {
				t.Errorf("identities fresh %v: %s = %s, want %s", tc.fresh, name, got[name], want)
			}
		}
	}
	if res := result(t, h.checkFresh(t, true, spec), CheckFalseRejections); res.Proof == nil || res.Proof.RequestIDs[0] != 1 {
		t.Errorf("fresh: false rejections proof %+v, want request 1 first", res.Proof)
	}

	// 30 s without a request, more than the 20 s a full refill takes: the
	// bucket is full, and a rejection there is false whatever came before.
	r := h.add("k", 70*time.Second, 70*time.Second+ms(1), rej, retryAfter(10))
	res := result(t, h.checkFresh(t, false, spec), CheckFalseRejections)
	if res.Verdict != Fail || !slices.Equal(res.Proof.RequestIDs, []uint64{r.ID}) {
		t.Errorf("after an idle gap: false rejections = %s, proof %+v; want fail naming request %d alone: %s", res.Verdict, res.Proof, r.ID, res.Explanation)
	}
	// A gap one second short of the refill proves nothing.
	h.recs[len(h.recs)-1].SentNs, h.recs[len(h.recs)-1].ReceivedNs = int64(59*time.Second), int64(59*time.Second+ms(1))
	if res := result(t, h.checkFresh(t, false, spec), CheckFalseRejections); res.Verdict != Pass {
		t.Errorf("after a gap short of a refill: false rejections = %s, want pass: %s", res.Verdict, res.Explanation)
	}
}

// An aligned window key that begins exhausted: its rejections before the
// first window boundary after its first request are not judged, a false
// rejection after it is (for the sliding window counter, whose previous
// window weighs in, after the second boundary).
func TestSpentKeyAlignedWindows(t *testing.T) {
	// The window [0, 1 s) was spent before the history: nine rejections.
	spent := func() *hist {
		var h hist
		for i := 1; i <= 9; i++ {
			h.add("k", ms(100*float64(i)), ms(100*float64(i)+1), rej, retryAfter(1))
		}
		return &h
	}
	for _, tc := range []struct {
		spec    string
		at      float64 // ms: a rejection with nothing admitted since the history began
		verdict Verdict
	}{
		{"fixed_window:5/1s", 1050, Fail},
		{"fixed_window:5/1s", 990, Pass},
		{"sliding_window_counter:5/1s", 1050, Pass},
		{"sliding_window_counter:5/1s", 2050, Fail},
	} {
		t.Run(tc.spec+"@"+strconv.FormatFloat(tc.at, 'f', -1, 64), func(t *testing.T) {
			h := spent()
			if rep := h.checkFresh(t, true, tc.spec); result(t, rep, CheckFalseRejections).Verdict != Fail {
				t.Errorf("fresh: false rejections = %s, want fail", result(t, rep, CheckFalseRejections).Verdict)
			}
			rep := h.checkFresh(t, false, tc.spec)
			for _, r := range rep.Results {
				if r.Verdict != Pass {
					t.Errorf("spent, before the rejection: %s = %s: %s", r.Name, r.Verdict, r.Explanation)
				}
			}
			r := h.add("k", ms(tc.at), ms(tc.at+1), rej, retryAfter(1))
			res := result(t, h.checkFresh(t, false, tc.spec), CheckFalseRejections)
			if res.Verdict != tc.verdict {
				t.Fatalf("rejection at %v ms: false rejections = %s, want %s: %s", tc.at, res.Verdict, tc.verdict, res.Explanation)
			}
			if tc.verdict == Fail && !slices.Equal(res.Proof.RequestIDs, []uint64{r.ID}) {
				t.Errorf("proof %v, want request %d alone", res.Proof.RequestIDs, r.ID)
			}
		})
	}
}

// Windows from the first request, a key whose window opened before the
// history (at -2.5 s, five units spent): five admitted at once, ten more
// when it expires at 2.5 s. Taken for fresh, the fourteen after the first,
// which may be the anchor, lie in its window; with identities_fresh false the chain waits for an idle
// gap, and until then a key is held to 2L in any interval shorter than a
// window.
func TestSpentKeyFirstRequestWindows(t *testing.T) {
	const spec = "fixed_window:10/5s,start=first"
	burst := func(h *hist, at float64, n int) {
		for i := range n {
			h.add("k", ms(at+0.5*float64(i)), ms(at+0.5*float64(i)+0.4), adm)
		}
	}
	var h hist
	burst(&h, 0, 5)
	burst(&h, 2500, 10)
	if res := result(t, h.checkFresh(t, true, spec), CheckBudget); res.Verdict != Fail || res.Observed != 14 {
		t.Errorf("fresh: budget = %s, %v units, want fail, 14: %s", res.Verdict, res.Observed, res.Explanation)
	}
	for _, r := range h.checkFresh(t, false, spec).Results {
		if r.Verdict != Pass {
			t.Errorf("spent: %s = %s: %s", r.Name, r.Verdict, r.Explanation)
		}
	}

	t.Run("more than two windows allow", func(t *testing.T) {
		var h hist
		burst(&h, 0, 21)
		if res := result(t, h.checkFresh(t, false, spec), CheckBudget); res.Verdict != Fail || res.Observed != 21 || res.Bound != 20 {
			t.Errorf("budget = %s, %v of %v, want fail, 21 of 20: %s", res.Verdict, res.Observed, res.Bound, res.Explanation)
		}
	})
	t.Run("anchored after an idle gap", func(t *testing.T) {
		var h hist
		burst(&h, 0, 5)
		burst(&h, 8000, 12) // 8 s after the last: the window surely expired
		if res := result(t, h.checkFresh(t, false, spec), CheckBudget); res.Verdict != Fail || res.Observed != 11 || res.Bound != 10 {
			t.Errorf("budget = %s, %v of %v, want fail, 11 of 10 after the anchor: %s", res.Verdict, res.Observed, res.Bound, res.Explanation)
		}
	})
}

// Histories the reference limiter produced on keys spent before the
// history pass every check with FreshKeys false, and taken for fresh they
// show false rejections.
func TestPropertySpentKeysPass(t *testing.T) {
	const seeds = 10
	notFresh, fresh := false, true
	for _, spec := range propertyPolicies {
		limits := parseLimits(t, spec)
		t.Run(spec, func(t *testing.T) {
			caught := 0
			for seed := uint64(1); seed <= seeds; seed++ {
				g := generateSpent(t, seed, limits, 300, 2*time.Millisecond, true)
				for _, trust := range []bool{false, true} {
					p := Policy{Rules: []Rule{{Limits: checkerLimits(t, limits)}}, TrustDecisionTime: trust, FreshKeys: &notFresh}
					rep, err := Check(g.h.source(), p)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range rep.Results {
						if r.Verdict != Pass {
							t.Fatalf("seed %d, trusting decision times %v: %s %s = %s: %s (proof %+v)", seed, trust, r.Name, r.Scope, r.Verdict, r.Explanation, r.Proof)
						}
					}
				}
				p := Policy{Rules: []Rule{{Limits: checkerLimits(t, limits)}}, FreshKeys: &fresh}
				rep, err := Check(g.h.source(), p)
				if err != nil {
					t.Fatal(err)
				}
				if result(t, rep, CheckFalseRejections).Verdict == Fail {
					caught++
				}
			}
			if caught == 0 {
				t.Errorf("taken for fresh, no seed of %d showed a false rejection", seeds)
			}
		})
	}
}
