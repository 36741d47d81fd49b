package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkMemoryStore/gcra/keys=10000-2   1000   120.0 ns/op   0 B/op   0 allocs/op
BenchmarkMemoryStore/gcra/keys=10000-2   1000   100.0 ns/op   0 B/op   0 allocs/op
BenchmarkMemoryStore/gcra/keys=10000-2   1000   110.0 ns/op   0 B/op   0 allocs/op
BenchmarkAnchorXTimeRate/keys=10000-2    1000   200.0 ns/op   0 B/op   0 allocs/op
BenchmarkRedis/anchor=redis_rate/10kkeys-2   10   20000 ns/op   50000 decisions/s   600 B/op   21 allocs/op
BenchmarkRedis/store=batched/gcra/10kkeys-2  10   10000 ns/op   100000 decisions/s  400 B/op    8 allocs/op
PASS
`

func TestTable(t *testing.T) {
	results, order, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(order), 4; got != want {
		t.Fatalf("%d benchmarks, want %d: %v", got, want, order)
	}
	var out bytes.Buffer
	write(&out, results, order, []string{
		"MemoryStore/*/keys=10000 / AnchorXTimeRate/keys=10000",
		"Redis/store=batched/*/10kkeys / Redis/anchor=redis_rate/10kkeys", // * stops at a slash
		"no separator here",
	})
	for _, want := range []string{
		"| MemoryStore/gcra/keys=10000 | 3 | 110.0 | 0.00 |  |",                                                        // the median of three runs
		"| MemoryStore/gcra/keys=10000 | AnchorXTimeRate/keys=10000 | ns/op | 110.0 | 200.0 | 0.55 |",                  // faster: below 1
		"| Redis/store=batched/gcra/10kkeys | Redis/anchor=redis_rate/10kkeys | decisions/s | 100000 | 50000 | 2.00 |", // throughput: above 1
		"bad spec",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	if _, _, err := parse(strings.NewReader("BenchmarkX-2 10 fast ns/op\n")); err == nil {
		t.Fatal("a non-numeric value parsed")
	}
}
