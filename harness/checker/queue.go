package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlbench/rlbench/harness/history"
)

// CheckQueueDelay names the check that a leaky bucket as a queue holds every
// request it admits until the request's slot.
const CheckQueueDelay = "queue-delay"

// DefaultQueueSlack is Policy.QueueSlack's default.
const DefaultQueueSlack = 100 * time.Millisecond

// queueTimerResolution is the least resolution the queue-delay check allows
// the slots. Queues hold requests with timers and compute delays in whole
// milliseconds: NGINX (ngx_http_limit_req_module) reads its clock as
// ngx_current_msec, truncated to the millisecond (up to 1 ms early), and
// divides the excess by the rate in integer milliseconds (up to 1 ms more),
// so a release may precede its slot on a finer clock by up to 2 ms. Seen on
// limit_req burst=5: the sixth answer 499.0 ms after the first request was
// sent, at 10 r/s.
const queueTimerResolution = 2 * int64(time.Millisecond)

// queueModel is the leaky bucket as a queue (the reference limiter's
// leaky_bucket, NGINX limit_req without nodelay): it admits what the GCRA
// of the same rate and burst admits, the bucket's model (bucket.go), and
// holds each admitted request until its slot. The slots follow the GCRA's
// theoretical arrival time (ATM Forum TM 4.0, §4.4.2): a request of cost c
// admitted at d leaves at max(d, TAT), after which TAT moves c emission
// intervals T on, so that the releases of any admitted requests are spaced
// by the costs of those released before them. Two consequences are checked
// (shaper):
//
//   - early answers: for every interval [a, b] (a a sent time, b the time a
//     response arrived), the requests sent at or after a and answered by b
//     were released within it, so they cost at most c_max + (b − a + res)/T,
//     c_max the largest cost of the key's admissions (the last one released
//     needs no spacing after it), res twice the target's clock resolution
//     (a truncated clock and a truncated delay) and at least
//     queueTimerResolution;
//   - late answers: a request whose decision time is known (the record's
//     reported decision time, Policy.TrustDecisionTime) had its slot at the
//     latest at max(decision, TAT), TAT counting every request that may have
//     come before it as late as it may have; its answer may follow the slot
//     by the handler's and the network's time, at most Policy.QueueSlack.
//     Without a reported decision time a late answer cannot be told from a
//     slow handler, and is not judged.
type queueModel struct{ bucketModel }

func (*queueModel) note() string { return ", as a queue" }

// shaper is a model that delays what it admits: the queue-delay check asks
// it, once per key group, for the tightest interval of answers and the
// latest answer.
type shaper interface {
	queueDelay(c *limitCheck, g []int32, acc *queueAcc)
}

// queueAcc gathers the queue-delay check's findings over key groups.
type queueAcc struct {
	early finding
	// late is the most ns an answer followed its slot's upper bound
	// lateSlot, by the request lateReq (answered at lateReq.to) of the key
	// of rank lateRank.
	late       int64
	lateSlot   int64
	lateReq    example
	lateRank   uint64
	judgedLate int // admissions with a reported decision time
	seen       bool
}

// queueDelay judges the admitted requests of g (no faulted one).
func (m *queueModel) queueDelay(c *limitCheck, g []int32, acc *queueAcc) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	A := sc.a[:0]
	var cmax int64
	for _, i := range g {
		if q := &reqs[i]; q.outcome == history.Admitted {
			A = append(A, i)
			cmax = max(cmax, q.cost)
		}
	}
	sc.a = A
	if len(A) == 0 {
		return
	}
	acc.seen = true
	f := m.tightest(c, A, cmax, true, max(2*c.r.res, queueTimerResolution))
	if f.found {
		f.group = g
		f.members = nil
		for _, i := range A {
			if q := &reqs[i]; q.sent >= f.from && q.answered <= f.to {
				f.members = append(f.members, i)
			}
		}
		if f.worse(acc.early) {
			acc.early = c.r.settle(f)
		}
	}
	m.lateAnswers(c, g, acc)
}

