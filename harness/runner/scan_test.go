//go:build unix

package runner

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestScanKeys: the scan records how many keys lack a TTL and the first of
// them; keys with a TTL pass unnoticed.
func TestScanKeys(t *testing.T) {
	s := redistest.StartForTest(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), DisableIdentity: true})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "rl:{a}:x", "1", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := scanKeys(ctx, rdb, start)
	if err != nil {
		t.Fatal(err)
	}
	if got.WithoutTTL != 0 || len(got.Examples) != 0 || got.AtNs <= 0 {
		t.Fatalf("with a TTL: %+v, want no key without one", got)
	}
	var persistent []string
	for i := range runrecord.MaxKeyExamples + 2 {
		k := fmt.Sprintf("rl:{b%02d}:x", i)
		persistent = append(persistent, k)
		if err := rdb.Set(ctx, k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	defer rdb.Del(ctx, persistent...) // the server's cleanup fails the test on a key without a TTL
	got, err = scanKeys(ctx, rdb, start)
	if err != nil {
		t.Fatal(err)
	}
	if want := persistent[:runrecord.MaxKeyExamples]; got.WithoutTTL != len(persistent) || !slices.Equal(got.Examples, want) {
		t.Fatalf("without a TTL: %d keys, examples %q; want %d, %q", got.WithoutTTL, got.Examples, len(persistent), want)
	}
}
