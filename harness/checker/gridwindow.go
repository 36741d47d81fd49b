package checker

import (
	"math"
	"slices"

	"github.com/rlbench/rlbench/harness/history"
)

// gridWindowModel is the fixed window whose windows lie on a grid anchored
// at each key's first request (Limit.Start StartFirstGrid): sethvargo/
// go-limiter v0.7.1's memorystore, whose bucket records the key's first
// request as startTime and refills to the limit at each tick
// (now − startTime) / W, whether or not requests came in between
// (memorystore/store.go, tick and take). Window m of a key is [a + m·W,
// a + (m+1)·W) for its anchor a, the first decision; at most L units are
// admitted in each. go-limiter reads now before it takes the bucket's lock,
// so an admission counts in the window of some instant between its reading
// and its lock: in [sent, received], as every decision here.
//
// The anchor is known only within [the first sent time of a request that
// may have reached the limiter, the first received time of one that surely
// did], and the uncertainty stays that wide for every window of the grid
// (where start=first's widens from window to window). A request lies
// surely in window m under every anchor in [lo, hi] when it was sent at or
// after hi + m·W + res and received before lo + (m+1)·W − res; the model
// holds those of each window to L.
//
// A limiter that forgets an unused key (go-limiter's sweeper drops a key
// whose last window began more than SweepMinTTL ago: Limit.Idle) anchors a
// new grid at the key's next request. The forgetting can only make more
// admissions legal, so wherever an idle gap allows it, between two
// requests that surely reached the limiter, the model adds the new grid's
// anchor to the old ones and holds to L only the requests that lie in one
// window of every grid still possible (at most maxGridAnchors; beyond, no
// window is certain any more). A key that may not be fresh
// (Policy.FreshKeys) has a grid of unknown phase: its requests are held to
// 2L in any interval shorter than a window, as two windows at most meet
// one. A fault ends the grid of its key, as for start=first.
type gridWindowModel struct {
	keyAnchoredWindow
	idle int64 // Limit.Idle, ns; 0 for a limiter that never forgets a key
}

// maxGridAnchors bounds the anchors (a key's first, and one per idle gap
// in which the limiter may have forgotten it) a key's windows are placed
// by.
const maxGridAnchors = 8

// gridAnchor is the range [lo, hi], ns, of an anchor of a key's grid, and
// from, the index in the key's requests from which it may apply; the
// requests before from received after notAfter may have been decided after
// the key was forgotten (math.MaxInt64 for the first anchor). An anchor of
// hi math.MaxInt64 is one too many (maxGridAnchors): from it on no window
// is certain.
type gridAnchor struct {
	lo, hi   int64
	from     int
	notAfter int64
}

// gridWindow names a window certain for a request: from..to holds its
// sent and received times and is one window of every possible grid.
type gridWindow struct{ from, to int64 }

// anchors returns the anchors of g's grids (g in order of sent time, cut
// at the key's first fault), in order, or nil when the phase is unknown
// (a key that may not be fresh, or no request surely reaching the
// limiter).
func (m *gridWindowModel) anchors(c *limitCheck, g []int32) []gridAnchor {
	if !c.freshKeys() {
		return nil
	}
	reqs, sc := c.r.d.reqs, &c.r.sc
	res, W := c.r.res, m.W
	reached := func(q *request) bool { return !q.undelivered && !q.faulted }
	surely := func(q *request) bool {
		return !q.faulted && (q.outcome == history.Admitted || q.outcome == history.Rejected)
	}
	n := len(g)
	// smin[k]: the earliest received time of g[k:]'s requests that surely
	// reached the limiter.
	smin := resetCounts(&sc.str, n+1)
	smin[n] = math.MaxInt64
	for k := n - 1; k >= 0; k-- {
		smin[k] = smin[k+1]
		if q := &reqs[g[k]]; surely(q) {
			smin[k] = min(smin[k], q.recv)
		}
	}
	first := 0
	for ; first < n && !reached(&reqs[g[first]]); first++ {
	}
	if first == n || smin[0] == math.MaxInt64 {
		return nil
	}
	out := []gridAnchor{{lo: reqs[g[first]].sent, hi: smin[0], notAfter: math.MaxInt64}}
	if m.idle == 0 {
		return out
	}
	// lastSure is the latest sent time of a request before k that surely
	// reached the limiter: its last decision before k was no earlier. The
	// limiter may have forgotten the key before request k's decision when
	// the decisions after it (by smin[k] at the latest) may come more than
	// idle − W after lastSure (the last window began at most W before the
	// last decision).
	lastSure, fresh := int64(math.MinInt64), false
	for k := first; k < n; k++ {
		q := &reqs[g[k]]
		if fresh && smin[k] != math.MaxInt64 && satAdd(smin[k]-lastSure, W+res) > m.idle {
			forget := lastSure + m.idle - W - res // the earliest the key may have been forgotten
			if len(out) == maxGridAnchors {
				return append(out, gridAnchor{lo: math.MaxInt64, hi: math.MaxInt64, from: k, notAfter: forget})
			}
			a := gridAnchor{lo: math.MaxInt64, hi: smin[k], from: k, notAfter: forget}
			for _, i := range g[:k+1] { // the earliest request that may be decided after forget
				if p := &reqs[i]; reached(p) && p.recv > forget {
					a.lo = min(a.lo, p.sent)
				}
			}
			out = append(out, a)
			fresh = false
		}
		if surely(q) {
			lastSure, fresh = max(lastSure, q.sent), true
		}
	}
	return out
}

