package history

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

// BenchmarkReader decodes a gzip-compressed history of one million records
// with the headers a limited response carries.
func BenchmarkReader(b *testing.B) {
	const n = 1_000_000
	var buf bytes.Buffer
	w, err := NewWriter(&buf, NewHeader(start))
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		r := &Record{Key: "key-" + strconv.Itoa(i%1000), Instance: "api-" + strconv.Itoa(i%3), Route: "/v1/items",
			IntendedNs: int64(i) * 1000, SentNs: int64(i) * 1000, ReceivedNs: int64(i)*1000 + 1_500_000, Status: 200,
			Headers: map[string]string{"ratelimit-limit": "100", "ratelimit-remaining": strconv.Itoa(i % 100), "ratelimit-reset": "1"}}
		if i%4 == 0 {
			r.Status, r.Outcome = 429, Rejected
			r.Headers["retry-after"] = "1"
		}
		if err := w.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "")
		if err != nil {
			b.Fatal(err)
		}
		var rec Record
		count := 0
		for r.Read(&rec) == nil {
			count++
		}
		if count != n {
			b.Fatalf("read %d records, want %d", count, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkMerge merges eight shard histories of 125 000 records each, one
// million in all, with the headers a limited response carries: the cost of
// the merge is the readers' plus a heap step and a header copy a record.
func BenchmarkMerge(b *testing.B) {
	const shards, per = 8, 125_000
	data := make([][]byte, shards)
	for s := range shards {
		var buf bytes.Buffer
		h := shardHeader(s, shards, start.Add(time.Duration(s)*time.Millisecond), time.Duration(-s)*time.Millisecond, 50*time.Microsecond)
		w, err := NewWriter(&buf, h)
		if err != nil {
			b.Fatal(err)
		}
		for i := range per {
			at := int64(i) * 8000
			r := &Record{Key: "key-" + strconv.Itoa(i%1000), Instance: "api-0", Route: "/v1/items",
				IntendedNs: at, SentNs: at, ReceivedNs: at + 1_500_000, Status: 200,
				Headers: map[string]string{"ratelimit-limit": "100", "ratelimit-remaining": strconv.Itoa(i % 100), "ratelimit-reset": "1"}}
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		data[s] = buf.Bytes()
	}
	b.ReportAllocs()
	for b.Loop() {
		in := make([]ShardSource, shards)
		for s := range shards {
			r, err := NewReader(bytes.NewReader(data[s]), "")
			if err != nil {
				b.Fatal(err)
			}
			in[s] = ShardSource{Source: r}
		}
		m, err := NewMerge(in, MergeConfig{})
		if err != nil {
			b.Fatal(err)
		}
		var rec Record
		count := 0
		for m.Read(&rec) == nil {
			count++
		}
		if count != shards*per {
			b.Fatalf("merged %d records, want %d", count, shards*per)
		}
	}
	b.ReportMetric(float64(shards*per)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
