package reports

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/cputime"
)

// renderRequests lists the run sizes BenchmarkRender renders: 1M by
// default, 10M when asked (a few minutes to write the run, once):
//
//	go test -run '^$' -bench Render ./reports/ -requests=1M,10M
var renderRequests = flag.String("requests", "1M", "run sizes BenchmarkRender renders, comma-separated: 1M, 10M")

// BenchmarkRender loads and renders a synthetic run of each size of
// -requests (a tenth of it on a baseline route, 1000 keys a million
// requests, four instances, a fault window): the whole of `rlbench report`
// but the file write, with charts of displayBins bins and proof tables of
// maxProofRows rows whatever the size. Each run is written once, outside
// the timed loop, into $TMPDIR/rlbench-bench, and reused after. Besides
// the wall time it reports the CPU seconds a render took (cpu-s/op), which
// a busy machine inflates less.
func BenchmarkRender(b *testing.B) {
	for _, size := range strings.Split(*renderRequests, ",") {
		m, ok := map[string]int{"1M": 1, "10M": 10}[strings.TrimSpace(size)]
		if !ok {
			b.Fatalf("-requests %q: want sizes among 1M and 10M", size)
		}
		sc := synthScenario{
			name: "run", desc: "A synthetic run.", seed: 3, duration: 100 * time.Second,
			instances: []string{"instance-1", "instance-2", "instance-3", "instance-4"},
			limit:     "gcra:5/1s,burst=10", route: "/v1/search", baseline: "/v1/baseline", keys: 1000 * m, rate: 9000 * float64(m), baseRate: 1000 * float64(m),
		}
		dir := benchRun(b, "render-"+strings.TrimSpace(size), sc)
		b.Run("requests="+strings.TrimSpace(size), func(b *testing.B) {
			var records int
			cpu0 := cputime.Process()
			for b.Loop() {
				run, err := LoadRun(dir)
				if err != nil {
					b.Fatal(err)
				}
				if err := WriteHTML(io.Discard, run); err != nil {
					b.Fatal(err)
				}
				records = run.Scenarios[0].digest.records
			}
			if records < m*900_000 {
				b.Fatalf("the run has %d records, want about %d million", records, m)
			}
			b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric((cputime.Process()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// benchRun returns the directory of the synthetic run of sc named name in
// $TMPDIR/rlbench-bench, writing it first if it is not there yet. The name
// carries a version: bump it when writeSynthRun or sc changes.
func benchRun(b *testing.B, name string, sc synthScenario) string {
	base := filepath.Join(os.TempDir(), "rlbench-bench")
	dir := filepath.Join(base, name+"-v1")
	if _, err := os.Stat(filepath.Join(dir, SummaryFile)); err == nil {
		return dir
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		b.Fatal(err)
	}
	tmp, err := os.MkdirTemp(base, "partial-*")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	writeSynthRun(b, tmp, []synthScenario{sc})
	if err := os.Rename(tmp, dir); err != nil {
		b.Fatal(err)
	}
	return dir
}
