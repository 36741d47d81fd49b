package reports

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter"
)

// Display limits. The history is condensed for display only: the checks in
// summary.json were computed on every record.
const (
	// displayBins is the number of time bins of every time-series chart;
	// even, since bins merge pairwise when the run outlasts them.
	displayBins = 240
	// maxTrackedKeys is the most keys per route with a time series; the
	// keys of proofs are tracked beyond it.
	maxTrackedKeys = 4096
	// busiestKeys is the number of keys a budget chart draws.
	busiestKeys = 5
	// maxScatter is the most Retry-After points drawn, besides flagged ones.
	maxScatter = 1500
	// maxProofRows is the most requests a proof's table lists.
	maxProofRows = 25
)

// timeline maps nanoseconds since the scenario's start to display bins of
// a common width; the width doubles whenever a record falls past the last bin.
type timeline struct{ width int64 }

// maxWidth keeps width*displayBins within an int64.
const maxWidth = math.MaxInt64 / (2 * displayBins)

func (t *timeline) fit(ns int64) {
	for ns >= t.width*displayBins && t.width < maxWidth {
		t.width *= 2
	}
}

func (t *timeline) index(ns int64) int {
	if ns < 0 {
		return 0
	}
	return min(int(ns/t.width), displayBins-1)
}

// bins is a series over a timeline; it catches up with the timeline's
// width lazily, merging pairs of bins.
type bins struct {
	width int64
	v     []int64
}

func (b *bins) add(tl *timeline, ns, x int64) {
	b.sync(tl)
	b.v[tl.index(ns)] += x
}

func (b *bins) sync(tl *timeline) {
	if b.v == nil {
		b.v, b.width = make([]int64, displayBins), tl.width
		return
	}
	for b.width < tl.width {
		for i := range displayBins / 2 {
			b.v[i] = b.v[2*i] + b.v[2*i+1]
		}
		clear(b.v[displayBins/2:])
		b.width *= 2
	}
}

// digest is one scenario's history condensed for display.
type digest struct {
	start     time.Time
	tl        timeline
	records   int
	keys      map[string]*keyDigest // every key, with its rejections awaiting an admission
	lastNs    int64
	outcomes  [3]bins // requests by send time: admitted, rejected, error
	instances map[string]*instanceCounts
	routes    []*routeDigest
	routeOf   map[string]int // record route (and key, when policies name keys) to index in routes, -1 for none
	byKey     bool           // some policy names the keys it holds
	unrouted  int            // records on a route without limits
	retry     retryDigest
	proofs    []*proofDigest
	excused   []excusedWindow
	// probePhases are the run's Retry-After probe phases; probeKeys the
	// keys of their requests, the probes' own (checker.Counts.ProbeKeys).
	probePhases map[string]bool
	probeKeys   map[string]bool
}

// excusedWindow is an interval of a drill in which the checker does not
// hold admissions to the budget: from a fault's start to its end plus the
// recovery bound, the fault checks judge the requests instead
// (runrecord.Drill). A request is excused when it was answered after the
// fault began and sent before the recovery ended, on the faulted instance
// when the fault concerns one.
type excusedWindow struct {
	kind, instance string
	// fromNs and toNs bound the fault in ns since the start; toNs 0 means
	// it lasted to the end of the history.
	fromNs, toNs int64
	recoveryNs   int64
	// observed says the window is a store stall the harness observed
	// rather than a declared fault (runrecord.FaultWindow.Observed).
	observed bool
}

// excusedWindows are the drill's excused intervals, from run.json.
func excusedWindows(rec *runrecord.ScenarioRecord) []excusedWindow {
	if rec == nil || rec.Drill == nil {
		return nil
	}
	var out []excusedWindow
	for _, w := range rec.Drill.Windows {
		out = append(out, excusedWindow{kind: w.Kind, instance: w.Instance, fromNs: w.FromNs, toNs: w.ToNs, recoveryNs: int64(rec.Drill.Recovery), observed: w.Observed})
	}
	return out
}

