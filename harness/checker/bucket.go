package checker

import (
	"cmp"
	"math"
	"slices"

	"github.com/rlbench/rlbench/harness/history"
)

// The bucket models (token bucket, GCRA, leaky bucket as a meter) share one
// bound: over any interval [a, b], the requests decided in it cost at most
// B + r·(b − a) (burst B, rate r; ATM Forum TM 4.0 §4.4.2 for GCRA). All
// arithmetic is in integer nanoseconds scaled by an emission interval T, so
// "S > B + (b − a)/T" becomes "S·T − (b − a) > B·T", exact in int64.
//
// Two intervals are used, to stay sound in each direction:
//   - tFast, Period/Rate rounded down (a rate at least the declared one), for
//     the budget bound and the lower bound of a wait;
//   - tSlow, Period/Rate rounded up to whole microseconds (a rate no higher
//     than any limiter enforcing the declared one at microsecond
//     resolution), for the lower bound of the room a request found (false
//     rejections) and the upper bound of a wait.

// scaleLimit keeps every scaled quantity below 2^62 with room for times.
const scaleLimit = 1 << 61

// scratch is storage reused across key groups.
type scratch struct {
	a, b, c, d []int32
	vals       []int64
	tree       maxTree
	fw         fenwick
}

func costOf(reqs []request, idx []int32) int64 {
	var s int64
	for _, i := range idx {
		s += reqs[i].cost
	}
	return s
}

// tFast is the emission interval in ns rounded down, lowered further if
// needed so that (total + burst + 2)·T stays below scaleLimit: a faster
// rate only loosens the bound.
func (m *limitModel) tFast(total int64) int64 {
	x := float64(m.lim.Period) / m.lim.Rate
	t := int64(scaleLimit)
	if x < scaleLimit {
		t = int64(math.Floor(x)) - 1 // the float quotient may have rounded up
	}
	t = min(t, scaleLimit/(total+m.lim.Burst+2))
	return max(t, 1)
}

// tSlow is the emission interval in ns rounded up to whole microseconds, and
// false when the scaled quantities would overflow (the rate is so low that
// the checks then assume no refill at all).
func (m *limitModel) tSlow(total int64) (int64, bool) {
	x := float64(m.lim.Period)/m.lim.Rate + 2
	if x >= scaleLimit {
		return 0, false
	}
	t := (int64(math.Ceil(x)) + 999) / 1000 * 1000
	if t > scaleLimit/(total+m.lim.Burst+2) {
		return 0, false
	}
	return t, true
}

// indexOf returns the position of the last value <= x in sorted vals, or -1.
func indexOf(vals []int64, x int64) int {
	pos, found := slices.BinarySearch(vals, x)
	if found {
		return pos
	}
	return pos - 1
}

// distinctSent fills vals with the distinct sent times of idx (sorted by sent).
func distinctSent(reqs []request, idx []int32, vals []int64) []int64 {
	vals = vals[:0]
	for _, i := range idx {
		if s := reqs[i].sent; len(vals) == 0 || vals[len(vals)-1] != s {
			vals = append(vals, s)
		}
	}
	return vals
}

func sortByRecv(reqs []request, idx []int32) {
	slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(reqs[a].recv, reqs[b].recv) })
}

// bucketBudget finds the interval [a, b] (a a sent time, b a received time)
// maximising S·T − (b − a): S is the cost of the admitted requests with
// sent >= a and received <= b. A sweep over received times adds each
// request's cost to every candidate a <= its sent time in a segment tree
// holding a + S(a)·T, and asks for the maximum over a <= b: O(n log n).
func (m *limitModel) bucketBudget(g []int32, withUnknown bool) finding {
	reqs, sc := m.r.d.reqs, &m.r.sc
	A := sc.a[:0]
	for _, i := range g {
		if admitted(&reqs[i], withUnknown) {
			A = append(A, i)
		}
	}
	sc.a = A
	if len(A) == 0 {
		return finding{}
	}
	T := m.tFast(costOf(reqs, A))
	res := m.r.res
	sc.vals = distinctSent(reqs, A, sc.vals)
	vals := sc.vals
	sc.tree.reset(vals)
	byE := append(sc.b[:0], A...)
	sc.b = byE
	sortByRecv(reqs, byE)
	allowT := m.lim.Burst*T + int64(math.Ceil(m.tol*float64(T)))
	best, bestB := int64(math.MinInt64), int64(0)
	for _, j := range byE {
		q := &reqs[j]
		sc.tree.add(0, indexOf(vals, q.sent), q.cost*T)
		v := sc.tree.max(0, indexOf(vals, q.recv)) - q.recv - res - allowT
		if v > best {
			best, bestB = v, q.recv
		}
	}
	// Recover the interval's start: the a maximising a + S(a)·T for b.
	var s, bestS int64
	bestA, bestV := int64(0), int64(math.MinInt64)
	for k := len(A) - 1; k >= 0; k-- {
		q := &reqs[A[k]]
		if q.recv <= bestB {
			s += q.cost
		}
		if k > 0 && reqs[A[k-1]].sent == q.sent {
			continue
		}
		if v := q.sent + s*T; v > bestV && q.sent <= bestB {
			bestV, bestA, bestS = v, q.sent, s
		}
	}
	return finding{
		found:    true,
		over:     best > 0,
		observed: bestS,
		bound:    float64(m.lim.Burst) + m.tol + float64(bestB-bestA+res)/float64(T),
		from:     bestA,
		to:       bestB,
		group:    g,
		unknowns: withUnknown,
	}
}

