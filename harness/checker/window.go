package checker

import (
	"math"
	"slices"

	"github.com/rlbench/rlbench/harness/history"
)

// The window models, a limit of L units per window of length W (whole
// microseconds, as a limiter at microsecond resolution keeps it), one file
// each:
//
//   - slidingLogModel (slidinglog.go): at most L in any window; exact.
//   - fixedWindowModel (fixedwindow.go): at most L per window aligned on the
//     limiter's clock.
//   - slidingCounterModel (slidingcounter.go): the aligned window's count
//     plus the previous window's, weighted by the part of it still inside
//     the sliding window, at most L.
//   - unalignedWindowModel (unaligned.go): either aligned model when the
//     limiter's clock offset is unknown, so that its windows cannot be
//     placed.
//
// This file holds what they share: the rolling sweeps (any interval shorter
// than a window) and the aligned ones (per window of the limiter's clock).

// windowBase is what every window model knows of its limit.
type windowBase struct {
	lim Limit
	W   int64 // the window, ns (whole µs)
	L   int64 // the units admitted per window
}

// fallbackBound holds each instance to its share: the limit divided by the
// number of instances, rounded down but at least 1. Over length ns a
// window's share admits its limit in every window the length meets, the
// partial windows at both ends included.
func (w windowBase) fallbackBound(instances int, length int64) float64 {
	limit := w.lim.Rate
	if instances > 1 {
		limit = math.Max(1, math.Floor(w.lim.Rate/float64(instances)))
	}
	windows := length/int64(w.lim.Period) + 2
	return float64(windows) * limit
}

// resetNs is one window: every unit counted slides out or expires within it.
func (w windowBase) resetNs() int64 { return w.W }

func (windowBase) note() string { return "" }

// windowOf returns the aligned window holding harness time t on the limiter's
// clock, with the clock offset shifted by sh (±uncertainty).
func (w windowBase) windowOf(c *limitCheck, t, sh int64) int64 {
	return floorDiv(c.r.base+t+c.r.off+sh, w.W)
}

// windowAfter is the earliest harness time, ns, from which a request's
// decision (from its sent time on, the limiter's clock read to its
// resolution) surely lies in an aligned window that began after first,
// whatever the clock offset within its uncertainty.
func (w windowBase) windowAfter(c *limitCheck, first int64) int64 {
	k := w.windowOf(c, first, c.r.unc) + 1
	return k*w.W - c.r.base - c.r.off + c.r.unc + c.r.res
}

// rollingBudget finds the most units that must have been decided within
// one interval shorter than the window less the clock resolution: for every
// candidate start a (a sent time), the admitted requests with sent >= a and
// received <= a + W − res − 1. A sweep by descending sent time over a Fenwick
// tree of received times: O(n log n). limit is the bound to hold it to (the
// sliding window log's L, or 2L for a window of unknown alignment).
func rollingBudget(c *limitCheck, g []int32, withUnknown bool, W, limit int64) finding {
	reqs, sc := c.r.d.reqs, &c.r.sc
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
	weff := max(W-c.r.res, 1)
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
	bound := float64(limit) + c.tol
	return finding{found: true, over: float64(best) > bound, observed: best, bound: bound, from: bestA, to: to, group: g, unknowns: withUnknown}
}

// rollingForm is what the sliding window log and the unaligned windows
// tell the rolling room sweep.
type rollingForm interface {
	// lookback is how far back, ns, a request may still weigh on a decision.
	lookback() int64
	// leftAfter is the lower bound of the remaining budget a request was
	// told of when at most u units (an admission's own included) counted.
	leftAfter(u int64) int64
	// waitHi is the upper bound of rejection q's ideal wait, ns: total is
	// the cost of the requests that may have come before it, indexed by
	// received time in c's Fenwick tree over evals.
	waitHi(c *limitCheck, q *request, total int64, evals []int64) int64
}

// rollingRoom derives the room conclusions for the sliding window log, and
// for the aligned windows when their alignment is unknown (a request's
// window then holds at most what came within one window before it; for the
// sliding window counter, two windows).
//
// Judged request i found at most U, the cost of the requests that may have
// come before it (sent <= its received) and may still count at its decision
// (received > its sent − lookback − res).
func rollingRoom(c *limitCheck, g []int32, withUnknown bool, L int64, form rollingForm) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	res, lookback := c.r.res, form.lookback()
	P, R := c.possibleAndJudged(g, withUnknown)
	if len(R) == 0 {
		return
	}
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
		c.setRemainingLo(i, form.leftAfter(u)) // for an admission, after its own charge
		if q.outcome == history.Admitted {
			continue
		}
		if float64(u+q.cost)+c.tol > float64(L) {
			c.markJustified(i, withUnknown)
		}
		c.setWaits(i, 0, form.waitHi(c, q, total, evals))
	}
}

