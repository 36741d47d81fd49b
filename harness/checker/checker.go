package checker

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/history"
)

// Verdict is a check's conclusion.
type Verdict string

const (
	// Pass: no possible timing of the history breaks the bound.
	Pass Verdict = "pass"
	// Fail: no possible timing explains the history; the result's Proof
	// holds the interval and requests that show it.
	Fail Verdict = "fail"
	// Unknown: the requests with an unknown outcome alone decide the check:
	// it fails if they were admitted (or, for false rejections, if they were
	// not) and passes otherwise. For the RateLimit fields check: every
	// response with fields carries one that does not parse, so none was
	// judged in full.
	Unknown Verdict = "unknown"
)

// Check names, as Result.Name carries them.
const (
	CheckBudget          = "budget"
	CheckFalseRejections = "false-rejections"
	CheckRetryAfter      = "retry-after"
	CheckRateLimitFields = "ratelimit-fields"
	CheckHeaderStyle     = "header-style"
	CheckStatus          = "status"
	CheckBurstRatio      = "boundary-burst-ratio"
)

// Result is one check's outcome.
type Result struct {
	// Name is the check (CheckBudget, ...); Scope the limit or route checked.
	Name  string `json:"name"`
	Scope string `json:"scope,omitempty"`
	// Class is whose conclusion it is, the limiter's or the harness's;
	// Check and CheckRun always set it (see Whose).
	Class Class `json:"class,omitempty"`
	// Verdict is pass, fail or unknown.
	Verdict Verdict `json:"verdict"`
	// Observed and Bound are the measured value and the most the policy
	// allows, in Unit: for a budget, the units admitted in the tightest
	// interval and that interval's allowance.
	Observed float64 `json:"observed"`
	Bound    float64 `json:"bound"`
	Unit     string  `json:"unit"`
	// Explanation is one line for people.
	Explanation string `json:"explanation"`
	// Proof backs a failure (and, for a passing budget, shows the tightest
	// interval).
	Proof *Proof `json:"proof,omitempty"`
}

// Proof is the evidence of a result: the key, an interval in nanoseconds
// since the run's start, and the requests that make the case.
type Proof struct {
	Key        string          `json:"key,omitempty"`
	FromNs     int64           `json:"from_ns"`
	ToNs       int64           `json:"to_ns"`
	RequestIDs []uint64        `json:"request_ids"`
	Instances  []InstanceShare `json:"instances,omitempty"`
}

// InstanceShare is one instance's part of a proof's requests.
type InstanceShare struct {
	Instance string `json:"instance"`
	Requests int    `json:"requests"`
	Cost     int64  `json:"cost"`
}

// Report is the outcome of checking one history: its counts and every
// check's result.
type Report struct {
	Counts
	Results []Result `json:"results"`
	// Notes say what the verdicts rest on beside the results, one sentence
	// each: a clock offset that is unknown, checks a scenario left out.
	Notes []string `json:"notes,omitempty"`
}

// Status is StatusOf(r.Results): the limiter's failure, else its unknown
// verdict, else the harness's error, else pass.
func (r *Report) Status() Status { return StatusOf(r.Results) }

// Verdict is fail when a result failed, else unknown when one is unknown,
// else pass, whoever's the result is.
func (r *Report) Verdict() Verdict {
	v := Pass
	for _, res := range r.Results {
		switch res.Verdict {
		case Fail:
			return Fail
		case Unknown:
			v = Unknown
		}
	}
	return v
}

// ErrEmptyHistory is returned by Check for a history without a request:
// there is nothing a verdict could rest on.
var ErrEmptyHistory = errors.New("the history holds no request to check")

// maxExamples is the most request IDs a result lists as examples.
const maxExamples = 10

