package progress_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/progress"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/traffic"
)

// TestProgressCountsAsTheChecker: a table of responses, each handed to the
// progress counters and written to the history as the runner does, gives
// the progress line's admitted, rejected and unknown exactly the checker's
// counts, also for requests during a fault that restarts Redis empty
// (which the fault checks, not the counts, treat apart).
func TestProgressCountsAsTheChecker(t *testing.T) {
	responses := []struct {
		status int
		err    string
		n      int
	}{
		{http.StatusOK, "", 40},
		{http.StatusCreated, "", 3},
		{http.StatusTooManyRequests, "", 12},
		{http.StatusServiceUnavailable, "", 4},
		{http.StatusInternalServerError, "", 1},
		{http.StatusNotFound, "", 2},
		{0, "dial tcp 127.0.0.1:1: connect: connection refused", 3},
		{0, "context deadline exceeded", 2},
	}
	start := time.Now()
	hdr := history.NewHeader(start)
	hdr.Scenario = "table"
	hdr.Policies = []history.RoutePolicy{{Route: "/api/items", Limits: []string{"gcra:10/1s,burst=10"}}}
	var buf bytes.Buffer
	w, err := history.NewWriter(&buf, hdr)
	if err != nil {
		t.Fatal(err)
	}
	var c progress.Counters
	id := uint64(0)
	for _, resp := range responses {
		for range resp.n {
			id++
			at := start.Add(time.Duration(id) * 50 * time.Millisecond)
			res := &traffic.Result{ID: id, Phase: "steady", Identity: []string{"key-1", "key-2", "key-3"}[id%3], Route: "/api/items", Cost: 1,
				InstanceName: "instance-1", Intended: at, Sent: at, Received: at.Add(time.Millisecond), Status: resp.status, Err: resp.err}
			if id%10 == 0 { // the probe's own key
				res.Phase, res.Identity = "probe", "key-probe"
			}
			rec := res.Record(start)
			c.Add(rec.Outcome)
			if err := w.Write(&rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := history.NewReader(&buf, "table")
	if err != nil {
		t.Fatal(err)
	}
	rec := &runrecord.ScenarioRecord{Name: "table",
		Phases: []runrecord.PhaseRecord{{Name: "steady", Kind: runrecord.PhaseConstant}, {Name: "probe", Kind: runrecord.PhaseRetryAfterProbe}},
		Drill: &runrecord.Drill{Mode: runrecord.FailOpen, Instances: 1, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 300 * time.Millisecond,
			Windows: []runrecord.FaultWindow{{Kind: "redis_kill", FromNs: int64(time.Second), ToNs: int64(2 * time.Second), Unavailable: true, LosesState: true}}},
	}
	rep, err := checker.CheckRun(src, rec, checker.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Faulted == 0 {
		t.Fatal("no request fell in the fault: the table does not test the fault's counting")
	}
	for _, tc := range []struct {
		name          string
		progress, got int64
		want          int64
	}{
		{"sent / records", c.Sent.Load(), int64(rep.Records), 67},
		{"admitted", c.Admitted.Load(), int64(rep.Admitted), 43}, // 200, 201
		{"rejected", c.Rejected.Load(), int64(rep.Rejected), 12}, // 429
		{"unknown", c.Unknown.Load(), int64(rep.Unknown), 12},    // 404, 503, 500, no answer
	} {
		if tc.progress != tc.want || tc.got != tc.want {
			t.Errorf("%s: progress %d, checker %d, want %d", tc.name, tc.progress, tc.got, tc.want)
		}
	}
	// The keys as recorded, however many restarts: three and the probe's.
	if rep.Keys != 3 || rep.ProbeKeys != 1 || rep.TransportErrors != 5 {
		t.Errorf("keys %d + probe %d, transport errors %d; want 3 + 1 and 5", rep.Keys, rep.ProbeKeys, rep.TransportErrors)
	}
}
