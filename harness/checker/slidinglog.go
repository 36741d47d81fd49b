package checker

import (
	"math"

	"github.com/rlbench/rlbench/harness/history"
)

// slidingLogModel is the sliding window log's model: at most L units in any
// interval shorter than W.
type slidingLogModel struct{ windowBase }

func (*slidingLogModel) boundaryBurst() bool { return false }

func (m *slidingLogModel) budget(c *limitCheck, g []int32, withUnknown bool) finding {
	return rollingBudget(c, g, withUnknown, m.W, m.L)
}

func (m *slidingLogModel) room(c *limitCheck, g []int32, withUnknown bool) {
	rollingRoom(c, g, withUnknown, m.L, m)
}

func (m *slidingLogModel) lookback() int64 { return m.W }

func (m *slidingLogModel) leftAfter(u int64) int64 { return m.L - u }

// waitHi is the time until all but L − cost of the requests that may have
// come before it surely slid out.
func (m *slidingLogModel) waitHi(c *limitCheck, q *request, total int64, evals []int64) int64 {
	res := c.r.res
	switch target := total - (m.L - q.cost); {
	case target <= 0:
		return res
	case target > total:
		return math.MaxInt64
	default:
		x := evals[c.r.sc.fw.lowerBound(target)]
		return max(x+m.W+res-q.sent, 0)
	}
}

// certain: the requests surely before a judged one (received < its sent),
// placed as early as they could be, bound its wait from below (the time
// until they leave room) and the remaining budget an admission was told of
// from above.
func (m *slidingLogModel) certain(c *limitCheck, g []int32, withUnknown bool) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	res, W, L := c.r.res, m.W, m.L
	A, Q := c.sureAndJudged(g, withUnknown)
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
			c.setRemaining(i, L-certain-q.cost)
			continue
		}
		if target := total - (L - q.cost); target > 0 && target <= total {
			y := svals[sc.fw.lowerBound(target)]
			c.setWaits(i, max(y+W-res-q.recv, 0), 0)
		}
	}
}
