package history

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testRecord is the i-th record (from 1) of the truncation tests: every
// field a function of i, so that a record read back can be compared.
func testRecord(i int) Record {
	r := Record{
		ID: uint64(i), Key: "key-" + strconv.Itoa(i%7), Instance: "api-" + strconv.Itoa(i%3), Route: "/v1/items",
		Cost: int64(1 + i%4), IntendedNs: int64(i) * 1e6, SentNs: int64(i)*1e6 + 5, ReceivedNs: int64(i)*1e6 + 2e6,
		Status: 200, Outcome: Admitted,
	}
	if i%5 == 0 {
		r.Status, r.Outcome = 429, Rejected
		r.Headers = map[string]string{"retry-after": strconv.Itoa(i % 3)}
	}
	return r
}

// readRecords reads every record of data, failing the test on an error.
func readRecords(t *testing.T, r Source) []Record {
	t.Helper()
	var out []Record
	for {
		var rec Record
		err := r.Read(&rec)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Read after %d records: %v", len(out), err)
		}
		out = append(out, rec)
	}
}

// flushedHistory writes n records, flushing after each, and returns the
// gzip file and the offsets at which each flush ended (ends[k]: after the
// header and k records).
func flushedHistory(t *testing.T, n int) ([]byte, []int) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, NewHeader(start))
	if err != nil {
		t.Fatal(err)
	}
	ends := []int{buf.Len()}
	for i := 1; i <= n; i++ {
		r := testRecord(i)
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, buf.Len())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), ends
}

// TestReadTruncatedAtEveryOffset cuts a history after every byte, as a
// killed writer leaves it: the reader either refuses it (cut within the
// header) or reads the records before the cut, each equal to the one
// written, and reports the cut unless the file ends where a whole history
// could.
func TestReadTruncatedAtEveryOffset(t *testing.T) {
	const n = 15
	gz, gzEnds := flushedHistory(t, n)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var plainEnds []int
	for i, c := range plain {
		if c == '\n' {
			plainEnds = append(plainEnds, i+1)
		}
	}
	if len(plainEnds) != n+1 {
		t.Fatalf("%d lines, want %d", len(plainEnds), n+1)
	}
	for _, tc := range []struct {
		name string
		data []byte
		ends []int
	}{{"gzip", gz, gzEnds}, {"plain", plain, plainEnds}} {
		t.Run(tc.name, func(t *testing.T) {
			for off := 0; off <= len(tc.data); off++ {
				r, err := NewReader(bytes.NewReader(tc.data[:off]), "h.jsonl.gz")
				whole := 0 // records whose flush or line ends at or before off
				for k, e := range tc.ends {
					if e <= off {
						whole = k
					}
				}
				if err != nil {
					if off >= tc.ends[0] {
						t.Fatalf("cut at %d, after the header's end at %d: NewReader = %v", off, tc.ends[0], err)
					}
					if !errors.Is(err, ErrFormat) || off > 0 && !errors.Is(err, ErrTruncated) {
						t.Fatalf("cut at %d: NewReader = %v, want ErrFormat and ErrTruncated", off, err)
					}
					continue
				}
				got := readRecords(t, r)
				if len(got) < whole || len(got) > whole+1 {
					t.Fatalf("cut at %d: %d records, want %d or %d", off, len(got), whole, whole+1)
				}
				for i, rec := range got {
					if want := testRecord(i + 1); !reflect.DeepEqual(rec, want) {
						t.Fatalf("cut at %d: record %d = %+v, want %+v", off, i+1, rec, want)
					}
				}
				// A plain history cut at a line's end (or just before its
				// "\n") is a whole shorter history; any other cut shows.
				clean := off == len(tc.data)
				if tc.name == "plain" {
					for _, e := range tc.ends {
						clean = clean || off == e || off == e-1
					}
				}
				trunc := r.Truncated()
				if clean != (trunc == nil) || trunc != nil && !errors.Is(trunc, ErrTruncated) {
					t.Fatalf("cut at %d of %d: Truncated = %v, want truncated %v", off, len(tc.data), trunc, !clean)
				}
				if trunc != nil && !strings.HasPrefix(trunc.Error(), "h.jsonl.gz:") {
					t.Errorf("Truncated = %q, want it to name the file and line", trunc)
				}
			}
		})
	}
}

