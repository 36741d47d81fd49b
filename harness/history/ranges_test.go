package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

const testHeader = `{"format":"rlbench-history","version":1,"start":"2026-03-04T05:06:07Z"}`

// TestReaderRanges holds every record field with a range to it: the bounds
// themselves are read, one step beyond them is a *FormatError naming the
// record's line and the field.
func TestReaderRanges(t *testing.T) {
	hi, lo := int64(MaxTimeNs), int64(-MaxTimeNs)
	tests := []struct {
		name   string
		record string
		field  string // "" when the record is valid
	}{
		{"times at the upper bound", fmt.Sprintf(`{"key":"k","intended_ns":%d,"sent_ns":%d,"received_ns":%d}`, hi, hi, hi), ""},
		{"times at the lower bound", fmt.Sprintf(`{"key":"k","intended_ns":%d,"sent_ns":%d,"received_ns":%d}`, lo, lo, lo), ""},
		{"sent beyond", fmt.Sprintf(`{"key":"k","sent_ns":%d,"received_ns":%d}`, hi+1, hi+1), "sent_ns"},
		{"received beyond", fmt.Sprintf(`{"key":"k","sent_ns":0,"received_ns":%d}`, hi+1), "received_ns"},
		{"received near 2^63", `{"key":"k","sent_ns":9223372036854775000,"received_ns":9223372036854775807}`, "sent_ns"},
		{"sent below", fmt.Sprintf(`{"key":"k","sent_ns":%d,"received_ns":0}`, lo-1), "sent_ns"},
		{"intended beyond", fmt.Sprintf(`{"key":"k","intended_ns":%d}`, hi+1), "intended_ns"},
		{"received before sent", `{"key":"k","sent_ns":10,"received_ns":9}`, "received_ns"},
		{"cost at the bound", fmt.Sprintf(`{"key":"k","cost":%d}`, int64(MaxCost)), ""},
		{"cost beyond", fmt.Sprintf(`{"key":"k","cost":%d}`, int64(MaxCost)+1), "cost"},
		{"cost negative", `{"key":"k","cost":-1}`, "cost"},
		{"cost huge", `{"key":"k","cost":9223372036854775807}`, "cost"},
		{"status beyond", `{"key":"k","status":1000}`, "status"},
		{"decision at the bound", fmt.Sprintf(`{"key":"k","decision_us":%d}`, int64(MaxDecisionUs)), ""},
		{"decision beyond", fmt.Sprintf(`{"key":"k","decision_us":%d}`, int64(MaxDecisionUs)+1), "decision_us"},
		{"decision negative", `{"key":"k","decision_us":-1}`, "decision_us"},
		// encoding/json's path (an escape) validates the same way.
		{"slow path beyond", fmt.Sprintf(`{"key":"k\u0041","sent_ns":0,"received_ns":%d}`, hi+1), "received_ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testHeader + "\n" + `{"key":"ok"}` + "\n" + tt.record + "\n"
			r, err := NewReader(strings.NewReader(in), "h.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			var rec Record
			if err := r.Read(&rec); err != nil {
				t.Fatal(err)
			}
			err = r.Read(&rec)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Read = %v, want the record", err)
				}
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
				t.Fatalf("Read = %v, want a *FormatError wrapping ErrFormat", err)
			}
			if got, want := fmt.Sprintf("%s:%d %s", fe.File, fe.Line, fe.Field), "h.jsonl:3 "+tt.field; got != want {
				t.Errorf("error at %s, want %s (%v)", got, want, err)
			}
		})
	}
}

func TestHeaderRanges(t *testing.T) {
	tests := []struct {
		name, header, field string
	}{
		{"start at the lower bound", `"start":"1970-01-01T00:00:00Z"`, ""},
		{"start before 1970", `"start":"1969-12-31T23:59:59.999999999Z"`, "start"},
		{"start just before 2100", `"start":"2099-12-31T23:59:59.999999999Z"`, ""},
		{"start in 2100", `"start":"2100-01-01T00:00:00Z"`, "start"},
		{"start in 2300", `"start":"2300-01-01T00:00:00Z"`, "start"},
		{"offset at the bound", fmt.Sprintf(`"start":"2026-03-04T05:06:07Z","clock_offset_ns":%d`, -int64(MaxTimeNs)), ""},
		{"offset beyond", fmt.Sprintf(`"start":"2026-03-04T05:06:07Z","clock_offset_ns":%d`, int64(MaxTimeNs)+1), "clock_offset_ns"},
		{"uncertainty at the bound", fmt.Sprintf(`"start":"2026-03-04T05:06:07Z","clock_uncertainty_ns":%d`, int64(MaxTimeNs)), ""},
		{"uncertainty beyond", fmt.Sprintf(`"start":"2026-03-04T05:06:07Z","clock_uncertainty_ns":%d`, int64(MaxTimeNs)+1), "clock_uncertainty_ns"},
		{"uncertainty negative", `"start":"2026-03-04T05:06:07Z","clock_uncertainty_ns":-1`, "clock_uncertainty_ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"format":"rlbench-history","version":1,` + tt.header + "}\n"
			_, err := NewReader(strings.NewReader(in), "h.jsonl")
			if tt.field == "" {
				if err != nil {
					t.Fatalf("NewReader = %v, want a reader", err)
				}
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Line != 1 || fe.Field != tt.field || fe.File != "h.jsonl" {
				t.Fatalf("NewReader = %v, want a *FormatError at h.jsonl:1 field %s", err, tt.field)
			}
		})
	}
}

