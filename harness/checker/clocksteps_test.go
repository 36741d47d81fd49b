package checker

import (
	"context"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter"
)

// stepAt is when the tests' clock steps.
const stepAt = 3 * time.Second

// stepWindow is a clock step of the limiter's clock by step at stepAt, as
// the fault schedule records it.
func stepWindow(step time.Duration) *runrecord.Drill {
	return &runrecord.Drill{Recovery: time.Second, Timeout: 50 * time.Millisecond, Slack: 250 * time.Millisecond,
		Windows: []runrecord.FaultWindow{{
			Kind: "clock_step", FromNs: int64(stepAt - 100*time.Microsecond), InjectedNs: int64(stepAt),
			HealNs: int64(stepAt + 100*time.Microsecond), ToNs: int64(stepAt + 100*time.Microsecond), StepNs: int64(step),
		}}}
}

// naiveGCRA is GCRA whose per-key time follows the clock backwards: the
// stored TAT may lie ahead of a clock that stepped back.
type naiveGCRA struct{ tat time.Time }

func (g *naiveGCRA) allow(now time.Time, l limiter.Limit) bool {
	t := time.Duration(l.IntervalMicros()) * time.Microsecond
	tau := time.Duration(l.Capacity()) * t
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	if next := tat.Add(t); next.Sub(now) <= tau {
		g.tat = next
		return true
	}
	return false
}

// steppedHistory has key k send every 50 ms for 6 s against GCRA 10/s,
// burst 10, skipping [idleFrom, stepAt), decided at the request's send
// time on a clock that steps by step at stepAt: by the reference memory
// store, or by naiveGCRA.
func steppedHistory(t *testing.T, step, idleFrom time.Duration, naive bool) *hist {
	t.Helper()
	l := mustRefLimit(t, "gcra:10/1s,burst=10")
	var at time.Duration
	clock := func() time.Time {
		if at >= stepAt {
			return epoch.Add(at + step)
		}
		return epoch.Add(at)
	}
	store := limiter.NewMemoryStore(limiter.WithClock(clock))
	var g naiveGCRA
	h := &hist{}
	for at = 0; at < 6*time.Second; at += 50 * time.Millisecond {
		if at >= idleFrom && at < stepAt {
			continue
		}
		var ok bool
		if naive {
			ok = g.allow(clock(), l)
		} else {
			d, err := store.AllowN(context.Background(), "k", 1, l)
			if err != nil {
				t.Fatal(err)
			}
			ok = d.Allowed
		}
		out := history.Rejected
		if ok {
			out = history.Admitted
		}
		h.add("k", at, at+time.Millisecond, out)
	}
	return h
}

// TestClockStepBack: the reference limiter, whose per-key time never runs
// backwards, passes a step of its clock 2 s back, also when the key was
// idle a second before it (its contract then allows a lag of that second);
// a limiter whose per-key time follows the clock back locks a busy key out
// and fails the false-rejection check. (A key idle before the step gets the
// idle time as its allowed lag, each request's interval widened by it on
// its own; the intervals of the admissions after a lockout then reach back
// over its rejections, so a lockout no longer than that lag goes unseen.)
func TestClockStepBack(t *testing.T) {
	tests := []struct {
		name     string
		idleFrom time.Duration
		naive    bool
		drill    *runrecord.Drill
		want     Verdict
	}{
		{"reference", stepAt, false, stepWindow(-2 * time.Second), Pass},
		{"reference after an idle second", 2 * time.Second, false, stepWindow(-2 * time.Second), Pass},
		{"per-key time runs back", stepAt, true, stepWindow(-2 * time.Second), Fail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := steppedHistory(t, -2*time.Second, tc.idleFrom, tc.naive)
			rep := h.checkFaults(t, "gcra:10/1s,burst=10", tc.drill)
			if got := result(t, rep, CheckFalseRejections); got.Verdict != tc.want {
				t.Errorf("false-rejections = %s (%s), want %s", got.Verdict, got.Explanation, tc.want)
			}
			if got := result(t, rep, CheckBudget); got.Verdict != Pass {
				t.Errorf("budget = %s (%s), want pass: a step back creates no budget", got.Verdict, got.Explanation)
			}
			for _, r := range rep.Results {
				if r.Name == CheckFaultLatency || r.Name == CheckFailureMode {
					t.Errorf("%s ran on a clock step, which leaves the store answering", r.Name)
				}
			}
		})
	}
	// Without the step in the record, the reference after an idle second
	// looks like a lockout: the widening is what makes it pass.
	h := steppedHistory(t, -2*time.Second, 2*time.Second, false)
	if got := result(t, h.check(t, "gcra:10/1s,burst=10"), CheckFalseRejections); got.Verdict != Fail {
		t.Errorf("false-rejections without the recorded step = %s, want fail (the idle second's refill is lost)", got.Verdict)
	}
}