// TestReadTruncatedNamesTheLine: the cut is reported at the line it falls in.
func TestReadTruncatedNamesTheLine(t *testing.T) {
	in := testHeader + "\n" + `{"key":"k","sent_ns":1,"received_ns":2}` + "\n" + `{"key":"k","sent_ns":3,"rec`
	r, err := NewReader(strings.NewReader(in), "h.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got := readRecords(t, r); len(got) != 1 {
		t.Fatalf("%d records, want 1", len(got))
	}
	if got, want := r.Truncated(), "h.jsonl:3: history truncated: the last line holds part of a record; every whole record before it was read"; got == nil || got.Error() != want {
		t.Errorf("Truncated = %v, want %q", got, want)
	}
	// A last line that is malformed, not cut short, stays an error.
	r, err = NewReader(strings.NewReader(testHeader+"\n"+`{"key":"k","status":"ok"}`), "h.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	var fe *FormatError
	if err := r.Read(&rec); !errors.As(err, &fe) || fe.Line != 2 || fe.Field != "status" {
		t.Errorf("Read = %v, want a *FormatError at line 2, field status", err)
	}
}

func TestVegetaReaderTruncated(t *testing.T) {
	line := `{"seq":0,"code":200,"timestamp":"2026-01-01T00:00:00Z","latency":1000,"url":"http://api/v1","error":"","headers":{}}` + "\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(line + line + line))
	zw.Flush()
	for name, in := range map[string][]byte{
		"plain": []byte(line + line + line[:40]),
		"gzip":  gz.Bytes(), // flushed, never closed
	} {
		r, err := NewVegetaReader(bytes.NewReader(in), "r.json", VegetaConfig{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := readRecords(t, r)
		want := map[string]int{"plain": 2, "gzip": 3}[name]
		if len(got) != want || !errors.Is(r.Truncated(), ErrTruncated) {
			t.Errorf("%s: %d records, Truncated = %v; want %d records and ErrTruncated", name, len(got), r.Truncated(), want)
		}
	}
	if _, err := NewVegetaReader(strings.NewReader(line[:40]), "r.json", VegetaConfig{}); !errors.Is(err, ErrFormat) || !errors.Is(err, ErrTruncated) {
		t.Errorf("a lone partial result: err = %v, want ErrFormat and ErrTruncated", err)
	}
}

// countRecords reads the history at path as far as it goes.
func countRecords(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := NewReader(f, path)
	if err != nil {
		return 0, err
	}
	n := 0
	var rec Record
	for {
		switch err := r.Read(&rec); {
		case err == io.EOF:
			return n, nil
		case err != nil:
			return n, err
		}
		n++
	}
}

// TestWriterFlushesWithinInterval: records reach the file without Flush or
// Close, on the Writer's timer, and the header at once.
func TestWriterFlushesWithinInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl.gz")
	w, err := Create(path, NewHeader(start))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n, err := countRecords(path); err != nil || n != 0 {
		t.Fatalf("after Create: %d records, %v; want a readable header", n, err)
	}
	for i := 1; i <= 3; i++ {
		r := testRecord(i)
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	begin := time.Now()
	for {
		n, err := countRecords(path)
		if err != nil {
			t.Fatal(err)
		}
		if n == 3 {
			break
		}
		// 40 intervals: generous on a loaded machine, yet a Writer that
		// keeps records until Close never gets there.
		if time.Since(begin) > 40*FlushInterval {
			t.Fatalf("%d of 3 records on disk %v after their Write", n, time.Since(begin))
		}
		time.Sleep(FlushInterval / 10)
	}
}

// TestHelperWriter is the child of TestKilledWriter: it writes records to
// the history named by HISTORY_TEST_KILLED_WRITER until it is killed (or a
// minute passes).
func TestHelperWriter(t *testing.T) {
	path := os.Getenv("HISTORY_TEST_KILLED_WRITER")
	if path == "" {
		t.Skip("the child of TestKilledWriter")
	}
	w, err := Create(path, NewHeader(start))
	if err != nil {
		t.Fatal(err)
	}
	for i, end := 1, time.Now().Add(time.Minute); time.Now().Before(end); i++ {
		r := testRecord(i)
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Microsecond)
	}
	t.Fatal("not killed within a minute")
}

// TestKilledWriter kills a process writing a history with SIGKILL and reads
// what it left: the records it wrote up to a fraction of a second before,
// each whole and equal to the one written, and the cut.
func TestKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "history.jsonl.gz")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HISTORY_TEST_KILLED_WRITER="+path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	const want = 500
	begin := time.Now()
	for {
		n, err := countRecords(path)
		if err == nil && n >= want {
			break
		}
		if time.Since(begin) > 30*time.Second {
			t.Fatalf("%d records (%v) on disk after %v; child output:\n%s", n, err, time.Since(begin), out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	killed = true
	if err := cmd.Wait(); err == nil {
		t.Fatalf("child exited cleanly; output:\n%s", out.String())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	got := readRecords(t, r)
	if len(got) < want {
		t.Fatalf("%d records after the kill, want at least the %d seen before it", len(got), want)
	}
	for i, rec := range got {
		if w := testRecord(i + 1); !reflect.DeepEqual(rec, w) {
			t.Fatalf("record %d = %+v, want %+v", i+1, rec, w)
		}
	}
	if err := r.Truncated(); !errors.Is(err, ErrTruncated) {
		t.Errorf("Truncated = %v, want ErrTruncated", err)
	}
	t.Logf("read %d whole records of the killed writer; %v", len(got), r.Truncated())
}

// TestInterruptedHistory: the history of a run cut short ends with its
// interruption; a Reader returns the records before it, then io.EOF, and
// Truncated names the interruption, so a check says the verdict covers
// part of the run. A history closed without it is complete.
func TestInterruptedHistory(t *testing.T) {
	for _, interrupt := range []bool{false, true} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, NewHeader(time.Unix(1_700_000_000, 0)))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			rec := Record{Key: "k", Route: "/a", SentNs: int64(i) * 1e6, ReceivedNs: int64(i)*1e6 + 1e5, Status: 200, Outcome: Admitted}
			if err := w.Write(&rec); err != nil {
				t.Fatal(err)
			}
		}
		if interrupt {
			if err := w.Interrupt("context canceled"); err != nil {
				t.Fatal(err)
			}
			if err := w.Write(&Record{Key: "k", Route: "/a", Status: 200, Outcome: Admitted}); err == nil {
				t.Fatal("Write after Interrupt succeeded")
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		r, err := NewReader(&buf, "h.jsonl.gz")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var rec Record
		for {
			err := r.Read(&rec)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("interrupt %v: Read: %v", interrupt, err)
			}
			n++
		}
		if n != 3 {
			t.Fatalf("interrupt %v: read %d records, want 3", interrupt, n)
		}
		switch got := r.Truncated(); {
		case !interrupt && got != nil:
			t.Fatalf("complete history: Truncated = %v, want nil", got)
		case interrupt && (!errors.Is(got, ErrTruncated) || !strings.Contains(got.Error(), "interrupted (context canceled)")):
			t.Fatalf("interrupted history: Truncated = %v, want ErrTruncated naming the interruption", got)
		}
	}
}
