package shardsync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWaitLate(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		now       time.Time
		tolerance time.Duration
		late      time.Duration // 0: no error
		msg       string
	}{
		{"on time", t0, 50 * time.Millisecond, 0, ""},
		{"within tolerance", t0.Add(20 * time.Millisecond), 50 * time.Millisecond, 0, ""},
		{"at the tolerance", t0.Add(50 * time.Millisecond), 50 * time.Millisecond, 0, ""},
		{"just past it", t0.Add(51 * time.Millisecond), 50 * time.Millisecond, 51 * time.Millisecond, "by 51ms (tolerance 50ms)"},
		{"1.2 s late", t0.Add(1234567 * time.Microsecond), 50 * time.Millisecond, 1234567 * time.Microsecond,
			"missed the start at 2025-06-01T12:00:00Z by 1.235s (tolerance 50ms)"},
		{"zero tolerance", t0.Add(time.Microsecond), 0, time.Microsecond, "by 0s (tolerance 0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Wait(context.Background(), func() time.Time { return tc.now }, t0, tc.tolerance)
			if tc.late == 0 {
				if err != nil {
					t.Fatalf("Wait = %v, want nil", err)
				}
				return
			}
			var le *LateError
			if !errors.As(err, &le) {
				t.Fatalf("Wait = %v, want a *LateError", err)
			}
			if got, want := le.Late, tc.late; got != want {
				t.Errorf("Late = %v, want %v", got, want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
}

func TestWaitSleeps(t *testing.T) {
	// A clock 5 s ahead of this host's, as a shard's may be: the start on
	// it is reached when it reads the start, whatever time.Now reads.
	const skew = 5 * time.Second
	now := func() time.Time { return time.Now().Add(skew) }
	begin := time.Now()
	at := now().Add(80 * time.Millisecond)
	if err := Wait(context.Background(), now, at, DefaultTolerance); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(begin); got < 80*time.Millisecond || got > 2*time.Second {
		t.Errorf("Wait returned after %v, want about 80ms", got)
	}
	if got := now(); got.Before(at) {
		t.Errorf("Wait returned with the clock at %v, before the start %v", got, at)
	}
}

func TestWaitCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := Wait(ctx, time.Now, time.Now().Add(time.Hour), DefaultTolerance)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want the context's deadline", err)
	}
}
