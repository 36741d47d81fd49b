package history

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

var start = time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)

func readAll(t *testing.T, src Source) []Record {
	t.Helper()
	var out []Record
	for {
		var r Record
		err := src.Read(&r)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, r)
	}
}

func TestRoundTrip(t *testing.T) {
	offset := int64(-1234)
	h := NewHeader(start)
	h.Scenario, h.Target, h.Instances = "burst", "sampleapi", []string{"api-0", "api-1"}
	h.Policies = []RoutePolicy{{Route: "/v1/search", Limits: []string{"gcra:10/1s,burst=10"}}}
	h.ClockOffsetNs, h.ClockUncertaintyNs = &offset, 150_000
	h.ClockSource, h.ClockResolutionNs = ClockHTTPDate, 1e6
	recs := []Record{
		{Key: "alice", Instance: "api-0", Route: "/v1/search", Cost: 2, IntendedNs: 0, SentNs: 10, ReceivedNs: 2_000_010, Status: 200, Outcome: Admitted,
			Headers: map[string]string{"ratelimit-remaining": "8"}, DecisionUs: 1_772_600_767_000_001, Phase: "warmup"},
		{Key: "alice", SentNs: -5, ReceivedNs: 100, Status: 429, Outcome: Rejected, Headers: map[string]string{"retry-after": "1"}},
		{ID: 7, Key: "bob", SentNs: 50, ReceivedNs: 5_000_000_050, Status: 0, Outcome: Error, Error: "context deadline exceeded"},
	}
	path := filepath.Join(t.TempDir(), "history.jsonl.gz")
	w, err := Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := openFile(t, path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Header()
	if !got.Start.Equal(start) || got.Scenario != "burst" || *got.ClockOffsetNs != offset || got.ClockUncertaintyNs != 150_000 ||
		got.ClockSource != ClockHTTPDate || got.ClockResolutionNs != 1e6 || !reflect.DeepEqual(got.Policies, h.Policies) {
		t.Errorf("header = %+v, want %+v", got, h)
	}
	back := readAll(t, r)
	want := []Record{recs[0], recs[1], recs[2]}
	want[0].ID, want[1].ID, want[1].Cost, want[2].Cost = 1, 2, 1, 1
	if !reflect.DeepEqual(back, want) {
		t.Errorf("records:\n got %+v\nwant %+v", back, want)
	}
}

func TestWriterConcurrent(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, NewHeader(start))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 250 {
				r := &Record{Key: "k", SentNs: int64(g*1000 + i), ReceivedNs: int64(g*1000 + i + 1), Status: 200}
				if err := w.Write(r); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf, "")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, rec := range readAll(t, r) {
		if seen[rec.ID] {
			t.Fatalf("duplicate id %d", rec.ID)
		}
		seen[rec.ID] = true
	}
	if got, want := len(seen), 1000; got != want {
		t.Errorf("read %d records, want %d", got, want)
	}
}

func TestReaderErrors(t *testing.T) {
	header := `{"format":"rlbench-history","version":1,"start":"2026-03-04T05:06:07Z"}`
	tests := []struct {
		name  string
		input string
		line  int
		field string
	}{
		{"empty", "", 1, ""},
		{"not json", "hello\n", 1, ""},
		{"wrong format", `{"format":"other","version":1,"start":"2026-03-04T05:06:07Z"}` + "\n", 1, "format"},
		{"future version", `{"format":"rlbench-history","version":2,"start":"2026-03-04T05:06:07Z"}` + "\n", 1, "version"},
		{"no start", `{"format":"rlbench-history","version":1}` + "\n", 1, "start"},
		{"received before sent", header + "\n" + `{"key":"k","sent_ns":10,"received_ns":5}` + "\n", 2, "received_ns"},
		{"bad outcome", header + "\n\n" + `{"key":"k","outcome":"maybe"}` + "\n", 3, ""},
		{"wrong type", header + "\n" + `{"key":"k","status":"ok"}` + "\n", 2, "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.input), "h.jsonl")
			if err == nil {
				var rec Record
				err = r.Read(&rec)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want a *FormatError wrapping ErrFormat", err)
			}
			if fe.Line != tt.line || fe.Field != tt.field || fe.File != "h.jsonl" {
				t.Errorf("error at %s:%d field %q, want h.jsonl:%d field %q (%v)", fe.File, fe.Line, fe.Field, tt.line, tt.field, err)
			}
		})
	}
}

func TestReaderPlainAndGzip(t *testing.T) {
	text := `{"format":"rlbench-history","version":1,"start":"2026-03-04T05:06:07Z"}` + "\n" + `{"key":"k","sent_ns":1,"received_ns":2,"status":429,"outcome":"rejected"}`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	for name, in := range map[string]io.Reader{"plain": strings.NewReader(text), "gzip": &gz} {
		r, err := NewReader(in, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		recs := readAll(t, r)
		if len(recs) != 1 || recs[0].Outcome != Rejected || recs[0].ID != 1 || recs[0].Cost != 1 {
			t.Errorf("%s: records = %+v", name, recs)
		}
	}
}

func TestOutcomeForStatus(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   Outcome
	}{
		{0, Error}, {42, Error}, {101, Admitted}, {200, Admitted}, {204, Admitted}, {302, Admitted}, {304, Admitted},
		{400, Error}, {401, Error}, {403, Error}, {404, Error}, {429, Rejected}, {431, Error},
		{500, Error}, {503, Error}, {999, Error},
	} {
		if got := OutcomeForStatus(tt.status); got != tt.want {
			t.Errorf("OutcomeForStatus(%d) = %s, want %s", tt.status, got, tt.want)
		}
	}
}