// windowCounts is how an aligned-window model turns window counts into its
// per-request conclusions in the room pass. prev and cur are the units that
// may have been counted in the window before a decision's and in its own
// (prev only when weighsPrevious), and e the least time, ns, the decision
// may lie into that window.
type windowCounts interface {
	// weighsPrevious reports whether the previous window's count weighs in.
	weighsPrevious() bool
	// left is the remaining budget the counts leave, in whole units.
	left(prev, cur, e int64) int64
	// exceeds reports whether cost more units, and the tolerance tol, would
	// break the limit.
	exceeds(prev, cur, e, cost int64, tol float64) bool
	// waitHi is the longest a request of cost that found the counts may
	// wait, ns.
	waitHi(prev, cur, e, cost int64) int64
	// maxWait is the longest any request may wait, ns, whatever the counts.
	maxWait() int64
}

// alignedBudget counts, per aligned window, the admitted requests whose whole
// [sent, received] lies in that window whatever the clock offset within its
// uncertainty, and finds the fullest window.
func (w windowBase) alignedBudget(c *limitCheck, g []int32, withUnknown bool) finding {
	reqs := c.r.d.reqs
	unc := c.r.unc
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
		k := w.windowOf(c, q.sent, -unc)
		if k != w.windowOf(c, q.recv, unc) {
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
	W, k := w.W, f.from
	f.from = k*W - c.r.base - c.r.off + unc
	f.to = (k+1)*W - 1 - c.r.base - c.r.off - unc
	f.bound = float64(w.L) + c.tol
	f.over = float64(f.observed) > f.bound
	f.group, f.unknowns, f.window = g, withUnknown, true
	return f
}

// alignedRoom derives the room conclusions of an aligned-window model
// (fixed window, sliding window counter) with a known clock offset.
//
// A judged request may fall in any window its [sent, received] meets under
// the offset's uncertainty; in window k it found at most U_k, the cost of
// the requests possibly in k that may have come before it (sent <= its
// received). The model admits it for sure when its counts leave room in
// every such k (form.exceeds); an admission was told at least what they
// leave in the worst such k, and a rejection at least what they leave
// before its own charge (form.left).
func (w windowBase) alignedRoom(c *limitCheck, g []int32, withUnknown bool, form windowCounts) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	unc, W := c.r.unc, w.W
	weighted := form.weighsPrevious()
	P, R := c.possibleAndJudged(g, withUnknown)
	if len(R) == 0 {
		return
	}
	sortByRecv(reqs, R)
	qs := sc.vals[:0]
	for _, i := range R {
		q := &reqs[i]
		lo, hi := w.windowOf(c, q.sent, -unc), w.windowOf(c, q.recv, unc)
		if hi-lo <= 1 {
			qs = append(qs, lo, hi)
			if weighted {
				qs = append(qs, lo-1, hi-1)
			}
		}
	}
	slices.Sort(qs)
	qs = slices.Compact(qs)
	sc.vals = qs
	sc.fw.reset(len(qs) + 1)
	point := func(k int64) int64 { return sc.fw.prefix(indexOf(qs, k)) }
	counts := func(k int64) (prev, cur int64) {
		if weighted {
			prev = point(k - 1)
		}
		return prev, point(k)
	}
	pj := 0
	for _, i := range R {
		q := &reqs[i]
		for ; pj < len(P) && reqs[P[pj]].sent <= q.recv; pj++ {
			j := &reqs[P[pj]]
			l, r := lowerIndex(qs, w.windowOf(c, j.sent, -unc)), indexOf(qs, w.windowOf(c, j.recv, unc))
			if l <= r {
				sc.fw.add(l, j.cost)
				sc.fw.add(r+1, -j.cost)
			}
		}
		lo, hi := w.windowOf(c, q.sent, -unc), w.windowOf(c, q.recv, unc)
		if hi-lo > 1 { // a whole window may lie in [sent, received]
			if q.outcome == history.Rejected {
				c.markJustified(i, withUnknown)
				c.setWaits(i, 0, satAdd(form.maxWait(), c.r.res))
			}
			continue
		}
		// e(k) is the least time the decision may lie into window k: into
		// lo from the earliest sent time (less the clock's resolution), none
		// into hi.
		tLo := c.r.base + q.sent + c.r.off - unc - c.r.res
		e := func(k int64) int64 { return min(max(tLo-k*W, 0), W) }
		remLo, justified, waitHi := int64(math.MaxInt64), false, int64(0)
		for k := lo; k <= hi; k++ {
			prev, cur := counts(k)
			remLo = min(remLo, form.left(prev, cur, e(k)))
			if q.outcome == history.Rejected {
				justified = justified || form.exceeds(prev, cur, e(k), q.cost, c.tol)
				waitHi = max(waitHi, form.waitHi(prev, cur, e(k), q.cost))
			}
		}
		c.setRemainingLo(i, remLo)
		if q.outcome != history.Rejected { // the counts held its own charge
			continue
		}
		if justified {
			c.markJustified(i, withUnknown)
		}
		c.setWaits(i, 0, satAdd(waitHi, c.r.res))
	}
}
