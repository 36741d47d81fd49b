package checker

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// TestIncompleteHistoryLeavesChecksUnproven: when history-complete fails,
// the checks that must see every request (false-rejections, retry-after,
// ratelimit-fields, and a passing budget) are the harness's Unknown, with
// the reason; a budget failure stands unless an id is duplicated; and a
// complete history is judged as before. The limit is gcra 2/1s burst 2 on
// key k: two admissions in [0, 1 ms] and a rejection in [2, 3 ms] with
// Retry-After 1 are honest; without the admissions the rejection looks
// false.
func TestIncompleteHistoryLeavesChecksUnproven(t *testing.T) {
	const gap = "the history is incomplete ("
	type want struct {
		verdict Verdict
		class   Class
		why     string // in the explanation
	}
	tests := []struct {
		name   string
		build  func(h *hist)
		sent   int  // run.json: requests sent
		bare   bool // no run record
		status Status
		want   map[string]want
	}{
		{
			name: "complete history unchanged",
			build: func(h *hist) {
				h.add("k", 0, ms(1), history.Admitted)
				h.add("k", 0, ms(1), history.Admitted)
				h.add("k", ms(2), ms(3), history.Rejected, retryAfter(1))
			},
			sent: 3, status: StatusPass,
			want: map[string]want{
				CheckHistoryComplete: {Pass, ClassHarness, "3 records, as many as run.json records sent, each request id once"},
				CheckBudget:          {Pass, ClassLimiter, ""},
				CheckFalseRejections: {Pass, ClassLimiter, ""},
				CheckRetryAfter:      {Pass, ClassLimiter, "1 rejection, each with an honest Retry-After"},
			},
		},
		{
			name: "admissions missing: the rejection would look false",
			build: func(h *hist) {
				h.add("k", 0, ms(1), history.Admitted)
				h.add("k", 0, ms(1), history.Admitted)
				h.add("k", ms(2), ms(3), history.Rejected, retryAfter(1))
				h.recs = h.recs[2:] // the history lost both admissions
			},
			sent: 3, status: StatusError,
			want: map[string]want{
				CheckHistoryComplete: {Fail, ClassHarness, "holds 1 of the 3 results run.json records"},
				CheckBudget:          {Unknown, ClassHarness, gap + "1 of 3 results): a missing admission can hide an excess"},
				CheckFalseRejections: {Unknown, ClassHarness, gap + "1 of 3 results): a missing admission can make a rejection look false"},
				CheckRetryAfter:      {Unknown, ClassHarness, gap + "1 of 3 results)"},
			},
		},
		{
			name: "requests missing, an excess among those read",
			build: func(h *hist) {
				for range 3 {
					h.add("k", 0, ms(1), history.Admitted)
				}
			},
			sent: 5, status: StatusFail,
			want: map[string]want{
				CheckHistoryComplete: {Fail, ClassHarness, "holds 3 of the 5 results run.json records"},
				CheckBudget:          {Fail, ClassLimiter, ""},
			},
		},
		{
			name: "an admission recorded twice",
			build: func(h *hist) {
				h.add("k", 0, ms(1), history.Admitted)
				h.add("k", 0, ms(1), history.Admitted)
				h.recs = append(h.recs, h.recs[0]) // id 1 again
				h.add("k", ms(2), ms(3), history.Rejected, retryAfter(1))
			},
			sent: 4, status: StatusError,
			want: map[string]want{
				CheckHistoryComplete: {Fail, ClassHarness, "holds request id 1 twice, and 1 record whose id an earlier record holds"},
				CheckBudget:          {Unknown, ClassHarness, gap + "1 record of a duplicated id): a duplicated request counts its admission twice"},
				CheckFalseRejections: {Unknown, ClassHarness, gap + "1 record of a duplicated id)"},
			},
		},
		{
			name: "bare history with an id three times",
			build: func(h *hist) {
				h.add("k", 0, ms(1), history.Admitted)
				h.recs = append(h.recs, h.recs[0], h.recs[0])
			},
			bare: true, status: StatusError,
			want: map[string]want{
				CheckHistoryComplete: {Fail, ClassHarness, "holds request id 1 3 times, and 2 records whose id an earlier record holds"},
				CheckBudget:          {Unknown, ClassHarness, gap + "2 records of a duplicated id)"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			tc.build(&h)
			var rec *runrecord.ScenarioRecord
			if !tc.bare {
				rec = &runrecord.ScenarioRecord{Name: "sc",
					Phases: []runrecord.PhaseRecord{{Name: "steady", Kind: "burst", Planned: tc.sent, Sent: tc.sent}}}
			}
			p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, "gcra:2/1s,burst=2")}}}}
			rep, err := CheckRun(h.source(), rec, p)
			if err != nil {
				t.Fatalf("CheckRun: %v", err)
			}
			for name, w := range tc.want {
				got := result(t, rep, name)
				if got.Verdict != w.verdict || got.Whose() != w.class || !strings.Contains(got.Explanation, w.why) {
					t.Errorf("%s = %s %s %q,\nwant %s %s with %q", name, got.Whose(), got.Verdict, got.Explanation, w.class, w.verdict, w.why)
				}
			}
			if got := rep.Status(); got != tc.status {
				t.Errorf("Status() = %s, want %s; results %+v", got, tc.status, rep.Results)
			}
		})
	}
}
