package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// checkFaults runs the checker with one rule of spec and the given faults.
func (h *hist) checkFaults(t *testing.T, spec string, f *runrecord.Drill) *Report {
	t.Helper()
	rep, err := Check(h.source(), Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, spec)}}}, Faults: f})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

func drill(mode runrecord.FailureMode, kind string, from, to time.Duration, losesState bool) *runrecord.Drill {
	return &runrecord.Drill{
		Windows: []runrecord.FaultWindow{{Kind: kind, FromNs: int64(from), ToNs: int64(to), Unavailable: true, LosesState: losesState}},
		Mode:    mode, Instances: 2, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 500 * time.Millisecond,
	}
}

// steady adds one request every 100 ms for key k from from to to, answered
// in 2 ms, with the outcome out (admitted until the burst is spent, when
// out is nil).
func (h *hist) steady(k string, from, to time.Duration, out func(i int) (history.Outcome, []func(*history.Record))) {
	for i, at := 0, from; at < to; i, at = i+1, at+100*time.Millisecond {
		o, opts := out(i)
		h.add(k, at, at+2*time.Millisecond, o, opts...)
	}
}

func TestFaultChecks(t *testing.T) {
	admitted := func(int) (history.Outcome, []func(*history.Record)) { return history.Admitted, nil }
	tests := []struct {
		name       string
		build      func(h *hist)
		faults     *runrecord.Drill
		want       map[string]Verdict // check name → verdict
		wantBudget Verdict
	}{
		{
			// Fail-open admits everything during the outage; the budget
			// (5 per second) is not charged with those admissions.
			name: "fail-open honoured",
			build: func(h *hist) {
				h.steady("k", 0, 3*time.Second, admitted) // 10/s: within fail-open from 1s to 2s
			},
			faults: drill(runrecord.FailOpen, "redis_kill", time.Second, 2*time.Second, true),
			want:   map[string]Verdict{CheckFaultLatency: Pass, CheckFailureMode: Pass},
			// Outside the fault zone: 10 admissions in [0,1s) exceed 5 + 5/s·1s?
			// No: 10 requests in 0.9 s with burst 5 and 5/s allow 5+4.5: fails.
			wantBudget: Fail,
		},
		{
			name: "fail-closed answered 429 instead of 503",
			build: func(h *hist) {
				h.steady("k", time.Second, 2*time.Second, func(int) (history.Outcome, []func(*history.Record)) {
					return history.Rejected, []func(*history.Record){retryAfter(1)}
				})
			},
			faults:     drill(runrecord.FailClosed, "redis_pause", time.Second, 2*time.Second, false),
			want:       map[string]Verdict{CheckFaultLatency: Pass, CheckFailureMode: Fail},
			wantBudget: Pass,
		},
		{
			name: "fail-closed honoured",
			build: func(h *hist) {
				h.steady("k", time.Second, 2*time.Second, func(int) (history.Outcome, []func(*history.Record)) {
					return history.Error, []func(*history.Record){status(503), retryAfter(1)}
				})
			},
			faults:     drill(runrecord.FailClosed, "redis_pause", time.Second, 2*time.Second, false),
			want:       map[string]Verdict{CheckFaultLatency: Pass, CheckFailureMode: Pass},
			wantBudget: Pass,
		},
		{
			// A limiter without a timeout: the requests sent during the
			// pause hang until Redis resumes.
			name: "hung requests",
			build: func(h *hist) {
				h.add("k", 1100*time.Millisecond, 2*time.Second, history.Admitted)
				h.add("k", 1200*time.Millisecond, 2*time.Second, history.Admitted)
			},
			faults:     drill(runrecord.FailOpen, "redis_pause", time.Second, 2*time.Second, false),
			want:       map[string]Verdict{CheckFaultLatency: Fail, CheckFailureMode: Pass},
			wantBudget: Pass,
		},
		{
			// Fallback: two instances, 10/s burst 10 shared, so 5/s burst 5
			// each; over 1 s an instance may admit 5 + 5 = 10.
			name: "fallback within each share",
			build: func(h *hist) {
				for i := range 10 {
					at := time.Second + time.Duration(i)*90*time.Millisecond
					h.add("k", at, at+time.Millisecond, history.Admitted, inst("a"))
					h.add("k", at, at+time.Millisecond, history.Admitted, inst("b"))
				}
			},
			faults:     drill(runrecord.FailFallback, "redis_kill", time.Second, 2*time.Second, true),
			want:       map[string]Verdict{CheckFailureMode: Pass},
			wantBudget: Pass,
		},
		{
			name: "fallback beyond a share",
			build: func(h *hist) {
				for i := range 14 {
					at := time.Second + time.Duration(i)*60*time.Millisecond
					h.add("k", at, at+time.Millisecond, history.Admitted, inst("a"))
				}
			},
			faults:     drill(runrecord.FailFallback, "redis_kill", time.Second, 2*time.Second, true),
			want:       map[string]Verdict{CheckFailureMode: Fail},
			wantBudget: Pass,
		},
		{
			// Redis restarted empty: after the fault a fresh burst is the
			// right answer, not an excess over the burst spent before.
			name: "budget restarts with an empty store",
			build: func(h *hist) {
				for i := range 10 {
					h.add("k", time.Duration(i)*time.Millisecond, time.Duration(i)*time.Millisecond+time.Millisecond, history.Admitted)
					at := 3*time.Second + time.Duration(i)*time.Millisecond
					h.add("k", at, at+time.Millisecond, history.Admitted)
				}
			},
			faults:     drill(runrecord.FailOpen, "redis_kill", 2*time.Second, 2500*time.Millisecond, true),
			want:       map[string]Verdict{CheckFailureMode: Unknown},
			wantBudget: Pass,
		},
		{
			// The same history when the store kept its state (a pause): 20
			// admissions within 3 s exceed 10 + 1/s·3 s.
			name: "budget continues across a pause",
			build: func(h *hist) {
				for i := range 10 {
					h.add("k", time.Duration(i)*time.Millisecond, time.Duration(i)*time.Millisecond+time.Millisecond, history.Admitted)
					at := 3*time.Second + time.Duration(i)*time.Millisecond
					h.add("k", at, at+time.Millisecond, history.Admitted)
				}
			},
			faults:     drill(runrecord.FailOpen, "redis_pause", 2*time.Second, 2500*time.Millisecond, false),
			wantBudget: Fail,
		},
	}
	specs := map[string]string{
		"fail-open honoured":                      "gcra:5/1s,burst=5",
		"fallback within each share":              "gcra:10/1s,burst=10",
		"fallback beyond a share":                 "gcra:10/1s,burst=10",
		"budget restarts with an empty store":     "gcra:1/1s,burst=10",
		"budget continues across a pause":         "gcra:1/1s,burst=10",
		"fail-closed answered 429 instead of 503": "gcra:5/1s,burst=5",
		"fail-closed honoured":                    "gcra:5/1s,burst=5",
		"hung requests":                           "gcra:5/1s,burst=5",
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			tc.build(&h)
			rep := h.checkFaults(t, specs[tc.name], tc.faults)
			for name, want := range tc.want {
				if got := result(t, rep, name); got.Verdict != want {
					t.Errorf("%s = %s (%s), want %s", name, got.Verdict, got.Explanation, want)
				}
			}
			if got := result(t, rep, CheckBudget); got.Verdict != tc.wantBudget {
				t.Errorf("budget = %s (%s), want %s", got.Verdict, got.Explanation, tc.wantBudget)
			}
		})
	}
}