// Check reads every record of src and checks the history against p (or,
// when p has no rules, the policies of src's header). It never contacts a
// target. Errors: a malformed history (wrapping history.ErrFormat) or policy
// (wrapping ErrInvalidPolicy), and a temporary file that could not be
// written or read (Policy.TempDir).
//
// Every check follows one rule: report only what no possible timing can
// explain. A request's decision time is unknown within [sent, received];
// the limiter's clock may resolve time only to Policy.Resolution; requests
// with an unknown outcome are admitted or not, whichever keeps a check sound.
// Unless Policy.FreshKeys (or the header's identities_fresh) is false, the
// false-rejection check, the Retry-After upper bound and the RateLimit
// remaining lower bound assume every key started the history with a full
// budget; when it is false they judge a key only once its state is
// provably known (Policy.FreshKeys).
//
// Keys are independent: Check reads src once, sorts its records by a hash
// of their key into partitions (held in memory up to Policy.MemoryBudget,
// beyond it in a temporary file it removes before returning), checks the
// partitions on every core and merges their results into the report one
// pass over the whole history gives. When p.Faults holds store stalls the
// harness observed, each partition is checked twice, on a copy of its
// records, with the stalls excused and with the store taken as healthy
// (twoHypotheses): twice the time, and a partition's memory more, for such
// runs only. Time is O(n log n) in the number of
// records; memory is about Policy.MemoryBudget whatever n, unless one key
// alone holds more than a core's share of it (about 300 bytes a record).
// Measured on two cores (BenchmarkCheckFile): ten million records in about
// 14.7 s of CPU and 500 MiB of heap at the most; a hundred million in 255 s
// and 565 MiB, measured before partitions were held in blocks.
func Check(src history.Source, p Policy) (*Report, error) {
	p, c, err := prepare(src.Header(), p)
	if err != nil {
		return nil, err
	}
	return checkPartitioned(src, p, c, planFor(p))
}

// prepare completes p from the history's header h (its policies, clock
// resolution and identities) and validates it, and returns what the checks
// know of the limiter's clock.
func prepare(hdr history.Header, p Policy) (Policy, clock, error) {
	if len(p.Rules) == 0 {
		hp, err := PolicyFromHeader(hdr)
		if err != nil {
			return p, clock{}, err
		}
		p.Rules = hp.Rules
	}
	if err := p.validate(); err != nil {
		return p, clock{}, err
	}
	if p.Resolution == 0 {
		p.Resolution = time.Duration(hdr.ClockResolutionNs)
	}
	if p.Resolution == 0 {
		p.Resolution = DefaultResolution
	}
	if p.FreshKeys == nil {
		p.FreshKeys = hdr.IdentitiesFresh
	}
	return p, clockOf(hdr, p), nil
}

// narrowingOf is how Check narrows requests to their reported decision
// times under p.
func narrowingOf(p Policy, c clock) narrowing {
	return narrowing{on: p.TrustDecisionTime && c.known, clock: c, res: int64(p.Resolution)}
}

// collect runs the checks on d, a part of the history holding every record
// of its keys, into a new partial. end is the latest received time of the
// whole history (a fault never healed lasts until it).
// ws, when not nil, lends the checks memory a previous part used.
func collect(d *dataset, p Policy, c clock, uses []limitUse, end int64, ws *workspace) *partial {
	pt := newPartial(p, uses)
	pt.counts = countRecorded(d)
	pt.end = end
	pt.counts.FaultJudged = applyFaults(d, p, p.Faults, end, pt.faults, &pt.stalls)
	pt.counts.Faulted = countFaulted(d)
	pt.counts.StallExcused = pt.stalls.excused
	checkDataset(d, p, c, uses, pt, ws)
	return pt
}

// collectBoth is collect, and when p's drill has observed store stalls
// collect again on a copy of d taken before under healthyPolicy(p): the
// parts of both hypotheses (finish). healthy is nil without stalls.
func collectBoth(d *dataset, p Policy, c clock, uses []limitUse, end int64, ws *workspace) (pt, healthy *partial) {
	if hp, ok := healthyPolicy(p); ok {
		healthy = collect(d.clone(), hp, c, uses, end, nil)
	}
	return collect(d, p, c, uses, end, ws), healthy
}

