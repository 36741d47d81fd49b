package shardsync

import (
	"context"
	"fmt"
	"time"
)

// DefaultTolerance is how late after the start a shard may reach its start
// point and still start: a late start shifts the shard's load against the
// others', and a merged history must be one load.
const DefaultTolerance = 50 * time.Millisecond

// Wait waits until now reads at or later, and returns nil then. A start
// point reached more than tolerance after at is a *LateError, returned at
// once: the caller must not run late. now is the caller's clock (time.Now,
// or a clock that reads another), at a time on it; ctx's error is returned
// when ctx ends first.
func Wait(ctx context.Context, now func() time.Time, at time.Time, tolerance time.Duration) error {
	for {
		d := at.Sub(now())
		if d <= 0 {
			if late := -d; late > tolerance {
				return &LateError{At: at, Late: late, Tolerance: tolerance}
			}
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// LateError is a start point reached Late after the start At, more than
// Tolerance.
type LateError struct {
	At              time.Time
	Late, Tolerance time.Duration
}

func (e *LateError) Error() string {
	return fmt.Sprintf("missed the start at %s by %v (tolerance %v)", e.At.UTC().Format(time.RFC3339Nano), e.Late.Round(time.Millisecond), e.Tolerance)
}
