package checker

// slidingCounterModel is the sliding window counter's model: windows
// aligned as the fixed window's, and a decision elapsed µs into window k
// admits while U_{k−1}·(W − elapsed) + U_k·W <= L·W (the previous window's
// count weighted by the part of it still inside the sliding window).
type slidingCounterModel struct{ windowBase }

func (m *slidingCounterModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	return m.alignedBudget(c, g, withUnknown)
}

func (m *slidingCounterModel) room(c *limitCheck, g []int32, withUnknown bool) {
	m.alignedRoom(c, g, withUnknown, m)
}

func (m *slidingCounterModel) certain(c *limitCheck, g []int32, withUnknown bool) {
	m.alignedCertain(c, g, withUnknown, m)
}

// resetNs is two windows: the previous window weighs in for one more.
func (m *slidingCounterModel) resetNs() int64 { return 2 * m.W }

func (*slidingCounterModel) boundaryBurst() bool { return true }

func (*slidingCounterModel) weighsPrevious() bool { return true }

func (m *slidingCounterModel) left(prev, cur, elapsed int64) int64 {
	wus := m.W / 1000
	return floorDiv(m.L*wus-prev*(wus-elapsed)-cur*wus, wus)
}

func (m *slidingCounterModel) exceeds(prev, cur, elapsed, cost int64, tol float64) bool {
	wus := m.W / 1000
	est := prev*(wus-elapsed) + (cur+cost)*wus
	return float64(est)+tol*float64(wus) > float64(m.L*wus)
}

// waitHi: by two windows the previous window's count no longer weighs.
func (m *slidingCounterModel) waitHi(c *limitCheck, _ *request, _, _ int64) int64 {
	return 2*m.W + c.r.res
}

// waitLo: none; the weighted estimate falls continuously.
func (*slidingCounterModel) waitLo(*limitCheck, *request, int64, int64) (int64, bool) {
	return 0, false
}
