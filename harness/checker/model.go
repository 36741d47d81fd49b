package checker

import (
	"math"

	"github.com/rlbench/rlbench/harness/history"
)

// model is the checker's model of one algorithm in one policy form: what
// its bound allows a key's requests, what it says of each request's
// decision, and what RateLimit reset a full refill takes. modelFor chooses
// one per limit, once; every check asks the model, never the algorithm's
// name. Adding an algorithm or a policy form is one new model.
//
// The methods that sweep a key's requests take the limit's check c (the run
// under way, the tolerance, the pass) and one key's requests g, in order of
// sent then received time; withUnknown selects the pass that counts the
// requests of unknown outcome as admitted. A model is a value, safe for
// concurrent use; c is not.
type model interface {
	// budget returns the tightest interval of g under the model's budget
	// bound, or one that breaks it, counting the admitted requests that must
	// lie in it (g holds no faulted request). The tolerance c.tol loosens
	// the bound.
	budget(c *limitCheck, g []int32, withUnknown bool) finding
	// room charges every request that may have come before each judged
	// request (a rejection, or an admission reporting a remaining budget) as
	// late as possible, and records what no timing can deny: whether the
	// limit may have rejected it (the false-rejection test, loosened by
	// c.tol; c.markJustified), its ideal wait's upper bound (Retry-After;
	// c.setWaits) and the remaining budget's lower bound (c.setRemainingLo).
	// It takes its requests from c.possibleAndJudged, which leaves out those
	// decided before the key's state is known (judgedFrom).
	room(c *limitCheck, g []int32, withUnknown bool)
	// certain charges only the requests surely admitted before each judged
	// request, as early as possible, and records the ideal wait's lower
	// bound (c.setWaits) and the remaining budget's upper bound
	// (c.setRemaining). In the pass with unknown outcomes admitted it counts
	// them as not admitted, the side that keeps each bound sound.
	certain(c *limitCheck, g []int32, withUnknown bool)
	// boundaryBurst reports whether the model's windows let a burst straddle
	// their boundaries, so that the boundary-burst ratio is reported.
	boundaryBurst() bool
	// note qualifies the limit's scope in results ("" when the model is the
	// algorithm's own).
	note() string
	// resetNs is the longest, in ns, a key takes to refill the whole
	// capacity: the bound of a RateLimit reset.
	resetNs() int64
	// fallbackBound is the most units one of instances instances, each
	// enforcing its own share of the limit from a full budget, may admit
	// over length ns (the declared fallback when the shared store is away).
	fallbackBound(instances int, length int64) float64
}

// modelFor chooses the model of l: aligned says whether the limiter's clock
// offset is known, so that fixed windows aligned on it and the sliding
// window counter's windows can be placed (windows from each key's first
// request need no clock). It is the one place that reads l.Algorithm to
// decide a computation; l is valid.
func modelFor(l Limit, aligned bool) model {
	w := windowBase{lim: l, W: l.periodMicros() * 1000, L: l.Capacity()}
	switch l.Algorithm {
	case SlidingWindowLog:
		return &slidingLogModel{w}
	case FixedWindow:
		switch l.Start {
		case StartFirst:
			return &firstWindowModel{keyAnchoredWindow{w}}
		case StartFirstGrid:
			return &gridWindowModel{keyAnchoredWindow: keyAnchoredWindow{w}, idle: int64(l.Idle)}
		}
		if !aligned {
			return &unalignedWindowModel{windowBase: w}
		}
		return &fixedWindowModel{w}
	case SlidingWindowCounter:
		if !aligned {
			return &unalignedWindowModel{windowBase: w, weighted: true}
		}
		return &slidingCounterModel{w}
	case LeakyBucket:
		return &queueModel{bucketModel{lim: l}}
	}
	// TokenBucket and GCRA: one bound.
	return &bucketModel{lim: l}
}

// limitCheck is the check of one limit over the records that apply it: its
// model, and the state of the pass under way, through which the model
// records its per-request conclusions.
type limitCheck struct {
	r     *run
	lim   Limit
	model model
	tol   float64 // tolerance in units: Rule.Tolerance × capacity
	scope string
	pass  bool // the per-request pass under way counts unknown outcomes as admitted
	clean bool // the key group under way has no unknown outcomes
	// faultFrom is the earliest sent time of a faulted request of the key
	// group under way, math.MaxInt64 for none.
	faultFrom int64
}

// markJustified records that the limit may have rejected request i.
func (c *limitCheck) markJustified(i int32, withUnknown bool) {
	if withUnknown {
		c.r.justified[i] |= justAll
	} else {
		c.r.justified[i] |= justKnown
	}
}

// setWaits records this limit's bounds of request i's ideal wait. The pass
// with unknown outcomes admitted gives the sound bounds (its room counts
// them, its tokens do not); the other pass gives the bounds if the unknown
// outcomes went the other way, and a group without unknowns gives both.
// Limits combine by maximum: the ideal wait is the longest of them.
func (c *limitCheck) setWaits(i int32, lo, hi int64) {
	r := c.r
	if r.d.reqs[i].cost > c.lim.Capacity() { // no wait would ever admit it
		hi = math.MaxInt64
	}
	if c.pass {
		r.waitLo[i] = max(r.waitLo[i], lo)
		r.waitHi[i] = max(r.waitHi[i], hi)
	}
	if !c.pass || c.clean {
		r.waitLoU[i] = max(r.waitLoU[i], lo)
		r.waitHiK[i] = max(r.waitHiK[i], hi)
	}
}

