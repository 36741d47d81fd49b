package history

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// ReadAhead reads what Read reads, record for record and error for error,
// across batch boundaries: a whole history, one cut inside a line, one
// that an interruption ends, and one with a malformed record.
func TestReadAheadReadsAsRead(t *testing.T) {
	var b strings.Builder
	b.WriteString(testHeader + "\n")
	for i := range 1500 {
		fmt.Fprintf(&b, `{"key":"k%d","sent_ns":%d,"received_ns":%d,"status":200,"outcome":"admitted","headers":{"ratelimit-remaining":"%d"}}`+"\n", i%7, i, i+5, i%5)
		if i == 600 {
			b.WriteString("\n") // a blank line: numbering goes on
		}
	}
	whole := b.String()
	bad := strings.Replace(whole, `"sent_ns":700,`, `"sent_ns":"x",`, 1)
	interrupted := whole[:strings.Index(whole, `{"key":"k3","sent_ns":1060`)] + `{"interrupted":"SIGINT"}` + "\n" + `{"key":"late","sent_ns":1,"received_ns":2}` + "\n"
	for name, data := range map[string][]byte{
		"whole":        []byte(whole),
		"gzip":         gzipped(whole),
		"cut":          []byte(whole[:len(whole)-30]),
		"gzip cut":     gzipped(whole)[:len(gzipped(whole))/2],
		"malformed":    []byte(bad),
		"interrupted":  []byte(interrupted),
		"header alone": []byte(testHeader + "\n"),
	} {
		t.Run(name, func(t *testing.T) {
			plain, err := NewReader(bytes.NewReader(data), "h")
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := readSource(t, plain)
			for _, workers := range []int{1, 3} {
				ahead, err := NewReader(bytes.NewReader(data), "h")
				if err != nil {
					t.Fatal(err)
				}
				ahead.ReadAhead(workers)
				got, gotErr := readSource(t, ahead)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%d workers: %d records, want %d", workers, len(got), len(want))
				}
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("%d workers: error %v, want %v", workers, gotErr, wantErr)
				}
				if g, w := fmt.Sprint(ahead.Truncated()), fmt.Sprint(plain.Truncated()); g != w {
					t.Errorf("%d workers: Truncated %s, want %s", workers, g, w)
				}
				if g, w := ahead.Line(), plain.Line(); g != w {
					t.Errorf("%d workers: Line %d, want %d", workers, g, w)
				}
				ahead.Close()
			}
		})
	}
}

// Close stops the goroutines of a Reader read only in part.
func TestReadAheadClosePartway(t *testing.T) {
	var b strings.Builder
	b.WriteString(testHeader + "\n")
	for i := range 5000 {
		fmt.Fprintf(&b, `{"key":"k","sent_ns":%d,"received_ns":%d}`+"\n", i, i)
	}
	r, err := NewReader(strings.NewReader(b.String()), "h")
	if err != nil {
		t.Fatal(err)
	}
	r.ReadAhead(2)
	var rec Record
	if err := r.Read(&rec); err != nil || rec.SentNs != 0 {
		t.Fatalf("Read = %+v, %v", rec, err)
	}
	r.Close()
	r.Close()
}