// finish makes the report of a history from the parts collected over all
// its records. healthy, when the drill has observed store stalls, is the
// parts collected again with the store taken as healthy throughout
// (healthyPolicy): the limiter checks then hold under both hypotheses
// (twoHypotheses).
func finish(hdr history.Header, p Policy, c clock, uses []limitUse, pt, healthy *partial) *Report {
	rep := &Report{Counts: pt.counts}
	rep.Results = ordinaryResults(rep, p, c, uses, pt)
	if p.SkipHeaderChecks {
		rep.Notes = append(rep.Notes, fmt.Sprintf("checks.headers is false: %s, %s and %s were not run", CheckRetryAfter, CheckRateLimitFields, CheckHeaderStyle))
	}
	rep.Notes = append(rep.Notes, clockNotes(hdr, c, uses)...)
	limiter := len(rep.Results)
	rep.Results = append(rep.Results, faultResults(p, p.Faults, pt)...)
	rep.Notes = append(rep.Notes, stallNotes(p, pt)...)
	if hp, ok := healthyPolicy(p); ok && healthy != nil {
		asHealthy := ordinaryResults(&Report{Counts: healthy.counts}, hp, c, uses, healthy)
		rep.Notes = append(rep.Notes, twoHypotheses(rep.Results[1:limiter], asHealthy[1:], p.Faults)...)
	}
	classify(rep.Results)
	return rep
}

// ordinaryResults are the status result of rep and the limiter checks'
// results from pt, in report order.
func ordinaryResults(rep *Report, p Policy, c clock, uses []limitUse, pt *partial) []Result {
	// The status check comes first: when the target refused the traffic
	// (401, 404) or did not answer, it names the cause the other checks
	// only suffer from.
	out := []Result{pt.status.result(rep)}
	for k, u := range uses {
		out = append(out, pt.limits[k].results(u, p, c.known)...)
	}
	for ri := range p.Rules {
		out = append(out, pt.rules[ri].result(p, int32(ri)))
	}
	if !p.SkipHeaderChecks {
		out = append(out, pt.retry.result(), pt.fields.result(), pt.style.result())
	}
	return out
}

// narrowing maps a reported decision time onto a request's interval.
type narrowing struct {
	on    bool
	clock clock
	res   int64
}

// apply shrinks q's [sent, received] to the limiter's clock tick at
// decisionUs, on the harness clock, unless the report falls outside it.
func (n narrowing) apply(q *request, decisionUs int64) {
	if !n.on || decisionUs <= 0 {
		return
	}
	c := n.clock
	lo := decisionUs*1000 - c.base - c.off - c.unc
	hi := decisionUs*1000 + n.res - 1 - c.base - c.off + c.unc
	if s, e := max(q.sent, lo), min(q.recv, hi); s <= e {
		q.sent, q.recv = s, e
	}
}

// clock is what the checker knows of the limiter's clock: the run's start
// (Unix ns) and, when known, the offset to the harness's clock with its
// uncertainty (ns).
type clock struct {
	known          bool
	base, off, unc int64
}

func clockOf(h history.Header, p Policy) clock {
	c := clock{base: h.Start.UnixNano()}
	switch {
	case p.ClockOffset != nil:
		c.known, c.off, c.unc = true, int64(*p.ClockOffset), int64(p.ClockUncertainty)
	case h.ClockOffsetNs != nil:
		c.known, c.off, c.unc = true, *h.ClockOffsetNs, h.ClockUncertaintyNs
	}
	return c
}

