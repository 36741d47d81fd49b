package reports

import (
	"io"
	"testing"
	"time"
)

// BenchmarkRenderMillion loads and renders a synthetic run of one million
// requests (1000 keys, four instances, a fault window): the whole of
// `rlbench report` but the file write. The history is streamed once.
func BenchmarkRenderMillion(b *testing.B) {
	dir := b.TempDir()
	sc := synthScenario{
		name: "million", desc: "One million requests on 1000 keys.", seed: 3, duration: 100 * time.Second,
		instances: []string{"instance-1", "instance-2", "instance-3", "instance-4"},
		limit:     "gcra:5/1s,burst=10", route: "/v1/search", baseline: "/v1/baseline", keys: 1000, rate: 9000, baseRate: 1000,
	}
	writeSynthRun(b, dir, []synthScenario{sc})
	b.ReportAllocs()
	var records int
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
	if records < 900_000 {
		b.Fatalf("the run has %d records, want about a million", records)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(records), "ns/record")
}
