package checker

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// mixedHistory draws, from seed, a history and a policy that exercise every
// part of a check at once: several rules (routes, plans of keys by prefix,
// fixed costs, tolerances) of one to three limits of every algorithm, known
// or unknown clock offsets, clock resolutions, fresh or spent keys, decision
// times, unknown outcomes, refused connections, 401s, 503s and every family
// of rate-limit headers, and drills of every failure mode whose windows
// restart the store, keep part of its state, step the limiter's or an
// instance's clock, or concern one instance. The outcomes are drawn, not
// decided by a limiter: every check and every proof has work to do.
func mixedHistory(seed uint64) (history.Header, []history.Record, Policy) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(n int) int { return rng.IntN(n) }
	limit := func() Limit {
		alg := algorithms[pick(len(algorithms))]
		l := Limit{Algorithm: alg, Period: []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, time.Second}[pick(3)], Rate: float64(1 + pick(8))}
		if alg.window() {
			l.Burst = int64(l.Rate)
			if alg == FixedWindow && pick(3) == 0 {
				l.Start = StartFirst
				if pick(2) == 0 {
					l.Start, l.Idle = StartFirstGrid, time.Duration(pick(2))*3*l.Period
				}
			}
		} else {
			l.Burst = int64(1 + pick(8))
			l.Rate /= float64(1 + pick(3))
		}
		return l
	}
	limits := func() []Limit {
		out := []Limit{limit()}
		for pick(3) == 0 && len(out) < 3 {
			out = append(out, limit())
		}
		return out
	}
	var p Policy
	switch pick(4) {
	case 0:
		p.Rules = []Rule{{Limits: limits()}}
	case 1: // plans: keys by prefix
		p.Rules = []Rule{{Key: "free-*", Limits: limits()}, {Key: "pro-*", Limits: limits(), Tolerance: 0.1}}
	case 2: // routes, one with a fixed cost, some unmatched
		p.Rules = []Rule{{Route: "/a", Limits: limits()}, {Route: "/b*", Cost: 2, Limits: limits()}}
	default: // routes sharing a limit, and a plan on one route
		shared := limit()
		p.Rules = []Rule{{Route: "/a", Key: "pro-*", Limits: []Limit{shared, limit()}}, {Route: "/a", Limits: []Limit{shared}}, {Limits: limits()}}
	}
	p.Resolution = []time.Duration{0, time.Microsecond, time.Millisecond, 10 * time.Millisecond}[pick(4)]
	p.TrustDecisionTime = pick(3) == 0
	if pick(3) == 0 {
		fresh := pick(2) == 0
		p.FreshKeys = &fresh
	}
	if pick(4) == 0 {
		p.MaxExcess = int64(pick(3))
	}
	if pick(4) == 0 {
		p.MaxFalseRejectionRate = []float64{0.01, 0.1, 0.5}[pick(3)]
	}
	p.SkipHeaderChecks = pick(8) == 0

	h := history.NewHeader(epoch)
	if pick(4) != 0 {
		off := int64(pick(3)) * int64(time.Millisecond)
		h.ClockOffsetNs, h.ClockUncertaintyNs = &off, int64(pick(3))*int64(100*time.Microsecond)
	}
	h.ClockSource = []string{"", history.ClockRedisTime, history.ClockHTTPDate, history.ClockDeclared, history.ClockLocal}[pick(5)]

	keys := make([]string, 1+pick(12))
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%d", []string{"free", "pro", "anon"}[pick(3)], i)
	}
	routes := []string{"/a", "/b", "/b/x", "/c"}
	headers := []map[string]string{
		nil,
		{"retry-after": "1"},
		{"retry-after": "2", "ratelimit-limit": "3", "ratelimit-remaining": "0", "ratelimit-reset": "1"},
		{"ratelimit-limit": "5", "ratelimit-remaining": "3", "ratelimit-reset": "1"},
		{"ratelimit": `"default";r=2;t=1`, "ratelimit-policy": `"default";q=5;w=1`},
		{"ratelimit": "limit=4, remaining=1, reset=1", "ratelimit-policy": "4;w=1"},
		{"x-ratelimit-limit": "5", "x-ratelimit-remaining": "1", "x-ratelimit-reset": "1"},
		{"x-ratelimit-limit": "5", "ratelimit-limit": "6", "ratelimit-remaining": "x"},
		{"retry-after": "soon"},
		{"retry-after": "0"},
	}
	n := pick(300)
	if pick(10) == 0 {
		n = 0
	}
	recs := make([]history.Record, 0, n)
	var now int64
	for i := range n {
		now += int64(pick(40)) * int64(time.Millisecond) / 4
		if pick(20) == 0 {
			now -= int64(pick(30)) * int64(time.Millisecond)
		}
		now = max(now, 0)
		sent := now
		r := history.Record{
			ID: uint64(i + 1), Key: keys[pick(len(keys))], Instance: fmt.Sprint("api-", pick(3)), Route: routes[pick(len(routes))],
			Cost: int64(1 + pick(2)), IntendedNs: sent - int64(pick(3))*int64(time.Millisecond), SentNs: sent,
			ReceivedNs: sent + int64(pick(20))*int64(time.Millisecond)/2, Phase: []string{"steady", "burst"}[pick(2)],
		}
		r.Headers = headers[pick(len(headers))]
		switch pick(12) {
		case 0, 1, 2, 3, 4:
			r.Status = 200
		case 5, 6, 7:
			r.Status = 429
		case 8:
			r.Status = http.StatusServiceUnavailable
		case 9:
			r.Error = "dial tcp 127.0.0.1:1: connect: connection refused"
		case 10:
			r.Error = "context deadline exceeded"
		default:
			r.Status = []int{401, 404, 500}[pick(3)]
		}
		r.Outcome = history.OutcomeForStatus(r.Status)
		if pick(20) == 0 && r.Status == 401 {
			r.Outcome = history.Admitted // an old history's 401 recorded as admitted
		}
		if pick(3) == 0 {
			r.DecisionUs = epoch.UnixMicro() + (r.SentNs+(r.ReceivedNs-r.SentNs)/2)/1000 + int64(pick(5)-2)
		}
		recs = append(recs, r)
	}
	if pick(2) == 0 && n > 0 {
		p.Faults = mixedDrill(rng, max(now, 1))
		if p.Faults.Mode == runrecord.FailClosed {
			p.ExpectedStatuses = []int{http.StatusServiceUnavailable}
		}
	}
	return h, recs, p
}

