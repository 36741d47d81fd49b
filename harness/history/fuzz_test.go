package history

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzMaxRecords bounds the records a fuzz input is read for.
const fuzzMaxRecords = 10_000

// addSeeds adds the files matching pattern, relative to this package, to f's
// corpus.
func addSeeds(f *testing.F, pattern string) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

// readSource reads src to its end or its first error, describing what it
// read for comparisons.
func readSource(t *testing.T, src Source) ([]Record, error) {
	var recs []Record
	for len(recs) < fuzzMaxRecords {
		var rec Record
		err := src.Read(&rec)
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) || fe.Line < 1 {
				t.Fatalf("Read = %v, want a *FormatError wrapping ErrFormat with a line", err)
			}
			return recs, err
		}
		if err := rec.Validate(); err != nil || rec.Cost < 1 {
			t.Fatalf("Read returned a record breaking the format: %+v: %v", rec, err)
		}
		// A read-ahead Reader reuses the map in a later Read.
		rec.Headers = maps.Clone(rec.Headers)
		if len(rec.Headers) == 0 {
			rec.Headers = nil
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// checkTruncated holds Truncated to its contract.
func checkTruncated(t *testing.T, err error) {
	if err != nil && !errors.Is(err, ErrTruncated) {
		t.Fatalf("Truncated = %v, want nil or ErrTruncated", err)
	}
}

// FuzzReader feeds arbitrary bytes to Reader: it never panics, returns only
// records that pass Validate or a *FormatError naming a line, reads the
// same input the same way twice, and every record it accepts the Writer
// writes and the Reader reads back unchanged.
func FuzzReader(f *testing.F) {
	valid := testHeader + "\n" +
		`{"id":1,"key":"alice","instance":"api-0","route":"/v1","cost":2,"intended_ns":-5,"sent_ns":0,"received_ns":10,"status":200,"outcome":"admitted","headers":{"retry-after":"1"},"decision_us":17,"phase":"burst"}` + "\n" +
		`{"key":"bob","sent_ns":1152921504606846976,"received_ns":1152921504606846976,"status":429,"outcome":"rejected"}` + "\n"
	for _, s := range []string{
		valid,
		valid[:len(valid)-20],
		testHeader + "\n" + `{"key":"k","sent_ns":9223372036854775000,"received_ns":9223372036854775807}` + "\n",
		testHeader + "\n" + `{"id":4,"key":"k","sent_ns":1,"received_ns":2,"shard":{"index":0,"count":3}}` + "\n" + `{"id":2,"key":"k","shard":{"count":3,"index":1}}` + "\n",
		`{"format":"rlbench-history","version":1,"start":"2026-03-04T05:06:07Z","clock_offset_ns":-3,"clock_uncertainty_ns":7,"policies":[{"route":"","limits":["gcra:5/1s,burst=5"]}]}` + "\n{}\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Add(gzipped(valid))
	g := gzipped(valid)
	f.Add(g[:len(g)-12])
	addSeeds(f, "../../cmd/rlbench/testdata/check/*.jsonl*")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) || fe.Line < 1 {
				t.Fatalf("NewReader = %v, want a *FormatError with a line", err)
			}
			return
		}
		recs, rerr := readSource(t, r)
		checkTruncated(t, r.Truncated())
		// Read again, decoding ahead: the same records, errors and end.
		again, err := NewReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			t.Fatalf("second NewReader = %v", err)
		}
		again.ReadAhead(2)
		defer again.Close()
		recs2, rerr2 := readSource(t, again)
		if !reflect.DeepEqual(recs, recs2) || fmt.Sprint(rerr) != fmt.Sprint(rerr2) || fmt.Sprint(r.Truncated()) != fmt.Sprint(again.Truncated()) {
			t.Fatalf("two reads differ: %d records, %v; %d records, %v", len(recs), rerr, len(recs2), rerr2)
		}
		// What the Reader accepts, the Writer writes and the Reader reads back.
		var buf bytes.Buffer
		w, err := NewWriter(&buf, r.Header())
		if err != nil {
			t.Fatalf("NewWriter refuses a header the Reader accepted: %v", err)
		}
		for i := range recs {
			rec := recs[i]
			if err := w.Write(&rec); err != nil {
				t.Fatalf("Write refuses a record the Reader accepted: %+v: %v", rec, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		back, err := NewReader(&buf, "rewritten")
		if err != nil {
			t.Fatalf("reading the rewritten history: %v", err)
		}
		got, err := readSource(t, back)
		if err != nil || back.Truncated() != nil {
			t.Fatalf("reading the rewritten history: %v, %v", err, back.Truncated())
		}
		if !reflect.DeepEqual(got, recs) {
			t.Fatalf("rewritten records differ:\n got %+v\nwant %+v", got, recs)
		}
	})
}

// FuzzVegetaReader feeds arbitrary bytes to VegetaReader: it never panics,
// returns only records that pass Validate or a *FormatError naming a line,
// and reads the same input the same way twice.
func FuzzVegetaReader(f *testing.F) {
	line := `{"seq":0,"code":200,"timestamp":"2026-01-01T00:00:00Z","latency":1000,"url":"http://api/v1?x=1","error":"","headers":{"X-Key":["alice"],"X-Cost":["3"],"Retry-After":["1"]}}` + "\n"
	for _, s := range []string{
		line,
		line + line[:50],
		line + `{"code":429,"timestamp":"2026-01-01T00:00:00.000001Z","latency":9223372036854775000,"url":"http://api/v1"}` + "\n",
		line + `{"code":0,"timestamp":"1999-01-01T00:00:00Z","latency":5,"error":"timeout"}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Add(gzipped(line + line))
	addSeeds(f, "../../cmd/rlbench/testdata/check/vegeta-*.json")
	cfg := VegetaConfig{KeyHeader: "X-Key", CostHeader: "X-Cost", InstanceHeader: "X-Instance"}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewVegetaReader(bytes.NewReader(data), "fuzz", cfg)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) || fe.Line < 1 {
				t.Fatalf("NewVegetaReader = %v, want a *FormatError with a line", err)
			}
			return
		}
		if s := r.Header().Start; s.Before(MinStart) || !s.Before(MaxStart) {
			t.Fatalf("start %v outside the accepted range", s)
		}
		recs, rerr := readSource(t, r)
		checkTruncated(t, r.Truncated())
		again, err := NewVegetaReader(bytes.NewReader(data), "fuzz", cfg)
		if err != nil {
			t.Fatalf("second NewVegetaReader = %v", err)
		}
		recs2, rerr2 := readSource(t, again)
		if !reflect.DeepEqual(recs, recs2) || fmt.Sprint(rerr) != fmt.Sprint(rerr2) {
			t.Fatalf("two reads differ: %d records, %v; %d records, %v", len(recs), rerr, len(recs2), rerr2)
		}
	})
}
