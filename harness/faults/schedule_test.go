package faults

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// fakeTarget records the calls made on it.
type fakeTarget struct {
	mu    sync.Mutex
	calls []string
	fail  string // a call that fails
}

func (f *fakeTarget) call(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	if name == f.fail {
		return errors.New(name + " failed")
	}
	return nil
}

func (f *fakeTarget) Kill() error                   { return f.call("kill") }
func (f *fakeTarget) Restart(context.Context) error { return f.call("restart") }
func (f *fakeTarget) Pause() error                  { return f.call("pause") }
func (f *fakeTarget) Resume() error                 { return f.call("resume") }
func (f *fakeTarget) Calls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ",")
}

func TestScheduleInjectsAndHeals(t *testing.T) {
	redis, inst := &fakeTarget{}, &fakeTarget{}
	p := startProxy(t)
	env := Env{Redis: redis, Proxy: p, Instances: map[string]Instance{"instance-2": inst}}
	faults := []Fault{
		{Kind: scenarios.FaultRedisKill, At: 0, Duration: 20 * time.Millisecond},
		{Kind: scenarios.FaultRedisPause, At: 40 * time.Millisecond, Duration: 10 * time.Millisecond},
		{Kind: scenarios.FaultInstanceKill, Target: "instance-2", At: 5 * time.Millisecond, Duration: 5 * time.Millisecond},
		{Kind: scenarios.FaultRedisLatency, Latency: 50 * time.Millisecond, At: 0, Duration: 10 * time.Millisecond},
	}
	if err := Validate(faults, env); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(p.Addr(), 5*time.Second); err != nil { // a client of the proxy, as a limiter is
		t.Fatal(err)
	}
	ws := Start(context.Background(), time.Now(), faults, env).Wait()
	if got, want := redis.Calls(), "kill,restart,pause,resume"; got != want {
		t.Fatalf("redis calls %q, want %q", got, want)
	}
	if got, want := inst.Calls(), "kill,restart"; got != want {
		t.Fatalf("instance calls %q, want %q", got, want)
	}
	for i, w := range ws {
		if w.Err != "" || w.ToNs == 0 || w.ToNs-w.FromNs < w.Duration.Nanoseconds() || w.FromNs < w.At.Nanoseconds() {
			t.Fatalf("window %d = %+v: want injected after At and healed at least Duration later", i, w)
		}
	}
	if _, err := roundTrip(p.Addr(), 5*time.Second); err != nil {
		t.Fatalf("the latency fault was not cleared: %v", err)
	}
}

func TestScheduleStopHealsActiveFaults(t *testing.T) {
	redis := &fakeTarget{}
	s := Start(context.Background(), time.Now(), []Fault{
		{Kind: scenarios.FaultRedisPause, At: 0, Duration: time.Hour},
		{Kind: scenarios.FaultRedisKill, At: time.Hour, Duration: time.Second},
	}, Env{Redis: redis})
	deadline := time.Now().Add(5 * time.Second)
	for redis.Calls() != "pause" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	ws := s.Stop()
	if got, want := redis.Calls(), "pause,resume"; got != want {
		t.Fatalf("calls %q, want %q: Stop must heal the pause and skip the kill never injected", got, want)
	}
	if ws[0].ToNs == 0 || ws[1].FromNs != 0 {
		t.Fatalf("windows %+v", ws)
	}
}

func TestScheduleRecordsFailures(t *testing.T) {
	redis := &fakeTarget{fail: "restart"}
	ws := Start(context.Background(), time.Now(), []Fault{{Kind: scenarios.FaultRedisKill, Duration: time.Millisecond}}, Env{Redis: redis}).Wait()
	if !strings.Contains(ws[0].Err, "restart failed") {
		t.Fatalf("window %+v: want the failed restart recorded", ws[0])
	}
}