// mixedDrill draws one to three fault windows within [0, end].
func mixedDrill(rng *rand.Rand, end int64) *runrecord.Drill {
	pick := func(n int) int { return rng.IntN(n) }
	d := &runrecord.Drill{
		Mode:      []runrecord.FailureMode{"", runrecord.FailOpen, runrecord.FailClosed, runrecord.FailFallback}[pick(4)],
		Instances: 3, Timeout: time.Duration(pick(3)) * 5 * time.Millisecond, Slack: 2 * time.Millisecond,
		Recovery: time.Duration(pick(3)) * 20 * time.Millisecond,
	}
	for range 1 + pick(3) {
		from := rng.Int64N(end + 1)
		w := runrecord.FaultWindow{Kind: []string{"redis_kill", "redis_pause", "clock_step", "instance_kill"}[pick(4)], FromNs: max(from, 1)}
		if pick(5) != 0 {
			w.ToNs = w.FromNs + rng.Int64N(end/4+1)
			if pick(2) == 0 {
				w.InjectedNs, w.HealNs = w.FromNs+1, max(w.ToNs-1, w.FromNs+1)
			}
		}
		switch w.Kind {
		case "clock_step":
			w.StepNs = []int64{int64(50 * time.Millisecond), -int64(50 * time.Millisecond), -int64(2 * time.Second)}[pick(3)]
		case "instance_kill":
			w.Instance, w.Unavailable = fmt.Sprint("api-", pick(3)), true
			if pick(2) == 0 {
				w.StepNs = -int64(20 * time.Millisecond)
			}
		default:
			w.Unavailable = true
			w.LosesState = pick(2) == 0
			w.PartialState = w.LosesState && pick(2) == 0
			if w.PartialState && pick(2) == 0 {
				w.StepNs = -int64(10 * time.Millisecond)
			}
		}
		d.Windows = append(d.Windows, w)
	}
	return d
}