// TestInstanceFault: an instance kill concerns only that instance's
// requests; the others keep being held to the shared budget, and requests
// refused by the dead instance are neither admissions nor unknowns.
func TestInstanceFault(t *testing.T) {
	refused := func(r *history.Record) { r.Error = "dial tcp 127.0.0.1:9: connect: connection refused" }
	build := func(extraOnA int) *hist {
		var h hist
		for i := range 10 + extraOnA {
			at := time.Second + time.Duration(i)*10*time.Millisecond
			h.add("k", at, at+time.Millisecond, history.Admitted, inst("a"))
			h.add("k", at, at+time.Millisecond, history.Error, inst("b"), refused)
		}
		return &h
	}
	f := &runrecord.Drill{
		Windows: []runrecord.FaultWindow{{Kind: "instance_kill", FromNs: int64(time.Second), ToNs: int64(3 * time.Second), Instance: "b"}},
		Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: time.Second,
	}
	for _, tc := range []struct {
		extra int
		want  Verdict
	}{{0, Pass}, {3, Fail}} {
		rep := build(tc.extra).checkFaults(t, "gcra:1/1s,burst=10", f)
		if got := result(t, rep, CheckBudget); got.Verdict != tc.want {
			t.Errorf("%d extra admissions on the live instance: budget %s (%s), want %s", tc.extra, got.Verdict, got.Explanation, tc.want)
		}
		if got := result(t, rep, CheckFaultLatency); got.Verdict != Pass {
			t.Errorf("fault latency %s: %s", got.Verdict, got.Explanation)
		}
	}
}