// bucketRequests derives the per-request conclusions of a bucket model.
//
// Room (false rejections, wait upper bound, remaining lower bound): request
// i may have been decided at any d in [s_i, e_i], after any request j with
// s_j <= e_i, whose charge lands at most at e_j. The bucket then held at least
// min over a <= s_i − res of B + (s_i − res − a)/T − U(a), U(a) the cost of
// those j with e_j >= a: a sweep over received times of the rejections,
// inserting requests by sent time into a segment tree over candidate a. For
// an admitted request the same sum counts its own charge and bounds the
// remaining budget it was told of from below.
//
// Tokens (wait lower bound, remaining): only requests certainly decided
// before i (e_j < s_i, surely admitted) are charged, as early as they could
// be, and i decided as late as it could be: the bucket held at most
// min over a of B + (e_i + res − a)/T − M(a), M(a) the cost of those j with
// s_j >= a.
func (m *limitModel) bucketRequests(g []int32, withUnknown bool) {
	reqs, sc := m.r.d.reqs, &m.r.sc
	res := m.r.res
	P, R := m.possibleAndJudged(g, withUnknown)
	B := m.lim.Burst
	if len(R) > 0 {
		sortByRecv(reqs, R)
		T, ok := m.tSlow(costOf(reqs, P))
		if !ok {
			var used int64
			pj := 0
			for _, i := range R {
				q := &reqs[i]
				for ; pj < len(P) && reqs[P[pj]].sent <= q.recv; pj++ {
					used += reqs[P[pj]].cost
				}
				switch {
				case q.outcome == history.Admitted: // used counts its own charge
					m.setRemainingLo(i, B-used)
				case float64(B-used) < float64(q.cost)+m.tol:
					m.markJustified(i, withUnknown)
				}
				if q.outcome == history.Rejected {
					m.setWaits(i, 0, math.MaxInt64)
				}
			}
		} else {
			vals := sc.vals[:0]
			for _, j := range P {
				vals = append(vals, reqs[j].recv)
			}
			for _, i := range R {
				vals = append(vals, reqs[i].sent-res)
			}
			slices.Sort(vals)
			vals = slices.Compact(vals)
			sc.vals = vals
			sc.tree.reset(vals)
			tolT := int64(math.Ceil(m.tol * float64(T)))
			pj := 0
			for _, i := range R {
				q := &reqs[i]
				for ; pj < len(P) && reqs[P[pj]].sent <= q.recv; pj++ {
					j := &reqs[P[pj]]
					sc.tree.add(0, indexOf(vals, j.recv), j.cost*T)
				}
				x := q.sent - res
				roomT := B*T + x - sc.tree.max(0, indexOf(vals, x))
				if q.outcome == history.Admitted { // roomT counts its own charge
					m.setRemainingLo(i, floorDiv(roomT, T))
					continue
				}
				if roomT < q.cost*T+tolT {
					m.markJustified(i, withUnknown)
				}
				m.setWaits(i, 0, max(q.cost*T-roomT, 0)+res)
			}
		}
	}
	// Tokens: certainly admitted requests only (in the other pass, with
	// unknown outcomes admitted too).
	A, Q := m.sureAndJudged(g, withUnknown)
	if len(Q) == 0 {
		return
	}
	T := m.tFast(costOf(reqs, A))
	sc.vals = distinctSent(reqs, A, sc.vals)
	vals := sc.vals
	if len(vals) > 0 {
		sc.tree.reset(vals)
	}
	byE := append(sc.c[:0], A...)
	sc.c = byE
	sortByRecv(reqs, byE)
	pj := 0
	for _, i := range Q {
		q := &reqs[i]
		for ; pj < len(byE) && reqs[byE[pj]].recv < q.sent; pj++ {
			j := &reqs[byE[pj]]
			sc.tree.add(0, indexOf(vals, j.sent), j.cost*T)
		}
		tokT := B * T
		if k := indexOf(vals, q.sent); k >= 0 {
			tokT = min(tokT, B*T+q.recv+res-sc.tree.max(0, k))
		}
		if q.outcome == history.Rejected {
			m.setWaits(i, max(q.cost*T-tokT-res, 0), 0)
		} else {
			m.setRemaining(i, floorDiv(tokT, T)-q.cost)
		}
	}
}
