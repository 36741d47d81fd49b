package checker

import (
	"math"
	"slices"

	"github.com/rlbench/rlbench/harness/history"
)

// bucketModel is the model of the token bucket, the GCRA and the leaky
// bucket as a meter, which share one bound: over any interval [a, b], the
// requests decided in it cost at most B + r·(b − a) (burst B, rate r; ATM
// Forum TM 4.0 §4.4.2 for GCRA). All arithmetic is in integer nanoseconds
// scaled by an emission interval T, so
// "S > B + (b − a)/T" becomes "S·T − (b − a) > B·T", exact in int64.
//
// Two intervals are used, to stay sound in each direction:
//   - tFast, Period/Rate rounded down (a rate at least the declared one), for
//     the budget bound and the lower bound of a wait;
//   - tSlow, Period/Rate rounded up to whole microseconds (a rate no higher
//     than any limiter enforcing the declared one at microsecond
//     resolution), for the lower bound of the room a request found (false
//     rejections) and the upper bound of a wait.
type bucketModel struct {
	lim Limit
}

func (*bucketModel) boundaryBurst() bool { return false }

func (*bucketModel) note() string { return "" }

// resetNs is one emission interval, rounded up to whole µs plus 1 µs, per
// unit of burst.
func (b *bucketModel) resetNs() int64 {
	interval := math.Ceil(float64(b.lim.Period)/b.lim.Rate) + 1000
	return int64(min(interval*float64(b.lim.Burst), math.MaxInt64/2))
}

// fallbackBound holds each instance to its share: the rate divided by the
// number of instances, the burst too, rounded down but at least 1, so that
// the instances together stay within the shared limit (but for a burst
// below their number). Over length ns the share admits its burst plus its
// rate's refill.
func (b *bucketModel) fallbackBound(instances int, length int64) float64 {
	rate, burst := b.lim.Rate, b.lim.Burst
	if instances > 1 {
		rate = b.lim.Rate / float64(instances)
		burst = max(1, b.lim.Burst/int64(instances))
	}
	return float64(burst) + rate*float64(length)/float64(b.lim.Period)
}

// scaleLimit keeps every scaled quantity below 2^62 with room for times.
const scaleLimit = 1 << 61

// tFast is the emission interval in ns rounded down, lowered further if
// needed so that (total + burst + 2)·T stays below scaleLimit: a faster
// rate only loosens the bound.
func (b *bucketModel) tFast(total int64) int64 {
	x := float64(b.lim.Period) / b.lim.Rate
	t := int64(scaleLimit)
	if x < scaleLimit {
		t = int64(math.Floor(x)) - 1 // the float quotient may have rounded up
	}
	t = min(t, scaleLimit/satAdd(satAdd(total, b.lim.Burst), 2))
	return max(t, 1)
}

// tSlow is the emission interval in ns rounded up to whole microseconds, and
// false when the scaled quantities would overflow (the rate is so low that
// the checks then assume no refill at all).
func (b *bucketModel) tSlow(total int64) (int64, bool) {
	x := float64(b.lim.Period)/b.lim.Rate + 2
	if x >= scaleLimit {
		return 0, false
	}
	t := (int64(math.Ceil(x)) + 999) / 1000 * 1000
	if t > scaleLimit/satAdd(satAdd(total, b.lim.Burst), 2) {
		return 0, false
	}
	return t, true
}

// budget finds the interval [a, b] (a a sent time, b a received time)
// maximising S·T − (b − a): S is the cost of the admitted requests with
// sent >= a and received <= b.
func (b *bucketModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	reqs, sc := c.r.d.reqs, &c.r.sc
	A := sc.a[:0]
	for _, i := range g {
		if admitted(&reqs[i], withUnknown) {
			A = append(A, i)
		}
	}
	sc.a = A
	f := b.tightest(c, A, b.lim.Burst, false, c.r.res)
	f.group, f.unknowns = g, withUnknown
	return f
}

