package traffic

import (
	"math"
	"testing"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// checkSchedule verifies the invariants every Schedule keeps: At(0) = 0,
// At nondecreasing and within the duration, and the number of requests due
// by any instant within one of the integral of the planned rate.
func checkSchedule(t *testing.T, s Schedule, integral func(time.Duration) float64) {
	t.Helper()
	n := s.N()
	if n > 0 && s.At(0) != 0 {
		t.Fatalf("At(0) = %v, want 0", s.At(0))
	}
	prev := time.Duration(0)
	for i := range n {
		at := s.At(i)
		if at < prev || at > s.Duration() {
			t.Fatalf("At(%d) = %v after At(%d) = %v, duration %v", i, at, i-1, prev, s.Duration())
		}
		// Requests 0..i are due by at: at least i+1, and the plan says the
		// integral of the rate up to at is i (within rounding).
		if got := integral(at); math.Abs(got-float64(i)) > 1e-6*float64(n)+1e-3 {
			t.Fatalf("∫rate up to At(%d) = %v = %v, want %d", i, at, got, i)
		}
		prev = at
	}
	if want := int(math.Floor(integral(s.Duration()) + 1e-9)); n != want {
		t.Fatalf("N = %d, want floor(∫rate) = %d", n, want)
	}
}

func TestConstantSchedule(t *testing.T) {
	tests := []struct {
		rate  float64
		d     time.Duration
		wantN int
		at5   time.Duration
	}{
		{100, time.Second, 100, 50 * time.Millisecond},
		{0.5, 10 * time.Second, 5, 10 * time.Second},
		{1000, 3 * time.Millisecond, 3, 0},
		{0, time.Second, 0, 0},
	}
	for _, tt := range tests {
		s := NewConstantSchedule(tt.rate, tt.d)
		if got := s.N(); got != tt.wantN {
			t.Errorf("N(%v/s for %v) = %d, want %d", tt.rate, tt.d, got, tt.wantN)
		}
		if tt.wantN > 5 {
			if got := s.At(5); got != tt.at5 {
				t.Errorf("At(5) = %v, want %v", got, tt.at5)
			}
		}
		if tt.rate > 0 {
			checkSchedule(t, s, func(at time.Duration) float64 { return tt.rate * at.Seconds() })
		}
	}
}

func rampIntegral(from, to float64, d time.Duration) func(time.Duration) float64 {
	return func(at time.Duration) float64 {
		x := at.Seconds()
		return from*x + (to-from)*x*x/(2*d.Seconds())
	}
}

func TestRampSchedule(t *testing.T) {
	tests := []struct {
		from, to float64
		d        time.Duration
		wantN    int
	}{
		{0, 200, 500 * time.Millisecond, 50},
		{10, 100, 2 * time.Second, 110},
		{100, 10, 2 * time.Second, 110},
		{50, 50, time.Second, 50},
		{200, 0, time.Second, 100},
	}
	for _, tt := range tests {
		s := NewRampSchedule(tt.from, tt.to, tt.d)
		if got := s.N(); got != tt.wantN {
			t.Errorf("N(ramp %v→%v over %v) = %d, want %d", tt.from, tt.to, tt.d, got, tt.wantN)
		}
		checkSchedule(t, s, rampIntegral(tt.from, tt.to, tt.d))
		if got, want := s.Rate(tt.d/2), (tt.from+tt.to)/2; math.Abs(got-want) > 1e-9 {
			t.Errorf("Rate(mid) = %v, want %v", got, want)
		}
	}
}

func FuzzRampSchedule(f *testing.F) {
	f.Add(0.0, 200.0, int64(500))
	f.Add(100.0, 1.0, int64(3000))
	f.Add(3.5, 3.5, int64(1))
	f.Fuzz(func(t *testing.T, from, to float64, ms int64) {
		if !(from >= 0 && from <= 5000) || !(to >= 0 && to <= 5000) || ms < 1 || ms > 5000 {
			t.Skip()
		}
		d := time.Duration(ms) * time.Millisecond
		checkSchedule(t, NewRampSchedule(from, to, d), rampIntegral(from, to, d))
	})
}

func FuzzConstantSchedule(f *testing.F) {
	f.Add(100.0, int64(1000))
	f.Add(0.3, int64(10000))
	f.Fuzz(func(t *testing.T, rate float64, ms int64) {
		if !(rate > 0 && rate <= 10000) || ms < 1 || ms > 10000 {
			t.Skip()
		}
		checkSchedule(t, NewConstantSchedule(rate, time.Duration(ms)*time.Millisecond), func(at time.Duration) float64 { return rate * at.Seconds() })
	})
}

func TestSchedulePacer(t *testing.T) {
	s := NewConstantSchedule(10, time.Second)
	p := &schedulePacer{sched: s}
	tests := []struct {
		elapsed  time.Duration
		hits     uint64
		wantWait time.Duration
		wantStop bool
	}{
		{0, 0, 0, false},
		{10 * time.Millisecond, 1, 90 * time.Millisecond, false},
		{250 * time.Millisecond, 2, -50 * time.Millisecond, false}, // behind: send now
		{900 * time.Millisecond, 9, 0, false},
		{950 * time.Millisecond, 10, 0, true},
	}
	for _, tt := range tests {
		wait, stop := p.Pace(tt.elapsed, tt.hits)
		if wait != tt.wantWait || stop != tt.wantStop {
			t.Errorf("Pace(%v, %d) = %v, %v; want %v, %v", tt.elapsed, tt.hits, wait, stop, tt.wantWait, tt.wantStop)
		}
	}
	if p.start().IsZero() {
		t.Error("start() is zero after Pace")
	}
	if got := p.Rate(500 * time.Millisecond); got != 10 {
		t.Errorf("Rate = %v, want 10", got)
	}
}

// FuzzNextEdge checks NextEdge's contract for any clock offset and window:
// the edge is aligned on the limiter's clock, at least lead and less than
// lead plus a window ahead, and the two instants differ by the offset.
func FuzzNextEdge(f *testing.F) {
	f.Add(int64(1_700_000_000_123_456_789), int64(250e6), int64(50e6), int64(1e9))
	f.Add(int64(1_700_000_000_000_000_000), int64(-3e9), int64(0), int64(100e6))
	f.Fuzz(func(t *testing.T, nowNs, offsetNs, leadNs, windowNs int64) {
		if nowNs < 1e18 || nowNs > 4e18 || offsetNs < -1e12 || offsetNs > 1e12 || leadNs < 0 || leadNs > 1e11 || windowNs < 1e6 || windowNs > 1e11 {
			t.Skip()
		}
		now := time.Unix(0, nowNs)
		offset, lead, w := time.Duration(offsetNs), time.Duration(leadNs), time.Duration(windowNs)
		lim, local := NextEdge(now, offset, lead, w)
		if lim.UnixNano()%windowNs != 0 {
			t.Fatalf("limiter edge %d is not a multiple of %v", lim.UnixNano(), w)
		}
		if got := lim.Sub(local); got != offset {
			t.Fatalf("limiter - local = %v, want %v", got, offset)
		}
		if ahead := local.Sub(now); ahead < lead || ahead >= lead+w {
			t.Fatalf("edge %v ahead, want within [%v, %v)", ahead, lead, lead+w)
		}
	})
}

func TestEdgeTimes(t *testing.T) {
	edge := time.Unix(100, 0)
	got := EdgeTimes(edge, 3, time.Second, 10*time.Millisecond)
	want := []time.Duration{-time.Second, -time.Second + 5*time.Millisecond, -time.Second + 10*time.Millisecond,
		time.Second, time.Second + 5*time.Millisecond, time.Second + 10*time.Millisecond}
	if len(got) != len(want) {
		t.Fatalf("%d times, want %d", len(got), len(want))
	}
	for i := range want {
		if d := got[i].Sub(edge); d != want[i] {
			t.Errorf("time %d at edge%+v, want edge%+v", i, d, want[i])
		}
	}
	if one := EdgeTimes(edge, 1, time.Second, time.Millisecond); one[0].Sub(edge) != -time.Second || one[1].Sub(edge) != time.Second {
		t.Errorf("a single request per side: %v", one)
	}
}

// TestSchedulesMatchPlan checks that the schedules hold exactly the requests
// the scenario package plans, for every shipped scenario and a few rates
// whose products are not exact in binary.
func TestSchedulesMatchPlan(t *testing.T) {
	infos, err := scenarios.List()
	if err != nil {
		t.Fatal(err)
	}
	var phases []scenarios.Phase
	for _, in := range infos {
		sc, err := scenarios.Lookup(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		phases = append(phases, sc.Phases...)
	}
	phases = append(phases,
		scenarios.Phase{Kind: scenarios.Constant, Rate: 0.1, Duration: 30 * time.Second},
		scenarios.Phase{Kind: scenarios.Constant, Rate: 3, Duration: 100 * time.Millisecond},
		scenarios.Phase{Kind: scenarios.Ramp, From: 0.1, To: 0.2, Duration: 20 * time.Second},
	)
	for _, ph := range phases {
		var n int
		switch ph.Kind {
		case scenarios.Constant:
			n = NewConstantSchedule(ph.Rate, ph.Duration).N()
		case scenarios.Ramp:
			n = NewRampSchedule(ph.From, ph.To, ph.Duration).N()
		default:
			continue
		}
		if want := ph.PlannedRequests(); n != want {
			t.Errorf("%s %v: schedule holds %d requests, the plan says %d", ph.Kind, ph, n, want)
		}
	}
}