// TestWriterRefusesOutOfRange: the Writer holds records and headers to the
// readers' ranges, so that it never writes a history they refuse.
func TestWriterRefusesOutOfRange(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, NewHeader(start))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{
		{Key: "k", SentNs: 0, ReceivedNs: MaxTimeNs + 1},
		{Key: "k", Cost: MaxCost + 1},
		{Key: "k", DecisionUs: -5},
	} {
		if err := w.Write(&r); !errors.Is(err, ErrFormat) {
			t.Errorf("Write(%+v) = %v, want an error wrapping ErrFormat", r, err)
		}
	}
	if err := w.Write(&Record{Key: "k", SentNs: MaxTimeNs, ReceivedNs: MaxTimeNs, Cost: MaxCost}); err != nil {
		t.Errorf("Write at the bounds: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []time.Time{time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), MaxStart} {
		if _, err := NewWriter(&buf, NewHeader(s)); !errors.Is(err, ErrFormat) {
			t.Errorf("NewWriter(start %v) = %v, want an error wrapping ErrFormat", s, err)
		}
	}
}

// TestMaxCostIsMaxCapacity: a cost above the largest capacity could never
// be admitted, so the two bounds are one.
func TestMaxCostIsMaxCapacity(t *testing.T) {
	if got, want := int64(MaxCost), int64(limiter.MaxCapacity); got != want {
		t.Errorf("MaxCost = %d, want limiter.MaxCapacity %d", got, want)
	}
}

// TestVegetaReaderRanges: vegeta results are validated as histories are,
// with the result's line; the overflowing latency sent the checker into an
// endless recursion before.
func TestVegetaReaderRanges(t *testing.T) {
	line := func(ts string, latency int64, extra string) string {
		return fmt.Sprintf(`{"seq":0,"code":200,"timestamp":%q,"latency":%d,"url":"http://api/v1","error":"","headers":{%s}}`, ts, latency, extra) + "\n"
	}
	first := line("2026-01-01T00:00:00Z", 1000, "")
	tests := []struct {
		name  string
		input string
		cfg   VegetaConfig
		line  int
		field string // "" when the results are valid
	}{
		{"latency overflowing int64", first + line("2026-01-01T00:00:00.000001Z", 9223372036854775000, ""), VegetaConfig{}, 2, "latency"},
		{"latency beyond the range", first + line("2026-01-01T00:00:00Z", MaxTimeNs+1, ""), VegetaConfig{}, 2, "latency"},
		{"latency at the bound", first + line("2026-01-01T00:00:00Z", MaxTimeNs, ""), VegetaConfig{}, 0, ""},
		{"timestamp decades later", first + first + line("2070-01-01T00:00:00Z", 0, ""), VegetaConfig{}, 3, "timestamp"},
		{"timestamp centuries earlier", first + line("1800-01-01T00:00:00Z", 0, ""), VegetaConfig{}, 2, "timestamp"},
		{"first timestamp after 2100", line("2150-01-01T00:00:00Z", 0, ""), VegetaConfig{}, 1, "timestamp"},
		{"first timestamp before 1970", "\n" + line("1969-01-01T00:00:00Z", 0, ""), VegetaConfig{}, 2, "timestamp"},
		{"cost header beyond", first + line("2026-01-01T00:00:01Z", 5, `"X-Cost":["1099511627777"]`), VegetaConfig{CostHeader: "X-Cost"}, 2, "headers.X-Cost"},
		{"code beyond", first + strings.Replace(first, `"code":200`, `"code":1000`, 1), VegetaConfig{}, 2, "code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewVegetaReader(strings.NewReader(tt.input), "r.json", tt.cfg)
			if err == nil {
				var rec Record
				for err = r.Read(&rec); err == nil; err = r.Read(&rec) {
					if rec.ReceivedNs < rec.SentNs || !inTimeRange(rec.ReceivedNs) {
						t.Fatalf("record %+v escaped validation", rec)
					}
				}
				if err == io.EOF {
					err = nil
				}
			}
			if tt.field == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want a *FormatError wrapping ErrFormat", err)
			}
			if got, want := fmt.Sprintf("%s:%d %s", fe.File, fe.Line, fe.Field), fmt.Sprintf("r.json:%d %s", tt.line, tt.field); got != want {
				t.Errorf("error at %s, want %s (%v)", got, want, err)
			}
		})
	}
	if _, err := NewVegetaReader(strings.NewReader(first), "r.json", VegetaConfig{Cost: MaxCost + 1}); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Errorf("NewVegetaReader(Cost: MaxCost+1) = %v, want an error naming the cost", err)
	}
}