// tightest finds, over the requests A (in order of sent time), the interval
// [a, b] (a a sent time, b an end: a received time, or with answered the
// time the response arrived) maximising S·T − (b − a), S the cost of the
// requests with sent >= a and end <= b, and holds it to burst units plus
// the refill over b − a + res (res ns, the clock's resolution). A sweep over
// ends adds each request's cost to every candidate a <= its sent time in a
// segment tree holding a + S(a)·T, and asks for the maximum over a <= b:
// O(n log n).
func (b *bucketModel) tightest(c *limitCheck, A []int32, burst int64, answered bool, res int64) finding {
	reqs, sc := c.r.d.reqs, &c.r.sc
	if len(A) == 0 {
		return finding{}
	}
	end := func(q *request) int64 {
		if answered {
			return q.answered
		}
		return q.recv
	}
	T := b.tFast(costOf(reqs, A))
	sc.vals, sc.rank = sentRanks(reqs, A, sc.vals, sc.rank)
	vals, rank := sc.vals, sc.rank
	sc.tree.reset(vals)
	byE := append(sc.b[:0], A...)
	sc.b = byE
	if answered {
		slices.SortFunc(byE, func(x, y int32) int { return cmpInt(reqs[x].answered, reqs[y].answered) })
	} else {
		sortByRecv(reqs, byE)
	}
	allowT := burst*T + int64(math.Ceil(c.tol*float64(T)))
	best, bestB := int64(math.MinInt64), int64(0)
	k := -1 // indexOf(vals, e), e growing along byE
	for _, j := range byE {
		q := &reqs[j]
		sc.tree.addPrefix(int(rank[j]), q.cost*T)
		e := end(q)
		for k+1 < len(vals) && vals[k+1] <= e {
			k++
		}
		v := sc.tree.maxPrefix(k) - e - res - allowT
		if v > best {
			best, bestB = v, e
		}
	}
	// Recover the interval's start: the a maximising a + S(a)·T for b.
	var s, bestS int64
	bestA, bestV := int64(0), int64(math.MinInt64)
	for k := len(A) - 1; k >= 0; k-- {
		q := &reqs[A[k]]
		if end(q) <= bestB {
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
		bound:    float64(burst) + c.tol + float64(bestB-bestA+res)/float64(T),
		from:     bestA,
		to:       bestB,
	}
}

// room (false rejections, wait upper bound, remaining lower bound, of an
// admission after its charge and of a rejection): request
// i may have been decided at any d in [s_i, e_i], after any request j with
// s_j <= e_i, whose charge lands at most at e_j. The bucket then held at least
// min over a <= s_i − res of B + (s_i − res − a)/T − U(a), U(a) the cost of
// those j with e_j >= a: a sweep over received times of the rejections,
// inserting requests by sent time into a segment tree over candidate a. For
// an admitted request the same sum counts its own charge and bounds the
// remaining budget it was told of from below.
func (b *bucketModel) room(c *limitCheck, g []int32, withUnknown bool) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	res := c.r.res
	P, R := c.possibleAndJudged(g, withUnknown)
	B := b.lim.Burst
	if len(R) > 0 {
		sortByRecv(reqs, R)
		T, ok := b.tSlow(costOf(reqs, P))
		if !ok {
			var used int64
			pj := 0
			for _, i := range R {
				q := &reqs[i]
				for ; pj < len(P) && reqs[P[pj]].sent <= q.recv; pj++ {
					used = satAdd(used, reqs[P[pj]].cost)
				}
				left := B - min(used, B+maxCapacity) // for an admission, after its own charge
				b.setRemainingLo(c, i, left)
				if q.outcome == history.Rejected {
					if float64(left) < float64(q.cost)+b.holdUnits()+c.tol {
						c.markJustified(i, withUnknown)
					}
					c.setWaits(i, 0, math.MaxInt64)
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
			tolT := int64(math.Ceil(c.tol * float64(T)))
			pj := 0
			for _, i := range R {
				q := &reqs[i]
				for ; pj < len(P) && reqs[P[pj]].sent <= q.recv; pj++ {
					j := &reqs[P[pj]]
					sc.tree.addPrefix(indexOf(vals, j.recv), j.cost*T)
				}
				x := q.sent - res
				roomT := B*T + x - sc.tree.maxPrefix(indexOf(vals, x))
				b.setRemainingLo(c, i, floorDiv(roomT, T)) // for an admission, after its own charge
				if q.outcome == history.Admitted {
					continue
				}
				roomT -= b.holdT(T)
				if roomT < q.cost*T+tolT {
					c.markJustified(i, withUnknown)
				}
				c.setWaits(i, 0, max(q.cost*T-roomT, 0)+res)
			}
		}
	}
}

// holdT is, scaled by T (ns per unit, at least the limiter's interval),
// how much less room a limit's lease may leave than the ideal limiter: the
// units of one lease and the refill its charge at the lease's end defers,
// LeaseTokens·T + LeaseFor (limiter/lease.go proves that one lease's worth
// bounds it, whatever the number of instances). 0 without a lease.
func (b *bucketModel) holdT(T int64) int64 {
	if !b.lim.leased() {
		return 0
	}
	return satAdd(b.lim.LeaseTokens*T, int64(b.lim.LeaseFor))
}

// holdUnits is holdT in units: LeaseTokens + LeaseFor·rate.
func (b *bucketModel) holdUnits() float64 {
	if !b.lim.leased() {
		return 0
	}
	return float64(b.lim.LeaseTokens) + math.Ceil(float64(b.lim.LeaseFor)*b.lim.Rate/float64(b.lim.Period))
}

// setRemainingLo records the remaining budget's lower bound left, or none
// under a lease: a decision taken from a lease knows for sure only its own
// unspent units and the part of the deferred refill the rest of the lease
// cannot take back, while other instances may have taken, unseen, all the
// rest of the burst (doc.go, "Leases").
func (b *bucketModel) setRemainingLo(c *limitCheck, i int32, left int64) {
	if b.lim.leased() {
		left = math.MinInt64
	}
	c.setRemainingLo(i, left)
}

// certain (tokens: wait lower bound, remaining upper bound): only requests
// certainly decided before i (e_j < s_i, surely admitted; in the other
// pass, with unknown outcomes admitted too) are charged, as early as they
// could be, and i decided as late as it could be: the bucket held at most
// min over a of B + (e_i + res − a)/T − M(a), M(a) the cost of those j with
// s_j >= a.
func (b *bucketModel) certain(c *limitCheck, g []int32, withUnknown bool) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	res, B := c.r.res, b.lim.Burst
	A, Q := c.sureAndJudged(g, withUnknown)
	if len(Q) == 0 {
		return
	}
	T := b.tFast(costOf(reqs, A))
	sc.vals, sc.rank = sentRanks(reqs, A, sc.vals, sc.rank)
	vals, rank := sc.vals, sc.rank
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
			sc.tree.addPrefix(int(rank[byE[pj]]), reqs[byE[pj]].cost*T)
		}
		tokT := B * T
		if k := indexOf(vals, q.sent); k >= 0 {
			tokT = min(tokT, B*T+q.recv+res-sc.tree.maxPrefix(k))
		}
		if q.outcome == history.Rejected {
			c.setWaits(i, max(q.cost*T-tokT-res, 0), 0)
		} else {
			c.setRemaining(i, floorDiv(tokT, T)-q.cost)
		}
	}
}
