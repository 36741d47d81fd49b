package checker

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter"
)

// generated is a history the reference limiter decided, with each decision
// kept for choosing a request to flip.
type generated struct {
	h         hist
	decisions []limiter.Decision
	decided   []time.Duration
}

// generate drives limiter.MemoryStore on a fake timeline with random traffic
// about twice the limit's rate (so that it is often saturated) and records
// each request with [sent, received] jittered by up to jitter around the
// decision time (received after the delay, for the leaky bucket's queue),
// with the headers the reference middleware sends.
func generate(t *testing.T, seed uint64, limits []limiter.Limit, n int, jitter time.Duration) *generated {
	return generateSpent(t, seed, limits, n, jitter, false)
}

// generateSpent is generate, with each key's budget spent, when spent, by
// twice the capacity of unrecorded requests in the millisecond before the
// first recorded one can have been sent, 1.5 periods after the history's
// start (less the jitter): a second run with the same keys against a
// limiter that outlives runs.
func generateSpent(t *testing.T, seed uint64, limits []limiter.Limit, n int, jitter time.Duration, spent bool) *generated {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	store := limiter.NewMemoryStore(limiter.WithClock(func() time.Time { return epoch }))
	l := limits[0]
	mean := time.Duration(float64(l.Period) / l.Rate / 2)
	if l.Algorithm.IsWindow() {
		mean = l.Period / time.Duration(2*l.Capacity())
	}
	keys := 1 + rng.IntN(3)
	maxCost := int64(1)
	for _, lim := range limits {
		if lim.Capacity() >= 3 {
			maxCost = 2
		}
	}
	g := &generated{}
	var d time.Duration
	if spent {
		d = l.Period * 3 / 2
		var capacity int64
		for _, lim := range limits {
			capacity = max(capacity, lim.Capacity())
		}
		for k := range keys {
			for j := range 2 * capacity {
				at := d - jitter - time.Millisecond + time.Duration(j)*time.Millisecond/time.Duration(2*capacity)
				if _, err := store.AllowNAt(fmt.Sprint("key-", k), 1, epoch.Add(at), limits...); err != nil {
					t.Fatalf("seed %d: AllowNAt: %v", seed, err)
				}
			}
		}
	}
	for range n {
		if rng.IntN(10) >= 3 { // 30% arrive together
			d += time.Duration(rng.Int64N(int64(2*mean) + 1))
		}
		key := fmt.Sprint("key-", rng.IntN(keys))
		cost := int64(1)
		if maxCost > 1 && rng.IntN(5) == 0 {
			cost = 2
		}
		dec, err := store.AllowNAt(key, cost, epoch.Add(d), limits...)
		if err != nil {
			t.Fatalf("seed %d: AllowNAt: %v", seed, err)
		}
		s := d - time.Duration(rng.Int64N(int64(jitter)+1))
		// A leaky bucket as a queue answers after the request's slot.
		e := d + time.Duration(rng.Int64N(int64(jitter)+1)) + dec.Delay
		out := rej
		if dec.Allowed {
			out = adm
		}
		r := g.h.add(key, s, e, out, inst(fmt.Sprint("api-", rng.IntN(3))),
			header("ratelimit-limit", strconv.FormatInt(dec.Limit.Capacity(), 10)),
			header("ratelimit-remaining", strconv.FormatInt(dec.Remaining, 10)),
			header("ratelimit-reset", strconv.FormatInt(dec.ResetAfterSeconds(), 10)))
		r.Cost = cost
		r.DecisionUs = epoch.Add(d).UnixMicro() // as the reference middleware reports it
		if !dec.Allowed {
			setHeader(r, "retry-after", strconv.FormatInt(dec.RetryAfterSeconds(), 10))
		}
		g.decisions = append(g.decisions, dec)
		g.decided = append(g.decided, d)
	}
	return g
}

var propertyPolicies = []string{
	"gcra:10/1s,burst=5",
	"token_bucket:7/1s,burst=3",
	"leaky_bucket:20/1s,burst=4",
	"token_bucket:3/1s,burst=1",
	"fixed_window:5/500ms",
	"sliding_window_log:4/300ms",
	"sliding_window_counter:6/400ms",
	"gcra:20/1s,burst=10 + fixed_window:8/1s",
}