// lateAnswers finds, for every admission whose decision time is known
// (narrowed: its received time is before its answer), the latest its slot
// may have been: max(its latest decision, TAT) + res, TAT the largest
// a + T·U(a) over candidate times a <= its latest decision, U(a) the cost of
// the requests that may have come before it (sent <= its latest decision)
// and been charged at or after a (received >= a). A sweep by received time
// over a segment tree of candidate a. Before the key's state is known
// (judgedFrom) the queue may hold what came before the history, and no
// slot is bounded.
func (m *queueModel) lateAnswers(c *limitCheck, g []int32, acc *queueAcc) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	res := c.r.res
	from := c.judgedFrom(g) // before it the queue may hold what came before the history
	P, R := sc.c[:0], sc.d[:0]
	for _, i := range g {
		q := &reqs[i]
		if mayBeCharged(q, true) {
			P = append(P, i)
		}
		if q.outcome == history.Admitted && q.answered > q.recv && q.sent >= from {
			R = append(R, i)
		}
	}
	sc.c, sc.d = P, R
	if len(R) == 0 {
		return
	}
	acc.judgedLate += len(R)
	T, ok := m.tSlow(costOf(reqs, P))
	if !ok {
		return // no refill within the history's range: no slot bound
	}
	sortByRecv(reqs, R)
	vals := sc.vals[:0]
	for _, j := range P {
		vals = append(vals, reqs[j].recv)
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	sc.vals = vals
	sc.tree.reset(vals)
	pj := 0
	for _, i := range R {
		q := &reqs[i]
		for ; pj < len(P) && reqs[P[pj]].sent <= q.recv; pj++ {
			j := &reqs[P[pj]]
			sc.tree.addPrefix(indexOf(vals, j.recv), j.cost*T)
		}
		// Its own charge was added to every leaf up to its received time,
		// all those asked: take it off.
		slot := q.recv
		if k := indexOf(vals, q.recv); k >= 0 {
			slot = max(slot, sc.tree.maxPrefix(k)-q.cost*T)
		}
		slot += res
		if late := q.answered - slot; late > acc.late {
			acc.late, acc.lateSlot, acc.lateRank = late, slot, c.r.d.rank[q.key]
			acc.lateReq = example{id: q.id, key: c.r.d.keys[q.key], to: q.answered}
		}
	}
}

// result is the queue-delay check's verdict over every key group.
func (acc *queueAcc) result(c *limitCheck, p Policy) Result {
	res := Result{Name: CheckQueueDelay, Scope: c.scope, Unit: "units", Verdict: Pass}
	slack := p.QueueSlack
	if slack == 0 {
		slack = DefaultQueueSlack
	}
	lateNote := "no admission reported its decision time, so late answers are not judged"
	if acc.judgedLate > 0 {
		lateNote = fmt.Sprintf("of %s with a reported decision time, none answered more than %v after its slot", Count(acc.judgedLate, "admissions"), slack)
	}
	f := acc.early
	switch {
	case !acc.seen || !f.found:
		res.Explanation = "no admitted requests"
	case f.over:
		res.Verdict, res.Observed, res.Bound, res.Proof = Fail, float64(f.observed), f.bound, f.proof
		res.Explanation = fmt.Sprintf("key %q: %s answered %s, where a queue of %s releases at most %s: answered before their slots", res.Proof.Key, Count(int(f.observed), "units"), span(f), c.lim, fmtNum(f.bound))
	case acc.late > int64(slack):
		q := acc.lateReq
		res.Verdict, res.Unit = Fail, "ms"
		res.Observed, res.Bound = float64(acc.late)/1e6, float64(slack)/1e6
		res.Proof = &Proof{Key: q.key, FromNs: acc.lateSlot, ToNs: q.to, RequestIDs: []uint64{q.id}}
		res.Explanation = fmt.Sprintf("key %q: request %d answered %v after its slot (at the latest %s), more than the slack %v", res.Proof.Key, q.id, time.Duration(acc.late), fmtNs(acc.lateSlot), slack)
	default:
		res.Observed, res.Bound, res.Proof = float64(f.observed), f.bound, f.proof
		res.Explanation = fmt.Sprintf("tightest: key %q, %s answered %s of %s released; %s", res.Proof.Key, Count(int(f.observed), "units"), span(f), fmtNum(f.bound), lateNote)
	}
	return res
}
