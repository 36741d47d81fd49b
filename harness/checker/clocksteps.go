package checker

import (
	"math"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// Clock steps and partly kept state: how applyFaults treats the faults that
// change the limiter's clock (runrecord.FaultWindow.StepNs) or leave its
// store with part of its state (PartialState, a promoted replica).
//
// A step of Δ at instant T moves the clock every later decision reads by
// Δ. The checks are sound for any decision interval that holds the
// decision's time on one clock running at the harness's rate, so each
// request that may have been decided after the step (received after the
// window began) has its interval widened by the most the step can have
// moved its decision on that clock:
//
//   - a step forward (Δ > 0) is time passing at once: a bucket refills, a
//     window ends. The decision may lie up to Δ later: received + Δ.
//   - a step back of the instances' own clock, or of a store that also lost
//     state, may move a decision up to |Δ| earlier: sent − |Δ|.
//   - a step back of the limiter's clock is held to the limiter's contract
//     (limiter/algorithms.go): per-key time never runs backwards. A key
//     whose state was last written at d before the step and first decided
//     on at t₁ after it is decided as at d then, and runs on from there: its
//     decisions lie min(|Δ|, t₁ − d) earlier on the clock before the step.
//     d is at least the send time of the key's last admission received
//     before the window began; t₁ at most the receive time of its first
//     request sent after the step surely took effect; per limit, since each
//     limit keeps a state of its own. A key with neither gets |Δ|. A
//     limiter that lets per-key time run back with the clock locks a key
//     out for |Δ| and is caught by the false-rejection check.
//
// Window models place their windows on the limiter's clock through the
// clock offset, which a step moves: CheckRun widens the offset's
// uncertainty by every step of the limiter's clock (stepUncertainty).
//
// A store that kept part of its state (PartialState) may reject beyond a
// fresh key's budget until that state refilled, so the fault's recovery is
// lengthened by the longest full refill of the policy's limits and the
// step, if any (faultTail).

// steppedOnly reports whether w only stepped a clock: the store kept
// answering, so no latency bound or failure mode applies, and no recovery.
func steppedOnly(w runrecord.FaultWindow) bool {
	return w.StepNs != 0 && !w.Unavailable && !w.LosesState
}

// faultTail is how long after w's end its requests are still hidden from
// the ordinary checks: the drill's recovery, none for a bare clock step,
// and for partly kept state the policy's longest refill and the step too.
func faultTail(p Policy, f *runrecord.Drill, w runrecord.FaultWindow) int64 {
	switch {
	case steppedOnly(w):
		return 0
	case w.PartialState:
		return int64(f.Recovery) + longestRefill(p) + absNs(w.StepNs)
	}
	return int64(f.Recovery)
}

// longestRefill is the longest time, in ns, a limit of p takes to refill
// its whole capacity.
func longestRefill(p Policy) int64 {
	var most int64
	for _, rule := range p.Rules {
		for _, l := range rule.Limits {
			most = max(most, modelFor(l, true).resetNs())
		}
	}
	return most
}

// stepUncertainty is the sum of |Δ| over the steps of the limiter's clock
// among windows: how far the clock offset may have moved.
func stepUncertainty(windows []runrecord.FaultWindow) int64 {
	var sum int64
	for _, w := range windows {
		if w.StepNs != 0 && w.Instance == "" {
			sum += absNs(w.StepNs)
		}
	}
	return sum
}

func absNs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// stepWidening returns, per request of d, how much earlier (early) and
// later (late) than its recorded interval its decision may lie on the
// clock before every step of f, summed over the steps.
func stepWidening(d *dataset, p Policy, f *runrecord.Drill) (early, late []int64) {
	early, late = make([]int64, len(d.reqs)), make([]int64, len(d.reqs))
	for _, w := range f.Windows {
		switch {
		case w.StepNs > 0:
			for i := range d.reqs {
				if q := &d.reqs[i]; d.affects(q, w) && q.recv >= w.FromNs {
					late[i] += w.StepNs
				}
			}
		case w.StepNs < 0 && (w.Instance != "" || w.PartialState):
			for i := range d.reqs {
				if q := &d.reqs[i]; d.affects(q, w) && q.recv >= w.FromNs {
					early[i] += -w.StepNs
				}
			}
		case w.StepNs < 0:
			backwardLags(d, p, w, early)
		}
	}
	return early, late
}

// backwardLags adds to early, for every request that may have been decided
// after w's step back of the limiter's clock, the most its key's time can
// lag: per limit of its rule min(|Δ|, t₁ − d) (see the package comment
// above), the largest over its limits.
func backwardLags(d *dataset, p Policy, w runrecord.FaultWindow, early []int64) {
	back := -w.StepNs
	surely, _ := w.InEffect() // the step took effect when its injection returned
	type slot struct {
		key uint32
		lim Limit
	}
	lastWrite := map[slot]int64{}  // latest send of an admission received before the window
	firstAfter := map[slot]int64{} // earliest receipt of a request sent after the step
	limitsOf := func(q *request) []Limit {
		for _, rule := range p.Rules {
			if match(rule.Route, d.routes[q.route]) && match(rule.Key, d.keys[q.key]) {
				return rule.Limits
			}
		}
		return nil
	}
	for i := range d.reqs {
		q := &d.reqs[i]
		for _, l := range limitsOf(q) {
			k := slot{q.key, l}
			if q.outcome == history.Admitted && q.recv < w.FromNs {
				if at, ok := lastWrite[k]; !ok || q.sent > at {
					lastWrite[k] = q.sent
				}
			}
			if q.sent >= surely {
				if at, ok := firstAfter[k]; !ok || q.recv < at {
					firstAfter[k] = q.recv
				}
			}
		}
	}
	for i := range d.reqs {
		q := &d.reqs[i]
		if q.recv < w.FromNs {
			continue
		}
		limits := limitsOf(q)
		lag := int64(0)
		if len(limits) == 0 {
			lag = back
		}
		for _, l := range limits {
			k := slot{q.key, l}
			wrote, ok1 := lastWrite[k]
			first, ok2 := firstAfter[k]
			kl := back
			if ok1 && ok2 {
				kl = min(back, max(first-wrote, 0))
			}
			lag = max(lag, kl)
		}
		early[i] += min(lag, math.MaxInt64-early[i])
	}
}
