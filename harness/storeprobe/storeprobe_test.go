package storeprobe

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// startRedis starts a redis-server on a free loopback port and stops it at
// cleanup. It skips t when redis-server is missing (fails it in CI).
func startRedis(t *testing.T) *redistest.Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(redistest.ErrNotInstalled)
		}
		t.Skip(redistest.ErrNotInstalled)
	}
	s, err := redistest.Start(context.Background(), redistest.Options{Args: []string{"--enable-debug-command", "local"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// TestProbeRecordsStalls runs a probe against a real redis-server that is
// left alone, stopped (SIGSTOP, as a starved or paused host leaves it),
// kept busy by DEBUG SLEEP, or killed and restarted, and checks that the
// stalls it records cover the store's trouble and nothing else.
func TestProbeRecordsStalls(t *testing.T) {
	const timeout = 100 * time.Millisecond // twice the scenarios' store timeout: room for a busy test host
	const trouble = 250 * time.Millisecond
	tests := []struct {
		name string
		// act troubles s for about trouble, if at all, calling begin just
		// before, and returns false when it did nothing.
		act func(t *testing.T, s *redistest.Server, begin func()) bool
	}{
		{"healthy", func(_ *testing.T, _ *redistest.Server, begin func()) bool { begin(); time.Sleep(trouble); return false }},
		{"stopped", func(t *testing.T, s *redistest.Server, begin func()) bool {
			begin()
			if err := s.Pause(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(trouble)
			if err := s.Resume(); err != nil {
				t.Fatal(err)
			}
			return true
		}},
		{"debug sleep", func(t *testing.T, s *redistest.Server, begin func()) bool {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), DisableIdentity: true, ReadTimeout: 5 * time.Second})
			defer c.Close()
			// Connected first: dialling on a busy host is no part of the trouble.
			if err := c.Ping(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			begin()
			if err := c.Do(context.Background(), "DEBUG", "SLEEP", trouble.Seconds()).Err(); err != nil {
				t.Skipf("DEBUG SLEEP: %v (enable-debug-command off?)", err)
			}
			return true
		}},
		{"killed and restarted", func(t *testing.T, s *redistest.Server, begin func()) bool {
			begin()
			if err := s.Kill(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(trouble)
			if err := s.Restart(context.Background()); err != nil {
				t.Fatal(err)
			}
			return true
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startRedis(t)
			start := time.Now()
			p, err := Start(context.Background(), s.URL(), start, timeout, 0)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // a few probes answered in time first
			var from int64
			troubled := tc.act(t, s, func() { from = time.Since(start).Nanoseconds() })
			to := time.Since(start).Nanoseconds()
			time.Sleep(100 * time.Millisecond)
			stalls, probes := p.Stop()
			if probes < 10 {
				t.Errorf("%d probes in about %v, want at least 10", probes, time.Duration(to)+100*time.Millisecond)
			}
			if !troubled {
				if len(stalls) != 0 {
					t.Errorf("stalls %+v on a healthy server", stalls)
				}
				return
			}
			// The trouble began after from and ended before to; the stall
			// must hold everything from its start to the last moment a
			// request sent then could still wait beyond the timeout.
			covered := false
			for _, w := range stalls {
				if len(w.Misses) == 0 || w.Misses[0][0] < w.FromNs || w.Misses[len(w.Misses)-1][1] > w.ToNs {
					t.Errorf("stall %+v: want misses within it", w)
				}
				// A probe answered in time just after from may have been
				// decided before the trouble reached the server: the stall's
				// start is known to within one probe interval.
				if w.FromNs <= from+int64(DefaultInterval+time.Millisecond) && w.ToNs >= to-int64(timeout) {
					covered = true
				}
			}
			if !covered {
				t.Errorf("stalls %+v do not cover the trouble from %v to %v", stalls, time.Duration(from), time.Duration(to))
			}
		})
	}
}

// TestProbeStopsInAStall: Stop returns at once while the store is stopped,
// closing the stall at that moment rather than waiting out the probe's
// read timeout.
func TestProbeStopsInAStall(t *testing.T) {
	s := startRedis(t)
	start := time.Now()
	p, err := Start(context.Background(), s.URL(), start, 50*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Resume() }()
	from := time.Since(start).Nanoseconds()
	time.Sleep(200 * time.Millisecond)
	stopping := time.Now()
	stalls, _ := p.Stop()
	if took := time.Since(stopping); took >= readTimeout/2 {
		t.Errorf("Stop took %v in a stall, want well under the read timeout %v", took, readTimeout)
	}
	if len(stalls) == 0 || stalls[len(stalls)-1].FromNs > from || stalls[len(stalls)-1].ToNs < from+int64(150*time.Millisecond) {
		t.Errorf("stalls %+v, want the last from before %v to at least 150 ms later", stalls, time.Duration(from))
	}
}

// TestOutside: the parts of stalls outside the declared faults that made
// the store unavailable, kept where a probe missed for another cause.
func TestOutside(t *testing.T) {
	window := func(from, to int64) runrecord.FaultWindow {
		return runrecord.FaultWindow{Kind: runrecord.KindStoreStall, FromNs: from, ToNs: to, Unavailable: true, Observed: true}
	}
	pause := []runrecord.FaultWindow{{Kind: "redis_pause", FromNs: 300, ToNs: 500, Unavailable: true}}
	tests := []struct {
		name     string
		stalls   []Stall
		declared []runrecord.FaultWindow
		want     []runrecord.FaultWindow
	}{
		{"none", nil, pause, nil},
		{"apart from the fault", []Stall{{100, 150, [][2]int64{{110, 140}}}}, pause, []runrecord.FaultWindow{window(100, 150)}},
		{"inside the fault", []Stall{{320, 480, [][2]int64{{330, 470}}}}, pause, nil},
		{"widened across the fault's start", []Stall{{250, 400, [][2]int64{{260, 390}}}}, pause, nil},
		{"widened across the fault's end", []Stall{{450, 520, [][2]int64{{460, 505}}}}, pause, nil},
		{"began before the fault", []Stall{{200, 400, [][2]int64{{210, 270}, {280, 390}}}}, pause, []runrecord.FaultWindow{window(200, 300)}},
		{"outlasted the fault", []Stall{{250, 600, [][2]int64{{260, 320}, {510, 590}}}}, pause, []runrecord.FaultWindow{window(500, 600)}},
		{
			"overlapping stalls merged",
			[]Stall{{100, 200, [][2]int64{{110, 190}}}, {150, 250, [][2]int64{{160, 240}}}, {250, 260, [][2]int64{{251, 259}}}},
			nil, []runrecord.FaultWindow{window(100, 260)},
		},
		{
			"a fault that leaves the store answering",
			[]Stall{{320, 480, [][2]int64{{330, 470}}}},
			[]runrecord.FaultWindow{{Kind: "redis_latency", FromNs: 300, ToNs: 500}},
			[]runrecord.FaultWindow{window(320, 480)},
		},
		{
			"an instance's fault",
			[]Stall{{320, 480, [][2]int64{{330, 470}}}},
			[]runrecord.FaultWindow{{Kind: "instance_kill", FromNs: 300, ToNs: 500, Unavailable: true, Instance: "api-1"}},
			[]runrecord.FaultWindow{window(320, 480)},
		},
		{
			"a fault never healed",
			[]Stall{{250, 900, [][2]int64{{260, 280}, {310, 890}}}},
			[]runrecord.FaultWindow{{Kind: "redis_kill", FromNs: 300, Unavailable: true}},
			[]runrecord.FaultWindow{window(250, 300)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Outside(tc.stalls, tc.declared); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Outside = %+v, want %+v", got, tc.want)
			}
		})
	}
}
