package faults

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/scenarios"
)

// Fault is one scheduled fault, as a scenario declares it.
type Fault = scenarios.Fault

// Redis is the server faults act on; provider values implement it.
type Redis interface {
	Kill() error
	Restart(ctx context.Context) error
	Pause() error
	Resume() error
}

// Instance is a sample API process faults act on.
type Instance interface {
	Kill() error
	Restart(ctx context.Context) error
}

// ClockStepper is a clock a clock_step fault steps: Redis run under a fake
// clock, or an instance restarted with its clock offset moved.
type ClockStepper interface {
	// StepClock steps the clock by d (backwards when negative) and leaves
	// it there; it returns once the step took effect.
	StepClock(ctx context.Context, d time.Duration) error
}

// Failover is a Redis whose master a redis_failover fault fails over to a
// replica (provider.Sentinel).
type Failover interface {
	// PauseMaster stops the master as a hung host would.
	PauseMaster(ctx context.Context) error
	// AwaitPromotion returns once another master took over, with the last
	// time the old one was still named master.
	AwaitPromotion(ctx context.Context) (lastOld time.Time, err error)
	// RestoreOldMaster resumes the old master as a replica of the new one.
	RestoreOldMaster(ctx context.Context) error
}

// Env holds what faults act on; a field may be nil when no fault needs it.
type Env struct {
	Redis     Redis
	Proxy     *Proxy
	Instances map[string]Instance
	// Clocks are the clocks clock_step faults may step, by the fault's
	// target (scenarios.ClockStepRedis, an instance's name).
	Clocks map[string]ClockStepper
	// Failover is the Sentinel group of a redis_failover fault.
	Failover Failover
	// Dir is the directory command faults run in: the scenario file's.
	// Empty means the current directory.
	Dir string
}

// ErrNotAvailable is returned by Validate when a fault needs something the
// Env lacks.
var ErrNotAvailable = errors.New("fault target not available")

// Validate checks that env can carry out every fault.
func Validate(faults []Fault, env Env) error {
	for i, f := range faults {
		switch {
		case !slices.Contains(scenarios.FaultKinds, f.Kind):
			return fmt.Errorf("fault %d: unknown kind %q", i+1, f.Kind)
		case f.Kind.NeedsProxy() && env.Proxy == nil:
			return fmt.Errorf("fault %d (%s): %w: no proxy in front of Redis", i+1, f.Kind, ErrNotAvailable)
		case (f.Kind == scenarios.FaultRedisKill || f.Kind == scenarios.FaultRedisPause) && env.Redis == nil:
			return fmt.Errorf("fault %d (%s): %w: this Redis provider cannot be killed or paused; use kind: command, or a proxy fault", i+1, f.Kind, ErrNotAvailable)
		case f.Kind == scenarios.FaultClockStep && env.Clocks[f.Target] == nil:
			return fmt.Errorf("fault %d (%s): %w: the clock of %q cannot be stepped here", i+1, f.Kind, ErrNotAvailable, f.Target)
		case f.Kind == scenarios.FaultRedisFailover && env.Failover == nil:
			return fmt.Errorf("fault %d (%s): %w: no Sentinel group; set redis: {topology: sentinel}", i+1, f.Kind, ErrNotAvailable)
		case f.Kind == scenarios.FaultInstanceKill && env.Instances[f.Target] == nil:
			return fmt.Errorf("fault %d (%s): %w: no instance named %q", i+1, f.Kind, ErrNotAvailable, f.Target)
		case f.Kind == scenarios.FaultCommand && strings.TrimSpace(f.Inject) == "":
			return fmt.Errorf("fault %d (%s): no inject command", i+1, f.Kind)
		case f.Kind == scenarios.FaultCommand && f.Timeout <= 0:
			return fmt.Errorf("fault %d (%s): timeout %v is not positive", i+1, f.Kind, f.Timeout)
		case f.Kind == scenarios.FaultCommand:
			if _, err := exec.LookPath("sh"); err != nil {
				return fmt.Errorf("fault %d (%s): %w: no shell to run its commands: %v", i+1, f.Kind, ErrNotAvailable, err)
			}
		}
	}
	return nil
}

