//go:build unix

package redistest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// skipWithoutFaketime skips t when libfaketime is missing, outside CI.
func skipWithoutFaketime(t *testing.T) {
	t.Helper()
	if err := FaketimeAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// TestFakeClockSteps steps a running server's clock back and forth and
// reads it with TIME: each reading is the host's clock plus the offset.
func TestFakeClockSteps(t *testing.T) {
	skipWithoutFaketime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{FakeClock: true, ClockOffset: 3 * time.Second})
	if err != nil {
		skipOrFail(t, err)
	}
	defer s.Stop()
	c := newClient(t, s.Addr())
	for _, offset := range []time.Duration{3 * time.Second, -2 * time.Second, 1500 * time.Millisecond, 0} {
		if offset != 3*time.Second {
			if err := s.SetClockOffset(offset); err != nil {
				t.Fatal(err)
			}
		}
		before := time.Now()
		got, err := c.Time(ctx).Result()
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		// TIME is in whole microseconds; allow that and the round trip.
		if lo, hi := before.Add(offset).Add(-time.Millisecond), after.Add(offset).Add(time.Millisecond); got.Before(lo) || got.After(hi) {
			t.Errorf("offset %v: TIME = %v, want within [%v, %v]", offset, got, lo, hi)
		}
		if got, want := s.ClockOffset(), offset; got != want {
			t.Errorf("ClockOffset = %v, want %v", got, want)
		}
	}
	// Key expiry follows the stepped clock: 2 s ahead expires a 1 s key.
	if err := c.Set(ctx, "k", "v", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetClockOffset(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS k after the clock jumped past its expiry = %d, %v; want 0", n, err)
	}
}

func TestSetClockOffsetWithoutFakeClock(t *testing.T) {
	s := StartForTest(t)
	if err := s.SetClockOffset(time.Second); err == nil {
		t.Fatal("SetClockOffset on a server without a fake clock succeeded")
	}
}

// TestSentinelFailover pauses the master of a Sentinel group: the Sentinel
// promotes the replica, and once resumed the old master follows it; the data written before the pause survives on the new master.
func TestSentinelFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, err := StartSentinel(ctx, SentinelOptions{})
	if err != nil {
		skipOrFail(t, err)
	}
	defer g.Stop()
	old, err := g.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := old, g.Master().Addr(); got != want {
		t.Fatalf("master = %s, want %s", got, want)
	}
	c := newClient(t, old)
	if err := c.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, 1, time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := g.Master().Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	addr, lastOld, err := g.AwaitMaster(ctx, old, 20*time.Millisecond)
	if err != nil {
		t.Fatalf("%v; sentinel log:\n%s", err, g.Sentinel().Logs())
	}
	if got, want := addr, g.Replica().Addr(); got != want {
		t.Errorf("new master = %s, want the replica %s", got, want)
	}
	if took := lastOld.Sub(paused); took < SentinelDownAfter-50*time.Millisecond {
		t.Errorf("the sentinel named the old master only %v after the pause, before down-after %v", took, SentinelDownAfter)
	}
	if err := g.Master().Resume(); err != nil {
		t.Fatal(err)
	}
	if err := Follow(ctx, g.Master(), addr); err != nil {
		t.Fatal(err)
	}
	if err := AwaitRole(ctx, g.Master(), "slave", 20*time.Millisecond); err != nil {
		t.Fatalf("%v; sentinel log:\n%s", err, g.Sentinel().Logs())
	}
	nc := newClient(t, addr)
	if got, err := nc.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k on the new master = %q, %v; want v", got, err)
	}
	// The demoted master refuses writes.
	if err := c.Set(ctx, "k2", "v", time.Minute).Err(); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("SET on the demoted master = %v, want a READONLY error", err)
	}
}
