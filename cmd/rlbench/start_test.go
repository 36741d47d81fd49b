//go:build unix

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter/redistest"
)

// TestStartFlagsUsage: the start and clock flags refuse what cannot work
// with exit 2, naming the flag and the fix.
func TestStartFlagsUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"barrier and start-at", []string{"--barrier", "--shard", "0/2", "--run-id", "0a1b2c3d", "--start-at", "+5s", "quickstart"}, "--barrier and --start-at each fix the start: give one"},
		{"barrier without shard", []string{"--barrier", "--run-id", "0a1b2c3d", "quickstart"}, "--barrier: a barrier is where the shards of a sharded run meet: give each its --shard I/N"},
		{"lead without barrier", []string{"--barrier-lead", "1s", "quickstart"}, "add --barrier"},
		{"tolerance alone", []string{"--start-tolerance", "10ms", "quickstart"}, "add one"},
		{"zero tolerance", []string{"--start-at", "+5s", "--start-tolerance", "0s", "quickstart"}, "--start-tolerance 0s: want a positive duration"},
		{"zero lead", []string{"--barrier", "--shard", "0/2", "--run-id", "0a1b2c3d", "--barrier-lead", "0s", "quickstart"}, "--barrier-lead 0s: want a positive duration"},
		{"negative floor", []string{"--clock-uncertainty-floor", "-1ms", "quickstart"}, "--clock-uncertainty-floor -1ms"},
		{"not a time", []string{"--start-at", "noon", "quickstart"}, `--start-at "noon": want an RFC 3339 time with fractional seconds`},
		{"no fraction, no zone", []string{"--start-at", "2025-06-01T12:00:00", "quickstart"}, "want an RFC 3339 time"},
		{"relative zero", []string{"--start-at", "+0s", "quickstart"}, `--start-at "+0s": 0s is not a positive duration`},
		{"relative start of a shard", []string{"--shard", "0/2", "--run-id", "0a1b2c3d", "--start-at", "+30s", "quickstart"}, "--start-at +30s: each shard would read +DURATION from its own launch on its own host, and the shards start apart: give every shard one absolute time, as --start-at 20"},
		{"relative start of a shard, or a barrier", []string{"--shard", "1/2", "--run-id", "0a1b2c3d", "--start-at", "+30s", "quickstart"}, "Z, or meet at --barrier"},
		{"two scenarios", []string{"--start-at", "+5s", "quickstart", "concurrency"}, "this run has 2: name one, or use --barrier"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			args := append([]string{"run", "--out", t.TempDir()}, tt.args...)
			if code := run(context.Background(), args, &stderr); code != exitInvalid {
				t.Fatalf("exit %d, want %d:\n%s", code, exitInvalid, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr.String())
			}
		})
	}
}

// TestShardUnknownClockUsage: a shard of an external target whose offset
// to the limiter's clock only the traffic could tell is refused with exit
// 2, before anything runs, saying how to make it known.
func TestShardUnknownClockUsage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "no-clock.yaml")
	src := "name: no-clock\ndescription: an external target without redis.url or target.clock\ntarget:\n  external: [http://127.0.0.1:9]\n" +
		"  routes:\n    - {path: /a, policies: [\"gcra:10/1s,burst=10\"]}\nidentities: {count: 2}\ntraffic:\n  - {kind: burst, requests: 2}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	out := filepath.Join(dir, "out")
	if code := run(context.Background(), []string{"run", "--out", out, "--shard", "0/2", "--run-id", "0a1b2c3d", path}, &stderr); code != exitInvalid {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInvalid, stderr.String())
	}
	for _, want := range []string{"--shard 0/2: scenario no-clock: the offset to the limiter's clock is unknown before the traffic", "give the scenario redis.url"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the run wrote %s before refusing", out)
	}
}

