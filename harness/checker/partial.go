package checker

import (
	"cmp"
	"slices"
)

// A check runs on part of a history at a time: the records of some keys
// (partition.go). Each check first collects, from its part, what its result
// needs (the figures, the first examples in history order, the worst
// finding with its proof), and then makes its result from the parts merged.
// Every check is per key but for counts and lists, so the merged parts are
// exactly what one pass over the whole history collects: the types here say
// how each part merges, whatever the order of the parts.

// example is one request a result may cite: its place in the history (seq,
// the record's 0-based position), ID, key and decision interval, and what a
// check found of it (why; status for the failure mode).
type example struct {
	seq      int64
	id       uint64
	key      string
	from, to int64
	status   int16
	why      string
}

// exampleList counts the requests of a list and keeps the first
// maxExamples of them in history order.
type exampleList struct {
	n     int
	first []example
}

// add appends e, which follows every request added before in history order.
func (l *exampleList) add(e example) {
	l.n++
	if len(l.first) < maxExamples {
		l.first = append(l.first, e)
	}
}

// merge adds o's requests, keeping the first maxExamples of both in history
// order.
func (l *exampleList) merge(o exampleList) {
	l.n += o.n
	if len(o.first) == 0 {
		return
	}
	all := append(slices.Clone(l.first), o.first...)
	slices.SortStableFunc(all, func(a, b example) int { return cmp.Compare(a.seq, b.seq) })
	l.first = all[:min(len(all), maxExamples)]
}

// examplesProof lists the requests first (at most maxExamples), with the
// key and interval of the first: nil for none.
func examplesProof(first []example) *Proof {
	if len(first) == 0 {
		return nil
	}
	p := &Proof{Key: first[0].key, FromNs: first[0].from, ToNs: first[0].to}
	for _, e := range first[:min(len(first), maxExamples)] {
		p.RequestIDs = append(p.RequestIDs, e.id)
	}
	return p
}

// example is request i as a result cites it.
func (d *dataset) example(i int32) example {
	q := &d.reqs[i]
	return example{seq: d.seqOf(i), id: q.id, key: d.keys[q.key], from: q.sent, to: q.recv, status: q.status}
}

// rankedWorse reports whether f is a worse finding than g (finding.worse),
// ties going to the key that comes first in the history: the one a pass
// over the whole history, key by key in order of first appearance, keeps.
func rankedWorse(f, g finding) bool {
	if f.worse(g) {
		return true
	}
	return f.found && !g.worse(f) && f.rank < g.rank
}

// partial is what the checks collect from part of a history.
type partial struct {
	counts Counts
	// end is the latest received time of the part's requests.
	end    int64
	status statusPart
	limits []limitPart // one per distinct limit, in the order of limitUses
	rules  []rulePart  // one per rule
	retry  retryPart
	fields fieldsPart
	style  stylePart
	faults []faultPart // one per fault window
	stalls stallPart
}

// merge adds o, another part of the same history checked under the same
// policy.
func (p *partial) merge(o *partial) {
	c := &p.counts
	c.Records += o.counts.Records
	c.Keys += o.counts.Keys
	c.Admitted += o.counts.Admitted
	c.Rejected += o.counts.Rejected
	c.Unknown += o.counts.Unknown
	c.TransportErrors += o.counts.TransportErrors
	c.Faulted += o.counts.Faulted
	c.FaultJudged += o.counts.FaultJudged
	c.StallExcused += o.counts.StallExcused
	c.Unmatched += o.counts.Unmatched
	p.end = max(p.end, o.end)
	p.status.merge(&o.status)
	for i := range p.limits {
		p.limits[i].merge(&o.limits[i])
	}
	for i := range p.rules {
		p.rules[i].merge(&o.rules[i])
	}
	p.retry.bad.merge(o.retry.bad)
	p.retry.doubtful.merge(o.retry.doubtful)
	p.retry.total += o.retry.total
	p.fields.bad.merge(o.fields.bad)
	p.fields.seen += o.fields.seen
	p.fields.unparsed += o.fields.unparsed
	p.fields.badReset += o.fields.badReset
	p.style.bad.merge(o.style.bad)
	if p.style.families == nil {
		p.style.families = map[uint8]int{}
	}
	for f, n := range o.style.families {
		p.style.families[f] += n
	}
	for i := range p.faults {
		p.faults[i].merge(&o.faults[i])
	}
	p.stalls.declared += o.stalls.declared
	p.stalls.excused += o.stalls.excused
}

