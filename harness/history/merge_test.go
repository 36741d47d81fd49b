package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// shardHeader is the header of shard index of count of run "1a2b3c4d",
// started at start with the given clock offset and uncertainty.
func shardHeader(index, count int, start time.Time, offset, unc time.Duration) Header {
	h := NewHeader(start)
	h.Scenario, h.RunID, h.ClockSource = "burst", "1a2b3c4d", ClockRedisTime
	h.Policies = []RoutePolicy{{Route: "", Limits: []string{"gcra:10/1s,burst=10"}}}
	h.Instances = []string{fmt.Sprintf("api-%d", index)}
	o := offset.Nanoseconds()
	h.ClockOffsetNs, h.ClockUncertaintyNs = &o, unc.Nanoseconds()
	h.Shard = &Shard{Index: index, Count: count}
	return h
}

// writeShard writes h and recs with a Writer and returns a Reader on them.
func writeShard(t testing.TB, name string, h Header, recs []Record) *Reader {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		rec := recs[i]
		if err := w.Write(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf, name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	// Three hosts: shard 1's wall clock runs 40 ms ahead of the limiter's
	// and started 2 ms after shard 0; shard 2's runs 15 ms behind and
	// started 1 ms before shard 0, whose clock is the limiter's.
	hs := []Header{
		shardHeader(0, 3, t0, 0, 100*time.Microsecond),
		shardHeader(1, 3, t0.Add(42*time.Millisecond), -40*time.Millisecond, 250*time.Microsecond),
		shardHeader(2, 3, t0.Add(-16*time.Millisecond), 15*time.Millisecond, 0),
	}
	recs := [][]Record{
		{
			{Key: "alice", IntendedNs: 0, SentNs: 1_000, ReceivedNs: 2_000_000, Status: 200, Outcome: Admitted, Headers: map[string]string{"ratelimit-remaining": "9"}},
			{Key: "alice", IntendedNs: 5_000_000, SentNs: 5_000_000, ReceivedNs: 6_000_000, Status: 429, Outcome: Rejected, Headers: map[string]string{"retry-after": "1"}},
		},
		{
			{Key: "bob", IntendedNs: 0, SentNs: 0, ReceivedNs: 1_000_000, Status: 200, Outcome: Admitted, DecisionUs: 1_772_600_767_002_500},
		},
		{
			{Key: "carol", IntendedNs: 1_000_000, SentNs: 1_000_000, ReceivedNs: 1_500_000, Status: 0, Outcome: Error, Error: "connection reset"},
			{Key: "carol", IntendedNs: 9_000_000, SentNs: 9_000_000, ReceivedNs: 9_500_000, Status: 200, Outcome: Admitted},
		},
	}
	// Given out of order: the merge is the same for any order.
	var in []ShardSource
	for _, i := range []int{2, 0, 1} {
		name := fmt.Sprintf("shard-%d.jsonl.gz", i)
		in = append(in, ShardSource{Name: name, Source: writeShard(t, name, hs[i], recs[i])})
	}
	m, err := NewMerge(in, MergeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Header()
	// On the limiter's clock shard 0 starts at t0, shard 1 at t0+2ms,
	// shard 2 at t0-1ms: the merged history starts with shard 2.
	if want := t0.Add(-time.Millisecond); !h.Start.Equal(want) {
		t.Errorf("merged start = %v, want %v", h.Start, want)
	}
	if h.ClockOffsetNs == nil || *h.ClockOffsetNs != 0 || h.ClockUncertaintyNs != 0 || h.ClockSource != ClockRedisTime {
		t.Errorf("merged clock = %v ± %d (%q), want 0 ± 0 (redis_time)", h.ClockOffsetNs, h.ClockUncertaintyNs, h.ClockSource)
	}
	if h.Shard != nil || h.RunID != "1a2b3c4d" || h.Scenario != "burst" || !reflect.DeepEqual(h.Policies, hs[0].Policies) {
		t.Errorf("merged header = %+v", h)
	}
	if want := []string{"api-0", "api-1", "api-2"}; !reflect.DeepEqual(h.Instances, want) {
		t.Errorf("instances = %v, want %v", h.Instances, want)
	}
	if got, want := h.ClockResolutionNs, int64(DefaultClockResolution); got != want {
		t.Errorf("clock resolution = %d, want %d", got, want)
	}
	shifts := []int64{1_000_000, 3_000_000, 0} // ns, by shard index
	for _, s := range m.Shards() {
		if s.ShiftNs != shifts[s.Shard.Index] || in[s.Input].Name != fmt.Sprintf("shard-%d.jsonl.gz", s.Shard.Index) {
			t.Errorf("shard %s: input %d (%s), shift %d; want its own input, shift %d", s.Shard, s.Input, in[s.Input].Name, s.ShiftNs, shifts[s.Shard.Index])
		}
	}
	got := readAll(t, m)
	type placed struct {
		id, shard                    int
		key                          string
		intended, sent, received, du int64
	}
	want := []placed{
		// received order on the merged clock, before widening
		{3, 2, "carol", 1_000_000, 1_000_000, 1_500_000, 0},
		{1, 0, "alice", 1_000_000, 1_000_000 + 1_000 - 100_000, 3_000_000 + 100_000, 0},
		{2, 1, "bob", 3_000_000, 3_000_000 - 250_000, 4_000_000 + 250_000, 1_772_600_767_002_500},
		{4, 0, "alice", 6_000_000, 6_000_000 - 100_000, 7_000_000 + 100_000, 0},
		{6, 2, "carol", 9_000_000, 9_000_000, 9_500_000, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("merged %d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		p := placed{int(g.ID), g.Shard.Index, g.Key, g.IntendedNs, g.SentNs, g.ReceivedNs, g.DecisionUs}
		if p != w || g.Shard.Count != 3 {
			t.Errorf("record %d = %+v (shard %v), want %+v", i, p, g.Shard, w)
		}
	}
	if got[1].Headers["ratelimit-remaining"] != "9" || got[3].Headers["retry-after"] != "1" || got[0].Error != "connection reset" {
		t.Errorf("record fields lost in the merge: %+v", got)
	}
	if err := m.Truncated(); err != nil {
		t.Errorf("Truncated = %v", err)
	}
	for _, s := range m.Shards() {
		if s.Records != len(recs[s.Shard.Index]) {
			t.Errorf("shard %s: %d records read, want %d", s.Shard, s.Records, len(recs[s.Shard.Index]))
		}
	}
	if err := m.Read(new(Record)); err != io.EOF {
		t.Errorf("Read after the end = %v, want io.EOF", err)
	}

	// The merged history round-trips through Writer and Reader, shards and all.
	back := writeShard(t, "merged", h, got)
	again := readAll(t, back)
	if !reflect.DeepEqual(again, got) {
		t.Errorf("merged history read back differs:\n got %+v\nwant %+v", again, got)
	}
}

// TestMergeValidation holds NewMerge to its errors: each names the files
// or shards at fault and wraps ErrShards.
func TestMergeValidation(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	ok := func(i, n int) Header { return shardHeader(i, n, t0, 0, 0) }
	tests := []struct {
		name    string
		headers []Header
		allow   bool
		want    string // in the error; "" for none
		missing []int
	}{
		{"complete", []Header{ok(0, 2), ok(1, 2)}, false, "", nil},
		{"one of one", []Header{ok(0, 1)}, false, "", nil},
		{"no shard", []Header{ok(0, 2), func() Header { h := ok(1, 2); h.Shard = nil; return h }()}, false, "h1 names no shard", nil},
		{"counts differ", []Header{ok(0, 2), ok(1, 3)}, false, "h0 is shard 0/2 and h1 shard 1/3", nil},
		{"same index twice", []Header{ok(1, 2), ok(1, 2)}, false, "h0 and h1 are both shard 1/2", nil},
		{"other run", []Header{ok(0, 2), func() Header { h := ok(1, 2); h.RunID = "99999999"; return h }()}, false, "h0 is of run 1a2b3c4d and h1 of run 99999999", nil},
		{"no run id", []Header{func() Header { h := ok(0, 2); h.RunID = ""; return h }(), ok(1, 2)}, false, "h0 (shard 0/2) has no run_id", nil},
		{"other scenario", []Header{ok(0, 2), func() Header { h := ok(1, 2); h.Scenario = "edge"; return h }()}, false, `h0 is of scenario "burst" and h1 of "edge"`, nil},
		{"other policies", []Header{ok(0, 2), func() Header {
			h := ok(1, 2)
			h.Policies = []RoutePolicy{{Limits: []string{"gcra:20/1s,burst=10"}}}
			return h
		}()}, false, "h0 and h1 hold different policies", nil},
		{"offset unknown", []Header{ok(0, 2), func() Header { h := ok(1, 2); h.ClockOffsetNs = nil; return h }()}, false, "h1 (shard 1/2) has no clock offset", nil},
		{"one missing", []Header{ok(0, 3), ok(2, 3)}, false, "shard 1/3 is missing", []int{1}},
		{"two missing", []Header{ok(3, 4), ok(1, 4)}, false, "shards 0/4, 2/4 are missing", []int{0, 2}},
		{"missing allowed", []Header{ok(0, 3), ok(2, 3)}, true, "", []int{1}},
		{"start out of range", []Header{ok(0, 2), // the second shard starts before 1970 on the limiter's clock
			shardHeader(1, 2, time.Unix(1, 0), -2*time.Second, 0)}, false, "outside the accepted range", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in []ShardSource
			for i, h := range tt.headers {
				name := fmt.Sprintf("h%d", i)
				in = append(in, ShardSource{Name: name, Source: writeShard(t, name, h, []Record{{Key: "k", SentNs: 1, ReceivedNs: 2}})})
			}
			m, err := NewMerge(in, MergeConfig{AllowMissing: tt.allow})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("NewMerge = %v, want a merge", err)
				}
				if got := m.Missing(); !slices.Equal(got, tt.missing) {
					t.Errorf("Missing = %v, want %v", got, tt.missing)
				}
				if got, want := len(readAll(t, m)), len(tt.headers); got != want {
					t.Errorf("merged %d records, want %d", got, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrShards) {
				t.Fatalf("NewMerge = %v, want an error wrapping ErrShards containing %q", err, tt.want)
			}
			var me *MissingShardsError
			if errors.As(err, &me) != (tt.missing != nil) || me != nil && !slices.Equal(me.Missing, tt.missing) {
				t.Errorf("NewMerge = %#v, want missing shards %v", err, tt.missing)
			}
		})
	}
	if _, err := NewMerge(nil, MergeConfig{}); !errors.Is(err, ErrShards) {
		t.Errorf("NewMerge(nil) = %v, want ErrShards", err)
	}
}

// TestMergeRecordErrors: a shard's malformed record, and a record the
// shift carries out of the accepted ranges, are errors naming the file,
// and every Read after returns the same.
func TestMergeRecordErrors(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	h0, h1 := shardHeader(0, 2, t0, 0, 0), shardHeader(1, 2, t0.Add(time.Hour), 0, 0)
	malformed := testHeaderFor(t, h1) + `{"key":"k","sent_ns":5,"received_ns":4}` + "\n"
	r1, err := NewReader(strings.NewReader(malformed), "s1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMerge([]ShardSource{{"s0", writeShard(t, "s0", h0, []Record{{Key: "k", SentNs: 1, ReceivedNs: 2}})}, {"s1.jsonl", r1}}, MergeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	err = m.Read(&rec)
	if err == nil || !strings.Contains(err.Error(), "shard 1/2: s1.jsonl:2: field received_ns") {
		t.Fatalf("Read = %v, want the malformed record named", err)
	}
	if again := m.Read(&rec); again != err {
		t.Errorf("Read after an error = %v, want %v", again, err)
	}

	// Shard 1 starts an hour later: its record at the top of the range
	// lies beyond it on the merged clock.
	m, err = NewMerge([]ShardSource{
		{"s0", writeShard(t, "s0", h0, []Record{{Key: "k", SentNs: 1, ReceivedNs: 2}})},
		{"s1", writeShard(t, "s1", h1, []Record{{Key: "k", SentNs: MaxTimeNs - 10, ReceivedNs: MaxTimeNs}})},
	}, MergeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Read(&rec); err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "s1:2: field sent_ns") || !strings.Contains(err.Error(), "placed on the limiter's clock") {
		t.Fatalf("Read = %v, want the out-of-range record named", err)
	}
}

// testHeaderFor is h's header line.
func testHeaderFor(t *testing.T, h Header) string {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// countingSource counts the records read from it.
type countingSource struct {
	Source
	n *int
}

func (c countingSource) Read(r *Record) error {
	err := c.Source.Read(r)
	if err == nil {
		*c.n++
	}
	return err
}

// TestMergeStreams holds the merge to its memory bound: however long the
// shards, it has read at most one record per shard beyond those it has
// returned, and each shard's records leave in the shard's own order even
// when that order is only roughly by time.
func TestMergeStreams(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	const shards, perShard = 4, 5000
	rng := rand.New(rand.NewPCG(1, 2))
	var in []ShardSource
	read := 0
	for i := range shards {
		var recs []Record
		for j := range perShard {
			// Completion order, roughly: received jitters by up to 3 ms
			// around a 1 ms cadence.
			sent := int64(j)*1_000_000 + rng.Int64N(3_000_000)
			recs = append(recs, Record{Key: fmt.Sprintf("k%d", j%7), SentNs: sent, ReceivedNs: sent + rng.Int64N(500_000), Status: 200})
		}
		h := shardHeader(i, shards, t0.Add(time.Duration(i)*time.Millisecond), time.Duration(-i)*time.Millisecond/2, time.Duration(i)*10*time.Microsecond)
		name := fmt.Sprintf("s%d", i)
		in = append(in, ShardSource{Name: name, Source: countingSource{writeShard(t, name, h, recs), &read}})
	}
	m, err := NewMerge(in, MergeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if read != 0 {
		t.Fatalf("NewMerge read %d records, want none", read)
	}
	returned, most := 0, 0
	lastID := make([]uint64, shards)
	var rec Record
	for {
		err := m.Read(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		returned++
		most = max(most, read-returned)
		s := rec.Shard.Index
		if rec.ID <= lastID[s] {
			t.Fatalf("shard %d: record %d after %d: the shard's order is not kept", s, rec.ID, lastID[s])
		}
		lastID[s] = rec.ID
	}
	if returned != shards*perShard {
		t.Fatalf("merged %d records, want %d", returned, shards*perShard)
	}
	if most > shards {
		t.Errorf("the merge held up to %d records read and not returned, want at most %d (one per shard)", most, shards)
	}
}

// TestMergeProperties merges random shard sets and holds the output to its
// definition: every input record once, at its shard's shift and widened by
// its uncertainty, with an id that gives back its shard and own id; each
// shard's order kept; in order of received time when the inputs are; and
// the same for any order of the inputs.
func TestMergeProperties(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(5)
		sorted := rng.IntN(2) == 0
		type input struct {
			h    Header
			recs []Record
		}
		inputs := make([]input, n)
		for i := range n {
			start := t0.Add(time.Duration(rng.Int64N(int64(time.Second))))
			offset := time.Duration(rng.Int64N(int64(time.Second))) - time.Second/2
			unc := time.Duration(rng.Int64N(int64(time.Millisecond)))
			h := shardHeader(i, n, start, offset, unc)
			var recs []Record
			at := rng.Int64N(1e6)
			for range rng.IntN(40) {
				at += rng.Int64N(2e6)
				recv := at
				if !sorted {
					recv += rng.Int64N(5e6)
				}
				sent := recv - rng.Int64N(1e6)
				recs = append(recs, Record{Key: "k", SentNs: sent, ReceivedNs: recv, IntendedNs: sent})
			}
			inputs[i] = input{h, recs}
		}
		merge := func(order []int) []Record {
			var in []ShardSource
			for _, i := range order {
				name := fmt.Sprintf("s%d", i)
				in = append(in, ShardSource{Name: name, Source: writeShard(t, name, inputs[i].h, inputs[i].recs)})
			}
			m, err := NewMerge(in, MergeConfig{})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			return readAll(t, m)
		}
		order := rng.Perm(n)
		got := merge(order)
		if again := merge(slices.Sorted(slices.Values(order))); !reflect.DeepEqual(got, again) {
			t.Fatalf("seed %d: the merge depends on the order of its inputs", seed)
		}
		origin := int64(1 << 62)
		for _, in := range inputs {
			origin = min(origin, in.h.Start.UnixNano()+*in.h.ClockOffsetNs)
		}
		total, next := 0, make([]int, n)
		for _, in := range inputs {
			total += len(in.recs)
		}
		if len(got) != total {
			t.Fatalf("seed %d: merged %d records, want %d", seed, len(got), total)
		}
		for k, r := range got {
			s := r.Shard.Index
			own := (r.ID-1)/uint64(n) + 1
			if int((r.ID-1)%uint64(n)) != s || own != uint64(next[s]+1) {
				t.Fatalf("seed %d: record %d of shard %d comes as the shard's record %d", seed, r.ID, s, next[s]+1)
			}
			in := inputs[s]
			orig := in.recs[next[s]]
			next[s]++
			shift := in.h.Start.UnixNano() + *in.h.ClockOffsetNs - origin
			u := in.h.ClockUncertaintyNs
			if r.SentNs != orig.SentNs+shift-u || r.ReceivedNs != orig.ReceivedNs+shift+u || r.IntendedNs != orig.IntendedNs+shift {
				t.Fatalf("seed %d: record %+v placed at [%d, %d], want [%d, %d]", seed, orig, r.SentNs, r.ReceivedNs, orig.SentNs+shift-u, orig.ReceivedNs+shift+u)
			}
			if sorted && k > 0 {
				prev := got[k-1]
				pu := inputs[prev.Shard.Index].h.ClockUncertaintyNs
				if prev.ReceivedNs-pu > r.ReceivedNs-u {
					t.Fatalf("seed %d: sorted inputs merged out of order at record %d", seed, k)
				}
			}
		}
	}
}

// TestRecordShard reads a record's shard field on the fast path and through
// encoding/json alike, shares one value per shard, and rejects a shard
// outside its range with the line and field.
func TestRecordShard(t *testing.T) {
	tests := []struct {
		line  string
		want  *Shard
		field string // the field at fault; "" when valid
	}{
		{`{"key":"k","shard":{"index":1,"count":3}}`, &Shard{1, 3}, ""},
		{`{"key":"k","shard":{"count":3,"index":2}}`, &Shard{2, 3}, ""},
		{`{"key":"k\u0041","shard":{"index":1,"count":3}}`, &Shard{1, 3}, ""}, // encoding/json's path
		{`{"key":"k","shard":{ "index" : 0 , "count" : 1 }}`, &Shard{0, 1}, ""},
		{`{"key":"k"}`, nil, ""},
		{`{"key":"k","shard":{"index":3,"count":3}}`, nil, "shard"},
		{`{"key":"k","shard":{"index":-1,"count":3}}`, nil, "shard"},
		{`{"key":"k","shard":{"index":1}}`, nil, "shard"},
		{`{"key":"k","shard":{"index":0,"count":1025}}`, nil, "shard"},
		{`{"key":"k","shard":{"index":99999999999,"count":3}}`, nil, "shard"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(testHeader+"\n"+tt.line+"\n"+tt.line+"\n"), "h.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			var a, b Record
			err = r.Read(&a)
			if tt.field != "" {
				var fe *FormatError
				if !errors.As(err, &fe) || fe.Line != 2 || fe.Field != tt.field && fe.Field != "shard.index" {
					t.Fatalf("Read = %v, want a *FormatError at line 2, field %s", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Read(&b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a.Shard, tt.want) {
				t.Fatalf("Shard = %v, want %v", a.Shard, tt.want)
			}
			if a.Shard != nil && !strings.Contains(tt.line, `\u`) && a.Shard != b.Shard {
				t.Errorf("two records of one shard hold two values: %p, %p", a.Shard, b.Shard)
			}
		})
	}
}