// run is the state of the checks on one part of a history: the dataset,
// the policy, and the per-record conclusions the limits' models combine
// into.
type run struct {
	d      *dataset
	p      Policy
	res    int64 // Policy.Resolution in ns
	ruleOf []int32
	// per record, combined over the limits of its rule
	justified []uint8 // bit 0: some limit may have rejected it with unknowns admitted; bit 1: with unknowns not admitted
	waitLo    []int64 // lower bound of the ideal wait, ns
	waitHi    []int64 // upper bound of the ideal wait, ns; math.MaxInt64 when unbounded
	waitLoU   []int64 // waitLo if the unknown outcomes were admitted
	waitHiK   []int64 // waitHi if they were not
	remHi     []int64 // upper bound of RateLimit remaining after an admission
	remLo     []int64 // lower bound of it; math.MaxInt64 when no limit gave one

	clockKnown bool
	base       int64 // header start, Unix ns
	off, unc   int64 // clock offset and uncertainty, ns

	sc scratch
}

const (
	justAll   uint8 = 1 // justified with unknown outcomes counted as admitted
	justKnown uint8 = 2 // justified with only admitted requests
)

// workspace is memory the checks of one part of a history lend the next
// part's, on one goroutine: touching fresh memory for every part costs
// more than clearing what the last part used.
type workspace struct {
	reqs      []request
	seq       []int64
	ruleOf    []int32
	justified []uint8
	waits     [6][]int64
	idx       []int32
	sc        scratch
	// spilled holds a task's records read back from the temporary file
	// (partitions.taskSource).
	spilled []byte
}

// zeroed returns n zero values in *buf, growing it if it holds fewer.
func zeroed[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
		return *buf
	}
	*buf = (*buf)[:n]
	clear(*buf)
	return *buf
}

// limitUses lists the distinct limits of p's rules: each is checked once
// over every record of every rule that applies it, since a limiter keys
// state by identity and policy, so routes sharing a policy share its
// budget.
func limitUses(p Policy) []limitUse {
	var uses []limitUse
	for ri, rule := range p.Rules {
		for _, l := range rule.Limits {
			k := slices.IndexFunc(uses, func(u limitUse) bool { return u.lim == l })
			if k < 0 {
				uses = append(uses, limitUse{lim: l})
				k = len(uses) - 1
			}
			uses[k].rules = append(uses[k].rules, int32(ri))
			uses[k].tol = max(uses[k].tol, rule.Tolerance)
		}
	}
	return uses
}

// checkDataset runs the ordinary checks on d (after applyFaults) into pt,
// in memory ws lends when not nil.
func checkDataset(d *dataset, p Policy, c clock, uses []limitUse, pt *partial, ws *workspace) {
	if ws == nil {
		ws = &workspace{}
	}
	r := &run{d: d, p: p, res: int64(p.Resolution), sc: ws.sc}
	defer func() { ws.sc = r.sc }()
	r.clockKnown, r.base, r.off, r.unc = c.known, c.base, c.off, c.unc
	n := len(d.reqs)
	// Which rules match each interned route and key: per-record matching is
	// then a few table look-ups.
	routeOK := make([][]bool, len(p.Rules))
	keyOK := make([][]bool, len(p.Rules))
	for j, rule := range p.Rules {
		routeOK[j] = make([]bool, len(d.routes))
		for i, route := range d.routes {
			routeOK[j][i] = match(rule.Route, route)
		}
		keyOK[j] = make([]bool, len(d.keys))
		for i, key := range d.keys {
			keyOK[j][i] = match(rule.Key, key)
		}
	}
	r.ruleOf = zeroed(&ws.ruleOf, n)
	r.justified = zeroed(&ws.justified, n)
	r.waitLo = zeroed(&ws.waits[0], n)
	r.waitHi = zeroed(&ws.waits[1], n)
	r.waitLoU = zeroed(&ws.waits[2], n)
	r.waitHiK = zeroed(&ws.waits[3], n)
	r.remHi = zeroed(&ws.waits[4], n)
	r.remLo = zeroed(&ws.waits[5], n)
	for i := range d.reqs {
		q := &d.reqs[i]
		r.ruleOf[i] = -1
		for j := range p.Rules {
			if routeOK[j][q.route] && keyOK[j][q.key] {
				r.ruleOf[i] = int32(j)
				pt.rules[j].requests++
				if c := p.Rules[j].Cost; c > 0 {
					q.cost = c
				}
				break
			}
		}
		r.remHi[i], r.remLo[i] = math.MaxInt64, math.MaxInt64
		if r.ruleOf[i] < 0 {
			pt.counts.Unmatched++
		}
	}
	r.status(&pt.status)
	idx := zeroed(&ws.idx, n)[:0]
	for k, u := range uses {
		idx = idx[:0]
		for i := range d.reqs {
			if ri := r.ruleOf[i]; ri >= 0 && slices.Contains(u.rules, ri) {
				idx = append(idx, int32(i))
			}
		}
		r.checkLimit(u.lim, u.tol, idx, &pt.limits[k])
	}
	r.falseRejections(pt.rules)
	if !p.SkipHeaderChecks {
		r.retryAfter(&pt.retry)
		r.rateLimitFields(&pt.fields)
		r.headerStyle(&pt.style)
	}
}

