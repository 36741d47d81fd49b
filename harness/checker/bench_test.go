package checker

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/internal/cputime"
	"github.com/rlbench/rlbench/limiter"
)

// benchHistory is n requests over keys keys, decided by the reference
// limiter at about twice the limit's rate, with [sent, received] jittered by
// up to 2 ms and the headers the reference middleware sends.
func benchHistory(b testing.TB, n, keys int, l limiter.Limit) *memSource {
	rng := rand.New(rand.NewPCG(1, 2))
	store := limiter.NewMemoryStore()
	recs := make([]history.Record, n)
	gap := time.Duration(float64(l.Period) / l.Rate / 2 / float64(keys))
	var d time.Duration
	for i := range recs {
		d += time.Duration(rng.Int64N(int64(2*gap) + 1))
		key := "key-" + strconv.Itoa(rng.IntN(keys))
		dec, err := store.AllowNAt(key, 1, epoch.Add(d), l)
		if err != nil {
			b.Fatal(err)
		}
		r := history.Record{
			ID: uint64(i + 1), Key: key, Instance: fmt.Sprint("api-", i%3), Cost: 1,
			SentNs: int64(d) - rng.Int64N(2e6), ReceivedNs: int64(d) + rng.Int64N(2e6), Status: 200,
			Headers: map[string]string{
				"ratelimit-limit":     strconv.FormatInt(dec.Limit.Capacity(), 10),
				"ratelimit-remaining": strconv.FormatInt(dec.Remaining, 10),
			},
		}
		r.IntendedNs = r.SentNs
		if !dec.Allowed {
			r.Status, r.Outcome = 429, history.Rejected
			r.Headers["retry-after"] = strconv.FormatInt(dec.RetryAfterSeconds(), 10)
		}
		recs[i] = r
	}
	var zero int64
	h := history.NewHeader(epoch)
	h.ClockOffsetNs = &zero
	return &memSource{h: h, recs: recs}
}

// BenchmarkCheck1M checks a one-million-record history: load, every model
// sweep and every header check.
func BenchmarkCheck1M(b *testing.B) {
	for _, spec := range []string{"gcra:100/1s,burst=20", "sliding_window_log:100/1s", "fixed_window:100/1s"} {
		l, err := limiter.ParseLimit(spec)
		if err != nil {
			b.Fatal(err)
		}
		const n = 1_000_000
		src := benchHistory(b, n, 1000, l)
		p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(b, spec)}}}}
		b.Run(spec, func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				src.next = 0
				rep, err := Check(src, p)
				if err != nil {
					b.Fatal(err)
				}
				if v := rep.Verdict(); v != Pass {
					b.Fatalf("verdict %s: %+v", v, rep.Results)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(peak)/(1<<20), "MiB-heap")
		})
	}
}

// genSource streams a reference-limiter history without holding it: what
// BenchmarkCheckFile writes to its files.
type genSource struct {
	n, i  int
	keys  []string
	l     limiter.Limit
	store *limiter.MemoryStore
	rng   *rand.Rand
	gap   time.Duration
	d     time.Duration
	hdr   history.Header
}

func newGenSource(n, keys int, l limiter.Limit) *genSource {
	g := &genSource{n: n, l: l, store: limiter.NewMemoryStore(), rng: rand.New(rand.NewPCG(3, 4)), hdr: history.NewHeader(epoch)}
	for k := range keys {
		g.keys = append(g.keys, "key-"+strconv.Itoa(k))
	}
	g.gap = time.Duration(float64(l.Period) / l.Rate / 2 / float64(keys))
	var zero int64
	g.hdr.ClockOffsetNs = &zero
	return g
}

func (g *genSource) Header() history.Header { return g.hdr }

func (g *genSource) Read(r *history.Record) error {
	if g.i == g.n {
		return io.EOF
	}
	g.i++
	g.d += time.Duration(g.rng.Int64N(int64(2*g.gap) + 1))
	key := g.keys[g.rng.IntN(len(g.keys))]
	dec, err := g.store.AllowNAt(key, 1, epoch.Add(g.d), g.l)
	if err != nil {
		return err
	}
	headers := r.Headers
	if headers == nil {
		headers = make(map[string]string, 3)
	}
	clear(headers)
	*r = history.Record{ID: uint64(g.i), Key: key, Cost: 1, Status: 200, Headers: headers,
		SentNs: int64(g.d) - g.rng.Int64N(2e6), ReceivedNs: int64(g.d) + g.rng.Int64N(2e6)}
	headers["ratelimit-remaining"] = strconv.FormatInt(dec.Remaining, 10)
	if !dec.Allowed {
		r.Status, r.Outcome = 429, history.Rejected
		headers["retry-after"] = strconv.FormatInt(dec.RetryAfterSeconds(), 10)
	}
	return nil
}