// TestPausedStoreChargesLate: a request that timed out while Redis was
// paused may be charged only when Redis resumes and runs it. Here it is: the
// third request after the pause is rejected, which only that late charge
// explains (charged when it was sent, the bucket would have refilled).
func TestPausedStoreChargesLate(t *testing.T) {
	var h hist
	h.add("k", 0, time.Millisecond, history.Admitted)
	h.add("k", time.Millisecond, 2*time.Millisecond, history.Admitted)
	h.add("k", time.Second, 1050*time.Millisecond, history.Error, status(0)) // timed out during the pause
	for i, out := range []history.Outcome{history.Admitted, history.Admitted, history.Rejected} {
		at := 10*time.Second + time.Duration(i+1)*time.Millisecond
		h.add("k", at, at+time.Millisecond, out, retryAfter(1))
	}
	f := &runrecord.Drill{Windows: []runrecord.FaultWindow{{Kind: "redis_pause", FromNs: int64(time.Second), ToNs: int64(10 * time.Second), Unavailable: true}},
		Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 50 * time.Millisecond}
	rep := h.checkFaults(t, "gcra:1/1s,burst=3", f)
	if got := result(t, rep, CheckFalseRejections); got.Verdict == Fail {
		t.Fatalf("false-rejections = %s (%s): the late charge of the paused request explains the rejection", got.Verdict, got.Explanation)
	}
	// Without the fault declared, the same rejection is a proven false one:
	// the unknown request could only have been charged by 1.05 s.
	rep = h.checkFaults(t, "gcra:1/1s,burst=3", nil)
	if got := result(t, rep, CheckFalseRejections); got.Verdict != Fail {
		t.Fatalf("without the fault: false-rejections = %s (%s), want fail", got.Verdict, got.Explanation)
	}
}