// statusPart is the status check's part: the requests judged and, per
// status that fails, its requests.
type statusPart struct {
	// total counts the requests outside faults (judged on every status),
	// faulted those during a fault or its recovery (judged on whether they
	// were answered), unanswerable those of them a fault left without
	// anyone to answer, and decided those answered 4xx or 5xx there, which
	// the failure mode decided.
	total, faulted, unanswerable, decided int
	causes                                []*statusCause
}

// statusCause is the requests that got one failing status (0: no answer),
// outside faults or, with faulted, during a fault or its recovery.
type statusCause struct {
	status  int
	faulted bool
	list    exampleList
}

func (s *statusPart) merge(o *statusPart) {
	s.total += o.total
	s.faulted += o.faulted
	s.unanswerable += o.unanswerable
	s.decided += o.decided
	for _, oc := range o.causes {
		k := slices.IndexFunc(s.causes, func(c *statusCause) bool { return c.status == oc.status && c.faulted == oc.faulted })
		if k < 0 {
			s.causes = append(s.causes, &statusCause{status: oc.status, faulted: oc.faulted})
			k = len(s.causes) - 1
		}
		s.causes[k].list.merge(oc.list)
	}
}

// limitPart is one limit's part: the worst findings of its key groups,
// each with its proof, and the queue-delay check's.
type limitPart struct {
	worstKnown, worstAll, ratio finding
	unknownDecides              bool
	queue                       queueAcc
}

func (l *limitPart) merge(o *limitPart) {
	for _, f := range []struct{ dst, src *finding }{{&l.worstKnown, &o.worstKnown}, {&l.worstAll, &o.worstAll}, {&l.ratio, &o.ratio}} {
		if rankedWorse(*f.src, *f.dst) {
			*f.dst = *f.src
		}
	}
	l.unknownDecides = l.unknownDecides || o.unknownDecides
	q, oq := &l.queue, &o.queue
	if rankedWorse(oq.early, q.early) {
		q.early = oq.early
	}
	if oq.late > q.late || oq.late == q.late && oq.late > 0 && oq.lateRank < q.lateRank {
		q.late, q.lateRank, q.lateReq, q.lateSlot = oq.late, oq.lateRank, oq.lateReq, oq.lateSlot
	}
	q.judgedLate += oq.judgedLate
	q.seen = q.seen || oq.seen
}

// rulePart is the false-rejection check's part for one rule.
type rulePart struct {
	requests, rejected int
	proven, ifUnknown  exampleList
}

func (r *rulePart) merge(o *rulePart) {
	r.requests += o.requests
	r.rejected += o.rejected
	r.proven.merge(o.proven)
	r.ifUnknown.merge(o.ifUnknown)
}

// retryPart is the Retry-After check's: the rejections, and those whose
// Retry-After is wrong under every timing (bad) or unless the unknown
// outcomes went one way (doubtful).
type retryPart struct {
	total         int
	bad, doubtful exampleList
}

// fieldsPart is the RateLimit fields check's.
type fieldsPart struct {
	seen     int
	unparsed int // of seen, those with a field that does not parse
	badReset int // of unparsed, those whose -Reset field does not parse
	bad      exampleList
}

// stylePart is the header-style check's: responses by family of fields.
type stylePart struct {
	families map[uint8]int
	bad      exampleList
}

// faultPart is the fault checks' part for one fault window.
type faultPart struct {
	// sent counts the requests sent during the fault; timed those of them
	// that ended, answered or failed as the fault means (unanswerable
	// counts the latter); slowest is the timed one that took longest (the
	// first of them in history order), took its time. unanswered lists
	// those left without an answer the fault does not explain: none was
	// answered within any bound.
	sent, timed, unanswerable int
	slowest                   example
	took                      int64
	unanswered                exampleList
	// inside counts the requests sent and answered while the fault was
	// surely in effect; bad lists those the failure mode did not decide
	// as declared.
	inside int
	bad    exampleList
}

func (f *faultPart) merge(o *faultPart) {
	if o.timed > 0 && (f.timed == 0 || o.took > f.took || o.took == f.took && o.slowest.seq < f.slowest.seq) {
		f.slowest, f.took = o.slowest, o.took
	}
	f.sent += o.sent
	f.timed += o.timed
	f.unanswerable += o.unanswerable
	f.unanswered.merge(o.unanswered)
	f.inside += o.inside
	f.bad.merge(o.bad)
}

// newPartial is an empty part for policy p and drill faults.
func newPartial(p Policy, uses []limitUse) *partial {
	pt := &partial{
		limits: make([]limitPart, len(uses)),
		rules:  make([]rulePart, len(p.Rules)),
		style:  stylePart{families: map[uint8]int{}},
	}
	if p.Faults != nil {
		pt.faults = make([]faultPart, len(p.Faults.Windows))
	}
	return pt
}
