package checker

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter/resilience"
)

func TestModelFor(t *testing.T) {
	tests := []struct {
		spec      string
		aligned   bool
		wantModel string
		burst     bool   // reports the boundary-burst ratio
		note      string // scope qualifier
		resetNs   int64
	}{
		{"gcra:10/1s,burst=20", true, "*checker.bucketModel", false, "", 20 * (100e6 + 1000)},
		{"token_bucket:3/1s,burst=1", false, "*checker.bucketModel", false, "", 333_333_334 + 1000},
		{"leaky_bucket:5/1s,burst=5", true, "*checker.queueModel", false, ", as a queue", 5 * (200e6 + 1000)},
		{"sliding_window_log:100/1m", true, "*checker.slidingLogModel", false, "", int64(time.Minute)},
		{"sliding_window_log:100/1m", false, "*checker.slidingLogModel", false, "", int64(time.Minute)},
		{"fixed_window:100/1m", true, "*checker.fixedWindowModel", true, "", int64(time.Minute)},
		{"fixed_window:100/1m", false, "*checker.unalignedWindowModel", true, ", window alignment unknown: at most 2× per window length", int64(time.Minute)},
		{"sliding_window_counter:100/1m", true, "*checker.slidingCounterModel", true, "", int64(2 * time.Minute)},
		{"sliding_window_counter:100/1m", false, "*checker.unalignedWindowModel", true, ", window alignment unknown: at most 2× per window length", int64(2 * time.Minute)},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s aligned=%v", tc.spec, tc.aligned), func(t *testing.T) {
			m := modelFor(mustLimit(t, tc.spec), tc.aligned)
			if got := fmt.Sprintf("%T", m); got != tc.wantModel {
				t.Fatalf("model = %s, want %s", got, tc.wantModel)
			}
			if got := m.boundaryBurst(); got != tc.burst {
				t.Errorf("boundaryBurst() = %v, want %v", got, tc.burst)
			}
			if got := m.note(); got != tc.note {
				t.Errorf("note() = %q, want %q", got, tc.note)
			}
			if got := m.resetNs(); got != tc.resetNs {
				t.Errorf("resetNs() = %d, want %d", got, tc.resetNs)
			}
		})
	}
}

// The fallback share the checker derives from the declared number of
// instances is the one the reference limiter documents (resilience.Share):
// rate, burst and window limits divided by the number of instances, rounded
// down but at least 1.
func TestFallbackBoundMatchesDocumentedShare(t *testing.T) {
	specs := []string{"gcra:10/1s,burst=10", "token_bucket:7/1s,burst=3", "leaky_bucket:20/1s,burst=4",
		"gcra:1/1m,burst=1", "fixed_window:5/500ms", "sliding_window_log:4/300ms", "sliding_window_counter:100/1m", "fixed_window:2/1s"}
	for _, spec := range specs {
		for _, n := range []int{0, 1, 2, 3, 7} {
			for _, length := range []time.Duration{0, 250 * time.Millisecond, 2 * time.Second, 90 * time.Second} {
				share := resilience.Share(mustRefLimit(t, spec), n)
				var want float64
				if share.Algorithm.IsWindow() {
					want = float64(int64(length)/int64(share.Period)+2) * share.Rate
				} else {
					want = float64(share.Burst) + share.Rate*float64(length)/float64(share.Period)
				}
				got := modelFor(mustLimit(t, spec), true).fallbackBound(n, int64(length))
				if got != want {
					t.Errorf("%s, %d instances, %v: fallbackBound = %v, want %v (share %v)", spec, n, length, got, want, share)
				}
			}
		}
	}
}
