package history

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// ErrShards is wrapped by every error of NewMerge about histories that are
// not the shards of one run: a history that names no shard, shards of
// different runs, scenarios, policies or counts, two histories of one
// shard, a shard without a known clock offset, and missing shards
// (*MissingShardsError).
var ErrShards = errors.New("the histories are not the shards of one run")

// MissingShardsError is NewMerge's error for a set of shards that lacks
// some of its run's: Missing lists their indexes, in order, of Count. It
// wraps ErrShards.
type MissingShardsError struct {
	Count   int
	Missing []int
}

func (e *MissingShardsError) Error() string {
	names := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		names[i] = Shard{Index: m, Count: e.Count}.String()
	}
	what := "shard " + names[0] + " is"
	if len(names) > 1 {
		what = "shards " + strings.Join(names, ", ") + " are"
	}
	return fmt.Sprintf("%s missing: a run of %d shards is checked from all %d", what, e.Count, e.Count)
}

// Unwrap returns ErrShards.
func (e *MissingShardsError) Unwrap() error { return ErrShards }

// ShardSource is one shard's history to merge: its Source, and its Name
// (the file it was read from) for errors.
type ShardSource struct {
	Name   string
	Source Source
}

// MergeConfig is how NewMerge treats its shards. The zero value merges a
// complete set.
type MergeConfig struct {
	// AllowMissing merges a partial set of shards, the verdict of which
	// covers the shards present only; Merge.Missing lists the others.
	AllowMissing bool
}

// MergedShard is one shard of a Merge: which shard it is, its file, its
// header, and how its times map onto the merged history's clock.
type MergedShard struct {
	Shard Shard
	// Input is the shard's place among NewMerge's shards, Name its name
	// there.
	Input  int
	Name   string
	Header Header
	// ShiftNs is added to each of the shard's times: its start plus its
	// clock offset, less the merged history's start, in ns (at least 0).
	ShiftNs int64
	// UncertaintyNs is the shard's clock uncertainty, by which each of its
	// records' [sent, received] is widened on either side.
	UncertaintyNs int64
	// Records counts the shard's records read so far.
	Records int
}

// Merge is a Source that reads the histories of the shards of one run
// (`rlbench run --shard I/N`) as one history on the limiter's clock.
//
// Each shard s measured its own clock_offset_ns o_s ± clock_uncertainty_ns
// u_s to the limiter's clock, and its times t count from its own start
// S_s, so its record at t happened at S_s + t + o_s on the limiter's clock,
// give or take u_s. The merged history starts at M, the earliest of the
// S_s + o_s, and its header gives the limiter's clock itself: offset 0
// with uncertainty 0, the shards' clock_source (empty when they differ)
// and their coarsest clock resolution. A record of shard s maps to
// t + (S_s + o_s − M) and its [sent, received] widens to [sent − u_s,
// received + u_s]: the limiter decided within the widened interval
// whatever the shard's true offset within o_s ± u_s, so a check of the
// merged history proves what it reports exactly as a check of one history
// does. Its intended time maps without widening (it only schedules).
//
// Ids are made unique across shards: the record id i of shard I of N
// becomes (i − 1)·N + I + 1, from which both come back, and the record's
// Shard names its shard. An id of 0 is first numbered by its place in its
// shard, as a Reader numbers a record without an id.
//
// Order: the merged records come in order of their received time on the
// merged clock before widening, ties in order of shard index: completion
// order, the order of an unsharded history. A history is written in
// completion order only approximately (results of concurrent requests
// reach the writer in whatever order they finish being recorded), so Merge
// keeps each shard's own order and holds exactly one pending record per
// shard, a k-way merge with a binary heap: memory O(N) whatever the
// histories' lengths, time O(log N) a record. The output is then in time
// order exactly when every input is, and otherwise keeps each shard's
// order: the checker needs no more, since it groups records by key and
// sorts each key's requests by time itself (package checker). It is
// deterministic, so a merge checked twice gives the same verdicts.
//
// Read's errors are those of the shards' sources, which name their file and
// line, and a mapped record outside the format's accepted ranges. Merge is
// not safe for concurrent use.
type Merge struct {
	header  Header
	shards  []MergedShard
	srcs    []Source
	pending []Record
	// heap holds the shards with a pending record, a binary min-heap on
	// (key, shard index).
	heap    []int
	keys    []int64
	missing []int
	started bool
	err     error
}

