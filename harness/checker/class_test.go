package checker

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

func TestResultStatus(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want Status
	}{
		{"limiter pass", Result{Name: CheckBudget, Verdict: Pass}, StatusPass},
		{"limiter fail", Result{Name: CheckBudget, Verdict: Fail}, StatusFail},
		{"limiter unknown", Result{Name: CheckFalseRejections, Verdict: Unknown}, StatusUnknown},
		{"harness pass", Result{Name: CheckLoadDelivered, Verdict: Pass}, StatusPass},
		{"harness fail by name", Result{Name: CheckLoadDelivered, Verdict: Fail}, StatusError},
		{"history incomplete", Result{Name: CheckHistoryComplete, Verdict: Fail}, StatusError},
		{"fault never injected", Result{Name: CheckFaultInjected, Verdict: Fail}, StatusError},
		{"could not run", CouldNotRun(errors.New("no redis-server")), StatusError},
		{"latency made invalid by the harness", Result{Name: CheckMaxLatency, Class: ClassHarness, Verdict: Unknown}, StatusError},
		{"latency of the limiter", Result{Name: CheckMaxLatency, Verdict: Fail}, StatusFail},
		{"an explicit class wins over the name", Result{Name: CheckLoadDelivered, Class: ClassLimiter, Verdict: Fail}, StatusFail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Status(); got != tc.want {
				t.Errorf("Status() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestStatusOf(t *testing.T) {
	var (
		pass        = Result{Name: CheckBudget, Verdict: Pass}
		fail        = Result{Name: CheckBudget, Verdict: Fail}
		unknown     = Result{Name: CheckRetryAfter, Verdict: Unknown}
		harnessFail = Result{Name: CheckLoadDelivered, Verdict: Fail}
	)
	tests := []struct {
		name    string
		results []Result
		want    Status
	}{
		{"none", nil, StatusPass},
		{"all pass", []Result{pass, pass}, StatusPass},
		{"harness only", []Result{pass, harnessFail}, StatusError},
		{"a limiter failure wins over the harness", []Result{harnessFail, fail, pass}, StatusFail},
		{"a limiter unknown wins over the harness", []Result{harnessFail, unknown}, StatusUnknown},
		{"a failure wins over unknown", []Result{unknown, fail}, StatusFail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := StatusOf(tc.results); got != tc.want {
				t.Errorf("StatusOf = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestGeneratorBehindIsTheHarnesss: a generator that fell behind fails
// load-delivered and makes max-latency unknown, both the harness's; the
// budget stays the limiter's, and the report's status is error, not fail.
func TestGeneratorBehindIsTheHarnesss(t *testing.T) {
	r := newRecorded()
	r.rec.Checks.MaxLatency = time.Second
	for i := range 10 {
		lag := time.Millisecond
		if i < 2 {
			lag = 60 * time.Millisecond
		}
		r.send("/a", ms(float64(100*i)), lag, time.Millisecond)
	}
	rep := r.check(t)
	for _, tc := range []struct {
		name    string
		class   Class
		verdict Verdict
	}{
		{CheckBudget, ClassLimiter, Pass},
		{CheckLoadDelivered, ClassHarness, Fail},
		{CheckMaxLatency, ClassHarness, Unknown},
		{CheckHistoryComplete, ClassHarness, Pass},
	} {
		var got *Result
		for i := range rep.Results {
			if rep.Results[i].Name == tc.name {
				got = &rep.Results[i]
				break
			}
		}
		if got == nil {
			t.Fatalf("no %s result in %+v", tc.name, rep.Results)
		}
		if got.Class != tc.class || got.Verdict != tc.verdict {
			t.Errorf("%s: class %q verdict %s, want %q %s", tc.name, got.Class, got.Verdict, tc.class, tc.verdict)
		}
	}
	for _, res := range rep.Results {
		if res.Class == "" {
			t.Errorf("%s has no class", res.Name)
		}
	}
	if got, want := rep.Status(), StatusError; got != want {
		t.Errorf("Status() = %s, want %s", got, want)
	}
	if got, want := rep.Verdict(), Fail; got != want {
		t.Errorf("Verdict() = %s, want %s (the verdict over every check stays as v1 had it)", got, want)
	}
}

// TestCountsAsRecorded: the counts are of the recorded outcomes and keys,
// whatever the fault checks make of them: a drill that restarts Redis
// empty neither turns its requests unknown in the counts nor doubles the
// keys; the probe's key is counted apart.
func TestCountsAsRecorded(t *testing.T) {
	r := newRecorded()
	for i := range 30 { // two keys, each every 100 ms, for 1.5 s
		at := ms(float64(100 * (i / 2)))
		out, code := history.Admitted, 200
		if i%5 == 4 {
			out, code = history.Rejected, 429
		}
		if i == 7 {
			out, code = history.Error, 0
		}
		q := r.add([]string{"k1", "k2"}[i%2], at, at+2*time.Millisecond, out, status(code), func(q *history.Record) { q.Route, q.Phase, q.IntendedNs = "/a", "steady", int64(at) })
		q.Outcome = out
		r.rec.Phases[0].Planned++
	}
	r.add("probe-key", 3*time.Second, 3*time.Second+time.Millisecond, history.Rejected, status(429), func(q *history.Record) { q.Route, q.Phase = "/a", "probe" })
	r.rec.Phases = append(r.rec.Phases, runrecord.PhaseRecord{Name: "probe", Kind: runrecord.PhaseRetryAfterProbe})
	r.rec.Drill = &runrecord.Drill{Mode: runrecord.FailOpen, Instances: 1, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 200 * time.Millisecond,
		Windows: []runrecord.FaultWindow{{Kind: "redis_kill", FromNs: int64(time.Second), ToNs: int64(1500 * time.Millisecond), Unavailable: true, LosesState: true}}}
	rep := r.check(t)
	want := Counts{Records: 31, Keys: 2, ProbeKeys: 1, Admitted: 23, Rejected: 7, Unknown: 1, TransportErrors: 1,
		// sent or answered from 1 s to 1.7 s: 5 of each key (1 s to 1.4 s),
		// all sent during the fault.
		Faulted: 10, FaultJudged: 10}
	if rep.Counts != want {
		t.Errorf("Counts = %+v,\nwant     %+v", rep.Counts, want)
	}
}

// TestFaultedSplit counts the requests excused around faults by what
// judges them: sent during the fault (the fault checks), in flight at its
// start or in its recovery (nothing), in an observed store stall or its
// recovery (nothing either).
func TestFaultedSplit(t *testing.T) {
	r := newRecorded()
	for i := range 31 { // one key, every 100 ms, for 3 s
		at := ms(float64(100 * i))
		r.add("k1", at, at+2*time.Millisecond, history.Admitted, status(200), func(q *history.Record) { q.Route, q.Phase, q.IntendedNs = "/a", "steady", int64(at) })
		r.rec.Phases[0].Planned++
	}
	// In flight as the fault began.
	r.add("k2", ms(999), ms(1010), history.Admitted, status(200), func(q *history.Record) { q.Route, q.Phase, q.IntendedNs = "/a", "steady", int64(ms(999)) })
	r.rec.Phases[0].Planned++
	r.rec.Drill = &runrecord.Drill{Mode: runrecord.FailOpen, Instances: 1, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 200 * time.Millisecond,
		Windows: []runrecord.FaultWindow{
			{Kind: "redis_kill", FromNs: int64(time.Second), ToNs: int64(1500 * time.Millisecond), Unavailable: true, LosesState: true},
			{Kind: "stall", FromNs: int64(2500 * time.Millisecond), ToNs: int64(2600 * time.Millisecond), Observed: true},
		}}
	rep := r.check(t)
	c := rep.Counts
	for _, res := range rep.Results {
		if res.Name == CheckFaultLatency && !strings.HasPrefix(res.Explanation, "6 requests sent during the fault") {
			t.Errorf("the fault-latency check judged other requests than FaultJudged counts: %q", res.Explanation)
		}
	}
	// Sent during the fault: 1.0 s to 1.5 s; in recovery: 1.6 s and 1.7 s,
	// and k2 in flight; the stall and its recovery: 2.5 s to 2.8 s.
	if got, want := [4]int{c.Faulted, c.FaultJudged, c.FaultRecovery(), c.StallExcused}, [4]int{13, 6, 3, 4}; got != want {
		t.Errorf("faulted, judged, in recovery, stall-excused = %v, want %v", got, want)
	}
}

func TestSummaryStatusAndTotals(t *testing.T) {
	s := NewSummary(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s.AddReport("passes", &Report{Counts: Counts{Records: 9, Keys: 3, ProbeKeys: 1, Admitted: 9}, Results: []Result{{Name: CheckBudget, Verdict: Pass}}})
	s.Add("behind", []Result{{Name: CheckBudget, Verdict: Pass}, {Name: CheckLoadDelivered, Verdict: Fail}})
	s.Add("broken", []Result{CouldNotRun(errors.New("redis-server: not found"))})
	s.AddSkipped("peer-nginx", "nginx is not installed: apt-get install nginx")
	if got, want := s.Status, StatusError; got != want {
		t.Errorf("Status = %s, want %s (no limiter check failed)", got, want)
	}
	if got, want := s.Verdict, Fail; got != want {
		t.Errorf("Verdict = %s, want %s", got, want)
	}
	if got, want := s.Totals, (Totals{Scenarios: 4, Passed: 1, Errors: 2, Skipped: 1}); got != want {
		t.Errorf("Totals = %+v, want %+v", got, want)
	}
	s.Add("over", []Result{{Name: CheckBudget, Verdict: Fail}, {Name: CheckLoadDelivered, Verdict: Fail}})
	if got, want := s.Status, StatusFail; got != want {
		t.Errorf("after a limiter failure Status = %s, want %s", got, want)
	}
	if got, want := s.Scenarios[1].Checks[1].Class, ClassHarness; got != want {
		t.Errorf("load-delivered class = %q, want %q", got, want)
	}

	var buf bytes.Buffer
	if err := s.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"status": "fail"`, `"skipped": 1`, `"errors": 2`, `"class": "harness"`, `"probe_keys": 1`,
		`"name": "peer-nginx",` + "\n      " + `"status": "skipped",` + "\n      " + `"reason": "nginx is not installed: apt-get install nginx"`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary.json lacks %s:\n%s", want, buf.String())
		}
	}
	back, err := ReadSummary(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if back.Status != s.Status || back.Totals != s.Totals || len(back.Skipped) != 1 || back.Scenarios[0].Counts.ProbeKeys != 1 {
		t.Errorf("read back %+v, want %+v", back, s)
	}
}

// TestReadSummaryBeforeStatus: a v1 summary written before status, totals
// and class reads with them derived from its checks.
func TestReadSummaryBeforeStatus(t *testing.T) {
	old := `{"schema": "rlbench-summary/v1", "generated": "2026-01-01T00:00:00Z", "verdict": "fail",
	"scenarios": [
	  {"name": "a", "verdict": "fail", "checks": [{"name": "budget", "verdict": "pass", "observed": 1, "bound": 2, "unit": "units", "explanation": ""},
	                                            {"name": "load-delivered", "verdict": "fail", "observed": 0.8, "bound": 0.95, "unit": "fraction", "explanation": ""}]},
	  {"name": "b", "verdict": "pass", "checks": [{"name": "budget", "verdict": "pass", "observed": 1, "bound": 2, "unit": "units", "explanation": ""}]}]}`
	s, err := ReadSummary(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Status, StatusError; got != want {
		t.Errorf("Status = %s, want %s", got, want)
	}
	if got, want := s.Totals, (Totals{Scenarios: 2, Passed: 1, Errors: 1}); got != want {
		t.Errorf("Totals = %+v, want %+v", got, want)
	}
	if got, want := s.Scenarios[0].Checks[1].Class, ClassHarness; got != want {
		t.Errorf("class = %q, want %q", got, want)
	}
	if got, want := s.Verdict, Fail; got != want {
		t.Errorf("Verdict = %s, want %s", got, want)
	}
}

func TestUnitFor(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{1, "units", "unit"},
		{2, "units", "units"},
		{0, "units", "units"},
		{1.5, "units", "units"},
		{1, "results dropped", "result dropped"},
		{1, "retries admitted", "retry admitted"},
		{1, "keys", "key"},
		{1, "ms", "ms"},
		{1, "× limit", "× limit"},
		{1, "fraction of planned requests sent on time", "fraction of planned requests sent on time"},
		{-1, "units", "unit"},
		{1, "transport errors", "transport error"},
		{1, "requests of unknown outcome", "request of unknown outcome"},
		{1, "shards", "shard"},
		{1, "shard directories", "shard directory"},
		{3, "shard directories", "shard directories"},
	}
	for _, tc := range tests {
		if got := UnitFor(tc.v, tc.unit); got != tc.want {
			t.Errorf("UnitFor(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
	if got, want := Count(1, "keys"), "1 key"; got != want {
		t.Errorf("Count(1, keys) = %q, want %q", got, want)
	}
	if got, want := Count(3, "keys"), "3 keys"; got != want {
		t.Errorf("Count(3, keys) = %q, want %q", got, want)
	}
}
