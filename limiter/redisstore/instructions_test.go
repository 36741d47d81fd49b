package redisstore

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// BenchmarkRedisInstructions counts the instructions redis-server executes
// per decision, under valgrind's callgrind, a figure that the load of a
// shared machine does not move as it moves rates: the store's GCRA program
// deciding one request per FCALL and 20 per FCALL (one run, as the store
// sends a batch of one route's requests) and one per EVALSHA (as a
// script), go-redis/redis_rate v10's script deciding one per EVALSHA, with
// the arguments it sends, and the floor of one decision per FCALL
// (FloorLibrary), alone and given the store's arguments. Keys
// are drawn from 10,000 (redis-benchmark -r), so nearly every key is fresh,
// as those of identities far below their limits are. Each count covers the
// server's whole work for the requests: reading, the script, the reply and
// its share of key expiry. It is skipped unless valgrind, callgrind_control
// (Debian package valgrind) and redis-benchmark (redis-tools) are
// installed, and takes about a minute.
//
//	go test -run '^$' -bench BenchmarkRedisInstructions -benchtime 1x ./limiter/redisstore/
func BenchmarkRedisInstructions(b *testing.B) {
	tools := map[string]string{}
	for _, name := range []string{"valgrind", "callgrind_control", "redis-benchmark"} {
		path, err := exec.LookPath(name)
		if err != nil {
			b.Skipf("%s is not installed (Debian packages valgrind and redis-tools)", name)
		}
		tools[name] = path
	}
	server, err := exec.LookPath(redistest.DefaultBinary)
	if err != nil {
		b.Skip(err)
	}
	port, err := redistest.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	out := filepath.Join(dir, "callgrind.out")
	cmd := exec.Command(tools["valgrind"], "--tool=callgrind", "--callgrind-out-file="+out,
		server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("redis-server under valgrind did not listen within a minute: %v", err)
		}
	}
	client := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, ReadTimeout: time.Minute})
	defer client.Close()
	ctx := context.Background()

	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 1000, Period: time.Second, Burst: 1000}
	st := New(client)
	prog := programOf(l.Algorithm)
	if err := prog.script.Load(ctx, client).Err(); err != nil {
		b.Fatal(err)
	}
	if err := client.FunctionLoadReplace(ctx, prog.library).Err(); err != nil {
		b.Fatal(err)
	}
	if err := client.FunctionLoadReplace(ctx, FloorLibrary).Err(); err != nil {
		b.Fatal(err)
	}
	// A storage key of the store's shape, its 32 hex digits of identity
	// hash drawn by redis-benchmark.
	key := DefaultPrefix + "{00000000000000000000__rand_int__}:" + l.StateID()
	storeArgs := func(batch int, command ...string) []string {
		var calls []*call
		for range batch {
			_, keys, args := st.request("identity", 1, []limiter.Limit{l})
			calls = append(calls, &call{keys: keys, args: args})
		}
		keys, args := st.batch.join(calls)
		argv := append(command, strconv.Itoa(len(keys)))
		for range keys {
			argv = append(argv, key)
		}
		for _, a := range args {
			argv = append(argv, fmt.Sprint(a))
		}
		return argv
	}
	anchor := redisRateArgs(b, client)
	if err := client.ConfigResetStat(ctx).Err(); err != nil { // redis_rate's first EVALSHA met NOSCRIPT
		b.Fatal(err)
	}

	cases := []struct {
		name  string
		argv  []string
		batch int
		evals int
	}{
		{"store_batch1", storeArgs(1, "fcall", prog.name), 1, 3000},
		{"store_batch20", storeArgs(20, "fcall", prog.name), 20, 500},
		{"store_evalsha_batch1", storeArgs(1, "evalsha", prog.script.Hash()), 1, 3000},
		{"redis_rate", anchor, 1, 3000},
		{"floor_batch1", []string{"fcall", FloorFunction, "1", key}, 1, 3000},
		// The floor given the store's arguments, which it ignores: what
		// Redis spends on receiving them.
		{"floor_store_args_batch1", append([]string{"fcall", FloorFunction, "1", key}, storeArgs(1)[2:]...), 1, 3000},
	}
	perDecision := map[string]float64{}
	pid := strconv.Itoa(cmd.Process.Pid)
	for i, c := range cases {
		bench := func(n int) {
			args := append([]string{"-p", strconv.Itoa(port), "-c", "1", "-P", "16", "-r", "10000", "-n", strconv.Itoa(n)}, c.argv...)
			if msg, err := exec.Command(tools["redis-benchmark"], args...).CombinedOutput(); err != nil {
				b.Fatalf("redis-benchmark: %v\n%s", err, msg)
			}
		}
		bench(100) // warm: the script cached, the keyspace filled
		if msg, err := exec.Command(tools["callgrind_control"], "-z", pid).CombinedOutput(); err != nil {
			b.Fatalf("callgrind_control -z: %v\n%s", err, msg)
		}
		bench(c.evals)
		if msg, err := exec.Command(tools["callgrind_control"], "-d", pid).CombinedOutput(); err != nil {
			b.Fatalf("callgrind_control -d: %v\n%s", err, msg)
		}
		total, err := callgrindTotal(fmt.Sprintf("%s.%d", out, i+1))
		if err != nil {
			b.Fatal(err)
		}
		perDecision[c.name] = float64(total) / float64(c.evals*c.batch)
		b.ReportMetric(perDecision[c.name], c.name+"-instructions/decision")
	}
	stats := client.Info(ctx, "commandstats").Val()
	for _, line := range strings.Split(stats, "\n") {
		if (strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_fcall:")) && !strings.Contains(line, "failed_calls=0") {
			b.Fatalf("evaluations failed: %s", line)
		}
	}
	b.ReportMetric(perDecision["redis_rate"]/perDecision["store_batch1"], "x-batch1")
	b.ReportMetric(perDecision["redis_rate"]/perDecision["store_batch20"], "x-batch20")
	b.ReportMetric(perDecision["redis_rate"]/perDecision["store_evalsha_batch1"], "x-evalsha-batch1")
	b.ReportMetric(perDecision["redis_rate"]/perDecision["floor_batch1"], "x-floor-batch1")
}

// redisRateArgs is the EVALSHA redis_rate v10 sends for Allow at 1,000 per
// second, its key drawn by redis-benchmark.
func redisRateArgs(b *testing.B, client *redis.Client) []string {
	var argv []string
	capture := redisHook(func(args []any) {
		if name, _ := args[0].(string); strings.EqualFold(name, "evalsha") && argv == nil {
			for _, a := range args {
				argv = append(argv, fmt.Sprint(a))
			}
		}
	})
	client.AddHook(capture)
	if _, err := redis_rate.NewLimiter(client).Allow(context.Background(), "identity", redis_rate.PerSecond(1000)); err != nil {
		b.Fatal(err)
	}
	if len(argv) < 4 || argv[2] != "1" {
		b.Fatalf("redis_rate sent %q, want EVALSHA with one key", argv)
	}
	argv[3] = "rate:00000000000000000000__rand_int__"
	return argv
}

// redisHook is a go-redis hook that passes every command's arguments to f.
type redisHook func(args []any)

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(cmd.Args())
		return next(ctx, cmd)
	}
}
func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// callgrindTotal is the instruction count of one callgrind dump file.
func callgrindTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "totals:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no totals line", path)
}