// NewMerge validates the shards' headers and returns a Merge that reads
// them as one history; nothing is read before the first Read. The shards
// must name their shard (header shard), of one count, each index once,
// share their scenario, run id (which must be set) and policies, and each
// know its clock offset; every shard of the count must be present unless
// cfg.AllowMissing. Errors wrap ErrShards and name the files at fault;
// missing shards give a *MissingShardsError naming them.
func NewMerge(shards []ShardSource, cfg MergeConfig) (*Merge, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%w: no shard history to merge", ErrShards)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrShards}, args...)...)
	}
	m := &Merge{}
	for i, in := range shards {
		h := in.Source.Header()
		name := orUnnamed(in.Name)
		switch {
		case h.Shard == nil:
			return nil, bad("%s names no shard in its header: it is a whole run's history, not a shard's (rlbench run --shard I/N)", name)
		case h.Shard.Validate() != nil:
			return nil, bad("%s: %v", name, h.Shard.Validate())
		case h.ClockOffsetNs == nil:
			return nil, bad("%s (shard %s) has no clock offset: shards are merged on the limiter's clock, so each must measure its offset to it (a Redis to read TIME from, Date headers) or declare it (target.clock)", name, h.Shard)
		case h.RunID == "":
			return nil, bad("%s (shard %s) has no run_id: the shards of one run are tied by their run id (rlbench run --shard I/N --run-id ID)", name, h.Shard)
		}
		m.shards = append(m.shards, MergedShard{Shard: *h.Shard, Input: i, Name: in.Name, Header: h, UncertaintyNs: h.ClockUncertaintyNs})
		m.srcs = append(m.srcs, in.Source)
	}
	first := &m.shards[0]
	for i := 1; i < len(m.shards); i++ {
		s := &m.shards[i]
		a, b := first.Header, s.Header
		switch {
		case s.Shard.Count != first.Shard.Count:
			return nil, bad("%s is shard %s and %s shard %s: the shards of one run share their count", orUnnamed(first.Name), first.Shard, orUnnamed(s.Name), s.Shard)
		case a.RunID != b.RunID:
			return nil, bad("%s is of run %s and %s of run %s: merge the shards of one run", orUnnamed(first.Name), a.RunID, orUnnamed(s.Name), b.RunID)
		case a.Scenario != b.Scenario:
			return nil, bad("%s is of scenario %q and %s of %q: merge the shards of one scenario", orUnnamed(first.Name), a.Scenario, orUnnamed(s.Name), b.Scenario)
		case !reflect.DeepEqual(a.Policies, b.Policies):
			return nil, bad("%s and %s hold different policies in their headers: the shards of one run hold one policy", orUnnamed(first.Name), orUnnamed(s.Name))
		}
	}
	// In shard order, whatever the order given: the merge is then the same
	// for any order of its inputs.
	order := make([]int, len(m.shards))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return m.shards[a].Shard.Index - m.shards[b].Shard.Index })
	shardsSorted, srcsSorted := make([]MergedShard, len(order)), make([]Source, len(order))
	for i, j := range order {
		shardsSorted[i], srcsSorted[i] = m.shards[j], m.srcs[j]
	}
	m.shards, m.srcs = shardsSorted, srcsSorted
	count := m.shards[0].Shard.Count
	present := make([]bool, count)
	for i := range m.shards {
		s := &m.shards[i]
		if present[s.Shard.Index] {
			prev := m.shards[i-1]
			return nil, bad("%s and %s are both shard %s: give each shard's history once", orUnnamed(prev.Name), orUnnamed(s.Name), s.Shard)
		}
		present[s.Shard.Index] = true
	}
	for i, ok := range present {
		if !ok {
			m.missing = append(m.missing, i)
		}
	}
	if len(m.missing) > 0 && !cfg.AllowMissing {
		return nil, &MissingShardsError{Count: count, Missing: m.missing}
	}
	if err := m.place(); err != nil {
		return nil, err
	}
	m.pending = make([]Record, len(m.shards))
	m.keys = make([]int64, len(m.shards))
	return m, nil
}