func TestParseStartAt(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		v      string
		want   time.Time
		onHost bool
	}{
		{"2025-06-01T12:00:30.25Z", now.Add(30250 * time.Millisecond), false},
		{"2025-06-01T14:00:30+02:00", now.Add(30 * time.Second), false},
		{"+30s", now.Add(30 * time.Second), true},
		{"+1m30s", now.Add(90 * time.Second), true},
	} {
		at, onHost, err := parseStartAt(tt.v, now)
		if err != nil || !at.Equal(tt.want) || onHost != tt.onHost {
			t.Errorf("parseStartAt(%q) = %v, %v, %v; want %v, %v", tt.v, at, onHost, err, tt.want, tt.onHost)
		}
	}
}

// startScenario writes a scenario of three requests at once to an external
// target whose limiter decides on the Redis at redisURL.
func startScenario(t *testing.T, target, redisURL string) string {
	t.Helper()
	src := `name: start
description: three requests at an agreed start
redis: {provider: external, url: "` + redisURL + `"}
target:
  external: [` + target + `]
  routes:
    - path: /api/items
      policies: ["fixed_window:5/5s"]
identities:
  count: 1
traffic:
  - {kind: burst, name: few, requests: 3}
checks:
  budget: {max_excess: 0}
  headers: false
`
	path := filepath.Join(t.TempDir(), "start.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunStartAt: `rlbench run --start-at` begins the first phase at the
// start and records it in run.json, with the clock's fiction in a drill; a
// start already past exits 3 with how late and what to do, before any
// request.
func TestRunStartAt(t *testing.T) {
	needRunPrerequisites(t)
	bin := buildRlbench(t)
	red := redistest.StartForTest(t)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	sc := startScenario(t, srv.URL, red.URL())

	out := t.TempDir()
	at := time.Now().Add(5 * time.Second).UTC()
	code, output := rlbenchRun(t, bin, "run", "--out", out, "--start-at", at.Format(time.RFC3339Nano), "--start-tolerance", "500ms", "--clock-skew", "7s", "--clock-uncertainty-floor", "2ms", sc)
	if code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, output)
	}
	if want := "start: starting at " + at.Format(time.RFC3339Nano) + " (limiter clock)"; !strings.Contains(output, want) {
		t.Errorf("output lacks %q:\n%s", want, output)
	}
	data, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec runrecord.RunRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if d := rec.Meta.ClockDrill; d == nil || d.Skew != 7*time.Second || d.UncertaintyFloor != 2*time.Millisecond || d.Misreport != 0 {
		t.Errorf("run.json clock_drill = %+v, want skew 7s and floor 2ms", d)
	}
	sr := rec.Scenarios[0]
	if a := sr.AgreedStart; a == nil || a.By != runrecord.StartAt || !a.At.Equal(at) || a.Clock != runrecord.StartClockLimiter || a.Late > a.Tolerance {
		t.Errorf("run.json agreed_start = %+v, want start_at %v on the limiter's clock, within the tolerance", a, at)
	}
	// The skew is absorbed: the start on the limiter's clock (Redis on this
	// host) is the agreed one.
	if d := sr.Start.Add(sr.ClockOffset).Sub(at); d < -5*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("scenario start %v + offset %v is %v from the agreed start", sr.Start, sr.ClockOffset, d)
	}
	if sr.ClockUncertainty < 2*time.Millisecond {
		t.Errorf("clock uncertainty %v, want at least the floor of 2ms", sr.ClockUncertainty)
	}

	before := requests.Load()
	late := time.Now().Add(-1200 * time.Millisecond).UTC()
	code, output = rlbenchRun(t, bin, "run", "--out", t.TempDir(), "--start-at", late.Format(time.RFC3339Nano), sc)
	if code != exitHarnessError {
		t.Fatalf("late start: exit %d, want %d:\n%s", code, exitHarnessError, output)
	}
	for _, want := range []string{"this run missed the start at " + late.Format(time.RFC3339Nano) + " by ", "launch the run earlier or give a later --start-at"} {
		if !strings.Contains(output, want) {
			t.Errorf("late start: output lacks %q:\n%s", want, output)
		}
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("late start: %d requests sent, want none", n)
	}
	noLeftovers(t, bin)
}
