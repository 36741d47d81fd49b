package redisstore

import (
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// BenchmarkRedisCeiling measures what the redis-server itself can decide:
// redis-benchmark (Debian redis-tools) sends FCALL of the store's own
// GCRA program, as the store calls it on Redis 7, pipelined 64 deep on 2 connections, each evaluation deciding
// batch gcra requests over 10,000 random keys, as the store sends them. It
// reports decisions/s (requests/s × batch): with a batch of 1, the most
// one-decision evaluations a server takes, which the batched store may
// exceed; with DefaultMaxBatch, the server's ceiling for the store's
// largest batches. b.N is the number of decisions. It is skipped when
// redis-benchmark is not installed.
//
//	go test -run '^$' -bench BenchmarkRedisCeiling -benchtime 1000000x ./limiter/redisstore/
func BenchmarkRedisCeiling(b *testing.B) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Skip("redis-benchmark is not installed (Debian package redis-tools)")
	}
	srv := redistest.StartForTest(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer client.Close()
	ctx := context.Background()
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1000, Period: time.Second, Burst: 1000}
	prog := programOf(l.Algorithm)
	if err := client.FunctionLoadReplace(ctx, prog.library).Err(); err != nil {
		b.Fatal(err)
	}
	host, port, _ := strings.Cut(srv.Addr(), ":")
	spec := fmt.Sprintf("%s %d %d", l.Algorithm, l.IntervalMicros(), l.Capacity())
	for _, batch := range []int{1, DefaultMaxBatch} {
		b.Run(fmt.Sprintf("fcall-batch=%d", batch), func(b *testing.B) {
			args := []string{"-h", host, "-p", port, "-c", "2", "-P", "64", "-r", "10000", "--csv",
				"-n", strconv.Itoa(max(b.N/batch, 100)), "fcall", prog.name, strconv.Itoa(batch)}
			for range batch {
				args = append(args, "ceiling:{__rand_int__}:"+l.StateID())
			}
			// The header (no TTL slack, Redis TIME), then one run of batch
			// requests of cost 1 under the one limit, as the store sends a
			// batch of one route's requests.
			args = append(args, "0", "", strconv.Itoa(batch), "1", "1", spec)
			if err := client.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			out, err := exec.Command(bin, args...).Output()
			b.StopTimer()
			if err != nil {
				b.Fatalf("redis-benchmark: %v\n%s", err, out)
			}
			rps, err := csvRate(string(out))
			if err != nil {
				b.Fatal(err)
			}
			// redis-benchmark counts errors as answers: make sure every
			// evaluation decided.
			stats := client.Info(ctx, "commandstats").Val()
			_, line, _ := strings.Cut(stats, "cmdstat_fcall:")
			line, _, _ = strings.Cut(line, "\n")
			if !strings.Contains(line, "failed_calls=0") {
				b.Fatalf("the evaluations failed: cmdstat_fcall:%s", line)
			}
			b.ReportMetric(rps*float64(batch), "decisions/s")
		})
	}
}

// csvRate is the requests/s of the one test in redis-benchmark's --csv output.
func csvRate(out string) (float64, error) {
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 2 || len(rows[1]) < 2 {
		return 0, fmt.Errorf("redis-benchmark output %q: want a header and one CSV row", out)
	}
	return strconv.ParseFloat(rows[1][1], 64)
}
