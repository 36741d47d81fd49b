package checker

import (
	"math"
	"testing"
)

// A lease (gcra:10/1s,burst=10,lease=3/500ms: T = 100 ms) may hold 3 units
// and defer 500 ms of refill, 8 units in all: a 429 is false only when the
// ideal room exceeds its cost by more, the Retry-After's upper bound grows
// by as much, the remaining budget has no lower bound, and the budget
// stays exact.
func TestLeaseWidensRoomOnly(t *testing.T) {
	const plain, leased = "gcra:10/1s,burst=10", "gcra:10/1s,burst=10,lease=3/500ms"
	tests := []struct {
		name  string
		build func(h *hist)
		check string
		spec  string
		want  Verdict
	}{
		// Two admitted at 0, a 429 at 100 ms: the ideal room is about 9.
		{"429 with room: false without a lease", func(h *hist) {
			h.add("k", 0, ms(0.5), adm)
			h.add("k", 0, ms(0.5), adm)
			h.add("k", ms(100), ms(100.5), rej, retryAfter(1))
		}, CheckFalseRejections, plain, Fail},
		{"429 with room within the hold", func(h *hist) {
			h.add("k", 0, ms(0.5), adm)
			h.add("k", 0, ms(0.5), adm)
			h.add("k", ms(100), ms(100.5), rej, retryAfter(1))
		}, CheckFalseRejections, leased, Pass},
		// A full bucket's first request rejected: 10 units of room, 2 more
		// than the hold and the cost.
		{"429 with room beyond the hold", func(h *hist) {
			h.add("k", 0, ms(0.5), rej, retryAfter(1))
		}, CheckFalseRejections, leased, Fail},
		// Remaining 0 on the first admission of a full bucket: a lease may
		// see only its own units.
		{"remaining below the ideal, no lease", func(h *hist) {
			h.add("k", 0, ms(0.5), adm, header("ratelimit", `"default";r=0;t=1`))
		}, CheckRateLimitFields, plain, Fail},
		{"remaining below the ideal, lease", func(h *hist) {
			h.add("k", 0, ms(0.5), adm, header("ratelimit", `"default";r=0;t=1`))
		}, CheckRateLimitFields, leased, Pass},
		// Eleven admitted within a millisecond: over the burst, lease or not.
		{"budget exact under a lease", func(h *hist) {
			for range 11 {
				h.add("k", 0, ms(1), adm)
			}
		}, CheckBudget, leased, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			tt.build(&h)
			res := result(t, h.check(t, tt.spec), tt.check)
			if res.Verdict != tt.want {
				t.Errorf("%s = %s (%s), want %s", tt.check, res.Verdict, res.Explanation, tt.want)
			}
		})
	}
}

// The naive lease: under gcra:10/1s,burst=10,lease=3/500ms (T = 100 ms),
// instance a's request at 0 takes a lease of 3 units from a full bucket,
// spending 1 and holding 2. Charged at 0, as a plain decision of 3 units
// is, the lease leaves 7 units in the store, which has refilled to its
// burst of 10 by 300 ms; at 400 ms, within the lease, a spends its 2 units
// and instance b takes the 10 the store gives: 12 units in half a
// millisecond, where burst plus refill allow 10.005, an excess of 1.995:
// the 2 units held across the refill, less the refill of the half
// millisecond. Charged at the lease's end (500 ms, the
// reference), the lease leaves the store a theoretical arrival time of
// 800 ms, so b gets 6 units at 400 ms: 8 with a's, within the budget.
func TestLeaseChargedAtGrantExceedsBudget(t *testing.T) {
	const spec = "gcra:10/1s,burst=10,lease=3/500ms"
	tests := []struct {
		name     string
		storeFor int // units the store gives b at 400 ms
		want     Verdict
		observed float64
	}{
		{"charged at grant", 10, Fail, 12},
		{"charged at the lease's end", 6, Pass, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.add("k", 0, ms(0.5), adm, inst("a")) // takes the lease: 1 spent, 2 held
			for range 2 {
				h.add("k", ms(400), ms(400.5), adm, inst("a")) // leased units, spent locally
			}
			for range tt.storeFor {
				h.add("k", ms(400), ms(400.5), adm, inst("b"))
			}
			h.add("k", ms(400), ms(400.5), rej, inst("b"), retryAfter(1))
			res := result(t, h.check(t, spec), CheckBudget)
			if res.Verdict != tt.want {
				t.Fatalf("budget = %s (%s), want %s", res.Verdict, res.Explanation, tt.want)
			}
			if tt.want != Fail {
				return
			}
			if excess := res.Observed - res.Bound; res.Observed != tt.observed || math.Abs(excess-(2-0.005)) > 1e-3 {
				t.Errorf("budget: %v units of %v allowed, want %v of 10.005 (excess 1.995): %s", res.Observed, res.Bound, tt.observed, res.Explanation)
			}
			if len(res.Proof.RequestIDs) != 12 {
				t.Errorf("proof names requests %v, want the 12 admitted at 400 ms", res.Proof.RequestIDs)
			}
		})
	}
}
