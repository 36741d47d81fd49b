package checker

import (
	"math"
	"slices"

	"github.com/rlbench/rlbench/harness/history"
)

// firstWindowModel is the fixed window whose windows start at each key's
// first request (Limit.Start StartFirst): the INCR-then-EXPIRE
// pattern of rate-limit-redis (express-rate-limit), ulule/limiter and
// rate-limiter-flexible. A key's first request opens a window of W and is
// its anchor; every request decided before the window expires counts in
// it, and the first request after the expiry opens the next. At most L
// units are admitted per window.
//
// The anchors are decision times, known only within [sent, received], so
// the model follows, window after window, the range [lo_m, hi_m] holding
// the m-th anchor under every timing (anchorChain), and holds to L only the
// requests that lie in window m under every anchor in that range: sent at
// or after hi_m and received before lo_m + W. A violation is a window whose
// requests no choice of anchors consistent with the history spreads over
// two windows. A fresh key opens its first window in the history; a key
// that may not be fresh (Policy.FreshKeys) may still be in a window opened
// before it, so its chain starts only after an idle gap of a window
// (judgedFrom), and before that its requests are held to 2L in any
// interval shorter than a window, as two windows at most meet one. A fault
// ends the chain of its key until the fault's state-losing restart, which
// starts a fresh key.
type firstWindowModel struct{ keyAnchoredWindow }

// keyAnchoredWindow is what the windows that open at a key's request share
// (start=first and start=first-grid): with the alignment unknown, a
// request's window opened within one window before its decision, so the
// requests that may count against it came at most W before it, and its
// wait ends within one window. Limit.String names the windows' start.
type keyAnchoredWindow struct{ windowBase }

func (*keyAnchoredWindow) boundaryBurst() bool { return true }

func (m *keyAnchoredWindow) room(c *limitCheck, g []int32, withUnknown bool) {
	rollingRoom(c, g, withUnknown, m.L, m)
}

func (m *keyAnchoredWindow) lookback() int64 { return m.W }

func (m *keyAnchoredWindow) leftAfter(u int64) int64 { return m.L - min(u, m.L+maxCapacity) }

// waitHi is one window: by then the request's window has expired (or, on a
// grid, turned).
func (m *keyAnchoredWindow) waitHi(c *limitCheck, _ *request, _ int64, _ []int64) int64 {
	return m.W + c.r.res
}

// anchorWindow is the range of the m-th anchor, [lo, hi] ns; hi is
// math.MaxInt64 when no request surely came after the previous window
// expired, and the windows after it are not followed.
type anchorWindow struct{ lo, hi int64 }

// anchorChain returns the anchor ranges of g's windows (g in order of sent
// time; the requests sent before the key's state is known, judgedFrom, or
// from the key's first fault on, c.faultFrom, are left out).
//
// The first anchor is the first decision: in [the first sent time of a
// request that may have reached the limiter, the first received time of one
// that surely did]. The (m+1)-th anchor is the first decision at or after
// the m-th anchor plus W (± the clock's resolution): no earlier than
// lo_m + W − res, or the first sent time after it when no request may be
// decided at that instant; no later than the first received time of a
// request surely reaching the limiter after hi_m + W + res.
func (m *firstWindowModel) anchorChain(c *limitCheck, g []int32) []anchorWindow {
	reqs, sc := c.r.d.reqs, &c.r.sc
	res, W := c.r.res, m.W
	_, g = m.unknownStart(c, g)
	if c.faultFrom != math.MaxInt64 {
		k, _ := slices.BinarySearchFunc(g, c.faultFrom, func(i int32, t int64) int { return cmpInt(reqs[i].sent, t) })
		g = g[:k]
	}
	reached := func(q *request) bool { return !q.undelivered && !q.faulted }
	surely := func(q *request) bool {
		return !q.faulted && (q.outcome == history.Admitted || q.outcome == history.Rejected)
	}
	n := len(g)
	// pmax[k]: the latest received time of g[:k+1]'s requests that may have
	// reached the limiter; smin[k]: the earliest received time of g[k:]'s
	// requests that surely did.
	pmax, smin := resetCounts(&sc.cnt, n+1), resetCounts(&sc.str, n+1)
	last := int64(math.MinInt64)
	for k, i := range g {
		if q := &reqs[i]; reached(q) {
			last = max(last, q.recv)
		}
		pmax[k] = last
	}
	smin[n] = math.MaxInt64
	for k := n - 1; k >= 0; k-- {
		smin[k] = smin[k+1]
		if q := &reqs[g[k]]; surely(q) {
			smin[k] = min(smin[k], q.recv)
		}
	}
	// firstSentFrom is the index of the first request at or after k that may
	// have reached the limiter, or n.
	firstSentFrom := func(k int) int {
		for ; k < n && !reached(&reqs[g[k]]); k++ {
		}
		return k
	}
	afterSent := func(t int64) int { // the first index whose sent time is > t
		k, _ := slices.BinarySearchFunc(g, t, func(i int32, t int64) int {
			if reqs[i].sent <= t {
				return -1
			}
			return 1
		})
		return k
	}
	var chain []anchorWindow
	k := firstSentFrom(0)
	if k == n || smin[0] == math.MaxInt64 {
		return nil
	}
	a := anchorWindow{lo: reqs[g[k]].sent, hi: smin[0]}
	for limit := 2*n + 16; len(chain) < limit; {
		chain = append(chain, a)
		if a.hi == math.MaxInt64 {
			break
		}
		y, x := a.lo+W-res, a.hi+W+res
		var next anchorWindow
		if p := afterSent(y) - 1; p >= 0 && pmax[p] >= y {
			next.lo = y
		} else if f := firstSentFrom(p + 1); f < n {
			next.lo = reqs[g[f]].sent
		} else {
			break // nothing may come after the window: the chain ends
		}
		next.hi = smin[afterSent(x-1)]
		a = next
	}
	return chain
}

