package history

import (
	"bytes"
	"strconv"
	"testing"
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
