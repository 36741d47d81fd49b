package checker

import (
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/limiter"
)

// epoch is a run start aligned on every window the tests use.
var epoch = time.Unix(1_700_000_000, 0)

// memSource is a history held in memory.
type memSource struct {
	h    history.Header
	recs []history.Record
	next int
}

func (m *memSource) Header() history.Header { return m.h }

func (m *memSource) Read(r *history.Record) error {
	if m.next >= len(m.recs) {
		return io.EOF
	}
	*r = m.recs[m.next]
	m.next++
	return nil
}

// hist builds a history with a known clock offset of 0.
type hist struct {
	recs      []history.Record
	noClock   bool
	uncertain time.Duration
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// add appends a request of key k decided in [s, e].
func (h *hist) add(key string, s, e time.Duration, out history.Outcome, opts ...func(*history.Record)) *history.Record {
	status := map[history.Outcome]int{history.Admitted: 200, history.Rejected: 429, history.Error: 0}[out]
	r := history.Record{
		ID: uint64(len(h.recs) + 1), Key: key, Cost: 1,
		IntendedNs: int64(s), SentNs: int64(s), ReceivedNs: int64(e),
		Status: status, Outcome: out,
	}
	for _, o := range opts {
		o(&r)
	}
	h.recs = append(h.recs, r)
	return &h.recs[len(h.recs)-1]
}

func inst(name string) func(*history.Record) { return func(r *history.Record) { r.Instance = name } }

func retryAfter(sec int) func(*history.Record) {
	return func(r *history.Record) { setHeader(r, "retry-after", strconv.Itoa(sec)) }
}

func header(name, value string) func(*history.Record) {
	return func(r *history.Record) { setHeader(r, name, value) }
}

func status(code int) func(*history.Record) { return func(r *history.Record) { r.Status = code } }

func setHeader(r *history.Record, name, value string) {
	if r.Headers == nil {
		r.Headers = map[string]string{}
	}
	r.Headers[name] = value
}

func (h *hist) source() *memSource {
	hd := history.NewHeader(epoch)
	if !h.noClock {
		var zero int64
		hd.ClockOffsetNs = &zero
		hd.ClockUncertaintyNs = int64(h.uncertain)
	}
	return &memSource{h: hd, recs: h.recs}
}

// mustLimit parses spec with the checker's parser.
func mustLimit(t testing.TB, spec string) Limit {
	t.Helper()
	l, err := ParseLimit(spec)
	if err != nil {
		t.Fatalf("ParseLimit(%q): %v", spec, err)
	}
	return l
}

// mustRefLimit parses spec with the reference limiter's parser, for driving
// its store.
func mustRefLimit(t testing.TB, spec string) limiter.Limit {
	t.Helper()
	l, err := limiter.ParseLimit(spec)
	if err != nil {
		t.Fatalf("limiter.ParseLimit(%q): %v", spec, err)
	}
	return l
}

// checkerLimits gives the checker's description of reference limits, read
// from their policy syntax.
func checkerLimits(t testing.TB, ls []limiter.Limit) []Limit {
	t.Helper()
	out := make([]Limit, len(ls))
	for i, l := range ls {
		out[i] = mustLimit(t, l.Spec())
	}
	return out
}

// check runs the checker with one rule of the given limits on every route.
func (h *hist) check(t testing.TB, specs ...string) *Report {
	t.Helper()
	rule := Rule{}
	for _, s := range specs {
		rule.Limits = append(rule.Limits, mustLimit(t, s))
	}
	rep, err := Check(h.source(), Policy{Rules: []Rule{rule}})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

// result returns the first result named name.
func result(t testing.TB, rep *Report, name string) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no %s result in %+v", name, rep.Results)
	return Result{}
}