// benchRecords lists the history sizes BenchmarkCheckFile checks: 1M by
// default; 10M (about 250 MB of history, generated once, and 10 s or so a
// check) and 100M (2.5 GB, minutes) when asked:
//
//	go test -run '^$' -bench CheckFile ./harness/checker/ -records=1M,10M
var benchRecords = flag.String("records", "1M", "history sizes BenchmarkCheckFile checks, comma-separated: 1M, 10M, 100M")

// BenchmarkCheckFile checks a history file of records decided by the
// reference limiter (GCRA, 100/s with a burst of 20, 10,000 keys, the
// headers the reference middleware sends), gzip compressed as `rlbench
// run` writes it: reading, decoding and checking, as `rlbench check`
// does. The file is generated once, outside the timed loop, into
// $TMPDIR/rlbench-bench. It reports records checked a second and the peak
// of the heap in use and of the process's resident set (VmHWM, reset before
// each size where the kernel allows it).
func BenchmarkCheckFile(b *testing.B) {
	l, err := limiter.ParseLimit("gcra:100/1s,burst=20")
	if err != nil {
		b.Fatal(err)
	}
	p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(b, l.Spec())}}}}
	for _, size := range strings.Split(*benchRecords, ",") {
		n, ok := map[string]int{"1M": 1_000_000, "10M": 10_000_000, "100M": 100_000_000}[strings.TrimSpace(size)]
		if !ok {
			b.Fatalf("-records %q: want sizes among 1M, 10M and 100M", size)
		}
		path := benchFile(b, n, 10_000, l)
		b.Run("records="+strings.TrimSpace(size), func(b *testing.B) {
			resetPeakRSS()
			peak := sampleHeap()
			cpu0 := cputime.Process()
			for b.Loop() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				src, err := history.NewReader(f, path)
				if err != nil {
					b.Fatal(err)
				}
				src.ReadAhead(runtime.GOMAXPROCS(0)) // as rlbench check reads
				rep, err := Check(src, p)
				src.Close()
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
				if v := rep.Verdict(); v != Pass || rep.Records != n {
					b.Fatalf("verdict %s on %d records", v, rep.Records)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric((cputime.Process()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peak())/(1<<20), "MiB-peak-heap")
			if rss := peakRSS(); rss > 0 {
				b.ReportMetric(float64(rss)/(1<<20), "MiB-peak-RSS")
			}
		})
	}
}

// benchFile returns the path of a history of n records over keys keys
// decided under l, writing it first if it is not there yet.
func benchFile(b *testing.B, n, keys int, l limiter.Limit) string {
	dir := filepath.Join(os.TempDir(), "rlbench-bench")
	path := filepath.Join(dir, fmt.Sprintf("gcra-%d-keys-%d-v1.jsonl.gz", n, keys))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, "partial-*")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	buf := bufio.NewWriterSize(tmp, 1<<20)
	src := newGenSource(n, keys, l)
	w, err := history.NewWriter(buf, src.Header())
	if err != nil {
		b.Fatal(err)
	}
	var rec history.Record
	for {
		err := src.Read(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Write(&rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := buf.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		b.Fatal(err)
	}
	return path
}

// sampleHeap samples the heap in use (runtime/metrics, which unlike
// runtime.ReadMemStats does not stop the world) every 20 ms until the
// returned function is called, which returns the peak.
func sampleHeap() func() uint64 {
	var peak uint64
	stop, done := make(chan struct{}), make(chan struct{})
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	go func() {
		defer close(done)
		for {
			metrics.Read(samples)
			peak = max(peak, samples[0].Value.Uint64()+samples[1].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak
	}
}

// resetPeakRSS resets the process's peak resident set (Linux's
// /proc/self/clear_refs, value 5), where allowed.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set in bytes (VmHWM), 0 where
// /proc does not say.
func peakRSS() uint64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
