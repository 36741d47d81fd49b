package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
)

// MinSpreadTolerance is the least a burst's achieved spread may exceed its
// planned spread by: a burst of spread s passes load-delivered when its
// achieved spread is at most s + max(s, MinSpreadTolerance). A few
// milliseconds is what releasing a thousand requests from two busy cores
// takes; a tolerance proportional to the spread lets a wide burst run late
// by as much again, and still be a burst.
const MinSpreadTolerance = 5 * time.Millisecond

// SpreadBound is the widest achieved spread a burst planned within spread
// passes with: spread + max(spread, MinSpreadTolerance).
func SpreadBound(spread time.Duration) time.Duration {
	return spread + max(spread, MinSpreadTolerance)
}

// burstSpreadResults holds every burst and edge burst phase to its
// spread: a load-delivered result per phase with bursts, failing when a
// burst's achieved spread exceeds SpreadBound (the concurrency the scenario
// claims is then not the concurrency the limiter saw), unknown when a burst
// did not send every request. A phase whose bursts planned no request (a
// shard's, of a run whose shards split the bursts' keys) passes, and says
// so, rather than report the spread of nothing. It reads only what
// run.json records; shard says the record is a shard's.
func burstSpreadResults(phases []runrecord.PhaseRecord, shard bool) []Result {
	var out []Result
	for _, p := range phases {
		if len(p.Bursts) == 0 {
			continue
		}
		bound := SpreadBound(p.Spread)
		r := Result{
			Name: CheckLoadDelivered, Class: ClassHarness, Scope: p.Name + " spread", Unit: "ms achieved spread",
			Observed: millis(p.AchievedSpread), Bound: millis(bound), Verdict: Pass,
		}
		if !slices.ContainsFunc(p.Bursts, func(b runrecord.BurstRecord) bool { return b.Requests > 0 }) {
			r.Explanation = "no request of its bursts planned"
			if shard {
				r.Explanation = "no request planned for this shard"
			}
			out = append(out, r)
			continue
		}
		widest, short := 0, -1
		for i, b := range p.Bursts {
			if b.Achieved > p.Bursts[widest].Achieved {
				widest = i
			}
			if short < 0 && b.Sent < b.Requests {
				short = i
			}
		}
		w := p.Bursts[widest]
		which := ""
		if len(p.Bursts) > 1 {
			which = fmt.Sprintf(" (burst %d of %d)", widest+1, len(p.Bursts))
		}
		r.Explanation = fmt.Sprintf("the widest burst%s: %s sent within %v and written within %v of a planned %v; at most %v passes",
			which, Count(w.Requests, "requests"), w.SentSpread.Round(time.Microsecond), w.WrittenSpread.Round(time.Microsecond), p.Spread, bound)
		if w.Redialled > 0 {
			r.Explanation += fmt.Sprintf("; %s sent again, late, on a new connection, the target having closed theirs before they were written", Count(w.Redialled, "requests"))
		}
		switch {
		case p.AchievedSpread > bound:
			r.Verdict = Fail
			r.Explanation += "; the generator did not release it as a burst, so the scenario did not test the concurrency it claims"
			if !w.Raised && w.Redialled == 0 {
				r.Explanation += " (its releasers ran at the generator's own priority: on Linux, CAP_SYS_NICE, or an RLIMIT_NICE that allows a nice value 10 lower, lets them raise it for a burst planned within 50ms)"
			}
		case short >= 0:
			b := p.Bursts[short]
			r.Verdict = Unknown
			r.Explanation = fmt.Sprintf("burst %d sent %d of its %s (connections refused, or the run was cancelled): its spread is not the burst's", short+1, b.Sent, Count(b.Requests, "requests"))
		}
		out = append(out, r)
	}
	return out
}