// excuses reports whether the budget check leaves r to the fault checks.
func (w excusedWindow) excuses(r *history.Record) bool {
	if w.instance != "" && r.Instance != w.instance {
		return false
	}
	return r.ReceivedNs >= w.fromNs && (w.toNs == 0 || r.SentNs <= w.toNs+w.recoveryNs)
}

// endNs is the end of the excused interval in a history that ends at lastNs.
func (w excusedWindow) endNs(lastNs int64) int64 {
	if w.toNs == 0 {
		return lastNs
	}
	return min(w.toNs+w.recoveryNs, max(lastNs, w.toNs))
}

// excused reports whether any excused window covers r.
func (d *digest) isExcused(r *history.Record) bool {
	for _, w := range d.excused {
		if w.excuses(r) {
			return true
		}
	}
	return false
}

// instanceCounts is one instance's requests by outcome and admitted units.
type instanceCounts struct {
	requests      [3]int64
	admittedUnits int64
}

// routeDigest is the admitted units per key on the routes of one limit set.
type routeDigest struct {
	route    string
	key      string // the keys it holds ("free-*"); empty: every key
	limits   []limiter.Limit
	skipped  []string // limit specs that do not parse
	windowNs int64    // the first limit's window, for window algorithms
	alignNs  int64    // Unix ns of the scenario's start on the limiter's clock
	keys     map[string]*keySeries
	tracked  int
	requests int64
	// excusedUnits are the admitted units of excused requests, which the
	// series leave out, as the budget check does.
	excusedUnits int64
}

// keySeries is one key's admitted units on a route.
type keySeries struct {
	units    int64
	requests int64
	bins     *bins           // admitted units per display bin; nil when untracked
	windows  map[int64]int64 // admitted units per aligned window, for window limits
	proof    bool
}

// retryDigest pairs each rejection's Retry-After with the time to the next
// admission of its key.
type retryDigest struct {
	rejections int
	noHeader   int
	dates      int // Retry-After as an HTTP-date, not charted
	flagged    map[uint64]bool
	points     []retryPoint
	marked     []retryPoint
	stride     int
	seen       int
	unresolved int
}

// keyDigest is what the digest holds of one key: its rejections whose
// Retry-After awaits the key's next admission.
type keyDigest struct{ pending []pendingRetry }

type pendingRetry struct {
	id      uint64
	recvNs  int64
	seconds int64
}

// retryPoint is one rejection: its Retry-After and the wait until the key's
// next admitted request was sent, in seconds.
type retryPoint struct {
	ordinal int
	id      uint64
	ra      float64
	wait    float64
}

// proofDigest collects the requests of a proof: those it names and those of
// its key inside its interval.
type proofDigest struct {
	scenario string
	result   checker.Result
	ids      map[uint64]bool
	named    []history.Record // the first requests the proof names
	others   []history.Record // the first other requests in its interval
	rows     []history.Record // what the table lists, by send time
	total    int
	byOut    [3]int64
	units    [3]int64
}

// digestHistory streams the history in r once.
func digestHistory(r io.Reader, name string, ss checker.ScenarioSummary, rec *runrecord.ScenarioRecord) (*digest, error) {
	src, err := history.NewReader(r, name)
	if err != nil {
		return nil, err
	}
	src.ReadAhead(runtime.GOMAXPROCS(0)) // decoding JSON is most of reading
	defer src.Close()
	d := newDigest(src.Header(), ss, rec)
	if err := readAll(src, d); err != nil {
		return nil, err
	}
	d.finish()
	return d, nil
}