// TestNoAnswerDuringFaults: a request left without an answer during a
// fault fails status and fault-latency unless the fault left no one to
// answer it (a killed instance, or a store down under a target that
// declares no failure mode), and after the heal, in the recovery, always
// fails status. It is never counted as a fast answer, and status never
// says every request was answered when one was not. The first case is
// peer-ulule-limiter-redis-kill's: a fail-closed target whose middleware
// panics on the store's error, so net/http drops the connection.
func TestNoAnswerDuringFaults(t *testing.T) {
	answer := func(code int) func(*history.Record) {
		return func(r *history.Record) {
			r.Status = code
			switch {
			case code == 0:
				r.Outcome, r.Error = history.Error, "EOF"
			case code == 429:
				r.Outcome = history.Rejected
			case code >= 400:
				r.Outcome = history.Error
			}
			if code == 503 || code == 429 {
				setHeader(r, "retry-after", "1")
			}
		}
	}
	// run adds one request every 100 ms from 0 to 3 s on instance api-1,
	// answered in 2 ms with what code gives at its send time: requests 11
	// to 21 are sent during the fault (1 s to 2 s), 22 to 26 in its
	// recovery.
	run := func(code func(at time.Duration) int) func(h *hist) {
		return func(h *hist) {
			for at := time.Duration(0); at < 3*time.Second; at += 100 * time.Millisecond {
				h.add("k", at, at+2*time.Millisecond, history.Admitted, inst("api-1"), answer(code(at)))
			}
		}
	}
	between := func(from, to time.Duration, in, out int) func(at time.Duration) int {
		return func(at time.Duration) int {
			if at >= from && at <= to {
				return in
			}
			return out
		}
	}
	closed := drill(runrecord.FailClosed, "redis_kill", time.Second, 2*time.Second, true)
	undeclared := drill("", "redis_kill", time.Second, 2*time.Second, true)
	kill := &runrecord.Drill{Instances: 2, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 500 * time.Millisecond,
		Windows: []runrecord.FaultWindow{{Kind: "instance_kill", Target: "api-1", Instance: "api-1", FromNs: int64(time.Second), ToNs: int64(2 * time.Second)}}}
	// An instance's clock is stepped by restarting it: it answers nothing
	// meanwhile, and no fault-latency applies (the store kept answering).
	restart := &runrecord.Drill{Mode: runrecord.FailClosed, Instances: 2, Timeout: 50 * time.Millisecond, Slack: 50 * time.Millisecond, Recovery: 500 * time.Millisecond,
		Windows: []runrecord.FaultWindow{{Kind: "clock_step", Target: "api-1", Instance: "api-1", StepNs: int64(5 * time.Minute), FromNs: int64(time.Second), ToNs: int64(2 * time.Second)}}}
	tests := []struct {
		name                  string
		build                 func(h *hist)
		faults                *runrecord.Drill
		status, latency       Verdict // latency "": no fault-latency result
		statusWhy, latencyWhy string
		latencyObserved       float64
	}{
		{name: "fail-closed, connections dropped during the fault",
			build:  run(between(time.Second, 2*time.Second, 0, 200)),
			faults: closed, status: Fail, latency: Fail, latencyObserved: 11,
			statusWhy:  "no answer to 11 of 16 requests during a fault, a store stall or the recovery after either (first: request 11)",
			latencyWhy: "11 of 11 requests sent during the fault got no answer (first: request 11, its connection failed after 2ms)"},
		{name: "fail-closed, 503 during the fault, dropped after the heal",
			build: run(func(at time.Duration) int {
				switch {
				case at >= time.Second && at <= 2*time.Second:
					return 503
				case at > 2*time.Second && at < 2350*time.Millisecond:
					return 0
				}
				return 200
			}),
			faults: closed, status: Fail, latency: Pass, latencyObserved: 2,
			statusWhy:  "no answer to 3 of 16 requests during a fault, a store stall or the recovery after either (first: request 22)",
			latencyWhy: "11 requests sent during the fault, each answered within 2ms"},
		{name: "fail-closed honoured",
			build:  run(between(time.Second, 2*time.Second, 503, 200)),
			faults: closed, status: Pass, latency: Pass, latencyObserved: 2,
			statusWhy:  "every request answered, no unexpected 4xx or 5xx; 0 transport errors",
			latencyWhy: "each answered within 2ms"},
		{name: "killed instance, no answer during the kill",
			build:  run(between(time.Second, 2*time.Second, 0, 200)),
			faults: kill, status: Pass, latency: Pass, latencyObserved: 2,
			statusWhy:  "every request answered but those a fault left with no one to answer, no unexpected 4xx or 5xx; 11 transport errors, 11 requests of unknown outcome; 11 of the 16 requests during a fault got no answer, as the fault means",
			latencyWhy: "11 requests sent during the fault, none answered, as the fault means"},
		{name: "killed instance, no answer after the heal",
			build:  run(between(time.Second, 2200*time.Millisecond, 0, 200)),
			faults: kill, status: Fail, latency: Pass, latencyObserved: 2,
			statusWhy:  "no answer to 2 of 16 requests during a fault, a store stall or the recovery after either (first: request 22)",
			latencyWhy: "none answered, as the fault means"},
		{name: "fail-closed, an instance restarted to step its clock",
			build:  run(between(time.Second, 2*time.Second, 0, 200)),
			faults: restart, status: Pass,
			statusWhy: "every request answered but those a fault left with no one to answer"},
		{name: "no failure mode declared, store down",
			build:  run(between(time.Second, 2*time.Second, 0, 200)),
			faults: undeclared, status: Pass, latency: Pass, latencyObserved: 2,
			statusWhy:  "every request answered but those a fault left with no one to answer",
			latencyWhy: "11 requests sent during the fault, none answered, as the fault means"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &hist{}
			tc.build(h)
			rep := h.checkFaults(t, "gcra:1000/1s,burst=1000", tc.faults)
			st := resultIn(t, rep, CheckStatus, "")
			if st.Verdict != tc.status || !strings.Contains(st.Explanation, tc.statusWhy) {
				t.Errorf("status = %s %q,\nwant %s with %q", st.Verdict, st.Explanation, tc.status, tc.statusWhy)
			}
			if tc.status == Fail && strings.Contains(st.Explanation, "every request answered") {
				t.Errorf("a failed status says every request was answered: %q", st.Explanation)
			}
			if tc.latency == "" {
				if hasResult(rep, CheckFaultLatency) {
					t.Errorf("a fault-latency result for a bare clock step: %+v", rep.Results)
				}
				return
			}
			fl := resultIn(t, rep, CheckFaultLatency, tc.faults.Windows[0].Kind+" #1")
			if fl.Verdict != tc.latency || fl.Observed != tc.latencyObserved || !strings.Contains(fl.Explanation, tc.latencyWhy) {
				t.Errorf("fault-latency = %s observed %v %q,\nwant %s observed %v with %q", fl.Verdict, fl.Observed, fl.Explanation, tc.latency, tc.latencyObserved, tc.latencyWhy)
			}
		})
	}
}