// clockNotes says what the window checks knew of the limiter's clock: its
// offset and where it came from, or that it is unknown and the bounds do
// without it. Limits without windows need no offset and get no note.
func clockNotes(hdr history.Header, c clock, uses []limitUse) []string {
	needsOffset := func(u limitUse) bool {
		_, offsetFree := modelFor(u.lim, false).(*unalignedWindowModel)
		return offsetFree
	}
	if !slices.ContainsFunc(uses, needsOffset) {
		return nil
	}
	if !c.known {
		return []string{"clock offset unknown: window checks use offset-free bounds (at most 2× the limit within any window length); declare target.clock or give the target's redis.url to align them"}
	}
	from := ""
	switch hdr.ClockSource {
	case history.ClockRedisTime:
		from = ", measured on Redis TIME"
	case history.ClockHTTPDate:
		from = ", measured from the target's Date headers"
	case history.ClockDeclared:
		from = ", as the scenario declared it"
	case history.ClockLocal:
		from = ", the limiter reading this host's clock"
	}
	return []string{fmt.Sprintf("limiter clock offset %v ± %v%s: window checks place the limiter's windows by it", time.Duration(c.off), time.Duration(c.unc), from)}
}

// limitUse is a distinct limit of the policy and the rules that apply it,
// with the largest of their tolerances.
type limitUse struct {
	lim   Limit
	rules []int32
	tol   float64
}

// groupByKey orders idx by key, then by sent and received time: a counting
// sort on the key, O(n), then a sort of each key's requests, which a
// history in time order already nearly is.
func (r *run) groupByKey(idx []int32) {
	reqs := r.d.reqs
	starts := make([]int, len(r.d.keys)+1)
	for _, i := range idx {
		starts[reqs[i].key+1]++
	}
	for k := 1; k < len(starts); k++ {
		starts[k] += starts[k-1]
	}
	sorted := make([]int32, len(idx))
	next := slices.Clone(starts[:len(starts)-1])
	for _, i := range idx {
		k := reqs[i].key
		sorted[next[k]] = i
		next[k]++
	}
	for k := 0; k+1 < len(starts); k++ {
		g := sorted[starts[k]:starts[k+1]]
		slices.SortStableFunc(g, func(a, b int32) int {
			qa, qb := &reqs[a], &reqs[b]
			return cmp.Or(cmp.Compare(qa.sent, qb.sent), cmp.Compare(qa.recv, qb.recv))
		})
	}
	copy(idx, sorted)
}

