package checker

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/history"
)

// ruleScope names rule ri of p for results: its route and limits.
func ruleScope(p Policy, ri int32) string {
	rule := p.Rules[ri]
	route := rule.Route
	if route == "" {
		route = "all routes"
	}
	if rule.Key != "" {
		route += ", keys " + rule.Key
	}
	names := make([]string, len(rule.Limits))
	for i, l := range rule.Limits {
		names[i] = l.Scope()
	}
	return route + ": " + strings.Join(names, " + ")
}

// falseRejections collects, per rule, the rejections the ideal limiter
// would have admitted under every timing: no limit of the rule may have
// rejected them, even with every request of unknown outcome counted as
// admitted.
func (r *run) falseRejections(parts []rulePart) {
	for i := range r.d.reqs {
		ri := r.ruleOf[i]
		if ri < 0 || r.d.reqs[i].outcome != history.Rejected {
			continue
		}
		rp := &parts[ri]
		rp.rejected++
		switch {
		case r.justified[i]&justAll == 0:
			rp.proven.add(r.d.example(int32(i)))
		case r.justified[i]&justKnown == 0:
			rp.ifUnknown.add(r.d.example(int32(i)))
		}
	}
}

// result is the false-rejection check's verdict on rule ri of p.
func (rp *rulePart) result(p Policy, ri int32) Result {
	rule := p.Rules[ri]
	rejected, proven, ifUnknown := rp.rejected, rp.proven.n, rp.ifUnknown.n
	res := Result{Name: CheckFalseRejections, Scope: ruleScope(p, ri), Unit: "rejections", Verdict: Pass}
	if rule.Tolerance > 0 {
		res.Scope += fmt.Sprintf(" (tolerance %g)", rule.Tolerance)
	}
	rate := func(n int) string {
		if rejected == 0 {
			return "0%"
		}
		return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(rejected))
	}
	// Policy.MaxFalseRejectionRate tolerates a fraction of the rule's
	// requests; the bound is that many rejections.
	allowed := allowedFalseRejections(p, rp.requests)
	res.Bound = float64(allowed)
	within := ""
	if allowed > 0 {
		within = fmt.Sprintf(", within max_rate %g of the rule's requests (%d)", p.MaxFalseRejectionRate, allowed)
	}
	switch {
	case proven > allowed:
		res.Verdict, res.Observed, res.Proof = Fail, float64(proven), examplesProof(rp.proven.first)
		res.Explanation = fmt.Sprintf("%d of %s (%s) had room under every timing; first: request %d", proven, Count(rejected, "rejections"), rate(proven), res.Proof.RequestIDs[0])
		if allowed > 0 {
			res.Explanation += fmt.Sprintf("; max_rate %g of the rule's requests tolerates %d", p.MaxFalseRejectionRate, allowed)
		}
	case proven+ifUnknown > allowed:
		res.Verdict, res.Observed, res.Proof = Unknown, float64(proven+ifUnknown), examplesProof(slices.Concat(rp.proven.first, rp.ifUnknown.first))
		res.Explanation = fmt.Sprintf("%d of %s (%s) had room unless requests of unknown outcome were admitted", ifUnknown, Count(rejected, "rejections"), rate(ifUnknown))
		if proven > 0 {
			res.Explanation = fmt.Sprintf("%d of %s (%s) had room under every timing and %d more unless requests of unknown outcome were admitted%s", proven, Count(rejected, "rejections"), rate(proven), ifUnknown, within)
		}
	case proven > 0:
		res.Observed, res.Proof = float64(proven), examplesProof(rp.proven.first)
		res.Explanation = fmt.Sprintf("%d of %s (%s) had room under every timing%s", proven, Count(rejected, "rejections"), rate(proven), within)
	default:
		res.Explanation = fmt.Sprintf("none of %s provably had room", Count(rejected, "rejections"))
	}
	return res
}

