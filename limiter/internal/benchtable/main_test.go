package main

import (
	"bytes"
	"io"
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
BenchmarkVersusRedisRate/batched/gcra-2  100  30000 ns/op  40000 redis_rate-decisions/s  160000 store-decisions/s  4.0 x
BenchmarkVersusRedisRate/batched/gcra-2  100  30000 ns/op  50000 redis_rate-decisions/s  150000 store-decisions/s  3.0 x
BenchmarkVersusRedisRate/batched/gcra-2  100  30000 ns/op  45000 redis_rate-decisions/s  200000 store-decisions/s  4.4 x
BenchmarkOverheadVersusRedisRate-2  5000  1000000 ns/op  0.20 reference-p50-ms  0.25 redis_rate-p50-ms  1.2 reference-p99-ms  1.0 redis_rate-p99-ms
PASS
`

func TestTable(t *testing.T) {
	results, order, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(order), 6; got != want {
		t.Fatalf("%d benchmarks, want %d: %v", got, want, order)
	}
	var out bytes.Buffer
	write(&out, results, order, []string{
		"MemoryStore/*/keys=10000 / AnchorXTimeRate/keys=10000",
		"Redis/store=batched/*/10kkeys / Redis/anchor=redis_rate/10kkeys", // * stops at a slash
		"no separator here",
		"VersusRedisRate/batched/*:store-decisions/s / VersusRedisRate/batched/*:redis_rate-decisions/s", // two metrics of one benchmark
		"OverheadVersusRedisRate:reference-p50-ms / OverheadVersusRedisRate:redis_rate-p50-ms",
		"OverheadVersusRedisRate:reference-p99-ms / OverheadVersusRedisRate:redis_rate-p99-ms",
		"Nothing/* / AnchorXTimeRate/keys=10000",
	})
	for _, want := range []string{
		"| MemoryStore/gcra/keys=10000 | 3 | 110.0 | 0.00 |  |",                                                        // the median of three runs
		"| MemoryStore/gcra/keys=10000 | AnchorXTimeRate/keys=10000 | ns/op | 110.0 | 200.0 | 0.55 |",                  // faster: below 1
		"| Redis/store=batched/gcra/10kkeys | Redis/anchor=redis_rate/10kkeys | decisions/s | 100000 | 50000 | 2.00 |", // throughput: above 1
		"bad spec",
		"| VersusRedisRate/batched/gcra | VersusRedisRate/batched/gcra | store-decisions/s / redis_rate-decisions/s | 160000 | 45000 | 3.56 |", // medians
		"| OverheadVersusRedisRate | OverheadVersusRedisRate | reference-p50-ms / redis_rate-p50-ms | 0.20 | 0.25 | 0.80 |",
		"| OverheadVersusRedisRate | OverheadVersusRedisRate | reference-p99-ms / redis_rate-p99-ms | 1.20 | 1.00 | 1.20 |",
		"| Nothing/* | AnchorXTimeRate/keys=10000 (not run) |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRatioGoals(t *testing.T) {
	results, order, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec, want string
	}{
		{"VersusRedisRate/batched/*:store-decisions/s / VersusRedisRate/batched/*:redis_rate-decisions/s >= 4",
			"| 160000 | 45000 | 3.56 | >= 4.00 | NO |"},
		{"VersusRedisRate/batched/*:store-decisions/s / VersusRedisRate/batched/*:redis_rate-decisions/s >= 3.5",
			"| 3.56 | >= 3.50 | yes |"},
		{"OverheadVersusRedisRate:reference-p50-ms / OverheadVersusRedisRate:redis_rate-p50-ms <= 0.6",
			"| 0.20 | 0.25 | 0.80 | <= 0.60 | NO |"},
		{"OverheadVersusRedisRate:reference-p99-ms / OverheadVersusRedisRate:redis_rate-p99-ms <= 1.2",
			"| 1.20 | <= 1.20 | yes |"},
		{"MemoryStore/*/keys=10000 / AnchorXTimeRate/keys=10000", "| 0.55 |  |  |"}, // no goal, no verdict
		{"Nothing/* / AnchorXTimeRate/keys=10000 >= 1", "(not run) | | | | | >= 1.00 | |"},
		{"VersusRedisRate/batched/* / X >= four", "bad spec"},
	} {
		var out bytes.Buffer
		write(&out, results, order, []string{tc.spec})
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: table lacks %q:\n%s", tc.spec, tc.want, out.String())
		}
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	if _, _, err := parse(strings.NewReader("BenchmarkX-2 10 fast ns/op\n")); err == nil {
		t.Fatal("a non-numeric value parsed")
	}
}

func TestGoals(t *testing.T) {
	results, _, err := parse(strings.NewReader(sample + `BenchmarkCheckFile/records=10M-2  1  9000000000 ns/op  800 MiB-peak-heap
BenchmarkCheckFile/records=10M-2  1  12000000000 ns/op  700 MiB-peak-heap
BenchmarkCheckFile/records=10M-2  1  9500000000 ns/op  900 MiB-peak-heap
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		goal, want string
	}{
		{"CheckFile/records=10M:ns/op <= 10e9", "| 9500000000 | 10000000000 | yes |"},
		{"CheckFile/records=10M:ns/op <= 9e9", "| 9500000000 | 9000000000 | NO |"},
		{"CheckFile/records=10M:MiB-peak-heap <= 1024", "| 800.0 | 1024 | yes |"},
		{"MemoryStore/gcra/keys=10000:ns/op >= 120", "| 110.0 | 120.0 | NO |"},
		{"CheckFile/records=100M:ns/op <= 200e9", "| (not run) |"},
	} {
		var out bytes.Buffer
		if err := writeGoals(&out, results, []string{tc.goal}); err != nil {
			t.Fatalf("%s: %v", tc.goal, err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s:\n%s\nwant a row ending %q", tc.goal, out.String(), tc.want)
		}
	}
	for _, bad := range []string{"CheckFile/records=10M <= 1", "CheckFile/records=10M:ns/op < 1", "CheckFile/records=10M:ns/op <= ten"} {
		if err := writeGoals(io.Discard, results, []string{bad}); err == nil {
			t.Errorf("-goal %q: no error", bad)
		}
	}
}