// place computes the merged header and each shard's shift.
func (m *Merge) place() error {
	limiterStart := make([]int64, len(m.shards)) // S_s + o_s, Unix ns on the limiter's clock
	origin := int64(math.MaxInt64)
	for i := range m.shards {
		h := &m.shards[i].Header
		limiterStart[i] = h.Start.UnixNano() + *h.ClockOffsetNs // within ±6·10^18: no overflow
		origin = min(origin, limiterStart[i])
	}
	start := time.Unix(0, origin).UTC()
	if start.Before(MinStart) || !start.Before(MaxStart) {
		return fmt.Errorf("%w: the shards start at %s on the limiter's clock, outside the accepted range [%s, %s)", ErrShards,
			start.Format(time.RFC3339Nano), MinStart.Format(time.RFC3339), MaxStart.Format(time.RFC3339))
	}
	first := m.shards[0].Header
	zero := int64(0)
	h := NewHeader(start)
	h.Scenario, h.Target, h.Policies, h.RunID = first.Scenario, first.Target, first.Policies, first.RunID
	h.ClockOffsetNs, h.ClockSource = &zero, first.ClockSource
	for i := range m.shards {
		s := &m.shards[i]
		if s.ShiftNs = limiterStart[i] - origin; s.ShiftNs > MaxTimeNs {
			return fmt.Errorf("%w: %s starts %v after the first shard on the limiter's clock, beyond the accepted range of %d ns", ErrShards, orUnnamed(s.Name), time.Duration(s.ShiftNs), int64(MaxTimeNs))
		}
		sh := s.Header
		for _, inst := range sh.Instances {
			if !slices.Contains(h.Instances, inst) {
				h.Instances = append(h.Instances, inst)
			}
		}
		if sh.ClockSource != h.ClockSource {
			h.ClockSource = ""
		}
		h.ClockResolutionNs = max(h.ClockResolutionNs, sh.ClockResolutionNs)
	}
	h.IdentitiesFresh = m.identitiesFresh()
	m.header = h
	return nil
}

// identitiesFresh is the merged history's identities_fresh: true when
// every shard's keys began fresh, false when some shard's may not have,
// and unknown (nil) otherwise.
func (m *Merge) identitiesFresh() *bool {
	all := true
	for i := range m.shards {
		switch f := m.shards[i].Header.IdentitiesFresh; {
		case f == nil:
			all = false
		case !*f:
			return f
		}
	}
	if !all {
		return nil
	}
	return &all
}

// Header returns the merged history's header.
func (m *Merge) Header() Header { return m.header }

// Shards returns the merged shards, in order of index, with the records
// read from each so far.
func (m *Merge) Shards() []MergedShard { return slices.Clone(m.shards) }

// Missing returns the indexes of the run's shards absent from the merge
// (only with MergeConfig.AllowMissing), in order.
func (m *Merge) Missing() []int { return slices.Clone(m.missing) }

// Truncated joins the Truncated errors of the shards whose history ended
// early (see Reader.Truncated), each naming its file and line; nil when
// none did. Call it after Read returned io.EOF.
func (m *Merge) Truncated() error {
	var errs []error
	for _, src := range m.srcs {
		if t, ok := src.(interface{ Truncated() error }); ok && t.Truncated() != nil {
			errs = append(errs, t.Truncated())
		}
	}
	return errors.Join(errs...)
}

