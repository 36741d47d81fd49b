package checker

import (
	"math"
	"slices"

	"github.com/rlbench/rlbench/harness/history"
)

// slidingCounterModel is the sliding window counter's model (Cloudflare,
// "How we built rate limiting capable of scaling to millions of domains",
// 2017; Upstash ratelimit's slidingWindow): windows of W aligned on the
// limiter's clock as the fixed window's, and a decision elapsed e into
// window k, which holds cur units while window k−1 holds prev, sees the
// estimate
//
//	prev·(W − e)/W + cur
//
// and admits a request of cost c when estimate + c <= L.
//
// Implementations round the weighted part differently: the reference
// limiter and Cloudflare keep it exact (the reference in integers scaled by
// W µs), which for whole L, cur and c is the same as rounding it up;
// Upstash and RussellLuo/slidingwindow round it down, admitting up to one
// unit more. The checker accepts both: an admission is a violation only when
// even the rounded-down estimate forbids it, a rejection is false only when
// even the exact estimate allows it, and each header bound takes the side
// that keeps it sound. Rule.Tolerance loosens both tests further.
type slidingCounterModel struct{ windowBase }

// resetNs is two windows: the previous window weighs in for one more.
func (m *slidingCounterModel) resetNs() int64 { return 2 * m.W }

func (*slidingCounterModel) boundaryBurst() bool { return true }

// resetAfter: a window whose previous window began after first starts
// with an estimate of what the history shows alone.
func (m *slidingCounterModel) resetAfter(c *limitCheck, first int64) int64 {
	return satAdd(m.windowAfter(c, first), m.W)
}

func (*slidingCounterModel) weighsPrevious() bool { return true }

// counterView is what a sweep of the counter's surely charged requests
// knows when it judges one request: per window the decision may lie in (k0
// and, when k1 > k0, k1 = k0 + 1), the units surely charged before it in the
// previous window (prev: surely in it, or in it or the window itself, which
// weighs at least as much) and in the window itself (cur), and the latest
// time the decision may lie into that window (eHi, ns).
type counterView struct {
	k0, k1    int64
	prev, cur [2]int64
	eHi       [2]int64
}

// sureSweep calls judge for each request of Q, in order of sent time, with
// the counts of the requests of A (surely charged) whose received time is
// before its sent time. A request whose decision may lie in more than two
// windows is not judged.
func (m *slidingCounterModel) sureSweep(c *limitCheck, A, Q []int32, judge func(i int32, v *counterView)) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	unc, W := c.r.unc, m.W
	if len(Q) == 0 {
		return
	}
	slices.SortFunc(Q, func(a, b int32) int { return cmpInt(reqs[a].sent, reqs[b].sent) })
	sortByRecv(reqs, A)
	ks := sc.vals[:0]
	for _, i := range Q {
		q := &reqs[i]
		k0, k1 := m.windowOf(c, q.sent, -unc), m.windowOf(c, q.recv, unc)
		if k1-k0 <= 1 {
			ks = append(ks, k0-1, k0, k1)
		}
	}
	slices.Sort(ks)
	ks = slices.Compact(ks)
	sc.vals = ks
	cnt, str := resetCounts(&sc.cnt, len(ks)), resetCounts(&sc.str, len(ks))
	at := func(k int64) int {
		if p, ok := slices.BinarySearch(ks, k); ok {
			return p
		}
		return -1
	}
	var v counterView
	pj := 0
	for _, i := range Q {
		q := &reqs[i]
		for ; pj < len(A) && reqs[A[pj]].recv < q.sent; pj++ {
			j := &reqs[A[pj]]
			wl, wh := m.windowOf(c, j.sent, -unc), m.windowOf(c, j.recv, unc)
			switch {
			case wl == wh:
				if p := at(wl); p >= 0 {
					cnt[p] = satAdd(cnt[p], j.cost)
				}
			case wh == wl+1:
				if p := at(wh); p >= 0 {
					str[p] = satAdd(str[p], j.cost)
				}
			}
		}
		v.k0, v.k1 = m.windowOf(c, q.sent, -unc), m.windowOf(c, q.recv, unc)
		if v.k1-v.k0 > 1 {
			continue
		}
		tHi := c.r.base + q.recv + c.r.off + unc
		for n, k := 0, v.k0; k <= v.k1; n, k = n+1, k+1 {
			p, pp := at(k), at(k-1)
			v.prev[n], v.cur[n] = satAdd(cnt[pp], str[p]), cnt[p]
			v.eHi[n] = min(max(tHi-k*W, 0), W)
		}
		judge(i, &v)
	}
}

