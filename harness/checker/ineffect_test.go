package checker

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// TestFailureModeWhileInEffect: the failure mode is judged on the requests
// answered while the fault was surely in effect, from the injection's
// return to the heal's sending; a request answered by the healthy store
// while the injection or the heal was under way is no violation. Records
// without those stamps fall back on the whole window.
func TestFailureModeWhileInEffect(t *testing.T) {
	closed := func(h *hist) {
		for at := 1100 * time.Millisecond; at < 2*time.Second; at += 100 * time.Millisecond {
			h.add("k", at, at+2*time.Millisecond, history.Error, status(503), retryAfter(1))
		}
	}
	edges := func(h *hist) {
		closed(h)
		h.add("k", 1001*time.Millisecond, 1003*time.Millisecond, history.Admitted) // as the injection was under way
		h.add("k", 2002*time.Millisecond, 2004*time.Millisecond, history.Admitted) // as the heal was under way
	}
	stamped := runrecord.FaultWindow{Kind: "command", FromNs: int64(time.Second), InjectedNs: int64(1010 * time.Millisecond),
		HealNs: int64(2 * time.Second), ToNs: int64(2010 * time.Millisecond), Unavailable: true}
	unstamped := stamped
	unstamped.InjectedNs, unstamped.HealNs = 0, 0
	tests := []struct {
		name   string
		build  func(h *hist)
		window runrecord.FaultWindow
		want   Verdict
	}{
		{"answered while injecting and healing", edges, stamped, Pass},
		{"admitted while in effect", func(h *hist) {
			edges(h)
			h.add("k", 1500*time.Millisecond, 1502*time.Millisecond, history.Admitted)
		}, stamped, Fail},
		{"a record without the stamps", edges, unstamped, Fail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			tc.build(&h)
			d := &runrecord.Drill{Mode: runrecord.FailClosed, Instances: 1, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond,
				Recovery: 500 * time.Millisecond, Windows: []runrecord.FaultWindow{tc.window}}
			rep := h.checkFaults(t, "gcra:5/1s,burst=5", d)
			if got := result(t, rep, CheckFailureMode); got.Verdict != tc.want {
				t.Errorf("%s = %s (%s), want %s", CheckFailureMode, got.Verdict, got.Explanation, tc.want)
			}
		})
	}
}
