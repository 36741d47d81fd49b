package checker

import (
	"math"
	"slices"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter"
)

// The window models. Window lengths are whole microseconds, as the limiter
// keeps them (Limit.PeriodMicros).

func (m *limitModel) windowNs() int64 { return m.lim.PeriodMicros() * 1000 }

// slidingLogBudget finds the most units that must have been decided within
// one interval shorter than the window less the clock resolution: for every
// candidate start a (a sent time), the admitted requests with sent >= a and
// received <= a + W − res − 1. A sweep by descending sent time over a Fenwick
// tree of received times: O(n log n). limit is the bound to hold it to (the
// sliding window log's L, or 2L for a window of unknown alignment).
func (m *limitModel) slidingLogBudget(g []int32, withUnknown bool, limit int64) finding {
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
	weff := max(m.windowNs()-m.r.res, 1)
	evals := sc.vals[:0]
	for _, i := range A {
		evals = append(evals, reqs[i].recv)
	}
	slices.Sort(evals)
	evals = slices.Compact(evals)
	sc.vals = evals
	sc.fw.reset(len(evals))
	best, bestA := int64(-1), int64(0)
	for k := len(A) - 1; k >= 0; k-- {
		q := &reqs[A[k]]
		sc.fw.add(indexOf(evals, q.recv), q.cost)
		if k > 0 && reqs[A[k-1]].sent == q.sent {
			continue
		}
		if cnt := sc.fw.prefix(indexOf(evals, q.sent+weff-1)); cnt > best {
			best, bestA = cnt, q.sent
		}
	}
	to := bestA
	for _, i := range A {
		if q := &reqs[i]; q.sent >= bestA && q.recv <= bestA+weff-1 {
			to = max(to, q.recv)
		}
	}
	bound := float64(limit) + m.tol
	return finding{found: true, over: float64(best) > bound, observed: best, bound: bound, from: bestA, to: to, group: g, unknowns: withUnknown}
}

// rollingCount is the most units that must have been decided within one
// interval shorter than the window.
func (m *limitModel) rollingCount(g []int32, withUnknown bool) finding {
	return m.slidingLogBudget(g, withUnknown, m.lim.Capacity())
}

// windowOf returns the aligned window holding harness time t on the limiter's
// clock, with the clock offset shifted by sh (±uncertainty).
func (m *limitModel) windowOf(t, sh int64) int64 {
	return floorDiv(m.r.base+t+m.r.off+sh, m.windowNs())
}

// windowBudget counts, per aligned window, the admitted requests whose whole
// [sent, received] lies in that window whatever the clock offset within its
// uncertainty, and finds the fullest window.
func (m *limitModel) windowBudget(g []int32, withUnknown bool) finding {
	reqs := m.r.d.reqs
	unc := m.r.unc
	var f finding
	cur, sum := int64(math.MinInt64), int64(0)
	flush := func() {
		if cur != math.MinInt64 && (!f.found || sum > f.observed) {
			f = finding{found: true, observed: sum, from: cur}
		}
	}
	for _, i := range g {
		q := &reqs[i]
		if !admitted(q, withUnknown) {
			continue
		}
		k := m.windowOf(q.sent, -unc)
		if k != m.windowOf(q.recv, unc) {
			continue
		}
		if k != cur {
			flush()
			cur, sum = k, 0
		}
		sum += q.cost
	}
	flush()
	if !f.found {
		return f
	}
	W, k := m.windowNs(), f.from
	f.from = k*W - m.r.base - m.r.off + unc
	f.to = (k+1)*W - 1 - m.r.base - m.r.off - unc
	f.bound = float64(m.lim.Capacity()) + m.tol
	f.over = float64(f.observed) > f.bound
	f.group, f.unknowns, f.window = g, withUnknown, true
	return f
}

// lowerIndex returns the position of the first value >= x in sorted vals.
func lowerIndex(vals []int64, x int64) int {
	pos, _ := slices.BinarySearch(vals, x)
	return pos
}