// parseLimits parses "SPEC + SPEC" with the reference limiter's parser, for
// driving its store.
func parseLimits(t *testing.T, spec string) []limiter.Limit {
	var ls []limiter.Limit
	for _, s := range strings.Split(spec, " + ") {
		ls = append(ls, mustRefLimit(t, s))
	}
	return ls
}

func checkWith(t *testing.T, h *hist, limits []limiter.Limit) *Report {
	t.Helper()
	return checkTrusting(t, h, limits, false)
}

// checkTrusting is checkWith, narrowing each request to its reported
// decision time when trust.
func checkTrusting(t *testing.T, h *hist, limits []limiter.Limit, trust bool) *Report {
	t.Helper()
	rep, err := Check(h.source(), Policy{Rules: []Rule{{Limits: checkerLimits(t, limits)}}, TrustDecisionTime: trust})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

// Histories the reference limiter produced always pass every check.
func TestPropertyReferencePasses(t *testing.T) {
	const seeds = 25
	for _, spec := range propertyPolicies {
		limits := parseLimits(t, spec)
		t.Run(spec, func(t *testing.T) {
			for seed := uint64(1); seed <= seeds; seed++ {
				g := generate(t, seed, limits, 300, 2*time.Millisecond)
				for _, trust := range []bool{false, true} {
					rep := checkTrusting(t, &g.h, limits, trust)
					for _, r := range rep.Results {
						if r.Verdict != Pass {
							t.Fatalf("seed %d, trusting decision times %v: %s %s = %s: %s (proof %+v)", seed, trust, r.Name, r.Scope, r.Verdict, r.Explanation, r.Proof)
						}
					}
				}
			}
		})
	}
}

// The same histories with one rejection at a saturated moment flipped to an
// admission always fail the budget.
func TestPropertyFlippedRejectionFails(t *testing.T) {
	const seeds = 25
	jitter := 2 * time.Millisecond
	for _, spec := range propertyPolicies[:len(propertyPolicies)-1] {
		limits := parseLimits(t, spec)
		l := limits[0]
		t.Run(spec, func(t *testing.T) {
			flipped := 0
			for seed := uint64(1); seed <= seeds; seed++ {
				g := generate(t, seed, limits, 300, jitter)
				rng := rand.New(rand.NewPCG(seed, 0xf11b))
				var candidates []int
				for i, dec := range g.decisions {
					if !dec.Allowed && saturated(g, i, l, jitter) {
						candidates = append(candidates, i)
					}
				}
				if len(candidates) == 0 {
					continue
				}
				i := candidates[rng.IntN(len(candidates))]
				r := &g.h.recs[i]
				r.Outcome, r.Status = adm, 200
				delete(r.Headers, "retry-after")
				flipped++
				// A queue answers its admissions after their slots, so
				// that [sent, received] says little of when they were
				// decided: its budget is proven on the decision times the
				// reference reports.
				res := result(t, checkTrusting(t, &g.h, limits, l.Algorithm == limiter.LeakyBucket), CheckBudget)
				if res.Verdict != Fail {
					t.Fatalf("seed %d: flipping request %d: budget = %s, want fail (%s)", seed, r.ID, res.Verdict, res.Explanation)
				}
			}
			if flipped < seeds/2 {
				t.Fatalf("only %d of %d seeds had a saturated rejection", flipped, seeds)
			}
		})
	}
}

// saturated reports whether admitting rejected request i must break the
// budget whatever the timing: its wait exceeded the jitter on both sides
// (bucket, sliding log), or its window already surely held a full count.
func saturated(g *generated, i int, l limiter.Limit, jitter time.Duration) bool {
	if l.Algorithm != limiter.FixedWindow && l.Algorithm != limiter.SlidingWindowCounter {
		return g.decisions[i].RetryAfter > 2*jitter+2*time.Millisecond
	}
	W := int64(l.Period)
	win := func(ns int64) int64 { return floorDiv(epoch.UnixNano()+ns, W) }
	ri := &g.h.recs[i]
	k := win(ri.SentNs)
	if win(ri.ReceivedNs) != k {
		return false
	}
	var count int64
	for _, r := range g.h.recs {
		if r.Key == ri.Key && r.Outcome == history.Admitted && win(r.SentNs) == k && win(r.ReceivedNs) == k {
			count += r.Cost
		}
	}
	return count+ri.Cost > l.Capacity()
}

// Requests of unknown outcome never turn a reference history into a failure
// of the limiter's model: whatever they hide, the checker assumes what keeps
// it sound. (The status check does fail them: a target that leaves requests
// unanswered is at fault, whatever its limiter did.)
func TestPropertyUnknownOutcomesNeverFail(t *testing.T) {
	for _, spec := range propertyPolicies {
		limits := parseLimits(t, spec)
		t.Run(spec, func(t *testing.T) {
			for seed := uint64(1); seed <= 15; seed++ {
				g := generate(t, seed, limits, 300, 2*time.Millisecond)
				rng := rand.New(rand.NewPCG(seed, 0x0dd))
				for i := range g.h.recs {
					if rng.IntN(8) == 0 {
						r := &g.h.recs[i]
						r.Outcome, r.Status, r.Headers = unk, 0, nil
					}
				}
				for _, r := range checkWith(t, &g.h, limits).Results {
					if r.Verdict == Fail && r.Name != CheckStatus {
						t.Fatalf("seed %d: %s %s failed: %s", seed, r.Name, r.Scope, r.Explanation)
					}
				}
			}
		})
	}
}

// A clock offset known only within an uncertainty that covers the error
// still passes a reference history.
func TestPropertyUncertainClockPasses(t *testing.T) {
	for _, spec := range []string{"fixed_window:5/500ms", "sliding_window_counter:6/400ms"} {
		limits := parseLimits(t, spec)
		for seed := uint64(1); seed <= 15; seed++ {
			g := generate(t, seed, limits, 300, 2*time.Millisecond)
			wrong := ms(float64(seed%7) - 3) // the measured offset is off by up to 3 ms
			p := Policy{Rules: []Rule{{Limits: checkerLimits(t, limits)}}, ClockOffset: &wrong, ClockUncertainty: ms(3)}
			rep, err := Check(g.h.source(), p)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Results {
				if r.Verdict != Pass {
					t.Fatalf("%s seed %d: %s = %s: %s", spec, seed, r.Name, r.Verdict, r.Explanation)
				}
			}
		}
	}
}

// A request admitted with room to spare, even after every request that
// overlaps it, is a false rejection when recorded as rejected.
func TestPropertyFlippedAdmissionIsFalseRejection(t *testing.T) {
	jitter := 2 * time.Millisecond
	for _, spec := range []string{"gcra:10/1s,burst=5", "token_bucket:7/1s,burst=3", "sliding_window_log:4/300ms", "fixed_window:5/500ms"} {
		limits := parseLimits(t, spec)
		t.Run(spec, func(t *testing.T) {
			flipped := 0
			for seed := uint64(1); seed <= 25; seed++ {
				g := generate(t, seed, limits, 300, jitter)
				i := -1
				for j, dec := range g.decisions {
					if dec.Allowed && dec.Remaining-overlapping(g, j, 2*jitter) >= 1 && !nearWindowEdge(g, j, limits[0], jitter) {
						i = j
						break
					}
				}
				if i < 0 {
					continue
				}
				r := &g.h.recs[i]
				r.Outcome, r.Status = rej, 429
				setHeader(r, "retry-after", "1")
				flipped++
				res := result(t, checkWith(t, &g.h, limits), CheckFalseRejections)
				if res.Verdict != Fail || !slicesContains(res.Proof.RequestIDs, r.ID) {
					t.Fatalf("seed %d: rejecting request %d: false rejections = %s %v, want fail naming it", seed, r.ID, res.Verdict, res.Proof)
				}
			}
			if flipped < 20 {
				t.Fatalf("only %d of 25 seeds had a request to flip", flipped)
			}
		})
	}
}

// overlapping is the cost admitted for request j's key within d after its decision.
func overlapping(g *generated, j int, d time.Duration) int64 {
	var c int64
	for k := j + 1; k < len(g.decided) && g.decided[k]-g.decided[j] <= d; k++ {
		if g.decisions[k].Allowed && g.h.recs[k].Key == g.h.recs[j].Key {
			c += g.h.recs[k].Cost
		}
	}
	return c
}

// nearWindowEdge reports whether request j of a window policy may straddle a
// window boundary, or sits within jitter of a sliding window's expiry.
func nearWindowEdge(g *generated, j int, l limiter.Limit, jitter time.Duration) bool {
	if !l.Algorithm.IsWindow() {
		return false
	}
	W := int64(l.Period)
	r := &g.h.recs[j]
	if l.Algorithm == limiter.SlidingWindowLog {
		// every earlier admission must be clear of the window edge
		for k := range j {
			q := &g.h.recs[k]
			if q.Key == r.Key && q.Outcome == adm && absDur(r.SentNs-W-q.ReceivedNs) < int64(4*jitter) {
				return true
			}
		}
		return false
	}
	return floorDiv(epoch.UnixNano()+r.SentNs, W) != floorDiv(epoch.UnixNano()+r.ReceivedNs, W)
}

func absDur(v int64) int64 { return max(v, -v) }

func slicesContains(ids []uint64, id uint64) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

// A Retry-After two seconds short of a long wait always fails.
func TestPropertyShortRetryAfterFails(t *testing.T) {
	for _, spec := range []string{"gcra:1/4s,burst=2", "sliding_window_log:2/5s", "fixed_window:3/6s"} {
		limits := parseLimits(t, spec)
		t.Run(spec, func(t *testing.T) {
			lied := 0
			for seed := uint64(1); seed <= 25; seed++ {
				g := generate(t, seed, limits, 100, 2*time.Millisecond)
				for i, dec := range g.decisions {
					// Provable only when the admissions that filled the key
					// surely came before: none overlaps the rejection.
					if !dec.Allowed && dec.RetryAfter > 3*time.Second && isolated(g, i, 5*time.Millisecond) &&
						(limits[0].Algorithm != limiter.FixedWindow || saturated(g, i, limits[0], 0)) {
						r := &g.h.recs[i]
						setHeader(r, "retry-after", strconv.FormatInt(dec.RetryAfterSeconds()-2, 10))
						lied++
						res := result(t, checkWith(t, &g.h, limits), CheckRetryAfter)
						if res.Verdict != Fail {
							t.Fatalf("seed %d: Retry-After %d s for a wait of %v: %s, want fail", seed, dec.RetryAfterSeconds()-2, dec.RetryAfter, res.Verdict)
						}
						break
					}
				}
			}
			if lied < 20 {
				t.Fatalf("only %d of 25 seeds had a long wait", lied)
			}
		})
	}
}

// isolated reports whether no admission for request i's key was decided
// within d of it.
func isolated(g *generated, i int, d time.Duration) bool {
	for k, dec := range g.decisions {
		if k != i && dec.Allowed && g.h.recs[k].Key == g.h.recs[i].Key && absDur(int64(g.decided[k]-g.decided[i])) <= int64(d) {
			return false
		}
	}
	return true
}

// Without any clock offset the aligned windows are checked unaligned, and a
// reference history still passes.
func TestPropertyUnalignedWindowsPass(t *testing.T) {
	for _, spec := range []string{"fixed_window:5/500ms", "sliding_window_counter:6/400ms", "gcra:20/1s,burst=10 + fixed_window:8/1s"} {
		limits := parseLimits(t, spec)
		for seed := uint64(1); seed <= 15; seed++ {
			g := generate(t, seed, limits, 300, 2*time.Millisecond)
			g.h.noClock = true
			for _, r := range checkWith(t, &g.h, limits).Results {
				if r.Verdict != Pass {
					t.Fatalf("%s seed %d: %s = %s: %s", spec, seed, r.Name, r.Verdict, r.Explanation)
				}
			}
		}
	}
}

// With exact timing (sent = received = decision, at nanosecond offsets the
// limiter's microsecond clock truncates) the checker's margins for clock
// resolution and interval rounding are all that stand between a reference
// history and a false alarm.
func TestPropertyExactTimingPasses(t *testing.T) {
	policies := append([]string{"gcra:3/1s,burst=2", "token_bucket:7/1s,burst=1", "sliding_window_log:3/7ms"}, propertyPolicies...)
	for _, spec := range policies {
		limits := parseLimits(t, spec)
		t.Run(spec, func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				g := generate(t, seed, limits, 1500, 0)
				for _, r := range checkWith(t, &g.h, limits).Results {
					if r.Verdict != Pass {
						t.Fatalf("seed %d: %s %s = %s: %s (proof %+v)", seed, r.Name, r.Scope, r.Verdict, r.Explanation, r.Proof)
					}
				}
			}
		})
	}
}