// windowOf returns the window every grid the anchors allow holds request
// q (the k-th of g) in, or false: q's [sent − res, received + res] lies in
// one window of each anchor's grid that may apply to it.
func (m *gridWindowModel) windowOf(c *limitCheck, anchors []gridAnchor, k int, q *request) (gridWindow, bool) {
	res, W := c.r.res, m.W
	w := gridWindow{from: math.MinInt64, to: math.MaxInt64}
	last := len(anchors) - 1
	for last >= 0 && anchors[last].from > k {
		last--
	}
	if last < 0 || anchors[last].hi == math.MaxInt64 || last+1 < len(anchors) && q.recv > anchors[last+1].notAfter {
		return w, false // before the first anchor, beyond the last, or maybe decided in a later grid
	}
	for _, a := range anchors[:last+1] {
		j := max(floorDiv(q.sent-res-a.hi, W), 0)
		from := a.lo
		if j > 0 {
			from = a.hi + j*W + res
		}
		to := a.lo + (j+1)*W - res - 1
		if q.recv > to {
			return w, false
		}
		w.from, w.to = max(w.from, from), min(w.to, to)
	}
	return w, true
}

// cut is g up to the key's first fault.
func (m *gridWindowModel) cut(c *limitCheck, g []int32) []int32 {
	if c.faultFrom == math.MaxInt64 {
		return g
	}
	reqs := c.r.d.reqs
	k, _ := slices.BinarySearchFunc(g, c.faultFrom, func(i int32, t int64) int { return cmpInt(reqs[i].sent, t) })
	return g[:k]
}

// budget counts, per window certain under every grid, the admitted
// requests in it, and finds the fullest; a key of unknown phase is held to
// 2L in any interval shorter than a window.
func (m *gridWindowModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	reqs := c.r.d.reqs
	g = m.cut(c, g)
	anchors := m.anchors(c, g)
	if anchors == nil {
		return rollingBudget(c, g, withUnknown, m.W, 2*m.L)
	}
	var worst finding
	cur, sum, found := gridWindow{}, int64(0), false
	flush := func() {
		if !found {
			return
		}
		bound := float64(m.L) + c.tol
		f := finding{found: true, over: float64(sum) > bound, observed: sum, bound: bound, from: cur.from, to: cur.to}
		if f.worse(worst) {
			worst = f
		}
	}
	for k, i := range g {
		q := &reqs[i]
		if !admitted(q, withUnknown) {
			continue
		}
		w, ok := m.windowOf(c, anchors, k, q)
		if !ok {
			continue
		}
		if !found || w != cur {
			flush()
			cur, sum, found = w, 0, true
		}
		sum = satAdd(sum, q.cost)
	}
	flush()
	if worst.found {
		worst.group, worst.unknowns = g, withUnknown
	}
	return worst
}

// certain: a judged request surely in a window certain under every grid,
// and the requests surely admitted, surely in that window and surely
// decided before it, bound the remaining budget an admission was told of
// from above and a rejection's wait from below (a full window holds it
// back to the window's earliest end); an admission's time until its
// budget is full again is at least that too.
func (m *gridWindowModel) certain(c *limitCheck, g []int32, withUnknown bool) {
	reqs, sc, res := c.r.d.reqs, &c.r.sc, c.r.res
	g = m.cut(c, g)
	anchors := m.anchors(c, g)
	if anchors == nil {
		return
	}
	// ids[k] numbers the window certain for g[k] (-1: none); a window's
	// requests are consecutive among those with one, in order of sent
	// time. A and Q hold positions in g: the requests surely charged in
	// the opposite pass, and the judged ones.
	ids := resetCounts(&sc.vals, len(g))
	var wins []gridWindow
	A, Q := sc.a[:0], sc.b[:0]
	for k, i := range g {
		q := &reqs[i]
		ids[k] = -1
		if w, ok := m.windowOf(c, anchors, k, q); ok {
			if len(wins) == 0 || wins[len(wins)-1] != w {
				wins = append(wins, w)
			}
			ids[k] = int64(len(wins) - 1)
		}
		if surelyCharged(q, !withUnknown) {
			A = append(A, int32(k))
		}
		if judged(q, withUnknown) {
			Q = append(Q, int32(k))
		}
	}
	sc.a, sc.b = A, Q
	if len(Q) == 0 || len(wins) == 0 {
		return
	}
	slices.SortFunc(A, func(a, b int32) int { return cmpInt(reqs[g[a]].recv, reqs[g[b]].recv) })
	counts := resetCounts(&sc.cnt, len(wins))
	pj := 0
	for _, k := range Q {
		i := g[k]
		q := &reqs[i]
		for ; pj < len(A) && reqs[g[A[pj]]].recv < q.sent; pj++ {
			if id := ids[A[pj]]; id >= 0 {
				counts[id] = satAdd(counts[id], reqs[g[A[pj]]].cost)
			}
		}
		id := ids[k]
		if id < 0 {
			continue
		}
		end := wins[id].to - q.recv // the least time from the latest decision to the window's end
		if q.outcome == history.Admitted {
			c.setRemaining(i, m.L-min(satAdd(counts[id], q.cost), m.L+maxCapacity))
			c.setResetLo(i, end-res)
		} else if satAdd(counts[id], q.cost) > m.L {
			c.setWaits(i, max(end-res, 0), 0)
		}
	}
}