// resetCounts returns (*buf)[:n] zeroed, growing it when needed.
func resetCounts(buf *[]int64, n int) []int64 {
	if cap(*buf) < n {
		*buf = make([]int64, n)
	}
	*buf = (*buf)[:n]
	clear(*buf)
	return *buf
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lowEstimate is the least estimate the counts allow at elapsed e: the
// weighted previous count rounded down, plus cur.
func (m *slidingCounterModel) lowEstimate(prev, cur, e int64) int64 {
	fl, _ := mulDiv(prev, m.W-e, m.W)
	return satAdd(fl, cur)
}

// budget judges every admission by the surely charged requests before it:
// a violation is an admission of cost c whose estimate, rounded down, is
// above L − c at every time it may have been decided. Its proof is the
// admission and the requests counted; its observed value their units
// (prev + cur + c) and its bound what the estimate lets through,
// L + ceil(prev·e/W) at the latest e, plus the tolerance.
func (m *slidingCounterModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	reqs, sc := c.r.d.reqs, &c.r.sc
	A, Q := sc.a[:0], sc.b[:0]
	for _, i := range g {
		if admitted(&reqs[i], withUnknown) {
			A = append(A, i)
			Q = append(Q, i)
		}
	}
	sc.a, sc.b = A, Q
	if len(Q) == 0 {
		return finding{}
	}
	var best finding
	var bestI int32
	var bestK int64
	m.sureSweep(c, A, Q, func(i int32, v *counterView) {
		q := &reqs[i]
		// The most lenient window the decision may lie in decides.
		var f finding
		var fk int64
		for n, k := 0, v.k0; k <= v.k1; n, k = n+1, k+1 {
			fl, _ := mulDiv(v.prev[n], m.W-v.eHi[n], m.W)
			observed := satAdd(satAdd(v.prev[n], v.cur[n]), q.cost)
			bound := float64(m.L) + c.tol + float64(v.prev[n]-fl)
			low := satAdd(satAdd(fl, v.cur[n]), q.cost)
			g := finding{found: true, observed: observed, bound: bound, over: float64(low) > float64(m.L)+c.tol}
			if n == 0 || !g.worse(f) {
				f, fk = g, k
			}
		}
		if !best.found || f.worse(best) {
			best, bestI, bestK = f, i, fk
		}
	})
	if f := m.concurrentBudget(c, A); f.found && (!best.found || f.worse(best)) {
		f.group, f.unknowns = g, withUnknown
		return f
	}
	if !best.found {
		return finding{}
	}
	best.members = m.counted(c, g, bestI, bestK, withUnknown)
	slices.SortFunc(best.members, func(a, b int32) int { return cmpInt(reqs[a].sent, reqs[b].sent) })
	best.from, best.to = reqs[bestI].sent, reqs[bestI].recv
	for _, j := range best.members {
		best.from = min(best.from, reqs[j].sent)
	}
	best.group, best.unknowns = g, withUnknown
	return best
}

// concurrentBudget bounds the admissions A (surely charged) decided
// together: budget's sweep counts, for each admission, only those received
// before it was sent, so a burst whose requests all overlap, each answered
// after the others were sent, escapes it. Of the admissions surely decided
// in window k and received by t, the one decided last saw every other one
// charged, and every admission surely decided in window k − 1 charged too,
// at an elapsed time e no later than t's into the window: admitting it
// needs floor(prev·(W − e)/W) + n <= L, so n units with
// floor(prev·(W − E)/W) + n > L, E the latest elapsed time t allows, break
// the counter's bound however it rounds (prev and n are the costs).
// Admissions whose decision may lie in two windows are left out of both,
// which only lowers the estimate. It returns the worst prefix by received
// time over every window, with its members.
func (m *slidingCounterModel) concurrentBudget(c *limitCheck, A []int32) finding {
	reqs, unc, W := c.r.d.reqs, c.r.unc, m.W
	type sure struct {
		i int32
		k int64
	}
	var in []sure
	for _, i := range A {
		q := &reqs[i]
		if k := m.windowOf(c, q.sent, -unc); k == m.windowOf(c, q.recv, unc) {
			in = append(in, sure{i, k})
		}
	}
	slices.SortFunc(in, func(a, b sure) int {
		if a.k != b.k {
			return cmpInt(a.k, b.k)
		}
		return cmpInt(reqs[a.i].recv, reqs[b.i].recv)
	})
	var best finding
	var prev int64
	for lo := 0; lo < len(in); {
		k := in[lo].k
		hi := lo
		for hi < len(in) && in[hi].k == k {
			hi++
		}
		prev = 0
		for j := lo - 1; j >= 0 && in[j].k == k-1; j-- {
			prev = satAdd(prev, reqs[in[j].i].cost)
		}
		var n int64
		for j := lo; j < hi; j++ {
			q := &reqs[in[j].i]
			n = satAdd(n, q.cost)
			eHi := min(max(c.r.base+q.recv+c.r.off+unc-k*W, 0), W)
			fl, _ := mulDiv(prev, W-eHi, W)
			f := finding{found: true, observed: satAdd(prev, n), bound: float64(m.L) + c.tol + float64(prev-fl), over: float64(satAdd(fl, n)) > float64(m.L)+c.tol}
			if f.worse(best) {
				best = f
				best.from, best.to = q.sent, q.recv
				best.members = best.members[:0:0]
				for p := lo - 1; p >= 0 && in[p].k == k-1; p-- {
					best.members = append(best.members, in[p].i)
				}
				for p := lo; p <= j; p++ {
					best.members = append(best.members, in[p].i)
				}
			}
		}
		lo = hi
	}
	if !best.found || !best.over {
		return finding{}
	}
	slices.SortFunc(best.members, func(a, b int32) int { return cmpInt(reqs[a].sent, reqs[b].sent) })
	for _, j := range best.members {
		best.from = min(best.from, reqs[j].sent)
		best.to = max(best.to, reqs[j].recv)
	}
	return best
}

// counted lists the requests budget counted for admission i decided in
// window k: i, and the admissions received before its sent time surely in
// window k − 1 or k.
func (m *slidingCounterModel) counted(c *limitCheck, g []int32, i int32, k int64, withUnknown bool) []int32 {
	reqs, unc := c.r.d.reqs, c.r.unc
	out := []int32{i}
	for _, j := range g {
		q := &reqs[j]
		if j == i || !admitted(q, withUnknown) || q.recv >= reqs[i].sent {
			continue
		}
		wl, wh := m.windowOf(c, q.sent, -unc), m.windowOf(c, q.recv, unc)
		if (wl == wh && (wl == k || wl == k-1)) || (wl == k-1 && wh == k) {
			out = append(out, j)
		}
	}
	return out
}

func (m *slidingCounterModel) room(c *limitCheck, g []int32, withUnknown bool) {
	m.alignedRoom(c, g, withUnknown, m)
}

// left is the remaining budget the exact estimate leaves: L − cur −
// ceil(prev·(W − e)/W), the reference limiter's floor((L·W − estimate·W)/W).
func (m *slidingCounterModel) left(prev, cur, e int64) int64 {
	return m.L - min(satAdd(cur, ceilMulDiv(prev, m.W-e, m.W)), m.L+maxCapacity)
}

// exceeds reports whether the exact estimate, plus cost and the tolerance,
// is above L.
func (m *slidingCounterModel) exceeds(prev, cur, e, cost int64, tol float64) bool {
	fl, exact := mulDiv(prev, m.W-e, m.W)
	sum := satAdd(satAdd(fl, cur), cost)
	if tol == 0 {
		return sum > m.L || sum == m.L && !exact
	}
	frac := 0.0
	if !exact {
		frac = 0.5 // some fraction in (0, 1); the tolerance is no finer
	}
	return float64(sum)+frac+tol > float64(m.L)
}

// waitHi is the longest wait the exact estimate gives a request of cost
// that found prev and cur at e: until enough of prev slides out of this
// window, or else until enough of cur slides out of the next.
func (m *slidingCounterModel) waitHi(prev, cur, e, cost int64) int64 {
	W := m.W
	fits := func(p, room int64) int64 { // the elapsed time from which p·(W − e)/W <= room
		if p <= room {
			return 0
		}
		f, _ := mulDiv(room, W, p)
		return W - f
	}
	if room := m.L - cur - cost; cur <= m.L && room >= 0 {
		return max(fits(prev, room)-e, 0)
	}
	if m.L < cost {
		return math.MaxInt64
	}
	return W - e + fits(cur, m.L-cost)
}

// maxWait: by two windows the previous window's count no longer weighs.
func (m *slidingCounterModel) maxWait() int64 { return 2 * m.W }

// certain: the counts of the requests surely charged before a judged one
// (received before its sent time; in the pass with unknown outcomes
// admitted, counting them as not admitted) bound the remaining budget an
// admission was told of from above (with the estimate rounded down), the
// time until its budget is full again from below (to the end of its window),
// and a rejection's wait from below (the earliest the estimate rounded down
// lets it through).
func (m *slidingCounterModel) certain(c *limitCheck, g []int32, withUnknown bool) {
	reqs := c.r.d.reqs
	A, Q := c.sureAndJudged(g, withUnknown)
	res := c.r.res
	m.sureSweep(c, A, Q, func(i int32, v *counterView) {
		q := &reqs[i]
		if q.outcome == history.Admitted {
			remHi, resetLo := int64(math.MinInt64), int64(math.MaxInt64)
			for n := range v.k1 - v.k0 + 1 {
				remHi = max(remHi, m.L-min(satAdd(m.lowEstimate(v.prev[n], v.cur[n], v.eHi[n]), q.cost), m.L+maxCapacity))
				resetLo = min(resetLo, m.W-v.eHi[n])
			}
			c.setRemaining(i, remHi)
			c.setResetLo(i, resetLo-res)
			return
		}
		lo := int64(math.MaxInt64)
		for n := range v.k1 - v.k0 + 1 {
			lo = min(lo, m.waitLo(v.prev[n], v.cur[n], v.eHi[n], q.cost))
		}
		c.setWaits(i, max(lo-res, 0), 0)
	})
}

// waitLo is the shortest wait the estimate rounded down gives a request of
// cost that found prev and cur at e: floor(p·(W − e)/W) <= room once
// p·(W − e) < (room+1)·W.
func (m *slidingCounterModel) waitLo(prev, cur, e, cost int64) int64 {
	W := m.W
	fits := func(p, room int64) int64 {
		if p <= room {
			return 0
		}
		return W - ceilMulDiv(room+1, W, p)
	}
	if room := m.L - cur - cost; cur <= m.L && room >= 0 {
		return max(fits(prev, room)-e, 0)
	}
	if m.L < cost {
		return W - e
	}
	return W - e + fits(cur, m.L-cost)
}
