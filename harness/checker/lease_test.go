package checker

import (
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