func newDigest(h history.Header, ss checker.ScenarioSummary, rec *runrecord.ScenarioRecord) *digest {
	d := &digest{
		start: h.Start, tl: timeline{width: int64(time.Millisecond)},
		keys: map[string]*keyDigest{}, instances: map[string]*instanceCounts{}, routeOf: map[string]int{},
		retry: retryDigest{flagged: map[uint64]bool{}, stride: 1},
	}
	offset := int64(0)
	if h.ClockOffsetNs != nil {
		offset = *h.ClockOffsetNs
	}
	if rec != nil {
		if rec.Duration > 0 {
			d.tl.width = max(1, (int64(rec.Duration)+displayBins-1)/displayBins)
		}
		if rec.ClockOffset != 0 {
			offset = int64(rec.ClockOffset)
		}
	}
	d.excused = excusedWindows(rec)
	d.probePhases, d.probeKeys = probePhases(rec), map[string]bool{}
	align := h.Start.UnixNano() + offset
	for _, p := range routePolicies(h, rec) {
		rd := &routeDigest{route: p.Route, key: p.Key, alignNs: align, keys: map[string]*keySeries{}}
		d.byKey = d.byKey || p.Key != ""
		for _, spec := range p.Limits {
			l, err := limiter.ParseLimit(spec)
			if err != nil {
				rd.skipped = append(rd.skipped, spec)
				continue
			}
			rd.limits = append(rd.limits, l)
		}
		if len(rd.limits) == 0 {
			continue
		}
		if l := rd.limits[0]; l.Algorithm.IsWindow() {
			rd.windowNs = int64(l.Period)
		}
		d.routes = append(d.routes, rd)
	}
	for _, r := range ss.Checks {
		if r.Proof == nil || r.Verdict == checker.Pass {
			continue
		}
		pd := &proofDigest{scenario: ss.Name, result: r, ids: map[uint64]bool{}}
		for _, id := range r.Proof.RequestIDs {
			pd.ids[id] = true
			if r.Name == checker.CheckRetryAfter {
				d.retry.flagged[id] = true
			}
		}
		d.proofs = append(d.proofs, pd)
		if r.Name == checker.CheckBudget && r.Proof.Key != "" {
			for _, rd := range d.routes {
				rd.series(r.Proof.Key, true)
			}
		}
	}
	return d
}

// routePolicies are the limited routes with the policies the checks held
// them to: the history header's, which carry a claim (`rlbench run
// --claim`) in place of what the target enforced, else run.json's routes.
func routePolicies(h history.Header, rec *runrecord.ScenarioRecord) []history.RoutePolicy {
	if len(h.Policies) > 0 {
		return h.Policies
	}
	if rec != nil && len(rec.Routes) > 0 {
		var out []history.RoutePolicy
		for _, rt := range rec.Routes {
			if !rt.Baseline && len(rt.Limits) > 0 {
				out = append(out, history.RoutePolicy{Route: rt.Path, Limits: rt.Limits})
			}
		}
		return out
	}
	return h.Policies
}

// matchRoute reports whether route matches pattern as the checker matches
// them: "" matches everything, a trailing "*" matches by prefix.
func matchRoute(pattern, route string) bool {
	switch {
	case pattern == "":
		return true
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(route, strings.TrimSuffix(pattern, "*"))
	}
	return pattern == route
}

func (d *digest) route(name, key string) *routeDigest {
	at := name
	if d.byKey {
		at = name + "\x00" + key
	}
	i, ok := d.routeOf[at]
	if !ok {
		i = -1
		for j, rd := range d.routes {
			if matchRoute(rd.route, name) && matchRoute(rd.key, key) {
				i = j
				break
			}
		}
		d.routeOf[at] = i
	}
	if i < 0 {
		return nil
	}
	return d.routes[i]
}

// series returns key's series, tracking it over time when there is room
// or force is set.
func (rd *routeDigest) series(key string, force bool) *keySeries {
	ks := rd.keys[key]
	if ks == nil {
		ks = &keySeries{}
		rd.keys[key] = ks
	}
	if ks.bins == nil && (force || rd.tracked < maxTrackedKeys) {
		ks.bins = &bins{}
		if rd.windowNs > 0 {
			ks.windows = map[int64]int64{}
		}
		rd.tracked++
	}
	ks.proof = ks.proof || force
	return ks
}