// finding is a model's tightest (or violating) interval in one key group.
type finding struct {
	found    bool
	over     bool    // the interval breaks the bound (decided in exact integers)
	observed int64   // units admitted in the interval
	bound    float64 // the interval's allowance
	from, to int64   // the interval: requests with sent >= from and received <= to
	group    []int32 // the key's requests
	unknowns bool    // the interval counts requests of unknown outcome
	window   bool    // from..to is a window: requests wholly inside it
	members  []int32 // when set, the requests that make the case, in place of those inside from..to
	// Once settled (run.settle), a finding keeps its proof and the rank of
	// its key in the history (dataset.rank) in place of group and members.
	proof *Proof
	rank  uint64
}

func (f finding) excess() float64 { return float64(f.observed) - f.bound }

// worse reports whether f is a tighter interval than g: a violation first,
// then the larger excess.
func (f finding) worse(g finding) bool {
	switch {
	case !f.found:
		return false
	case !g.found || f.over != g.over:
		return f.over || !g.found
	}
	return f.excess() > g.excess()
}

// checkLimit runs the model of lim over the records idx into lp; per-record
// conclusions go to r. The findings lp keeps carry their proofs and their
// key's rank, and no longer refer to idx.
func (r *run) checkLimit(lim Limit, tol float64, idx []int32, lp *limitPart) {
	reqs := r.d.reqs
	r.groupByKey(idx)
	c := &limitCheck{r: r, lim: lim, model: modelFor(lim, r.clockKnown), tol: tol * float64(lim.Capacity()), scope: lim.Scope()}
	c.scope += c.model.note()
	worstKnown, worstAll, ratio := &lp.worstKnown, &lp.worstAll, &lp.ratio
	sh, shapes := c.model.(shaper)
	fails := failsBeyond(r.p.MaxExcess)
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && reqs[idx[hi]].key == reqs[idx[lo]].key {
			hi++
		}
		g := idx[lo:hi]
		lo = hi
		hasUnknown := false
		c.faultFrom = math.MaxInt64
		for _, i := range g {
			q := &reqs[i]
			hasUnknown = hasUnknown || q.outcome == history.Error && !q.undelivered
			if q.faulted {
				c.faultFrom = min(c.faultFrom, q.sent)
			}
		}
		c.clean = !hasUnknown
		f := c.budget(g, false)
		if f.worse(*worstKnown) {
			*worstKnown = r.settle(f)
		}
		if hasUnknown && !fails(f) {
			if fa := c.budget(g, true); fails(fa) {
				lp.unknownDecides = true
				if fa.worse(*worstAll) {
					*worstAll = r.settle(fa)
				}
			}
		}
		if c.model.boundaryBurst() {
			if f := c.rollingCount(g); f.worse(*ratio) {
				*ratio = r.settle(f)
			}
		}
		if shapes {
			sh.queueDelay(c, r.unfaulted(g), &lp.queue)
		}
		c.perRequest(g, true)
		if hasUnknown {
			c.perRequest(g, false)
		} else {
			for _, i := range g {
				if r.justified[i]&justAll != 0 {
					r.justified[i] |= justKnown
				}
			}
		}
	}
}

// settle returns f with its proof and its key's rank, and without the
// indexes it was found in.
func (r *run) settle(f finding) finding {
	if !f.found {
		return f
	}
	f.proof = r.proof(f)
	if len(f.group) > 0 {
		f.rank = r.d.rank[r.d.reqs[f.group[0]].key]
	}
	f.group, f.members = nil, nil
	return f
}

// failsBeyond returns whether a finding breaks the bound by more than
// maxExcess units (Policy.MaxExcess); without a tolerated excess the
// model's exact decision stands.
func failsBeyond(maxExcess int64) func(finding) bool {
	return func(f finding) bool { return f.over && (maxExcess == 0 || f.excess() > float64(maxExcess)) }
}