func TestVegetaReader(t *testing.T) {
	var buf bytes.Buffer
	enc := vegeta.NewJSONEncoder(&buf)
	results := []vegeta.Result{
		{Code: 200, Timestamp: start, Latency: 3 * time.Millisecond, URL: "http://api/v1/items?id=1",
			Headers: http.Header{"X-Api-Key-Id": {"alice"}, "Ratelimit-Remaining": {"4"}, "Content-Type": {"text/plain"}}},
		{Code: 429, Timestamp: start.Add(-time.Millisecond), Latency: time.Millisecond, URL: "http://api/v1/items?id=2",
			Headers: http.Header{"X-Api-Key-Id": {"alice"}, "Retry-After": {"2"}, "X-Cost": {"3"}}},
		{Code: 0, Timestamp: start.Add(time.Second), Latency: 30 * time.Second, URL: "http://api/v1/other", Error: "timeout"},
		{Code: 401, Timestamp: start.Add(2 * time.Second), Latency: time.Millisecond, URL: "http://api/v1/items?id=3"},
	}
	for i := range results {
		if err := enc(&results[i]); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewVegetaReader(&buf, "results.json", VegetaConfig{KeyHeader: "X-Api-Key-Id", CostHeader: "X-Cost"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Header().Start; !got.Equal(start) {
		t.Errorf("start = %v, want %v", got, start)
	}
	if got, want := r.Header().ClockResolutionNs, int64(DefaultClockResolution); got != want {
		t.Errorf("clock resolution = %d ns, want the default %d", got, want)
	}
	want := []Record{
		{ID: 1, Key: "alice", Route: "/v1/items", Cost: 1, IntendedNs: 0, SentNs: 0, ReceivedNs: 3e6, Status: 200, Outcome: Admitted,
			Headers: map[string]string{"ratelimit-remaining": "4"}},
		{ID: 2, Key: "alice", Route: "/v1/items", Cost: 3, IntendedNs: -1e6, SentNs: -1e6, ReceivedNs: 0, Status: 429, Outcome: Rejected,
			Headers: map[string]string{"retry-after": "2"}},
		{ID: 3, Key: "http://api/v1/other", Route: "/v1/other", Cost: 1, IntendedNs: 1e9, SentNs: 1e9, ReceivedNs: 31e9, Status: 0, Outcome: Error, Error: "timeout"},
		// A 401 never proves an admission: the request may not have reached the limiter.
		{ID: 4, Key: "http://api/v1/items?id=3", Route: "/v1/items", Cost: 1, IntendedNs: 2e9, SentNs: 2e9, ReceivedNs: 2e9 + 1e6, Status: 401, Outcome: Error},
	}
	if got := readAll(t, r); !reflect.DeepEqual(got, want) {
		t.Errorf("records:\n got %+v\nwant %+v", got, want)
	}
}

// TestClockResolutionDefault: a history written before the header recorded
// the clock resolution reads as one of 1 µs; a recorded one is kept.
func TestClockResolutionDefault(t *testing.T) {
	for _, tt := range []struct {
		name string
		line string
		want int64
	}{
		{"absent", `{"format":"rlbench-history","version":1,"start":"2026-03-04T05:06:07Z"}`, 1000},
		{"zero", `{"format":"rlbench-history","version":1,"start":"2026-03-04T05:06:07Z","clock_resolution_ns":0}`, 1000},
		{"millisecond", `{"format":"rlbench-history","version":1,"start":"2026-03-04T05:06:07Z","clock_resolution_ns":1000000}`, 1_000_000},
	} {
		r, err := NewReader(strings.NewReader(tt.line+"\n"), tt.name)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := r.Header().ClockResolutionNs; got != tt.want {
			t.Errorf("%s: clock_resolution_ns = %d, want %d", tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"-1", "3600000000001"} {
		line := `{"format":"rlbench-history","version":1,"start":"2026-03-04T05:06:07Z","clock_resolution_ns":` + bad + "}\n"
		_, err := NewReader(strings.NewReader(line), "h")
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Field != "clock_resolution_ns" {
			t.Errorf("clock_resolution_ns %s: err = %v, want a FormatError naming clock_resolution_ns", bad, err)
		}
	}
}

func TestVegetaReaderErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":        "",
		"not json":     "nope\n",
		"no timestamp": `{"code":200,"latency":5}` + "\n",
	} {
		_, err := NewVegetaReader(strings.NewReader(in), "r.json", VegetaConfig{})
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}

func openFile(t *testing.T, path string) (io.Reader, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { f.Close() })
	return f, nil
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in      string
		want    Shard
		wantErr string
	}{
		{in: "0/3", want: Shard{0, 3}},
		{in: " 2 / 3 ", want: Shard{2, 3}},
		{in: "0/1", want: Shard{0, 1}},
		{in: "3/3", wantErr: "want 0 to 2"},
		{in: "-1/3", wantErr: "want 0 to 2"},
		{in: "0/0", wantErr: "want 1 to 1024"},
		{in: "0/1025", wantErr: "want 1 to 1024"},
		{in: "3", wantErr: "want I/N"},
		{in: "a/3", wantErr: "index \"a\" is not an integer"},
		{in: "1/b", wantErr: "count \"b\" is not an integer"},
	}
	for _, tt := range tests {
		got, err := ParseShard(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseShard(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if got.String() != strings.TrimSpace(strings.ReplaceAll(tt.in, " ", "")) {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}
