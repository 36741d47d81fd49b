package checker

import "math"

// unalignedWindowModel is a fixed window or (weighted) a sliding window
// counter whose windows cannot be placed, the limiter's clock offset being
// unknown: any interval shorter than a window meets at most two of them, so
// at most 2L.
type unalignedWindowModel struct {
	windowBase
	weighted bool // the sliding window counter: the previous window weighs in
}

func (m *unalignedWindowModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	return rollingBudget(c, g, withUnknown, m.W, 2*m.L)
}

func (*unalignedWindowModel) boundaryBurst() bool { return true }

func (*unalignedWindowModel) note() string {
	return ", window alignment unknown: at most 2× per window length"
}

// lookback is how far back a request may still weigh on a decision: one
// window, or two for the sliding window counter, whose previous window
// counts too.
func (m *unalignedWindowModel) lookback() int64 {
	if m.weighted {
		return 2 * m.W
	}
	return m.W
}

func (m *unalignedWindowModel) resetNs() int64 { return m.lookback() }

func (m *unalignedWindowModel) room(c *limitCheck, g []int32, withUnknown bool) {
	rollingRoom(c, g, withUnknown, m.L, m)
}

// leftAfter: a fixed window holds at most what came within one window; the
// sliding window counter's previous window weighs in too, so it gives none.
func (m *unalignedWindowModel) leftAfter(u int64) int64 {
	if m.weighted {
		return math.MinInt64
	}
	return m.L - u
}

// waitHi is the lookback: by then nothing before the request counts.
func (m *unalignedWindowModel) waitHi(c *limitCheck, _ *request, _ int64, _ []int64) int64 {
	return m.lookback() + c.r.res
}

// certain: none; the windows the requests fell in are unknown.
func (*unalignedWindowModel) certain(*limitCheck, []int32, bool) {}