// retryAfter collects every 429's Retry-After (RFC 9110 §10.2.3, RFC 6585
// §4): present, whole seconds >= 1, not shorter than the ideal wait and not
// more than one second longer, whatever the timing. A Retry-After that only
// the requests of unknown outcome make wrong is doubtful.
func (r *run) retryAfter(rp *retryPart) {
	for i := range r.d.reqs {
		q := &r.d.reqs[i]
		if q.outcome != history.Rejected {
			continue
		}
		rp.total++
		var why, doubt string
		ra := q.retryAfter * int64(time.Second) // below MaxInt64 by maxRetryAfter
		switch {
		case q.retryAfter == raNone:
			why = "no Retry-After"
		case q.retryAfter == raBad:
			why = "a Retry-After that is neither seconds nor an HTTP-date"
		case q.retryAfter < 1:
			why = fmt.Sprintf("Retry-After %d, below 1", q.retryAfter)
		case r.ruleOf[i] < 0:
		case ra < r.waitLo[i]:
			why = fmt.Sprintf("Retry-After %d s, shorter than the ideal wait of at least %v", q.retryAfter, time.Duration(r.waitLo[i]))
		case r.waitHi[i] != math.MaxInt64 && ra > r.waitHi[i]+int64(time.Second):
			why = fmt.Sprintf("Retry-After %d s, more than 1 s above the ideal wait of at most %v", q.retryAfter, time.Duration(r.waitHi[i]))
		case ra < r.waitLoU[i]:
			doubt = fmt.Sprintf("Retry-After %d s, shorter than the ideal wait of at least %v if the requests of unknown outcome were admitted", q.retryAfter, time.Duration(r.waitLoU[i]))
		case r.waitHiK[i] != math.MaxInt64 && ra > r.waitHiK[i]+int64(time.Second):
			doubt = fmt.Sprintf("Retry-After %d s, more than 1 s above the ideal wait of at most %v if the requests of unknown outcome were not admitted", q.retryAfter, time.Duration(r.waitHiK[i]))
		}
		switch {
		case why != "":
			r.addWhy(&rp.bad, int32(i), why)
		case doubt != "":
			r.addWhy(&rp.doubtful, int32(i), doubt)
		}
	}
}

// addWhy adds request i to l, with why it is there when it is the first
// (the only one whose why a result names).
func (r *run) addWhy(l *exampleList, i int32, why string) {
	e := r.d.example(i)
	if l.n == 0 {
		e.why = fmt.Sprintf("request %d: %s", e.id, why)
	}
	l.add(e)
}

// result is the Retry-After check's verdict.
func (rp *retryPart) result() Result {
	res := Result{Name: CheckRetryAfter, Unit: "responses", Verdict: Pass}
	switch {
	case rp.bad.n > 0:
		res.Verdict, res.Observed, res.Proof = Fail, float64(rp.bad.n), examplesProof(rp.bad.first)
		res.Explanation = fmt.Sprintf("%d of %s; %s", rp.bad.n, Count(rp.total, "rejections"), rp.bad.first[0].why)
	case rp.doubtful.n > 0:
		res.Verdict, res.Observed, res.Proof = Unknown, float64(rp.doubtful.n), examplesProof(rp.doubtful.first)
		res.Explanation = fmt.Sprintf("%d of %s; %s", rp.doubtful.n, Count(rp.total, "rejections"), rp.doubtful.first[0].why)
	default:
		res.Explanation = fmt.Sprintf("%s, each with an honest Retry-After", Count(rp.total, "rejections"))
	}
	return res
}

// maxResetNs is the longest a key under the rule's limits can take to
// refill completely, plus the clock resolution: the longest of their
// models' full refills.
func (r *run) maxResetNs(ri int32) int64 {
	var worst int64
	for _, l := range r.p.Rules[ri].Limits {
		worst = max(worst, modelFor(l, r.clockKnown).resetNs())
	}
	return worst + r.res
}