// Read fills rec with the next merged record, reusing its Headers map, and
// returns io.EOF after the last record of every shard. After an error every
// Read returns it.
func (m *Merge) Read(rec *Record) error {
	if m.err != nil {
		return m.err
	}
	if !m.started {
		m.started = true
		for i := range m.shards {
			ok, err := m.advance(i)
			if err != nil {
				m.err = err
				return err
			}
			if ok {
				m.heap = append(m.heap, i)
			}
		}
		for k := len(m.heap)/2 - 1; k >= 0; k-- {
			m.down(k)
		}
	}
	if len(m.heap) == 0 {
		return io.EOF
	}
	i := m.heap[0]
	headers := rec.Headers
	clear(headers)
	p := &m.pending[i]
	*rec = *p
	rec.Headers = headers
	if len(p.Headers) > 0 {
		if rec.Headers == nil {
			rec.Headers = make(map[string]string, len(p.Headers))
		}
		for k, v := range p.Headers {
			rec.Headers[k] = v
		}
	}
	ok, err := m.advance(i)
	if err != nil {
		m.err = err
		return err
	}
	if !ok { // shard i is done: the last entry takes its place
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
	}
	m.down(0)
	return nil
}

// advance reads shard i's next record into its pending slot, mapped onto
// the merged clock, and reports whether there was one.
func (m *Merge) advance(i int) (bool, error) {
	s := &m.shards[i]
	p := &m.pending[i]
	err := m.srcs[i].Read(p)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("shard %s: %w", s.Shard, err)
	}
	s.Records++
	if err := m.mapRecord(i, p); err != nil {
		return false, err
	}
	m.keys[i] = p.ReceivedNs - s.UncertaintyNs
	return true, nil
}

// mapRecord moves r from shard s's clock onto the merged history's.
func (m *Merge) mapRecord(i int, r *Record) error {
	s := &m.shards[i]
	n := uint64(s.Shard.Count)
	if r.ID == 0 {
		r.ID = uint64(s.Records)
	}
	if r.ID > (math.MaxUint64-uint64(s.Shard.Index)-1)/n+1 {
		return &FormatError{File: s.Name, Line: m.line(i), Field: "id", Err: fmt.Errorf("record %d of shard %s: too large to be numbered uniquely across %d shards", r.ID, s.Shard, n)}
	}
	id := r.ID
	r.ID = mergedID(id, s.Shard)
	r.IntendedNs += s.ShiftNs
	r.SentNs += s.ShiftNs - s.UncertaintyNs
	r.ReceivedNs += s.ShiftNs + s.UncertaintyNs
	r.Shard = &s.Shard
	if err := r.Validate(); err != nil {
		fe := err.(*FormatError)
		fe.File, fe.Line = s.Name, m.line(i)
		fe.Err = fmt.Errorf("record %d of shard %s, placed on the limiter's clock (shifted %d ns, widened by %d ns): %w", id, s.Shard, s.ShiftNs, s.UncertaintyNs, fe.Err)
		return fe
	}
	return nil
}

// mergedID is the id in a merged history of the record id of shard s:
// (id − 1)·N + I + 1 for shard I of N, unique across the shards. It wraps
// around for an id above (2^64 − I − 1)/N + 1, which Merge refuses.
func mergedID(id uint64, s Shard) uint64 {
	return (id-1)*uint64(s.Count) + uint64(s.Index) + 1
}

// line is the line of shard i's record last read, when its source counts
// lines (a Reader), else 0.
func (m *Merge) line(i int) int {
	if l, ok := m.srcs[i].(interface{ Line() int }); ok {
		return l.Line()
	}
	return 0
}

// less orders heap entries a and b: by key, then by shard index.
func (m *Merge) less(a, b int) bool {
	ka, kb := m.keys[m.heap[a]], m.keys[m.heap[b]]
	return ka < kb || ka == kb && m.heap[a] < m.heap[b]
}

// down restores the heap's order below position k.
func (m *Merge) down(k int) {
	n := len(m.heap)
	for {
		c := 2*k + 1
		if c >= n {
			return
		}
		if c+1 < n && m.less(c+1, c) {
			c++
		}
		if !m.less(c, k) {
			return
		}
		m.heap[k], m.heap[c] = m.heap[c], m.heap[k]
		k = c
	}
}

func orUnnamed(name string) string {
	if name == "" {
		return "a history"
	}
	return name
}
