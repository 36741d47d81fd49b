// Package provider makes a Redis available to a run, from one of several
// sources behind one interface: a redis-server process on the PATH
// (process), a container through a Docker engine (docker), an in-process
// miniredis served on a loopback port (embedded), or a Redis the user runs
// (external). Auto picks the first of process, docker and embedded that
// works on this machine.
//
// Every Redis a provider starts is stopped by Close, and also when the
// context given to Start ends, so a cancelled run leaves nothing behind. An
// external Redis is never flushed or stopped.
package provider

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redisstore"
	"github.com/rlbench/rlbench/scenarios"
)

// Redis is a Redis server a provider made available. Implementations are
// safe for concurrent use by multiple goroutines.
type Redis interface {
	// URL is the redis:// URL clients connect with.
	URL() string
	// Addr is the server's host:port.
	Addr() string
	// Provider names where the server comes from (never ProviderAuto).
	Provider() scenarios.Provider
	// Close stops the server when the provider started it and releases
	// what the provider holds. It is idempotent.
	Close() error
}

// Faulty is implemented by the Redis values whose server rlbench can make
// fail on purpose. A method the provider cannot carry out returns an error
// wrapping ErrUnsupported.
type Faulty interface {
	// Kill ends the server as a crash would; its data is lost.
	Kill() error
	// Restart brings a killed (or running) server back, empty, at the same
	// address; it returns once the server answers.
	Restart(ctx context.Context) error
	// Pause freezes the server: connections stay open, commands hang.
	Pause() error
	// Resume ends a Pause.
	Resume() error
}

// ErrUnsupported is wrapped by errors for what a provider cannot do: a
// fault it cannot inject, an algorithm the embedded Redis cannot serve.
var ErrUnsupported = errors.New("not supported by this Redis provider")

// ErrUnavailable is wrapped by Start's error when the provider cannot run on
// this machine (no redis-server on the PATH, no Docker engine).
var ErrUnavailable = errors.New("Redis provider unavailable")

// Options configures Start. The zero value suits every provider but
// external, which needs URL.
type Options struct {
	// URL is the external Redis, redis://host:port[/db].
	URL string
	// Algorithms lists the limiter algorithms the run will ask the Redis to
	// serve; the embedded provider refuses those miniredis cannot.
	Algorithms []limiter.Algorithm
	// Image is the Docker image; DefaultImage when empty.
	Image string
	// Logf receives warnings, such as auto falling back to the embedded
	// Redis; nil discards them.
	Logf func(format string, args ...any)
	// FakeClock runs the process provider's redis-server under libfaketime
	// (StartFakeClockProcess); auto then means process.
	FakeClock bool
	// Topology TopologySentinel starts a Sentinel group (StartSentinel),
	// for the process provider (or auto) only; ReplicaClock is its
	// replica's clock offset, if any.
	Topology     scenarios.Topology
	ReplicaClock *time.Duration
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// readyTimeout bounds the wait for a started Redis to answer PING.
const readyTimeout = 30 * time.Second

// Start makes a Redis available from provider p. ProviderAuto tries process
// (redis-server on the PATH), then docker (an engine that answers), then
// embedded with a warning through opts.Logf. When ctx ends, the Redis is
// closed. Errors wrap ErrUnavailable when the provider cannot run here,
// ErrUnsupported for an algorithm the embedded Redis cannot serve, or the
// start failure.
func Start(ctx context.Context, p scenarios.Provider, opts Options) (Redis, error) {
	var (
		r   Redis
		err error
	)
	if opts.Topology == scenarios.TopologySentinel || opts.FakeClock {
		if p != scenarios.ProviderAuto && p != scenarios.ProviderProcess && p != "" {
			return nil, fmt.Errorf("start redis: provider %s runs no Sentinel or fake clock; use process", p)
		}
		if opts.Topology == scenarios.TopologySentinel {
			return StartSentinel(ctx, opts.ReplicaClock)
		}
		return StartFakeClockProcess(ctx)
	}
	switch p {
	case scenarios.ProviderAuto, "":
		r, err = startAuto(ctx, opts)
	case scenarios.ProviderProcess:
		r, err = StartProcess(ctx)
	case scenarios.ProviderDocker:
		r, err = StartDocker(ctx, opts.Image)
	case scenarios.ProviderEmbedded:
		r, err = StartEmbedded(ctx, opts.Algorithms)
	case scenarios.ProviderExternal:
		r, err = StartExternal(ctx, opts.URL)
	case scenarios.ProviderNone:
		return nil, fmt.Errorf("start redis: provider %q starts no Redis", p)
	default:
		return nil, fmt.Errorf("start redis: unknown provider %q", p)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func startAuto(ctx context.Context, opts Options) (Redis, error) {
	if _, err := exec.LookPath("redis-server"); err == nil {
		return StartProcess(ctx)
	}
	if err := DockerAvailable(ctx); err == nil {
		return StartDocker(ctx, opts.Image)
	} else {
		opts.logf("warning: no redis-server on the PATH and no Docker engine (%v); using the embedded Redis (miniredis), which emulates Redis in this process: install redis-server (make deps) for results that hold for a real Redis", err)
	}
	return StartEmbedded(ctx, opts.Algorithms)
}

// closeOnDone arranges for closeFn to run when ctx ends; the returned stop
// undoes that (call it from Close).
func closeOnDone(ctx context.Context, closeFn func()) (stop func() bool) {
	return context.AfterFunc(ctx, closeFn)
}

// ping waits until the Redis at addr answers PING, or ctx or timeout ends,
// or Redis refuses the login (NOAUTH, WRONGPASS), which no wait mends.
func ping(ctx context.Context, opt *redis.Options, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := redis.NewClient(opt)
	defer c.Close()
	var err error
	for {
		if err = c.Ping(ctx).Err(); err == nil {
			return nil
		}
		if errors.Is(redisstore.CheckAuth(err), redisstore.ErrAuth) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis at %s does not answer PING: %w", opt.Addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
