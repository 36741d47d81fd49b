//go:build unix

package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/scenarios"
)

// Process is a redis-server process on a free loopback port, without
// persistence, started through limiter/redistest. It supports every fault
// and is safe for concurrent use. The zero value is not usable; call
// StartProcess.
type Process struct {
	srv  *redistest.Server
	stop func() bool

	once sync.Once
	err  error
}

var _ Faulty = (*Process)(nil)

// StartProcess starts redis-server from the PATH. Errors wrap ErrUnavailable
// when the binary is missing, or the start failure with the server's log.
// The server stops when ctx ends or Close is called.
func StartProcess(ctx context.Context) (*Process, error) { return startProcess(ctx, false) }

// StartFakeClockProcess is StartProcess with the server under libfaketime,
// its clock steppable with StepClock. Errors wrap ErrUnavailable also when
// libfaketime is missing (and redistest.ErrNoFaketime then).
func StartFakeClockProcess(ctx context.Context) (*Process, error) { return startProcess(ctx, true) }

func startProcess(ctx context.Context, fakeClock bool) (*Process, error) {
	srv, err := redistest.Start(ctx, redistest.Options{FakeClock: fakeClock})
	if err != nil {
		if errors.Is(err, redistest.ErrNotInstalled) || errors.Is(err, redistest.ErrNoFaketime) {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	p := &Process{srv: srv}
	p.stop = closeOnDone(ctx, func() { p.Close() })
	return p, nil
}

// URL implements Redis.
func (p *Process) URL() string { return p.srv.URL() }

// Addr implements Redis.
func (p *Process) Addr() string { return p.srv.Addr() }

// Provider implements Redis.
func (p *Process) Provider() scenarios.Provider { return scenarios.ProviderProcess }

// Server returns the underlying server, for its logs.
func (p *Process) Server() *redistest.Server { return p.srv }

// Close stops the process and removes its directory. It is idempotent.
func (p *Process) Close() error {
	p.once.Do(func() {
		p.stop()
		p.err = p.srv.Stop()
	})
	return p.err
}

// Kill implements Faulty with SIGKILL.
func (p *Process) Kill() error { return p.srv.Kill() }

// Restart implements Faulty: an empty server on the same port.
func (p *Process) Restart(ctx context.Context) error { return p.srv.Restart(ctx) }

// Pause implements Faulty with SIGSTOP.
func (p *Process) Pause() error { return p.srv.Pause() }

// Resume implements Faulty with SIGCONT.
func (p *Process) Resume() error { return p.srv.Resume() }

// StepClock steps the server's clock by d (backwards when negative) while
// it runs. Errors: a server started without a fake clock
// (StartFakeClockProcess), or the offset file cannot be written.
func (p *Process) StepClock(_ context.Context, d time.Duration) error {
	return p.srv.SetClockOffset(p.srv.ClockOffset() + d)
}