// rateLimitFields checks the RateLimit fields (draft-ietf-httpapi-ratelimit-
// headers: RateLimit and RateLimit-Policy, -07 and later; RateLimit-Limit,
// -Remaining and -Reset, -06 and before; and the X-RateLimit-* convention)
// against the decision and the model, each field between both bounds the
// model allows:
//
//   - limit: the capacity of one of the rule's limits;
//   - remaining: on a rejection below the cost and at least what every
//     timing leaves; on an admission at most the capacity less the cost,
//     at most what the requests surely admitted before it leave, and at
//     least what every timing leaves;
//   - reset: no longer than a full refill plus a second; for a rule of one
//     limit, no shorter, less a second of rounding, than the ideal wait of a
//     rejection or the time an admission's own charge takes to clear;
//   - RateLimit-Policy: every item's q the capacity of one of the rule's
//     limits and its w that limit's window in whole seconds (rounded either
//     way; for a bucket the time to refill the burst, or with q the rate per
//     period, the period).
func (r *run) rateLimitFields(fp *fieldsPart) {
	resetNs := make([]int64, len(r.p.Rules))
	for ri := range r.p.Rules {
		resetNs[ri] = r.maxResetNs(int32(ri))
	}
	policyWhy := map[[2]uint32]string{} // (rule, policy field) → the fault, "" for none
	for i := range r.d.reqs {
		q := &r.d.reqs[i]
		ri := r.ruleOf[i]
		malformed := q.style&styleMalformed != 0
		if ri < 0 || q.rlLimit < 0 && q.rlRemain < 0 && q.rlReset < 0 && q.policy == 0 && !malformed || q.outcome == history.Error {
			continue
		}
		fp.seen++
		if malformed {
			fp.unparsed++
			if q.style&styleBadReset != 0 {
				fp.badReset++
			}
		}
		limits := r.p.Rules[ri].Limits
		minRoom := int64(math.MaxInt64)
		for _, l := range limits {
			minRoom = min(minRoom, l.Capacity()-q.cost)
		}
		reset := q.rlReset * int64(time.Second) // below MaxInt64: parseHeaders keeps it to maxRetryAfter
		var why string
		switch {
		case q.rlLimit >= 0 && !slices.ContainsFunc(limits, func(l Limit) bool { return l.Capacity() == q.rlLimit }):
			why = fmt.Sprintf("limit %d is not the capacity of any limit of the policy", q.rlLimit)
		case q.rlRemain >= 0 && q.outcome == history.Rejected && q.rlRemain >= q.cost:
			why = fmt.Sprintf("rejected with remaining %d, enough for its cost %d", q.rlRemain, q.cost)
		case q.rlRemain >= 0 && q.outcome == history.Admitted && q.rlRemain > minRoom:
			why = fmt.Sprintf("remaining %d after an admission of cost %d exceeds the capacity", q.rlRemain, q.cost)
		case q.rlRemain >= 0 && q.outcome == history.Admitted && q.rlRemain > r.remHi[i]:
			why = fmt.Sprintf("remaining %d, where the requests surely admitted before it leave at most %d", q.rlRemain, r.remHi[i])
		case q.rlRemain >= 0 && r.remLo[i] != math.MaxInt64 && q.rlRemain < r.remLo[i]:
			why = fmt.Sprintf("remaining %d, where every timing leaves at least %d", q.rlRemain, r.remLo[i])
		case q.rlReset >= 0 && reset > resetNs[ri]+int64(time.Second):
			why = fmt.Sprintf("reset %d s, longer than a full refill (%v)", q.rlReset, time.Duration(resetNs[ri]))
		case q.rlReset >= 0 && len(limits) == 1 && reset+int64(time.Second) <= r.waitLo[i]:
			what := "the ideal wait"
			if q.outcome == history.Admitted {
				what = "the time its own charge takes to clear"
			}
			why = fmt.Sprintf("reset %d s, shorter than %s, at least %v", q.rlReset, what, time.Duration(r.waitLo[i]))
		case q.policy != 0:
			k := [2]uint32{uint32(ri), q.policy}
			w, ok := policyWhy[k]
			if !ok {
				w = checkPolicyField(r.d.policies[q.policy], limits)
				policyWhy[k] = w
			}
			why = w
		}
		if why != "" {
			r.addWhy(&fp.bad, int32(i), why)
		}
	}
}

