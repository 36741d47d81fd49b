package traffic

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultClockSamples is the number of round trips MeasureClockOffset makes
// when asked for none.
const DefaultClockSamples = 8

// MeasureClockOffset estimates the limiter's clock minus the local clock
// from samples readings of remote (for example Redis TIME through a client).
// Each reading is assumed taken midway through its round trip; the reading
// with the shortest round trip wins, and uncertainty is half that round trip:
// the true offset lies within offset ± uncertainty. samples ≤ 0 means
// DefaultClockSamples. The first error of remote is returned, wrapped.
func MeasureClockOffset(ctx context.Context, remote func(context.Context) (time.Time, error), samples int) (offset, uncertainty time.Duration, err error) {
	if samples <= 0 {
		samples = DefaultClockSamples
	}
	best := time.Duration(-1)
	for range samples {
		before := time.Now()
		t, err := remote(ctx)
		after := time.Now()
		if err != nil {
			return 0, 0, fmt.Errorf("measure clock offset: %w", err)
		}
		rtt := after.Sub(before)
		if best < 0 || rtt < best {
			best = rtt
			mid := before.Add(rtt / 2)
			offset = t.Sub(mid.Round(0)) // wall clock against wall clock
			uncertainty = (rtt + 1) / 2
		}
	}
	if best < 0 {
		return 0, 0, errors.New("measure clock offset: no sample")
	}
	return offset, uncertainty, nil
}