// unknownStart splits g (in order of sent time) at judgedFrom: the
// requests sent before the key's state is known, and the rest.
func (m *firstWindowModel) unknownStart(c *limitCheck, g []int32) (before, after []int32) {
	from := c.judgedFrom(g)
	if from == math.MinInt64 {
		return nil, g
	}
	reqs := c.r.d.reqs
	k, _ := slices.BinarySearchFunc(g, from, func(i int32, t int64) int { return cmpInt(reqs[i].sent, t) })
	return g[:k], g[k:]
}

// budget counts, per window of the chain, the admitted requests surely in
// it, and finds the fullest; the requests before the key's state is known
// are held to 2L in any interval shorter than a window.
func (m *firstWindowModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	reqs, res := c.r.d.reqs, c.r.res
	var best finding
	if before, _ := m.unknownStart(c, g); len(before) > 0 {
		best = rollingBudget(c, before, withUnknown, m.W, 2*m.L)
	}
	chain := m.anchorChain(c, g)
	var worst finding
	for _, a := range chain {
		if a.hi == math.MaxInt64 {
			break
		}
		to := a.lo + m.W - res - 1 // the latest received time surely in the window
		var sum int64
		found := false
		start, _ := slices.BinarySearchFunc(g, a.hi, func(i int32, t int64) int { return cmpInt(reqs[i].sent, t) })
		for _, i := range g[start:] {
			q := &reqs[i]
			if q.sent > to {
				break
			}
			if q.recv <= to && admitted(q, withUnknown) {
				sum, found = satAdd(sum, q.cost), true
			}
		}
		if !found {
			continue
		}
		bound := float64(m.L) + c.tol
		f := finding{found: true, over: float64(sum) > bound, observed: sum, bound: bound, from: a.hi, to: to}
		if f.worse(worst) {
			worst = f
		}
	}
	if worst.found && (!best.found || worst.worse(best)) {
		best = worst
		best.group, best.unknowns = g, withUnknown
	}
	return best
}

// certain: a judged request surely in a window of the chain, and the
// requests surely admitted, surely in that window and surely decided before
// it, bound the remaining budget an admission was told of from above and a
// rejection's wait from below (a full window holds it back to the window's
// earliest end); an admission's time until its budget is full again is at
// least that too.
func (m *firstWindowModel) certain(c *limitCheck, g []int32, withUnknown bool) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	res, W := c.r.res, m.W
	chain := m.anchorChain(c, g)
	if len(chain) == 0 {
		return
	}
	// windowOf is the window of the chain a request surely lies in, or -1.
	windowOf := func(q *request) int {
		k, _ := slices.BinarySearchFunc(chain, q.sent, func(a anchorWindow, t int64) int {
			if a.hi <= t {
				return -1
			}
			return 1
		})
		k-- // the last window whose latest anchor is at or before q.sent
		if k < 0 || chain[k].hi == math.MaxInt64 || q.recv > chain[k].lo+W-res-1 {
			return -1
		}
		return k
	}
	A, Q := c.sureAndJudged(g, withUnknown)
	if len(Q) == 0 {
		return
	}
	sortByRecv(reqs, A)
	slices.SortFunc(Q, func(a, b int32) int { return cmpInt(reqs[a].sent, reqs[b].sent) })
	counts := resetCounts(&sc.cnt, len(chain))
	pj := 0
	for _, i := range Q {
		q := &reqs[i]
		for ; pj < len(A) && reqs[A[pj]].recv < q.sent; pj++ {
			j := &reqs[A[pj]]
			if k := windowOf(j); k >= 0 {
				counts[k] = satAdd(counts[k], j.cost)
			}
		}
		k := windowOf(q)
		if k < 0 {
			continue
		}
		end := chain[k].lo + W - res - q.recv // the least time from the latest decision to the window's end
		if q.outcome == history.Admitted {
			c.setRemaining(i, m.L-min(satAdd(counts[k], q.cost), m.L+maxCapacity))
			c.setResetLo(i, end-res)
		} else if satAdd(counts[k], q.cost) > m.L {
			c.setWaits(i, max(end-res, 0), 0)
		}
	}
}