// windowRequests derives per-request conclusions for the aligned-window
// models (fixed window, sliding window counter) with a known clock offset.
//
// A rejected request may fall in any window its [sent, received] meets
// under the offset's uncertainty; in window k it found at most U_k, the cost
// of the requests possibly in k that may have come before it (sent <= its
// received). The fixed window admits it for sure when U_k + cost <= L in
// every such k; the sliding window counter when
// U_{k−1}·(W − elapsed) + (U_k + cost)·W <= L·W with the least elapsed time.
func (m *limitModel) windowRequests(g []int32, withUnknown bool) {
	reqs, sc := m.r.d.reqs, &m.r.sc
	unc, res, W := m.r.unc, m.r.res, m.windowNs()
	L := m.lim.Capacity()
	swc := m.lim.Algorithm == limiter.SlidingWindowCounter
	P, R := m.possibleAndJudged(g, withUnknown)
	if len(R) > 0 {
		sortByRecv(reqs, R)
		qs := sc.vals[:0]
		for _, i := range R {
			q := &reqs[i]
			lo, hi := m.windowOf(q.sent, -unc), m.windowOf(q.recv, unc)
			if hi-lo <= 1 {
				qs = append(qs, lo, hi)
				if swc {
					qs = append(qs, lo-1, hi-1)
				}
			}
		}
		slices.Sort(qs)
		qs = slices.Compact(qs)
		sc.vals = qs
		sc.fw.reset(len(qs) + 1)
		point := func(k int64) int64 { return sc.fw.prefix(indexOf(qs, k)) }
		wus := m.lim.PeriodMicros()
		pj := 0
		for _, i := range R {
			q := &reqs[i]
			for ; pj < len(P) && reqs[P[pj]].sent <= q.recv; pj++ {
				j := &reqs[P[pj]]
				l, r := lowerIndex(qs, m.windowOf(j.sent, -unc)), indexOf(qs, m.windowOf(j.recv, unc))
				if l <= r {
					sc.fw.add(l, j.cost)
					sc.fw.add(r+1, -j.cost)
				}
			}
			lo, hi := m.windowOf(q.sent, -unc), m.windowOf(q.recv, unc)
			if q.outcome == history.Admitted { // the counts hold its own charge
				remLo := int64(math.MinInt64)
				for k := lo; k <= hi && hi-lo <= 1; k++ {
					r := L - point(k)
					if swc {
						var elapsed int64
						if k == lo {
							elapsed = min(max(m.r.base+q.sent+m.r.off-unc-k*W, 0)/1000, wus)
						}
						r = floorDiv(L*wus-point(k-1)*(wus-elapsed)-point(k)*wus, wus)
					}
					if k == lo {
						remLo = r
					}
					remLo = min(remLo, r)
				}
				m.setRemainingLo(i, remLo)
				continue
			}
			justified := hi-lo > 1
			for k := lo; k <= hi && !justified; k++ {
				if !swc {
					justified = float64(point(k)+q.cost)+m.tol > float64(L)
					continue
				}
				var elapsed int64
				if k == lo {
					elapsed = min(max(m.r.base+q.sent+m.r.off-unc-k*W, 0)/1000, wus)
				}
				est := point(k-1)*(wus-elapsed) + (point(k)+q.cost)*wus
				justified = float64(est)+m.tol*float64(wus) > float64(L*wus)
			}
			if justified {
				m.markJustified(i, withUnknown)
			}
			switch {
			case swc:
				m.setWaits(i, 0, 2*W+res)
			case lo == hi:
				m.setWaits(i, 0, (hi+1)*W-(m.r.base+q.sent+m.r.off-unc)+res)
			default:
				m.setWaits(i, 0, W+res)
			}
		}
	}
	// Certain counts: surely admitted requests (in the other pass, with
	// unknown outcomes admitted too) surely in the window and surely decided
	// before the request.
	A, Q := sc.a[:0], sc.b[:0]
	for _, i := range g {
		q := &reqs[i]
		if surelyCharged(q, !withUnknown) {
			A = append(A, i)
		}
		if judged(q, withUnknown) && m.windowOf(q.sent, -unc) == m.windowOf(q.recv, unc) {
			Q = append(Q, i)
		}
	}
	sc.a, sc.b = A, Q
	if len(Q) == 0 {
		return
	}
	sortByRecv(reqs, A)
	qs := sc.vals[:0]
	for _, i := range Q {
		qs = append(qs, m.windowOf(reqs[i].sent, -unc))
	}
	slices.Sort(qs)
	qs = slices.Compact(qs)
	sc.vals = qs
	sc.fw.reset(len(qs))
	pj := 0
	for _, i := range Q {
		q := &reqs[i]
		for ; pj < len(A) && reqs[A[pj]].recv < q.sent; pj++ {
			j := &reqs[A[pj]]
			k := m.windowOf(j.sent, -unc)
			if k != m.windowOf(j.recv, unc) {
				continue
			}
			if p, ok := slices.BinarySearch(qs, k); ok {
				sc.fw.add(p, j.cost)
			}
		}
		k := m.windowOf(q.sent, -unc)
		p, _ := slices.BinarySearch(qs, k)
		certain := sc.fw.prefix(p) - sc.fw.prefix(p-1)
		switch {
		case q.outcome == history.Admitted:
			m.setRemaining(i, L-certain-q.cost)
		case !swc && certain+q.cost > L:
			m.setWaits(i, max((k+1)*W-(m.r.base+q.recv+m.r.off+unc)-res, 0), 0)
		}
	}
}