// TestProxyFaultOnNothing: a proxy fault through which no client ever
// connected (a limiter not pointed at the proxy) acted on nothing, and
// says so.
func TestProxyFaultOnNothing(t *testing.T) {
	p := startProxy(t)
	ws := Start(context.Background(), time.Now(), []Fault{{Kind: scenarios.FaultRedisBlackhole, Duration: time.Millisecond}}, Env{Proxy: p}).Wait()
	if want := "no client connected through the Redis proxy on " + p.Addr(); !strings.Contains(ws[0].Err, want) {
		t.Fatalf("window %+v: want an error containing %q", ws[0], want)
	}
	if got := p.Accepted(); got != 0 {
		t.Fatalf("Accepted = %d, want 0", got)
	}
	if _, err := roundTrip(p.Addr(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := p.Accepted(); got != 1 {
		t.Fatalf("Accepted after one connection = %d, want 1", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		fault Fault
		env   Env
		want  string
	}{
		{Fault{Kind: "redis_explode"}, Env{}, "unknown kind"},
		{Fault{Kind: scenarios.FaultRedisLatency}, Env{}, "no proxy"},
		{Fault{Kind: scenarios.FaultRedisKill}, Env{}, "cannot be killed"},
		{Fault{Kind: scenarios.FaultInstanceKill, Target: "instance-9"}, Env{Instances: map[string]Instance{}}, `no instance named "instance-9"`},
		{Fault{Kind: scenarios.FaultClockStep, Target: "redis", Step: time.Second}, Env{}, `the clock of "redis" cannot be stepped`},
		{Fault{Kind: scenarios.FaultRedisFailover}, Env{}, "no Sentinel group"},
	}
	for _, tc := range tests {
		err := Validate([]Fault{tc.fault}, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%v) = %v, want %q", tc.fault.Kind, err, tc.want)
		}
	}
}

// fakeClock and fakeFailover record what clock_step and redis_failover do.
type fakeClock struct {
	fakeTarget
	steps []time.Duration
}

func (c *fakeClock) StepClock(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	c.steps = append(c.steps, d)
	c.mu.Unlock()
	return c.call("step")
}

type fakeFailover struct {
	fakeTarget
	promoteAfter time.Duration // the Sentinel names the replica this long after the pause
	paused       time.Time
}

func (f *fakeFailover) PauseMaster(context.Context) error {
	f.mu.Lock()
	f.paused = time.Now()
	f.mu.Unlock()
	return f.call("pause")
}

func (f *fakeFailover) AwaitPromotion(ctx context.Context) (time.Time, error) {
	f.mu.Lock()
	at := f.paused.Add(f.promoteAfter)
	f.mu.Unlock()
	if f.call("await") != nil {
		return time.Now(), errors.New("the sentinel still names the old master")
	}
	time.Sleep(time.Until(at))
	return at.Add(-time.Millisecond), nil
}

func (f *fakeFailover) RestoreOldMaster(context.Context) error { return f.call("restore") }

// TestScheduleClockStepAndFailover: a clock step is injected once and never
// undone; a failover is surely in effect until the promotion, healed no
// sooner than its duration after the pause, and a failover that never
// happened is the fault's error.
func TestScheduleClockStepAndFailover(t *testing.T) {
	clock := &fakeClock{}
	fo := &fakeFailover{promoteAfter: 30 * time.Millisecond}
	env := Env{Clocks: map[string]ClockStepper{"redis": clock}, Failover: fo}
	faults := []Fault{
		{Kind: scenarios.FaultClockStep, Target: "redis", Step: -2 * time.Second, At: 5 * time.Millisecond},
		{Kind: scenarios.FaultRedisFailover, At: 0, Duration: 60 * time.Millisecond},
	}
	if err := Validate(faults, env); err != nil {
		t.Fatal(err)
	}
	ws := Start(context.Background(), time.Now(), faults, env).Wait()
	if got, want := clock.Calls(), "step"; got != want || len(clock.steps) != 1 || clock.steps[0] != -2*time.Second {
		t.Fatalf("clock calls %q, steps %v; want one step of -2s", got, clock.steps)
	}
	if w := ws[0]; w.Err != "" || w.FromNs == 0 || w.ToNs < w.FromNs {
		t.Fatalf("clock step window %+v", w)
	}
	if got, want := fo.Calls(), "pause,await,restore"; got != want {
		t.Fatalf("failover calls %q, want %q", got, want)
	}
	w := ws[1]
	promoted := int64(29 * time.Millisecond) // the last poll naming the old master, after the pause at ~0
	if w.Err != "" || w.HealNs < promoted || w.HealNs > promoted+int64(20*time.Millisecond) {
		t.Errorf("failover HealNs = %v, want about %v: surely in effect until the promotion", time.Duration(w.HealNs), time.Duration(promoted))
	}
	if w.ToNs < int64(60*time.Millisecond) {
		t.Errorf("failover healed at %v, before its duration 60ms", time.Duration(w.ToNs))
	}

	failing := &fakeFailover{fakeTarget: fakeTarget{fail: "await"}}
	ws = Start(context.Background(), time.Now(), []Fault{{Kind: scenarios.FaultRedisFailover, Duration: time.Millisecond}}, Env{Failover: failing}).Wait()
	if !strings.Contains(ws[0].Err, "still names the old master") || failing.Calls() != "pause,await,restore" {
		t.Errorf("window %+v, calls %q: want the missing failover recorded and the master restored", ws[0], failing.Calls())
	}
}
