package checker

import (
	"slices"

	"github.com/rlbench/rlbench/harness/history"
)

// fixedWindowModel is the fixed window's model: at most L units per window
// aligned on the limiter's clock, placed through the known clock offset.
type fixedWindowModel struct{ windowBase }

func (m *fixedWindowModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	return m.alignedBudget(c, g, withUnknown)
}

func (m *fixedWindowModel) room(c *limitCheck, g []int32, withUnknown bool) {
	m.alignedRoom(c, g, withUnknown, m)
}

func (*fixedWindowModel) boundaryBurst() bool { return true }

// resetAfter: a window that began after first starts empty.
func (m *fixedWindowModel) resetAfter(c *limitCheck, first int64) int64 {
	return m.windowAfter(c, first)
}

func (*fixedWindowModel) weighsPrevious() bool { return false }

func (m *fixedWindowModel) left(_, cur, _ int64) int64 { return m.L - min(cur, m.L+maxCapacity) }

func (m *fixedWindowModel) exceeds(_, cur, _, cost int64, tol float64) bool {
	return float64(satAdd(cur, cost))+tol > float64(m.L)
}

// waitHi: the end of the window.
func (m *fixedWindowModel) waitHi(_, _, e, _ int64) int64 { return m.W - e }

func (m *fixedWindowModel) maxWait() int64 { return m.W }

// certain: the requests surely admitted (in the other pass, with unknown
// outcomes admitted too), surely in the window of a judged request that
// surely lies in one, and surely decided before it, bound the remaining
// budget an admission was told of from above and a rejection's wait from
// below (a full window holds it back to the window's end), and an
// admission's time until its budget is full again from below (the window's
// end).
func (m *fixedWindowModel) certain(c *limitCheck, g []int32, withUnknown bool) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	unc, res := c.r.unc, c.r.res
	A, Q := sc.a[:0], sc.b[:0]
	for _, i := range g {
		q := &reqs[i]
		if surelyCharged(q, !withUnknown) {
			A = append(A, i)
		}
		if judged(q, withUnknown) && m.windowOf(c, q.sent, -unc) == m.windowOf(c, q.recv, unc) {
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
		qs = append(qs, m.windowOf(c, reqs[i].sent, -unc))
	}
	slices.Sort(qs)
	qs = slices.Compact(qs)
	sc.vals = qs
	counts := resetCounts(&sc.cnt, len(qs))
	pj := 0
	for _, i := range Q {
		q := &reqs[i]
		for ; pj < len(A) && reqs[A[pj]].recv < q.sent; pj++ {
			j := &reqs[A[pj]]
			k := m.windowOf(c, j.sent, -unc)
			if k != m.windowOf(c, j.recv, unc) {
				continue
			}
			if p, ok := slices.BinarySearch(qs, k); ok {
				counts[p] = satAdd(counts[p], j.cost)
			}
		}
		k := m.windowOf(c, q.sent, -unc)
		p, _ := slices.BinarySearch(qs, k)
		certain := counts[p]
		// end is the time, ns, from the latest the decision may lie to its
		// window's end.
		end := (k+1)*m.W - (c.r.base + q.recv + c.r.off + unc)
		if q.outcome == history.Admitted {
			c.setRemaining(i, m.L-min(satAdd(certain, q.cost), m.L+maxCapacity))
			c.setResetLo(i, end-res)
		} else if satAdd(certain, q.cost) > m.L {
			c.setWaits(i, max(end-res, 0), 0)
		}
	}
}