// setRemaining records this limit's upper bound of the remaining budget an
// admitted request was told of; the bounds combine by minimum.
func (c *limitCheck) setRemaining(i int32, hi int64) { c.r.remHi[i] = min(c.r.remHi[i], hi) }

// setResetLo records this limit's lower bound, ns from the latest time an
// admission i may have been decided, of the time until the key's budget is
// full again: the RateLimit reset it was told of. Only the sound pass
// records it (in r.waitLo, which an admission's Retry-After never reads);
// the bounds combine by maximum, and the check reads them only for rules
// of one limit, whose reset the response reports.
func (c *limitCheck) setResetLo(i int32, lo int64) {
	if c.pass {
		c.r.waitLo[i] = max(c.r.waitLo[i], lo)
	}
}

// setRemainingLo records this limit's lower bound of the remaining budget a
// judged request (an admission, after its charge, or a rejection) was told
// of. The header reports the least remaining over
// the limits, so the bounds combine by minimum; math.MinInt64 means none.
func (c *limitCheck) setRemainingLo(i int32, lo int64) { c.r.remLo[i] = min(c.r.remLo[i], lo) }

// possibleAndJudged splits g, in the scratch buffers, into the requests
// that may have been charged (P) and those whose decision is judged (R: the
// rejections, and in the pass with unknown outcomes the admissions that
// report a remaining budget). A request that may have been decided before
// the key's state is known (judgedFrom) is not judged: the limit may have
// rejected it, its wait has no upper bound and its remaining budget no
// lower bound.
func (c *limitCheck) possibleAndJudged(g []int32, withUnknown bool) (P, R []int32) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	from := c.judgedFrom(g)
	P, R = sc.c[:0], sc.d[:0]
	for _, i := range g {
		q := &reqs[i]
		if mayBeCharged(q, withUnknown) {
			P = append(P, i)
		}
		switch {
		case !judged(q, withUnknown):
		case q.sent < from:
			c.setRemainingLo(i, math.MinInt64)
			if q.outcome == history.Rejected {
				c.markJustified(i, withUnknown)
				c.setWaits(i, 0, math.MaxInt64)
			}
		default:
			R = append(R, i)
		}
	}
	sc.c, sc.d = P, R
	return P, R
}

// freshKeys reports whether every key began the history with a full
// budget (Policy.FreshKeys; unset means fresh).
func (c *limitCheck) freshKeys() bool { return c.r.p.FreshKeys == nil || *c.r.p.FreshKeys }

// resetter is a model whose key's state resets at times known whatever
// came before: the aligned windows, which start empty.
type resetter interface {
	// resetAfter is the earliest time, ns, from which a request's decision
	// (from its sent time on) surely sees nothing decided before first.
	resetAfter(c *limitCheck, first int64) int64
}

// judgedFrom is the sent time, ns, from which the requests of g (one key's,
// in order of sent time) are judged against what the history shows: when
// keys may begin the history with part of their budget spent (not
// freshKeys), the state the key began with is unknown, and no rejection is
// provably false, no wait bounded above and no remaining budget bounded
// below, until the state provably no longer depends on it. That is at the
// first request after an idle gap of a full refill (the model's resetNs,
// plus the clock's resolution) since every request that may have been
// decided before it, or, for a model whose windows reset at known times
// (resetter), from the first reset after the key's first request, whichever
// comes first. math.MinInt64 when keys are fresh, math.MaxInt64 when the
// history never shows the state known. The budget's upper bound needs no
// such time, a budget partly spent before the history only admitting less,
// but for windows from the first request, whose anchors it places
// (firstWindowModel.unknownStart).
func (c *limitCheck) judgedFrom(g []int32) int64 {
	if c.freshKeys() || len(g) == 0 {
		return math.MinInt64
	}
	reqs := c.r.d.reqs
	from := int64(math.MaxInt64)
	if m, ok := c.model.(resetter); ok {
		from = m.resetAfter(c, reqs[g[0]].sent)
	}
	refill := satAdd(c.model.resetNs(), c.r.res)
	last := int64(math.MinInt64) // the latest a request before may have been decided
	for _, i := range g {
		q := &reqs[i]
		if q.sent >= from {
			break
		}
		if last != math.MinInt64 && q.sent-last >= refill {
			return q.sent
		}
		if !q.undelivered {
			last = max(last, q.recv)
		}
	}
	return from
}

// sureAndJudged is possibleAndJudged's other side: the requests surely
// charged in the opposite pass (A) and the judged ones (Q).
func (c *limitCheck) sureAndJudged(g []int32, withUnknown bool) (A, Q []int32) {
	reqs, sc := c.r.d.reqs, &c.r.sc
	A, Q = sc.a[:0], sc.b[:0]
	for _, i := range g {
		q := &reqs[i]
		if surelyCharged(q, !withUnknown) {
			A = append(A, i)
		}
		if judged(q, withUnknown) {
			Q = append(Q, i)
		}
	}
	sc.a, sc.b = A, Q
	return A, Q
}
