//go:build !unix

package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// Process is unavailable where redis-server processes cannot be controlled
// with signals.
type Process struct{}

// StartProcess returns an error wrapping ErrUnavailable on this platform.
func StartProcess(context.Context) (*Process, error) {
	return nil, fmt.Errorf("%w: the process provider needs a Unix system", ErrUnavailable)
}

// URL implements Redis.
func (*Process) URL() string { return "" }

// Addr implements Redis.
func (*Process) Addr() string { return "" }

// Provider implements Redis.
func (*Process) Provider() scenarios.Provider { return scenarios.ProviderProcess }

// Close implements Redis.
func (*Process) Close() error { return nil }

// StartFakeClockProcess returns an error wrapping ErrUnavailable on this
// platform.
func StartFakeClockProcess(ctx context.Context) (*Process, error) { return StartProcess(ctx) }

// Sentinel is unavailable where redis-server processes cannot be
// controlled with signals.
type Sentinel struct{ Process }

// StartSentinel returns an error wrapping ErrUnavailable on this platform.
func StartSentinel(ctx context.Context, _ *time.Duration) (*Sentinel, error) {
	_, err := StartProcess(ctx)
	return nil, err
}