// results are the budget results of the limit u over every key: the
// budget, the queue delay for a model that delays, the boundary-burst
// ratio for one whose windows a burst can straddle.
func (lp *limitPart) results(u limitUse, p Policy, clockKnown bool) []Result {
	lim := u.lim
	c := &limitCheck{lim: lim, model: modelFor(lim, clockKnown), scope: lim.Scope()}
	c.scope += c.model.note()
	worstKnown, worstAll := lp.worstKnown, lp.worstAll
	maxExcess := p.MaxExcess
	fails := failsBeyond(maxExcess)
	var extra []Result
	if _, shapes := c.model.(shaper); shapes {
		extra = append(extra, lp.queue.result(c, p))
	}
	extra = append(extra, c.ratioResult(lp.ratio)...)
	res := Result{Name: CheckBudget, Scope: c.scope, Unit: "units", Verdict: Pass}
	// With a tolerated excess the bound shown is the allowance plus it, and
	// the explanation names both.
	bound := func(f finding) (float64, string) {
		if maxExcess == 0 {
			return f.bound, fmtNum(f.bound)
		}
		return f.bound + float64(maxExcess), fmt.Sprintf("%s (plus max_excess %d)", fmtNum(f.bound), maxExcess)
	}
	switch {
	case !worstKnown.found && !worstAll.found:
		res.Explanation = "no admitted requests"
		return append([]Result{res}, extra...)
	case fails(worstKnown):
		b, allows := bound(worstKnown)
		res.Verdict = Fail
		res.Observed, res.Bound, res.Proof = float64(worstKnown.observed), b, worstKnown.proof
		res.Explanation = fmt.Sprintf("key %q: %s admitted %s, where %s allows %s", res.Proof.Key, Count(int(worstKnown.observed), "units"), span(worstKnown), lim, allows)
	case lp.unknownDecides:
		b, allows := bound(worstAll)
		res.Verdict = Unknown
		res.Observed, res.Bound, res.Proof = float64(worstAll.observed), b, worstAll.proof
		res.Explanation = fmt.Sprintf("key %q: %s %s if the requests of unknown outcome were admitted, where %s allows %s", res.Proof.Key, Count(int(worstAll.observed), "units"), span(worstAll), lim, allows)
	default:
		b, allows := bound(worstKnown)
		res.Observed, res.Bound, res.Proof = float64(worstKnown.observed), b, worstKnown.proof
		res.Explanation = fmt.Sprintf("tightest: key %q, %s %s of %s allowed", res.Proof.Key, Count(int(worstKnown.observed), "units"), span(worstKnown), allows)
		if worstKnown.over {
			res.Explanation += fmt.Sprintf(": %s units above the policy's bound, within max_excess %d", fmtNum(worstKnown.excess()), maxExcess)
		}
	}
	return append([]Result{res}, extra...)
}

func span(f finding) string {
	if f.window {
		return fmt.Sprintf("in the window [%s, %s]", fmtNs(f.from), fmtNs(f.to))
	}
	return fmt.Sprintf("within %s (from %s to %s)", time.Duration(f.to-f.from), fmtNs(f.from), fmtNs(f.to))
}

// ratioResult reports the largest count that must fall in a rolling window
// as a ratio to the limit: up to 2 for a fixed window at a window edge, and
// below 2 for the sliding window counter. Models without windows that a
// burst can straddle report none.
func (c *limitCheck) ratioResult(f finding) []Result {
	if !c.model.boundaryBurst() {
		return nil
	}
	res := Result{Name: CheckBurstRatio, Scope: c.scope, Unit: "× limit", Bound: 2, Verdict: Pass}
	if !f.found {
		res.Explanation = "no admitted requests"
		return []Result{res}
	}
	res.Observed = float64(f.observed) / float64(c.lim.Capacity())
	res.Proof = f.proof
	if f.observed > 2*c.lim.Capacity() {
		res.Verdict = Fail
	}
	res.Explanation = fmt.Sprintf("key %q: %s within %s, a window of %s", res.Proof.Key, Count(int(f.observed), "units"), time.Duration(f.to-f.from), c.lim.Period)
	return []Result{res}
}