// slidingLogRequests derives per-request conclusions for the sliding window
// log, and for the aligned windows when their alignment is unknown (a
// request's window then holds at most what came within one window before it;
// for the sliding window counter, two windows).
//
// Rejected request i found at most U, the cost of the requests that may have
// come before it (sent <= its received) and may still count at its decision
// (received > its sent − W − res). Its wait is at most the time until all
// but L − cost of them surely slid out, and at least the time until the
// requests surely before it (received < its sent), placed as early as they
// could be, leave room.
func (m *limitModel) slidingLogRequests(g []int32, withUnknown bool) {
	reqs, sc := m.r.d.reqs, &m.r.sc
	res, W, L := m.r.res, m.windowNs(), m.lim.Capacity()
	exact := m.lim.Algorithm == limiter.SlidingWindowLog
	// How far back a request may still weigh on a decision: one window, or
	// two for the sliding window counter, whose previous window counts too.
	lookback := W
	if m.lim.Algorithm == limiter.SlidingWindowCounter {
		lookback = 2 * W
	}
	P, R := m.possibleAndJudged(g, withUnknown)
	if len(R) > 0 {
		sortByRecv(reqs, R)
		evals := sc.vals[:0]
		for _, j := range P {
			evals = append(evals, reqs[j].recv)
		}
		slices.Sort(evals)
		evals = slices.Compact(evals)
		sc.vals = evals
		sc.fw.reset(len(evals))
		var total int64
		pj := 0
		for _, i := range R {
			q := &reqs[i]
			for ; pj < len(P) && reqs[P[pj]].sent <= q.recv; pj++ {
				j := &reqs[P[pj]]
				sc.fw.add(indexOf(evals, j.recv), j.cost)
				total += j.cost
			}
			u := total - sc.fw.prefix(indexOf(evals, q.sent-lookback-res))
			if q.outcome == history.Admitted { // u counts its own charge
				if m.lim.Algorithm == limiter.SlidingWindowCounter {
					m.setRemainingLo(i, math.MinInt64) // the previous window weighs in too
				} else {
					m.setRemainingLo(i, L-u)
				}
				continue
			}
			if float64(u+q.cost)+m.tol > float64(L) {
				m.markJustified(i, withUnknown)
			}
			switch target := total - (L - q.cost); {
			case !exact && m.lim.Algorithm == limiter.SlidingWindowCounter:
				m.setWaits(i, 0, 2*W+res)
			case !exact:
				m.setWaits(i, 0, W+res)
			case target <= 0:
				m.setWaits(i, 0, res)
			case target > total:
				m.setWaits(i, 0, math.MaxInt64)
			default:
				x := evals[sc.fw.lowerBound(target)]
				m.setWaits(i, 0, max(x+W+res-q.sent, 0))
			}
		}
	}
	if !exact {
		return
	}
	A, Q := m.sureAndJudged(g, withUnknown)
	if len(Q) == 0 {
		return
	}
	svals := distinctSent(reqs, A, sc.vals)
	sc.vals = svals
	sortByRecv(reqs, A)
	sc.fw.reset(len(svals))
	var total int64
	pj := 0
	for _, i := range Q {
		q := &reqs[i]
		for ; pj < len(A) && reqs[A[pj]].recv < q.sent; pj++ {
			j := &reqs[A[pj]]
			sc.fw.add(indexOf(svals, j.sent), j.cost)
			total += j.cost
		}
		if q.outcome == history.Admitted {
			certain := total - sc.fw.prefix(indexOf(svals, q.recv-W+res))
			m.setRemaining(i, L-certain-q.cost)
			continue
		}
		if target := total - (L - q.cost); target > 0 && target <= total {
			y := svals[sc.fw.lowerBound(target)]
			m.setWaits(i, max(y+W-res-q.recv, 0), 0)
		}
	}
}