// Schedule runs faults against env from start until every fault is healed
// or ctx ends. Wait returns the windows once every fault is healed; Stop
// heals what is still active and returns at once.
//
// The windows are the faults as they happened, one per fault in order
// (runrecord.FaultWindow: kind, target and schedule; in ns since start,
// when each injection was sent and returned and when each heal was sent
// and returned, FromNs 0 when never injected and ToNs 0 when never healed;
// a command fault's commands with their output; and what went wrong). A
// start is stamped before acting, so that a request cut off while the
// fault takes hold is inside its window. What a fault means for the checks
// (store unavailable, state lost) is for the caller to fill in.
//
// A fault is healed Duration after its injection returned; a clock step
// (Duration 0) is never undone, and its heal does nothing. A redis_failover
// is healed once the replica was promoted and Duration has passed, and its
// time surely in effect ends at the promotion. A command fault
// whose injection failed is healed at once, since it may have done part of
// its work; rlbench's own faults are not healed after a failed injection.
type Schedule struct {
	start   time.Time
	env     Env
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	windows []runrecord.FaultWindow
}

// Start arms faults, relative to start. It does not block.
func Start(ctx context.Context, start time.Time, faults []Fault, env Env) *Schedule {
	ctx, cancel := context.WithCancel(ctx)
	s := &Schedule{start: start, env: env, cancel: cancel, windows: make([]runrecord.FaultWindow, len(faults))}
	for i, f := range faults {
		s.windows[i] = runrecord.FaultWindow{Kind: string(f.Kind), Target: f.Target, At: f.At, Duration: f.Duration}
		s.wg.Add(1)
		go s.run(ctx, i, f)
	}
	return s
}

// healTimeout bounds the heal of rlbench's own faults (a Redis restart
// waits for the server to answer); a command's own timeout bounds its heal.
const healTimeout = 30 * time.Second

func (s *Schedule) run(ctx context.Context, i int, f Fault) {
	defer s.wg.Done()
	if !sleepUntil(ctx, s.start.Add(f.At)) {
		return
	}
	// Stamped before acting: a request cut off between this instant and
	// the fault taking hold belongs to the fault.
	sent := s.now()
	s.record(i, func(w *runrecord.FaultWindow) { w.FromNs = sent })
	injectErr := s.inject(ctx, i, f)
	injected := time.Now()
	s.record(i, func(w *runrecord.FaultWindow) {
		w.InjectedNs = injected.Sub(s.start).Nanoseconds()
		if injectErr != nil {
			w.Err = injectErr.Error()
		}
	})
	if injectErr != nil && f.Kind != scenarios.FaultCommand {
		return
	}
	if injectErr == nil && f.Kind == scenarios.FaultRedisFailover {
		s.awaitPromotion(ctx, i)
	}
	if injectErr == nil {
		sleepUntil(ctx, injected.Add(f.Duration))
	}
	// Heal even when ctx ended: nothing may be left broken.
	healCtx := context.WithoutCancel(ctx)
	if f.Kind != scenarios.FaultCommand {
		var cancel context.CancelFunc
		healCtx, cancel = context.WithTimeout(healCtx, healTimeout)
		defer cancel()
	}
	healSent := s.now()
	s.record(i, func(w *runrecord.FaultWindow) {
		if w.HealNs == 0 { // a failover's ends at its promotion (awaitPromotion)
			w.HealNs = healSent
		}
	})
	healErr := s.heal(healCtx, i, f)
	healed := s.now()
	if healErr == nil && f.Kind.NeedsProxy() && s.env.Proxy.Accepted() == 0 {
		healErr = fmt.Errorf("it acted on nothing: no client connected through the Redis proxy on %s; point the limiter at that address", s.env.Proxy.Addr())
	}
	s.record(i, func(w *runrecord.FaultWindow) {
		w.ToNs = healed
		if healErr != nil {
			w.Err = strings.TrimPrefix(w.Err+"; "+healErr.Error(), "; ")
		}
	})
}

