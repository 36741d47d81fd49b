package resilience

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter/limitertest"
)

// TestBreakerStateMachine walks the breaker through its transitions on a
// fake clock, one step per row.
func TestBreakerStateMachine(t *testing.T) {
	type step struct {
		advance   time.Duration
		do        string // "allow", "fail", "ok" (Record after an Allow), "state"
		wantAllow bool
		wantState State
	}
	tests := []struct {
		name  string
		cfg   BreakerConfig
		steps []step
	}{
		{
			name: "consecutive failures open, probe success closes",
			cfg:  BreakerConfig{ConsecutiveFailures: 3, Window: 100, OpenFor: time.Second},
			steps: []step{
				{do: "fail", wantState: Closed},
				{do: "fail", wantState: Closed},
				{do: "ok", wantState: Closed}, // a success breaks the run
				{do: "fail", wantState: Closed},
				{do: "fail", wantState: Closed},
				{do: "fail", wantState: Open},
				{do: "allow", wantAllow: false, wantState: Open},
				{advance: 999 * time.Millisecond, do: "allow", wantAllow: false, wantState: Open},
				{advance: time.Millisecond, do: "state", wantState: HalfOpen},
				{do: "allow", wantAllow: true, wantState: HalfOpen},  // the probe
				{do: "allow", wantAllow: false, wantState: HalfOpen}, // only one at a time
				{do: "record-ok", wantState: Closed},
				{do: "allow", wantAllow: true, wantState: Closed},
			},
		},
		{
			name: "failed probe opens again for a full OpenFor",
			cfg:  BreakerConfig{ConsecutiveFailures: 1, OpenFor: 2 * time.Second},
			steps: []step{
				{do: "fail", wantState: Open},
				{advance: 2 * time.Second, do: "allow", wantAllow: true, wantState: HalfOpen},
				{advance: 500 * time.Millisecond, do: "record-fail", wantState: Open},
				{advance: 1999 * time.Millisecond, do: "allow", wantAllow: false, wantState: Open},
				{advance: time.Millisecond, do: "allow", wantAllow: true, wantState: HalfOpen},
			},
		},
		{
			name: "failure rate opens without a run",
			cfg:  BreakerConfig{ConsecutiveFailures: 100, FailureRate: 0.5, Window: 4, OpenFor: time.Second},
			steps: []step{
				{do: "fail", wantState: Closed},
				{do: "ok", wantState: Closed},
				{do: "fail", wantState: Closed},
				{do: "ok", wantState: Open}, // 2 of the last 4 failed
			},
		},
		{
			name: "failure rate is over the last window only",
			cfg:  BreakerConfig{ConsecutiveFailures: 100, FailureRate: 0.75, Window: 4, OpenFor: time.Second},
			steps: []step{
				{do: "fail", wantState: Closed},
				{do: "ok", wantState: Closed},
				{do: "ok", wantState: Closed},
				{do: "ok", wantState: Closed},   // 1 of 4
				{do: "fail", wantState: Closed}, // the first failure left the window: 1 of 4
				{do: "fail", wantState: Closed}, // 2 of 4
				{do: "fail", wantState: Open},   // 3 of 4
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := limitertest.NewClock(limitertest.T0)
			var transitions []string
			b := NewBreaker(tc.cfg, clock.Now, func(from, to State) { transitions = append(transitions, from.String()+">"+to.String()) })
			for i, st := range tc.steps {
				clock.Advance(st.advance)
				switch st.do {
				case "fail", "ok":
					if !b.Allow() {
						t.Fatalf("step %d: Allow = false before a recorded call", i)
					}
					b.Record(st.do == "fail")
				case "record-ok", "record-fail":
					b.Record(st.do == "record-fail")
				case "allow":
					if got := b.Allow(); got != st.wantAllow {
						t.Fatalf("step %d: Allow = %v, want %v", i, got, st.wantAllow)
					}
				}
				if got := b.State(); got != st.wantState {
					t.Fatalf("step %d (%s): State = %v, want %v (transitions %v)", i, st.do, got, st.wantState, transitions)
				}
			}
			if len(transitions) == 0 {
				t.Fatal("no transition was reported")
			}
		})
	}
}

func TestBreakerRetryAfter(t *testing.T) {
	clock := limitertest.NewClock(limitertest.T0)
	b := NewBreaker(BreakerConfig{ConsecutiveFailures: 1, OpenFor: 3 * time.Second}, clock.Now, nil)
	if got := b.RetryAfter(); got != 0 {
		t.Fatalf("closed RetryAfter = %v, want 0", got)
	}
	b.Allow()
	b.Record(true)
	clock.Advance(time.Second)
	if got, want := b.RetryAfter(), 2*time.Second; got != want {
		t.Fatalf("RetryAfter = %v, want %v", got, want)
	}
}
