package checker

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
)

// The checks near the edges of the accepted ranges (history.MaxTimeNs,
// MinStart, MaxStart, the clock offset's bounds): a history placed there
// must be judged exactly as the same history near time 0. Before the ranges
// were bounded, 11 admissions in 1 µs against sliding_window_log:10/1m,
// within one window of 2^63 ns, passed with "0 units".

// edgeRecord is a request of the edge tests, at rel ns from the set's origin.
type edgeRecord struct {
	rel, latency int64
	out          history.Outcome
	retryAfter   int // seconds; 0 for none
}

// edgeSets are, per limit, a set of records that breaks it and one that
// keeps it (every check passing at time 0).
var edgeSets = []struct {
	spec       string
	retryAfter int           // an honest Retry-After for the 11th request
	slot       time.Duration // a queue's emission interval: admissions are answered at their slots
}{
	{"token_bucket:10/1s,burst=10", 1, 0},
	{"gcra:10/1s,burst=10", 1, 0},
	{"leaky_bucket:10/1s,burst=10", 1, 100 * time.Millisecond},
	{"fixed_window:10/1m", 60, 0},
	{"sliding_window_log:10/1m", 60, 0},
	{"sliding_window_counter:10/1m", 60, 0},
}

// edgeViolating is n admissions within 1.1 µs.
func edgeViolating(n int64) []edgeRecord {
	var rs []edgeRecord
	for i := range n {
		rs = append(rs, edgeRecord{rel: i * 50, latency: 10, out: history.Admitted})
	}
	return rs
}

// edgeKeeping is 10 admissions within 1 µs and a rejection right after;
// with a slot, the admissions are answered a slot apart, as a queue
// releases them.
func edgeKeeping(retryAfter int, slot time.Duration) []edgeRecord {
	rs := edgeViolating(10)
	for i := range rs {
		rs[i].latency += int64(i) * int64(slot)
	}
	return append(rs, edgeRecord{rel: 600, latency: 10, out: history.Rejected, retryAfter: retryAfter})
}

// edgeHistory writes recs at origin+rel through history.Writer and reads
// them back through history.NewReader, as a run and rlbench check would.
func edgeHistory(t *testing.T, h history.Header, origin int64, recs []edgeRecord) *history.Reader {
	t.Helper()
	var buf bytes.Buffer
	w, err := history.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range recs {
		r := history.Record{Key: "k", SentNs: origin + e.rel, IntendedNs: origin + e.rel, ReceivedNs: origin + e.rel + e.latency, Status: 200, Outcome: e.out}
		if e.out == history.Rejected {
			r.Status = 429
		}
		if e.retryAfter > 0 {
			r.Headers = map[string]string{"retry-after": strconv.Itoa(e.retryAfter)}
		}
		if err := w.Write(&r); err != nil {
			t.Fatalf("write record at %d: %v", r.SentNs, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := history.NewReader(&buf, "edge")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// edgeResult is a Result with its times taken relative to the origin of
// its history; Explanation, which prints times, is left out.
type edgeResult struct {
	Name, Scope, Unit string
	Verdict           Verdict
	Observed, Bound   float64
	Key               string
	FromNs, ToNs      int64
	RequestIDs        []uint64
}

func edgeResults(rep *Report, origin int64) []edgeResult {
	var out []edgeResult
	for _, r := range rep.Results {
		e := edgeResult{Name: r.Name, Scope: r.Scope, Unit: r.Unit, Verdict: r.Verdict, Observed: r.Observed, Bound: r.Bound}
		if p := r.Proof; p != nil {
			e.Key, e.FromNs, e.ToNs, e.RequestIDs = p.Key, p.FromNs-origin, p.ToNs-origin, p.RequestIDs
		}
		out = append(out, e)
	}
	return out
}

func TestEdgeOfAcceptedRanges(t *testing.T) {
	const W = int64(time.Minute) // every limit's period divides it
	lastStart := history.MaxStart.Add(-time.Nanosecond)
	maxOffset := history.MaxTimeNs / W * W // the largest offset of whole windows
	type variant struct {
		name   string
		start  time.Time
		offset *int64 // nil: unknown
		unc    int64
		edge   int64 // +1: times up to MaxTimeNs; -1: down to -MaxTimeNs
	}
	ptr := func(v int64) *int64 { return &v }
	variants := []variant{
		{"latest start, latest times", lastStart, ptr(0), 0, +1},
		{"earliest start, earliest times", history.MinStart, ptr(0), 0, -1},
		{"latest start, latest times, largest offset", lastStart, ptr(maxOffset), 0, +1},
		{"earliest start, earliest times, most negative offset", history.MinStart, ptr(-maxOffset), 0, -1},
		{"latest start, latest times, largest offset and uncertainty", lastStart, ptr(maxOffset), history.MaxTimeNs, +1},
		{"latest start, latest times, offset unknown", lastStart, nil, 0, +1},
		{"earliest start, earliest times, offset unknown", history.MinStart, nil, 0, -1},
	}
	for _, set := range edgeSets {
		l, err := ParseLimit(set.spec)
		if err != nil {
			t.Fatal(err)
		}
		p := Policy{Rules: []Rule{{Limits: []Limit{l}}}}
		for _, v := range variants {
			h := history.NewHeader(v.start)
			h.ClockOffsetNs, h.ClockUncertaintyNs = v.offset, v.unc
			// phase is the first window boundary at or after time 0 on the
			// limiter's clock; the sets start there, near 0 and at the edge.
			phase := (W - v.start.UnixNano()%W) % W
			span := 1100 + 9*int64(set.slot) // every set lies in [origin, origin+span]
			// Over one limit, or over two windows' worth when the windows'
			// place is unknown (at most 2× per window length).
			over := int64(11)
			if l.Algorithm.window() && l.Algorithm != SlidingWindowLog && v.offset == nil {
				over = 21
			}
			near := phase
			edge := phase + (history.MaxTimeNs-phase-span)/W*W
			if v.edge < 0 {
				edge = phase - (history.MaxTimeNs+phase)/W*W
			}
			for _, s := range []struct {
				name  string
				recs  []edgeRecord
				fails bool
			}{{"violating", edgeViolating(over), true}, {"keeping", edgeKeeping(set.retryAfter, set.slot), false}} {
				t.Run(fmt.Sprintf("%s/%s/%s", set.spec, v.name, s.name), func(t *testing.T) {
					ref, err := Check(edgeHistory(t, h, near, s.recs), p)
					if err != nil {
						t.Fatal(err)
					}
					got, err := Check(edgeHistory(t, h, edge, s.recs), p)
					if err != nil {
						t.Fatal(err)
					}
					if g, w := edgeResults(got, edge), edgeResults(ref, near); !reflect.DeepEqual(g, w) {
						t.Errorf("at %d ns from the start:\n%+v\nwant, as at %d ns:\n%+v", edge, g, near, w)
					}
					if v.unc > 0 {
						return // a window of unknown place: the check may not prove what it proves at 0
					}
					budget := result(t, got, CheckBudget)
					switch {
					case s.fails && budget.Verdict != Fail:
						t.Errorf("budget %s, want fail: %s", budget.Verdict, budget.Explanation)
					case s.fails && budget.Observed != float64(over):
						t.Errorf("budget observed %v units, want %d: %s", budget.Observed, over, budget.Explanation)
					case !s.fails && got.Verdict() != Pass:
						t.Errorf("verdict %s, want pass: %+v", got.Verdict(), got.Results)
					}
				})
			}
		}
	}
}
