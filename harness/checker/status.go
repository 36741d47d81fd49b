package checker

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
)

// allowedFalseRejections is the number of false rejections
// Policy.MaxFalseRejectionRate tolerates among the n requests of a rule:
// ⌊rate·n⌋ (a hair of slack absorbs the rounding of rate·n, so that 0.01 of
// 300 requests is 3).
func allowedFalseRejections(p Policy, n int) int {
	if p.MaxFalseRejectionRate == 0 {
		return 0
	}
	return int(math.Floor(p.MaxFalseRejectionRate*float64(n) + 1e-9))
}

// status checks that the target answered every request with a status a
// limiter gives: no 5xx unless the policy expects it, no 4xx but 429 (a
// 401 or 404 means the traffic never reached the limiter; such a request
// counts as of unknown outcome in the other checks), and no request left
// without an answer (a dead or hung target is not a pass). During a fault
// and its recovery the failure mode decides the status, which failure-mode
// judges; but every declared failure mode answers, so a request left
// without an answer there fails too, unless the fault left no one to
// answer it (noAnswerExpected: an instance the fault took down, or a target that
// declares no failure mode while its store was down; never after the
// heal). Its explanation leads with the commonest cause and what to do
// about it, since the other checks only suffer from it.
func (r *run) status(sp *statusPart) {
	for i := range r.d.reqs {
		q := &r.d.reqs[i]
		st := int(q.status)
		if q.faulted {
			sp.faulted++
			switch {
			case st != 0:
				if st >= 400 && st != http.StatusTooManyRequests && !slices.Contains(r.p.ExpectedStatuses, st) {
					sp.decided++
				}
				continue
			case q.unanswerable:
				sp.unanswerable++
				continue
			}
		} else {
			sp.total++
		}
		bad := st == 0 || st >= 500 && !slices.Contains(r.p.ExpectedStatuses, st) || st >= 400 && st < 500 && st != http.StatusTooManyRequests
		if !bad {
			continue
		}
		k := slices.IndexFunc(sp.causes, func(c *statusCause) bool { return c.status == st && c.faulted == q.faulted })
		if k < 0 {
			sp.causes = append(sp.causes, &statusCause{status: st, faulted: q.faulted})
			k = len(sp.causes) - 1
		}
		sp.causes[k].list.add(r.d.example(int32(i)))
	}
}

// result is the status check's verdict over the whole history, whose
// counts rep holds.
func (sp *statusPart) result(rep *Report) Result {
	res := Result{Name: CheckStatus, Unit: "responses", Verdict: Pass}
	tail := Count(rep.TransportErrors, "transport errors") + ", " + Count(rep.Unknown, "requests of unknown outcome")
	if sp.unanswerable > 0 {
		tail += fmt.Sprintf("; %d of the %s during a fault got no answer, as the fault means (no one was left to answer them: an instance the fault took down, or a store down under a target that declares no failure mode)", sp.unanswerable, Count(sp.faulted, "requests"))
	}
	if sp.decided > 0 {
		tail += fmt.Sprintf("; %d answered 4xx or 5xx during a fault or its recovery, where the failure mode decides (failure-mode judges those within the fault)", sp.decided)
	}
	if len(sp.causes) == 0 {
		answered := "every request answered"
		if sp.unanswerable > 0 {
			answered = "every request answered but those a fault left with no one to answer"
		}
		res.Explanation = answered + ", no unexpected 4xx or 5xx; " + tail
		return res
	}
	// The commonest cause first; ties in order of first appearance.
	causes := slices.Clone(sp.causes)
	slices.SortFunc(causes, func(a, b *statusCause) int { return cmp.Compare(a.list.first[0].seq, b.list.first[0].seq) })
	slices.SortStableFunc(causes, func(a, b *statusCause) int { return cmp.Compare(b.list.n, a.list.n) })
	var bad []example
	var parts []string
	n := 0
	for _, c := range causes {
		bad = append(bad, c.list.first...)
		n += c.list.n
		if c.faulted {
			parts = append(parts, faultedNoAnswerText(c.list, sp.faulted))
			continue
		}
		parts = append(parts, statusCauseText(c.status, c.list, sp.total))
	}
	res.Verdict, res.Observed, res.Proof = Fail, float64(n), examplesProof(bad)
	res.Explanation = strings.Join(parts, "; ") + "; " + tail
	return res
}

// statusCauseText describes the requests l, of total judged, that got
// status st (0: no answer), and what to look at.
func statusCauseText(st int, l exampleList, total int) string {
	n := l.n
	share := "all " + Count(n, "requests")
	if n < total {
		share = fmt.Sprintf("%d of %s (first: request %d)", n, Count(total, "requests"), l.first[0].id)
	}
	reached := "the traffic never reached the limiter"
	if n < total {
		reached = "these requests may never have reached the limiter"
	}
	switch {
	case st == 0:
		return fmt.Sprintf("no answer to %s outside any declared fault: the target is down or hangs", share)
	case st >= 500:
		return fmt.Sprintf("unexpected %s on %s: the target failed, and the limiter's decision is unknown", statusText(st), share)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return fmt.Sprintf("%s on %s: %s — check the identity header and the credentials the requests carry", statusText(st), share, reached)
	case st == http.StatusNotFound || st == http.StatusMethodNotAllowed:
		return fmt.Sprintf("%s on %s: %s — check the routes' paths and methods", statusText(st), share, reached)
	}
	return fmt.Sprintf("%s on %s: %s — the target refused the requests themselves", statusText(st), share, reached)
}

// faultedNoAnswerText describes the requests l, of the total sent during a
// fault or its recovery, that got no answer where something should have
// answered them.
func faultedNoAnswerText(l exampleList, total int) string {
	return fmt.Sprintf("no answer to %d of %s during a fault, a store stall or the recovery after either (first: request %d): no declared failure mode leaves a request unanswered (fail-open admits, fail-closed answers 503, a fallback decides alone), and after the heal the store answers again — the target dropped or hung the connection",
		l.n, Count(total, "requests"), l.first[0].id)
}

// statusText is "401 Unauthorized", or the bare code for an unregistered one.
func statusText(st int) string {
	if t := http.StatusText(st); t != "" {
		return fmt.Sprintf("%d %s", st, t)
	}
	return fmt.Sprint(st)
}
