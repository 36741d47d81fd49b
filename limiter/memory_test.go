package limiter_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/limitertest"
)

func TestMemoryStoreConformance(t *testing.T) {
	limitertest.Run(t, func(t *testing.T, clock func() time.Time) limiter.Limiter {
		return limiter.NewMemoryStore(limiter.WithClock(clock))
	})
}

func TestMemoryStoreLease(t *testing.T) {
	limitertest.RunLease(t, func(t *testing.T, clock func() time.Time) limiter.Limiter {
		return limiter.NewMemoryStore(limiter.WithClock(clock))
	})
}

func TestMemoryStoreConcurrency(t *testing.T) {
	limitertest.RunConcurrency(t, func(t *testing.T, clock func() time.Time) []limiter.Limiter {
		s := limiter.NewMemoryStore(limiter.WithClock(clock))
		return []limiter.Limiter{s, s}
	})
}

// TestSweepChangesNoDecision feeds two stores the same random traffic and
// sweeps one of them often: every decision must be the same.
func TestSweepChangesNoDecision(t *testing.T) {
	for _, l := range sampleLimits() {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(l.Algorithm))))
			swept, kept := limiter.NewMemoryStore(), limiter.NewMemoryStore()
			now := limitertest.T0
			for i := range 20000 {
				now = now.Add(time.Duration(rng.ExpFloat64() * float64(40*time.Millisecond)))
				key := fmt.Sprintf("k%d", rng.IntN(20))
				cost := 1 + rng.Int64N(l.Capacity())
				a, errA := swept.AllowNAt(key, cost, now, l)
				b, errB := kept.AllowNAt(key, cost, now, l)
				if errA != nil || errB != nil {
					t.Fatalf("request %d: errors %v, %v", i, errA, errB)
				}
				if a != b {
					t.Fatalf("request %d at %v: swept store decided %+v, unswept %+v", i, now, a, b)
				}
				if rng.IntN(50) == 0 {
					swept.SweepAt(now)
				}
			}
		})
	}
}

// TestSweepDropsIdleKeys shows memory follows the active keys: after every
// key's budget refills, a sweep leaves nothing behind.
func TestSweepDropsIdleKeys(t *testing.T) {
	for _, l := range sampleLimits() {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			s := limiter.NewMemoryStore()
			for i := range 1000 {
				if _, err := s.AllowNAt(fmt.Sprintf("k%d", i), 1, limitertest.T0, l); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := s.Len(), 1000; got != want {
				t.Fatalf("Len = %d, want %d", got, want)
			}
			if got := s.SweepAt(limitertest.T0); got != 0 {
				t.Fatalf("SweepAt(t0) dropped %d keys that still hold state, want 0", got)
			}
			later := limitertest.T0.Add(2*l.Period + 2*time.Duration(l.IntervalMicros())*time.Microsecond*time.Duration(l.Capacity()))
			if got, want := s.SweepAt(later), 1000; got != want {
				t.Fatalf("SweepAt(later) dropped %d, want %d", got, want)
			}
			if got := s.Len(); got != 0 {
				t.Fatalf("Len after sweep = %d, want 0", got)
			}
		})
	}
}