// result is the RateLimit fields check's verdict. A response with a field
// that does not parse (the header-style check's finding) is judged on the
// fields that do, but not counted as judged in full: when no response is,
// the verdict is Unknown, since the fields left unread might break the model.
func (fp *fieldsPart) result() Result {
	res := Result{Name: CheckRateLimitFields, Unit: "responses", Verdict: Pass}
	res.Observed = float64(fp.bad.n)
	unparsed := ""
	if fp.unparsed > 0 {
		what := "a rate-limit field"
		if fp.badReset == fp.unparsed {
			what = "a reset"
		}
		unparsed = fmt.Sprintf("%d carry %s that does not parse (see %s)", fp.unparsed, what, CheckHeaderStyle)
	}
	switch {
	case fp.bad.n > 0:
		res.Verdict, res.Proof = Fail, examplesProof(fp.bad.first)
		res.Explanation = fmt.Sprintf("%d of %s with RateLimit fields; %s", fp.bad.n, Count(fp.seen, "responses"), fp.bad.first[0].why)
		if unparsed != "" {
			res.Explanation += "; " + unparsed
		}
	case fp.seen == 0:
		res.Explanation = "no response carried RateLimit fields"
	case fp.unparsed == fp.seen:
		res.Verdict = Unknown
		res.Explanation = fmt.Sprintf("0 of %s with RateLimit fields judged in full: %s; the fields that parse as the model allows", Count(fp.seen, "responses"), unparsed)
	case fp.unparsed > 0:
		res.Explanation = fmt.Sprintf("%d of %s with RateLimit fields judged in full, each as the model allows; %s", fp.seen-fp.unparsed, Count(fp.seen, "responses"), unparsed)
	default:
		res.Explanation = fmt.Sprintf("%s with RateLimit fields, each as the model allows", Count(fp.seen, "responses"))
	}
	return res
}

// policyItem is one quota policy of a RateLimit-Policy field: its quota q
// and window w in seconds, -1 when absent.
type policyItem struct {
	name string
	q, w int64
}