// TestClockStepForward: a step forward refills the bucket at once, more
// than the budget allows on the harness's clock; recorded, it passes.
func TestClockStepForward(t *testing.T) {
	h := steppedHistory(t, 1500*time.Millisecond, stepAt, false)
	if got := result(t, h.check(t, "gcra:10/1s,burst=10"), CheckBudget); got.Verdict != Fail {
		t.Fatalf("budget without the recorded step = %s, want fail: the step refilled 15 units at once", got.Verdict)
	}
	rep := h.checkFaults(t, "gcra:10/1s,burst=10", stepWindow(1500*time.Millisecond))
	for _, name := range []string{CheckBudget, CheckFalseRejections} {
		if got := result(t, rep, name); got.Verdict != Pass {
			t.Errorf("%s with the recorded step = %s (%s), want pass", name, got.Verdict, got.Explanation)
		}
	}
}

// TestStepWideningBounds: the widening of each request, by kind of step.
func TestStepWideningBounds(t *testing.T) {
	h := &hist{}
	h.add("k", 2900*time.Millisecond, 2910*time.Millisecond, history.Admitted) // last write before the step
	h.add("k", 2995*time.Millisecond, 3005*time.Millisecond, history.Rejected) // may be either side
	h.add("k", 3050*time.Millisecond, 3060*time.Millisecond, history.Admitted) // first surely after
	h.add("k", 3500*time.Millisecond, 3510*time.Millisecond, history.Admitted)
	h.add("j", 3100*time.Millisecond, 3110*time.Millisecond, history.Admitted) // no write before: the whole step
	d, err := load(h.source(), narrowing{})
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, "gcra:10/1s,burst=10")}}}}
	lag := int64(3060*time.Millisecond - 2900*time.Millisecond) // t₁ − d
	tests := []struct {
		name        string
		w           runrecord.FaultWindow
		early, late []int64
	}{
		{"back, limiter's clock", stepWindow(-2 * time.Second).Windows[0], []int64{0, lag, lag, lag, int64(2 * time.Second)}, []int64{0, 0, 0, 0, 0}},
		{"back, an instance's clock", func() runrecord.FaultWindow {
			w := stepWindow(-2 * time.Second).Windows[0]
			w.Instance = "instance-1"
			return w
		}(), []int64{0, 0, 0, 0, 0}, []int64{0, 0, 0, 0, 0}}, // no request went to instance-1
		{"forward", stepWindow(time.Second).Windows[0], []int64{0, 0, 0, 0, 0}, []int64{0, int64(time.Second), int64(time.Second), int64(time.Second), int64(time.Second)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			early, late := stepWidening(d, p, &runrecord.Drill{Windows: []runrecord.FaultWindow{tc.w}})
			for i := range early {
				if early[i] != tc.early[i] || late[i] != tc.late[i] {
					t.Errorf("request %d widened by (%v, %v), want (%v, %v)", i+1,
						time.Duration(early[i]), time.Duration(late[i]), time.Duration(tc.early[i]), time.Duration(tc.late[i]))
				}
			}
		})
	}
}

// TestFaultTail: how long after a window its requests stay hidden.
func TestFaultTail(t *testing.T) {
	p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, "gcra:10/1s,burst=10"), mustLimit(t, "fixed_window:100/2s")}}}}
	f := &runrecord.Drill{Recovery: time.Second}
	refill := longestRefill(p)
	if refill < int64(2*time.Second) {
		t.Fatalf("longestRefill = %v, want at least the 2 s window", time.Duration(refill))
	}
	tests := []struct {
		name string
		w    runrecord.FaultWindow
		want int64
	}{
		{"kill", runrecord.FaultWindow{Unavailable: true, LosesState: true}, int64(time.Second)},
		{"clock step", runrecord.FaultWindow{StepNs: int64(time.Second)}, 0},
		{"failover", runrecord.FaultWindow{Unavailable: true, LosesState: true, PartialState: true}, int64(time.Second) + refill},
		{"failover to a clock behind", runrecord.FaultWindow{Unavailable: true, LosesState: true, PartialState: true, StepNs: -int64(2 * time.Second)}, int64(3*time.Second) + refill},
	}
	for _, tc := range tests {
		if got := faultTail(p, f, tc.w); got != tc.want {
			t.Errorf("%s: faultTail = %v, want %v", tc.name, time.Duration(got), time.Duration(tc.want))
		}
	}
	if got, want := stepUncertainty([]runrecord.FaultWindow{{StepNs: -3}, {StepNs: 2}, {StepNs: 5, Instance: "instance-1"}}), int64(5); got != want {
		t.Errorf("stepUncertainty = %d, want %d: the limiter's clock steps only", got, want)
	}
}