// TestSweepStopsWithContext: Sweep sweeps on the store's clock every
// interval while its context lives, and returns once the context ends,
// never to sweep again; given a context already done, it returns at once
// and sweeps nothing.
func TestSweepStopsWithContext(t *testing.T) {
	l := limiter.Limit{Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 10}
	newStore := func(t *testing.T) (*limiter.MemoryStore, *atomic.Int64) {
		// The store's clock stands where every key is fresh again, and
		// counts its readings: each sweep reads it once.
		clock := limitertest.NewClock(limitertest.T0.Add(time.Hour))
		var reads atomic.Int64
		s := limiter.NewMemoryStore(limiter.WithClock(func() time.Time { reads.Add(1); return clock.Now() }))
		if _, err := s.AllowNAt("k", 5, limitertest.T0, l); err != nil {
			t.Fatal(err)
		}
		if got, want := s.Len(), 1; got != want {
			t.Fatalf("Len = %d, want %d", got, want)
		}
		return s, &reads
	}

	t.Run("cancelled while sweeping", func(t *testing.T) {
		s, reads := newStore(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { s.Sweep(ctx, time.Millisecond); close(done) }()
		deadline := time.Now().Add(10 * time.Second)
		for reads.Load() < 3 || s.Len() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s: %d sweeps, Len = %d; want sweeps every millisecond that drop the fresh key", reads.Load(), s.Len())
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Sweep still running 10 s after its context was cancelled")
		}
		// Sweep has returned: nothing it started may sweep any more.
		stopped := reads.Load()
		if _, err := s.AllowNAt("k", 5, limitertest.T0, l); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if got := reads.Load(); got != stopped {
			t.Fatalf("the clock was read %d times after Sweep returned, want 0", got-stopped)
		}
		if got, want := s.Len(), 1; got != want {
			t.Fatalf("Len after Sweep returned = %d, want %d: a key swept by a stopped Sweep", got, want)
		}
	})

	t.Run("cancelled before", func(t *testing.T) {
		s, reads := newStore(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		// An hour's interval: Sweep must return at once, not at its first tick.
		s.Sweep(ctx, time.Hour)
		if got := reads.Load(); got != 0 {
			t.Fatalf("Sweep with a done context read the clock %d times, want 0", got)
		}
		if got, want := s.Len(), 1; got != want {
			t.Fatalf("Len = %d, want %d: Sweep with a done context swept", got, want)
		}
	})
}

// TestLongRunningRate is the x/time/rate TestLongRunningQPS invariant for
// every algorithm: over a long run of random traffic admitted units stay
// within capacity + rate·elapsed, and a client asking for twice the rate
// gets at least 0.999 of what the ideal limiter allows.
func TestLongRunningRate(t *testing.T) {
	for _, l := range sampleLimits() {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			s := limiter.NewMemoryStore()
			rate := l.Rate / l.Period.Seconds() // units per second
			elapsed := 10 * time.Minute
			var admitted int64
			for at := time.Duration(0); at < elapsed; at += time.Duration(rng.ExpFloat64() / (2 * rate) * float64(time.Second)) {
				d, err := s.AllowNAt("steady", 1, limitertest.T0.Add(at), l)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted++
				}
			}
			ceiling := float64(l.Capacity()) + rate*elapsed.Seconds()
			if l.Algorithm == limiter.FixedWindow || l.Algorithm == limiter.SlidingWindowCounter {
				ceiling += float64(l.Capacity()) // the first window's edge
			}
			ideal := rate * elapsed.Seconds()
			if float64(admitted) > ceiling {
				t.Fatalf("admitted %d in %v, above the ceiling %.0f", admitted, elapsed, ceiling)
			}
			floor := 0.999 * ideal
			if l.Algorithm.IsWindow() {
				// A window slot freed at time x is reused by the next arrival,
				// on average 1/(2·rate) later (arrivals come at twice the
				// rate): each window of W yields its limit per W + 1/(2·rate).
				// Twice that gap leaves room for slots freed together.
				floor = ideal * l.Period.Seconds() / (l.Period.Seconds() + 2/(2*rate))
			}
			if l.Algorithm == limiter.SlidingWindowCounter {
				floor = 0.9 * ideal // the weighted estimate also rejects what an exact log admits
			}
			if float64(admitted) < floor {
				t.Fatalf("admitted %d in %v, below %.0f of the ideal %.0f", admitted, elapsed, floor, ideal)
			}
		})
	}
}

// sampleLimits is one limit per algorithm at 20 units per second.
func sampleLimits() []limiter.Limit {
	var ls []limiter.Limit
	for _, alg := range limiter.Algorithms {
		if alg.IsWindow() {
			ls = append(ls, limiter.Window(alg, 20, time.Second))
		} else {
			ls = append(ls, limiter.Limit{Algorithm: alg, Rate: 20, Period: time.Second, Burst: 5})
		}
	}
	return ls
}

// TestChangedPlanStartsAfresh: a named limit whose parameters change (a
// plan edited) is a new state, as in the Redis store (Limit.StateID): the
// old state, read with the new parameters, would mean nothing.
func TestChangedPlanStartsAfresh(t *testing.T) {
	s := limiter.NewMemoryStore()
	plan := limiter.Limit{Name: "minute", Algorithm: limiter.GCRA, Rate: 0.001, Period: time.Minute, Burst: 1}
	if _, err := s.AllowNAt("k", 1, limitertest.T0, plan); err != nil {
		t.Fatal(err)
	}
	plan.Rate, plan.Burst = 60, 5
	d, err := s.AllowNAt("k", 1, limitertest.T0, plan)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || d.Remaining != 4 {
		t.Fatalf("after raising the plan: %+v, want admitted with 4 remaining", d)
	}
	if got, want := plan.StateID(), "minute.gcra-60per1m-b5"; got != want {
		t.Fatalf("StateID = %q, want %q", got, want)
	}
}