// parsePolicyField reads a RateLimit-Policy field: the structured list of
// draft-ietf-httpapi-ratelimit-headers -07 and later (`"minute";q=100;w=60,
// "day";q=1000;w=86400`), or the earlier form whose item is the quota
// itself (`100;w=60`). It returns false when an item's q or w is not a
// whole number of at least 1 (w) or 0 (q).
func parsePolicyField(v string) ([]policyItem, bool) {
	var items []policyItem
	for _, raw := range splitOutsideQuotes(v, ',') {
		members := splitOutsideQuotes(raw, ';')
		it := policyItem{q: -1, w: -1}
		head := strings.TrimSpace(members[0])
		if n, err := strconv.ParseInt(head, 10, 64); err == nil {
			it.q = n
		} else {
			it.name = strings.Trim(head, `"`)
		}
		for _, m := range members[1:] {
			k, val, ok := strings.Cut(strings.TrimSpace(m), "=")
			if !ok || (k != "q" && k != "w") {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			if err != nil || n < 0 || k == "w" && n < 1 {
				return nil, false
			}
			if k == "q" {
				it.q = n
			} else {
				it.w = n
			}
		}
		if head == "" && it.q < 0 && it.w < 0 {
			continue
		}
		items = append(items, it)
	}
	return items, true
}

// splitOutsideQuotes splits s at every sep outside a quoted string (with
// backslash escapes, RFC 9651 §3.3.3).
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// checkPolicyField returns why the RateLimit-Policy field v misdescribes
// limits, or "".
func checkPolicyField(v string, limits []Limit) string {
	items, ok := parsePolicyField(v)
	if !ok {
		return fmt.Sprintf("RateLimit-Policy %q has a q or w that is not a whole number (w at least 1)", v)
	}
	for _, it := range items {
		if it.q < 0 {
			continue
		}
		matched, windowOK := false, false
		var want []string
		for _, l := range limits {
			for _, f := range policyForms(l) {
				if f.q != it.q {
					continue
				}
				matched = true
				if it.w < 0 || it.w >= f.wLo && it.w <= f.wHi {
					windowOK = true
				}
				if w := fmt.Sprintf("w=%d", f.wLo); !slices.Contains(want, w) {
					want = append(want, w)
				}
			}
		}
		switch {
		case !matched:
			return fmt.Sprintf("RateLimit-Policy q=%d is not the quota of any limit of the policy", it.q)
		case !windowOK:
			return fmt.Sprintf("RateLimit-Policy q=%d;w=%d: the limit with that quota has %s", it.q, it.w, strings.Join(want, " or "))
		}
	}
	return ""
}

// policyForm is a quota and the window bounds, in whole seconds, a
// RateLimit-Policy item may describe a limit with.
type policyForm struct{ q, wLo, wHi int64 }

// policyForms lists how a RateLimit-Policy item may describe l: its capacity
// and its window (a window algorithm's period; a bucket's time to refill the
// burst, burst × period / rate), and for a bucket whose rate is whole, that
// rate and the period. Windows are in whole seconds rounded down or up, at
// least 1.
func policyForms(l Limit) []policyForm {
	form := func(q int64, span float64) policyForm {
		s := span / float64(time.Second)
		return policyForm{q: q, wLo: max(int64(math.Floor(s)), 1), wHi: max(int64(math.Ceil(s)), 1)}
	}
	if l.Algorithm.window() {
		return []policyForm{form(l.Capacity(), float64(l.Period))}
	}
	forms := []policyForm{form(l.Burst, float64(l.Burst)*float64(l.Period)/l.Rate)}
	if l.Rate == math.Trunc(l.Rate) && l.Rate <= maxCapacity {
		forms = append(forms, form(int64(l.Rate), float64(l.Period)))
	}
	return forms
}

// headerStyle flags inconsistent rate-limit header styles: one response whose
// IETF and X-RateLimit fields disagree, a field that does not parse, or
// responses of one history using different families of fields.
func (r *run) headerStyle(sp *stylePart) {
	const families = styleSeparate | styleCombined | styleX
	for i := range r.d.reqs {
		q := &r.d.reqs[i]
		if f := q.style & families; f != 0 {
			sp.families[f]++
		}
		if q.style&(styleDisagree|styleMalformed) != 0 {
			what := "IETF RateLimit and X-RateLimit fields disagree"
			switch {
			case q.style&styleBadReset != 0:
				what = "a -Reset field is neither delay seconds nor epoch seconds (an HTTP or RFC 1123 date is not read)"
			case q.style&styleMalformed != 0:
				what = "a rate-limit field does not parse"
			}
			r.addWhy(&sp.bad, int32(i), what)
		}
	}
}

// result is the header-style check's verdict.
func (sp *stylePart) result() Result {
	res := Result{Name: CheckHeaderStyle, Unit: "responses", Verdict: Pass}
	counts, bad := sp.families, sp.bad
	dominant, dominantN, styled := uint8(0), 0, 0
	for f, n := range counts {
		styled += n
		if n > dominantN || n == dominantN && f < dominant {
			dominant, dominantN = f, n
		}
	}
	mixed := styled - dominantN
	res.Observed = float64(bad.n + mixed)
	switch {
	case bad.n > 0:
		res.Verdict, res.Proof = Fail, examplesProof(bad.first)
		res.Explanation = fmt.Sprintf("%s with inconsistent fields; %s", Count(bad.n, "responses"), bad.first[0].why)
	case mixed > 0:
		res.Verdict = Fail
		res.Explanation = fmt.Sprintf("%d of %s with another family of fields than the rest (%s)", mixed, Count(styled, "responses"), styleNames(dominant))
	case styled == 0:
		res.Explanation = "no rate-limit fields seen"
	default:
		res.Explanation = fmt.Sprintf("%s, each with %s", Count(styled, "responses"), styleNames(dominant))
	}
	return res
}

func styleNames(s uint8) string {
	var names []string
	if s&styleSeparate != 0 {
		names = append(names, "RateLimit-Limit/-Remaining/-Reset")
	}
	if s&styleCombined != 0 {
		names = append(names, "RateLimit")
	}
	if s&styleX != 0 {
		names = append(names, "X-RateLimit-*")
	}
	return strings.Join(names, " with ")
}
