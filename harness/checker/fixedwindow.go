package checker

// fixedWindowModel is the fixed window's model: at most L units per window
// aligned on the limiter's clock, placed through the known clock offset.
type fixedWindowModel struct{ windowBase }

func (m *fixedWindowModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	return m.alignedBudget(c, g, withUnknown)
}

func (m *fixedWindowModel) room(c *limitCheck, g []int32, withUnknown bool) {
	m.alignedRoom(c, g, withUnknown, m)
}

func (m *fixedWindowModel) certain(c *limitCheck, g []int32, withUnknown bool) {
	m.alignedCertain(c, g, withUnknown, m)
}

func (*fixedWindowModel) boundaryBurst() bool { return true }

func (*fixedWindowModel) weighsPrevious() bool { return false }

func (m *fixedWindowModel) left(_, cur, _ int64) int64 { return m.L - cur }

func (m *fixedWindowModel) exceeds(_, cur, _, cost int64, tol float64) bool {
	return float64(cur+cost)+tol > float64(m.L)
}

// waitHi: the end of the request's window when it surely fell in one, else
// one window.
func (m *fixedWindowModel) waitHi(c *limitCheck, q *request, lo, hi int64) int64 {
	if lo == hi {
		return (hi+1)*m.W - (c.r.base + q.sent + c.r.off - c.r.unc) + c.r.res
	}
	return m.W + c.r.res
}

// waitLo: a window surely full holds the request back to the window's end.
func (m *fixedWindowModel) waitLo(c *limitCheck, q *request, k, certain int64) (int64, bool) {
	if certain+q.cost <= m.L {
		return 0, false
	}
	return max((k+1)*m.W-(c.r.base+q.recv+c.r.off+c.r.unc)-c.r.res, 0), true
}