// awaitPromotion waits, at most healTimeout, for the Sentinel to promote a
// replica after a redis_failover paused the master, and ends the time the
// fault was surely in effect (HealNs) at the last moment the old master was
// still named: until then no client could reach the new one. A failover
// that did not happen is the fault's error.
func (s *Schedule) awaitPromotion(ctx context.Context, i int) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
	defer cancel()
	lastOld, err := s.env.Failover.AwaitPromotion(actx)
	s.record(i, func(w *runrecord.FaultWindow) {
		w.HealNs = max(lastOld.Sub(s.start).Nanoseconds(), w.InjectedNs)
		if err != nil {
			w.Err = strings.TrimPrefix(w.Err+"; "+err.Error(), "; ")
		}
	})
}

// now is the time since the schedule's start, in ns.
func (s *Schedule) now() int64 { return time.Since(s.start).Nanoseconds() }

func (s *Schedule) record(i int, f func(*runrecord.FaultWindow)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.windows[i])
}

func (s *Schedule) inject(ctx context.Context, i int, f Fault) error {
	switch f.Kind {
	case scenarios.FaultCommand:
		run := runCommand(ctx, f.Inject, s.env.Dir, f.Timeout, s.start)
		s.record(i, func(w *runrecord.FaultWindow) { w.Inject = run })
		return commandError("inject", run)
	case scenarios.FaultRedisKill:
		return s.env.Redis.Kill()
	case scenarios.FaultRedisPause:
		return s.env.Redis.Pause()
	case scenarios.FaultRedisLatency:
		return s.env.Proxy.AddLatency(f.Latency, 0)
	case scenarios.FaultRedisBlackhole:
		return s.env.Proxy.Blackhole()
	case scenarios.FaultRedisReset:
		return s.env.Proxy.ResetConnections()
	case scenarios.FaultRedisDisconnect:
		s.env.Proxy.Disconnect()
		return nil
	case scenarios.FaultInstanceKill:
		return s.env.Instances[f.Target].Kill()
	case scenarios.FaultClockStep:
		return s.env.Clocks[f.Target].StepClock(ctx, f.Step)
	case scenarios.FaultRedisFailover:
		return s.env.Failover.PauseMaster(ctx)
	}
	return fmt.Errorf("unknown fault kind %q", f.Kind)
}

func (s *Schedule) heal(ctx context.Context, i int, f Fault) error {
	switch f.Kind {
	case scenarios.FaultCommand:
		if f.Heal == "" {
			return nil
		}
		run := runCommand(ctx, f.Heal, s.env.Dir, f.Timeout, s.start)
		s.record(i, func(w *runrecord.FaultWindow) { w.Heal = run })
		return commandError("heal", run)
	case scenarios.FaultRedisKill:
		return s.env.Redis.Restart(ctx)
	case scenarios.FaultRedisPause:
		return s.env.Redis.Resume()
	case scenarios.FaultRedisLatency, scenarios.FaultRedisBlackhole, scenarios.FaultRedisReset:
		s.env.Proxy.Clear()
		return nil
	case scenarios.FaultRedisDisconnect:
		return s.env.Proxy.Reconnect()
	case scenarios.FaultInstanceKill:
		return s.env.Instances[f.Target].Restart(ctx)
	case scenarios.FaultRedisFailover:
		return s.env.Failover.RestoreOldMaster(ctx)
	}
	return nil
}

// Wait blocks until every fault has been injected and healed, then
// returns the windows.
func (s *Schedule) Wait() []runrecord.FaultWindow {
	s.wg.Wait()
	return s.Windows()
}

// Stop cancels the faults not yet injected, heals those active, waits for
// that, and returns the windows.
func (s *Schedule) Stop() []runrecord.FaultWindow {
	s.cancel()
	return s.Wait()
}

// Windows returns the windows so far.
func (s *Schedule) Windows() []runrecord.FaultWindow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.windows)
}

// sleepUntil waits until t or ctx's end and reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