// add condenses one record.
func (d *digest) add(r *history.Record) {
	d.records++
	if d.probePhases[r.Phase] {
		d.probeKeys[r.Key] = true
	}
	kd := d.keys[r.Key]
	if kd == nil {
		kd = &keyDigest{}
		d.keys[r.Key] = kd
	}
	d.tl.fit(r.SentNs)
	d.lastNs = max(d.lastNs, r.ReceivedNs)
	o := min(int(r.Outcome), 2)
	d.outcomes[o].add(&d.tl, r.SentNs, 1)
	ic := d.instances[r.Instance]
	if ic == nil {
		ic = &instanceCounts{}
		d.instances[r.Instance] = ic
	}
	ic.requests[o]++
	if r.Outcome == history.Admitted {
		ic.admittedUnits += r.Cost
	}
	rd := d.route(r.Route, r.Key)
	if rd == nil {
		d.unrouted++
	} else {
		rd.requests++
		if r.Outcome == history.Admitted {
			ks := rd.series(r.Key, false)
			ks.units += r.Cost
			ks.requests++
			if d.isExcused(r) {
				rd.excusedUnits += r.Cost
			} else if ks.bins != nil {
				ks.bins.add(&d.tl, r.SentNs, r.Cost)
				if ks.windows != nil {
					ks.windows[floorDiv(rd.alignNs+r.SentNs, rd.windowNs)] += r.Cost
				}
			}
		}
	}
	d.retry.add(r, kd)
	for _, pd := range d.proofs {
		pd.add(r, rd != nil || len(d.routes) == 0)
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// add pairs r, of the key kd, with the key's pending rejections.
func (rd *retryDigest) add(r *history.Record, kd *keyDigest) {
	switch r.Outcome {
	case history.Rejected:
		rd.rejections++
		v, ok := r.Headers["retry-after"]
		if !ok {
			rd.noHeader++
			return
		}
		secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			rd.dates++
			return
		}
		kd.pending = append(kd.pending, pendingRetry{id: r.ID, recvNs: r.ReceivedNs, seconds: secs})
	case history.Admitted:
		pend := kd.pending
		if len(pend) == 0 {
			return
		}
		kept := pend[:0]
		for _, p := range pend {
			if p.recvNs > r.SentNs {
				kept = append(kept, p)
				continue
			}
			rd.point(retryPoint{id: p.id, ra: float64(p.seconds), wait: float64(r.SentNs-p.recvNs) / 1e9})
		}
		kd.pending = kept
	}
}

// point keeps p when flagged, else one point in stride, doubling the stride
// whenever more than maxScatter are kept: a deterministic, evenly thinned
// sample.
func (rd *retryDigest) point(p retryPoint) {
	if rd.flagged[p.id] {
		rd.marked = append(rd.marked, p)
		return
	}
	p.ordinal = rd.seen
	rd.seen++
	if p.ordinal%rd.stride != 0 {
		return
	}
	rd.points = append(rd.points, p)
	if len(rd.points) > maxScatter {
		rd.stride *= 2
		kept := rd.points[:0]
		for _, q := range rd.points {
			if q.ordinal%rd.stride == 0 {
				kept = append(kept, q)
			}
		}
		rd.points = kept
	}
}

// add counts r when the proof names it, or when it is a request of the
// proof's key on a limited route inside the proof's interval; limited is
// whether r's route has limits.
func (pd *proofDigest) add(r *history.Record, limited bool) {
	p := pd.result.Proof
	named := pd.ids[r.ID]
	in := limited && p.Key != "" && r.Key == p.Key && r.SentNs >= p.FromNs && r.ReceivedNs <= p.ToNs
	if !in && !named {
		return
	}
	pd.total++
	o := min(int(r.Outcome), 2)
	pd.byOut[o]++
	pd.units[o] += r.Cost
	keep := &pd.others
	if named {
		keep = &pd.named
	}
	if len(*keep) < maxProofRows {
		c := *r
		c.Headers = maps.Clone(r.Headers)
		*keep = append(*keep, c)
	}
}

// finish brings every series to the final width and orders the collected rows.
func (d *digest) finish() {
	for i := range d.outcomes {
		d.outcomes[i].sync(&d.tl)
	}
	for _, rd := range d.routes {
		for _, ks := range rd.keys {
			if ks.bins != nil {
				ks.bins.sync(&d.tl)
			}
		}
	}
	for _, kd := range d.keys {
		d.retry.unresolved += len(kd.pending)
		kd.pending = nil
	}
	for _, pd := range d.proofs {
		// List the named requests first, then the others in the interval,
		// maxProofRows in all, in send order.
		pd.rows = append(pd.named, pd.others[:min(len(pd.others), maxProofRows-len(pd.named))]...)
		pd.named, pd.others = nil, nil
		slices.SortFunc(pd.rows, func(a, b history.Record) int {
			return cmp.Or(cmp.Compare(a.SentNs, b.SentNs), cmp.Compare(a.ID, b.ID))
		})
	}
}

// busiest returns the keys of rd to chart: the proof keys, then the keys
// with the most admitted units, busiestKeys in all (ties by name).
func (rd *routeDigest) busiest() []string {
	var keys []string
	for k, ks := range rd.keys {
		if ks.bins != nil && ks.units > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		ka, kb := rd.keys[a], rd.keys[b]
		if ka.proof != kb.proof {
			if ka.proof {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(kb.units, ka.units), strings.Compare(a, b))
	})
	return keys[:min(len(keys), busiestKeys)]
}

// spanNs is the scenario's span on the timeline.
func (d *digest) spanNs() int64 { return d.tl.width * displayBins }

// instanceNames lists the instances in name order.
func (d *digest) instanceNames() []string {
	return slices.Sorted(maps.Keys(d.instances))
}

func instanceLabel(name string) string {
	if name == "" {
		return "(unnamed)"
	}
	return name
}

// limitScope is l as the checker's results name it (checker.Limit.Scope),
// so that a budget result finds its limit's chart.
func limitScope(l limiter.Limit) string {
	return checker.Limit{Name: l.Name, Algorithm: checker.Algorithm(l.Algorithm), Rate: l.Rate, Period: l.Period, Burst: l.Burst,
		Start: checker.WindowStart(l.Start), Idle: l.Idle, LeaseTokens: l.LeaseTokens, LeaseFor: l.LeaseFor}.Scope()
}

// limitsLabel names a route's limits for captions, as results do.
func (rd *routeDigest) limitsLabel() string {
	names := make([]string, len(rd.limits))
	for i, l := range rd.limits {
		names[i] = limitScope(l)
	}
	route := rd.route
	if route == "" {
		route = "every route"
	}
	if rd.key != "" {
		route += ", keys " + rd.key
	}
	return fmt.Sprintf("%s: %s", route, strings.Join(names, " + "))
}

// probePhases are the Retry-After probe phases of rec, by name, as the
// checker finds them: a name every phase of which is a probe.
func probePhases(rec *runrecord.ScenarioRecord) map[string]bool {
	out := map[string]bool{}
	if rec == nil {
		return out
	}
	for _, ph := range rec.Phases {
		probe, seen := out[ph.Name]
		out[ph.Name] = ph.Kind == runrecord.PhaseRetryAfterProbe && (probe || !seen)
	}
	return out
}

// keysPhrase counts keys, a set of keys the history holds, as
// checker.Counts does: the traffic's keys, then the probes' own.
func (d *digest) keysPhrase(keys []string) string {
	probe := 0
	for _, k := range keys {
		if d.probeKeys[k] {
			probe++
		}
	}
	return KeysPhrase(len(keys)-probe, probe)
}