// rollingCount is the most units that must have been admitted within one
// interval shorter than the limit's window: the boundary-burst ratio's
// numerator.
func (c *limitCheck) rollingCount(g []int32) finding {
	return rollingBudget(c, g, false, c.lim.periodMicros()*1000, c.lim.Capacity())
}

// budget finds the group's tightest interval under the limit's model,
// leaving out the requests made during faults, counting unknown outcomes as
// admitted when withUnknown.
func (c *limitCheck) budget(g []int32, withUnknown bool) finding {
	return c.model.budget(c, c.r.unfaulted(g), withUnknown)
}

// perRequest derives, for every request of the group, what the limit's model
// says: whether it may have rejected it, the ideal wait's bounds and the
// remaining budget's bounds. withUnknown selects the pass: with unknown
// outcomes as admitted (justAll, waits) or not (justKnown).
func (c *limitCheck) perRequest(g []int32, withUnknown bool) {
	c.pass = withUnknown
	c.model.room(c, g, withUnknown)
	c.model.certain(c, g, withUnknown)
}

// reportsRemaining reports whether q is an admission whose response carried
// a remaining budget to check.
func reportsRemaining(q *request) bool { return q.outcome == history.Admitted && q.rlRemain >= 0 }

// proof lists the requests of f's group inside f's interval.
func (r *run) proof(f finding) *Proof {
	if len(f.group) == 0 {
		return nil
	}
	reqs := r.d.reqs
	p := &Proof{Key: r.d.keys[reqs[f.group[0]].key], FromNs: f.from, ToNs: f.to}
	shares := map[uint32]*InstanceShare{}
	idx := f.group
	if f.members != nil {
		idx = f.members
	}
	for _, i := range idx {
		q := &reqs[i]
		if f.members == nil && (q.sent < f.from || q.recv > f.to || !admitted(q, f.unknowns)) {
			continue
		}
		p.RequestIDs = append(p.RequestIDs, q.id)
		s := shares[q.inst]
		if s == nil {
			s = &InstanceShare{Instance: r.d.insts[q.inst]}
			shares[q.inst] = s
		}
		s.Requests++
		s.Cost += q.cost
	}
	for _, s := range shares {
		p.Instances = append(p.Instances, *s)
	}
	slices.SortFunc(p.Instances, func(a, b InstanceShare) int { return strings.Compare(a.Instance, b.Instance) })
	return p
}

// unfaulted returns g without the requests made during faults, which the
// budget does not judge (a fail-open admission is declared behaviour).
func (r *run) unfaulted(g []int32) []int32 {
	if !slices.ContainsFunc(g, func(i int32) bool { return r.d.reqs[i].faulted }) {
		return g
	}
	return slices.DeleteFunc(slices.Clone(g), func(i int32) bool { return r.d.reqs[i].faulted })
}

// judged reports whether q's decision is judged in a pass: a rejection, or
// (withUnknown) an admission that reports a remaining budget.
func judged(q *request, withUnknown bool) bool {
	return q.outcome == history.Rejected || withUnknown && reportsRemaining(q)
}

// mayBeCharged is the "possibly admitted" side of the per-request checks:
// admitted, or faulted, or (withUnknown) of unknown outcome.
func mayBeCharged(q *request, withUnknown bool) bool {
	return q.faulted || admitted(q, withUnknown)
}

// surelyCharged is their "surely admitted" side: a faulted request never is.
func surelyCharged(q *request, withUnknown bool) bool {
	return !q.faulted && admitted(q, withUnknown)
}

// admitted reports whether q counts as admitted in a pass.
func admitted(q *request, withUnknown bool) bool {
	return q.outcome == history.Admitted || withUnknown && q.outcome == history.Error && !q.undelivered
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3f", v)
}

func fmtNs(ns int64) string { return time.Duration(ns).String() }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
