package checker

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

const (
	gridSpec  = "fixed_window:10/5s,start=first-grid"
	firstSpec = "fixed_window:10/5s,start=first"
)

// windowHistory is what a fixed window of 10 per 5 s answers to requests
// of key k sent at sends (ms, in order), each decided 0.2 ms after it is
// sent and answered 0.5 ms after, with a Retry-After in whole seconds to
// its window's end. grid places the windows on the grid of the first
// decision (sethvargo/go-limiter's memorystore); else the first request
// after a window expired opens the next (start=first: rate-limit-redis).
func windowHistory(grid bool, sends []float64) *hist {
	const L, W = 10, 5000.0
	var h hist
	start, count := math.NaN(), 0
	for _, s := range sends {
		d := s + 0.2
		switch {
		case math.IsNaN(start):
			start = d
		case d >= start+W && grid:
			start, count = start+math.Floor((d-start)/W)*W, 0
		case d >= start+W:
			start, count = d, 0
		}
		if count < L {
			count++
			h.add("k", ms(s), ms(s+0.5), adm)
			continue
		}
		h.add("k", ms(s), ms(s+0.5), rej, retryAfter(int(math.Ceil((start+W-d)/1000))))
	}
	return &h
}

// peerGoLimiterSends is the traffic of scenarios/peers/peer-go-limiter.yaml,
// ms from the first request: one request opens the key's window; twelve
// just before its fifth second and twelve just after; after 5 s idle, 4
// per second for 10 s; after 2 s idle, two requests 100 ms apart in the
// middle of a grid window, twelve 4.8 s after the first of them (past the
// grid's next tick) and twelve 5.2 s after it.
func peerGoLimiterSends() []float64 {
	sends := []float64{0}
	burst := func(at float64) {
		for i := range 12 {
			sends = append(sends, at+5*float64(i)/11)
		}
	}
	burst(4800)
	burst(5200)
	for i := range 40 {
		sends = append(sends, 10280+250*float64(i))
	}
	sends = append(sends, 22280, 22380)
	burst(22280 + 4800)
	burst(22280 + 5200)
	return sends
}

// Windows on the grid of the first request and windows restarting at the
// first request after one expired, each claimed for the other's history
// of the peer-go-limiter traffic: the right claim passes every check, the
// other fails the budget.
func TestGridWindowsAgainstFirstRequestWindows(t *testing.T) {
	tests := []struct {
		name     string
		grid     bool
		spec     string
		observed float64
	}{
		{"go-limiter claimed on the grid", true, gridSpec, 0},
		// The window the two at 22.28 s open lasts to 27.28 s; the
		// grid turned at 25.0002 s and admitted ten at 27.08 s: with the
		// second of the two, eleven. (In the third window, which opens at
		// 10.28 s, the grid's admission at 15.03 s is the tenth after its
		// anchor, and the one at 15.28 s may lie after its expiry.)
		{"go-limiter claimed from first request", true, firstSpec, 11},
		{"restarting claimed from first request", false, firstSpec, 0},
		// The window opened at 22.28 s admits eight at 27.08 s, the one
		// opened at 27.48 s ten: eighteen in the grid's window [25, 30) s.
		{"restarting claimed on the grid", false, gridSpec, 18},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := windowHistory(tt.grid, peerGoLimiterSends()).check(t, tt.spec)
			if tt.observed == 0 {
				for _, r := range rep.Results {
					if r.Verdict != Pass {
						t.Errorf("%s = %s: %s", r.Name, r.Verdict, r.Explanation)
					}
				}
				return
			}
			res := result(t, rep, CheckBudget)
			if res.Verdict != Fail || res.Observed != tt.observed || res.Bound != 10 {
				t.Errorf("budget = %s, %v of %v; want fail, %v of 10: %s", res.Verdict, res.Observed, res.Bound, tt.observed, res.Explanation)
			}
		})
	}
}

// The grid model's budget on small histories of one key.
func TestGridWindowBudget(t *testing.T) {
	burst := func(h *hist, at float64, n int) {
		for i := range n {
			h.add("k", ms(at+0.5*float64(i)), ms(at+0.5*float64(i)+0.4), adm)
		}
	}
	tests := []struct {
		name     string
		spec     string
		build    func(h *hist)
		observed float64 // 0: the budget passes
		bound    float64
	}{
		{"eleven in one grid window", gridSpec, func(h *hist) {
			h.add("k", 0, ms(0.4), adm)
			burst(h, 12000, 11) // the window [10, 15) s
		}, 11, 10},
		{"twelve before the fifth second and twelve after", gridSpec, func(h *hist) {
			// 0.4 ms of anchor: the grid turns in [5 s, 5.0004 s]; ten
			// admitted on each side.
			h.add("k", 0, ms(0.4), adm)
			for i := range 12 {
				out := adm
				if i >= 9 {
					out = rej
				}
				h.add("k", ms(4800+0.4*float64(i)), ms(4800+0.4*float64(i)+0.4), out)
			}
			for i := range 12 {
				out := adm
				if i >= 10 {
					out = rej
				}
				h.add("k", ms(5200+0.4*float64(i)), ms(5200+0.4*float64(i)+0.4), out)
			}
		}, 0, 0},
		{"ten on each side of the fourth tick, a window not opened by a request", gridSpec, func(h *hist) {
			h.add("k", 0, ms(0.4), adm)
			burst(h, 19990, 10)
			burst(h, 20010, 10)
		}, 0, 0},
		{"eleven straddling the fourth tick's uncertainty", gridSpec, func(h *hist) {
			// An anchor decided anywhere in [0, 300 ms]: a request within
			// 300 ms after 20 s may lie on either side of the tick, and
			// only the ten after 20.3 s are surely in one window.
			h.add("k", 0, ms(300), adm)
			burst(h, 20100, 1)
			burst(h, 20400, 10)
		}, 0, 0},
		{"eleven surely after the uncertain tick", gridSpec, func(h *hist) {
			h.add("k", 0, ms(300), adm)
			burst(h, 20301, 11)
		}, 11, 10},
		{"twelve from the first request", firstSpec, func(h *hist) {
			// The window opened at 20.301 s holds them all; the first may
			// be its anchor, decided up to 0.4 ms: the other eleven surely
			// lie in it.
			h.add("k", 0, ms(300), adm)
			burst(h, 20301, 12)
		}, 11, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			tt.build(&h)
			res := result(t, h.check(t, tt.spec), CheckBudget)
			if tt.observed == 0 {
				if res.Verdict != Pass {
					t.Errorf("budget = %s, want pass: %s", res.Verdict, res.Explanation)
				}
				return
			}
			if res.Verdict != Fail || res.Observed != tt.observed || res.Bound != tt.bound {
				t.Errorf("budget = %s, %v of %v; want fail, %v of %v: %s", res.Verdict, res.Observed, res.Bound, tt.observed, tt.bound, res.Explanation)
			}
		})
	}
}

// A key that goes unused may be forgotten (idle=) and anchor a new grid at
// its next request: the admissions the new grid allows pass when the idle
// gap permits, and those no grid allows fail whatever the gap.
func TestGridWindowForgottenKey(t *testing.T) {
	burst := func(h *hist, at float64, n int) {
		for i := range n {
			h.add("k", ms(at+0.5*float64(i)), ms(at+0.5*float64(i)+0.4), adm)
		}
	}
	// A grid anchored at 0; 31.5 s unused; a request at 32.5 s anchors a
	// new grid, whose window [32.5, 37.5) s admits nine at 37.3 s and whose
	// next ten at 37.7 s: nineteen in the old grid's [35, 40) s.
	reanchored := func(h *hist) {
		h.add("k", 0, ms(0.4), adm)
		burst(h, 1000, 5)
		h.add("k", ms(32500), ms(32500.4), adm)
		burst(h, 37300, 9)
		burst(h, 37700, 10)
	}
	tests := []struct {
		name     string
		spec     string
		build    func(h *hist)
		observed float64 // 0: the budget passes
	}{
		{"never forgotten", gridSpec, reanchored, 19},
		{"forgotten after 10 s", gridSpec + ",idle=10s", reanchored, 0},
		{"forgotten after 1 min, longer than the gap", gridSpec + ",idle=1m", reanchored, 19},
		{"eleven in a window of both grids", gridSpec + ",idle=10s", func(h *hist) {
			h.add("k", 0, ms(0.4), adm)
			h.add("k", ms(32500), ms(32500.4), adm)
			burst(h, 37700, 11) // the new grid's [37.5, 42.5) s, the old's [35, 40) s
		}, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			tt.build(&h)
			res := result(t, h.check(t, tt.spec), CheckBudget)
			if tt.observed == 0 {
				if res.Verdict != Pass {
					t.Errorf("budget = %s, want pass: %s", res.Verdict, res.Explanation)
				}
				return
			}
			if res.Verdict != Fail || res.Observed != tt.observed || res.Bound != 10 {
				t.Errorf("budget = %s, %v of %v; want fail, %v of 10: %s", res.Verdict, res.Observed, res.Bound, tt.observed, res.Explanation)
			}
		})
	}
}

// A key that may have been used before the history has a grid of unknown
// phase: held to 2L in any interval shorter than a window.
func TestGridWindowSpentKey(t *testing.T) {
	var h hist
	for i := range 21 {
		h.add("k", ms(100*float64(i)), ms(100*float64(i)+0.4), adm)
	}
	res := result(t, h.checkFresh(t, false, gridSpec), CheckBudget)
	if res.Verdict != Fail || res.Observed != 21 || res.Bound != 20 {
		t.Errorf("budget = %s, %v of %v; want fail, 21 of 20: %s", res.Verdict, res.Observed, res.Bound, res.Explanation)
	}
	h.recs = h.recs[:20]
	if res := result(t, h.checkFresh(t, false, gridSpec), CheckBudget); res.Verdict != Pass {
		t.Errorf("twenty: budget = %s, want pass: %s", res.Verdict, res.Explanation)
	}
}

// The headers a grid limiter sends: a rejection in a full window waits at
// least to the grid's tick, and an admission's remaining budget is at most
// what the window's certain admissions leave.
func TestGridWindowHeaders(t *testing.T) {
	// n admitted in the window [0, 5) s, then extra.
	full := func(n int, extra ...func(*hist)) *hist {
		var h hist
		h.add("k", 0, ms(0.4), adm)
		for i := range n - 1 {
			h.add("k", ms(3000+float64(i)), ms(3000.4+float64(i)), adm)
		}
		for _, f := range extra {
			f(&h)
		}
		return &h
	}
	tests := []struct {
		name  string
		h     *hist
		check string
		want  Verdict
	}{
		{"retry-after to the tick", full(10, func(h *hist) { h.add("k", ms(3500), ms(3500.4), rej, retryAfter(2)) }), CheckRetryAfter, Pass},
		{"retry-after short of the tick", full(10, func(h *hist) { h.add("k", ms(3500), ms(3500.4), rej, retryAfter(1)) }), CheckRetryAfter, Fail},
		{"retry-after past a window", full(10, func(h *hist) { h.add("k", ms(3500), ms(3500.4), rej, retryAfter(7)) }), CheckRetryAfter, Fail},
		{"remaining after nine", full(9, func(h *hist) {
			h.add("k", ms(3500), ms(3500.4), adm, header("ratelimit-remaining", "0"))
		}), CheckRateLimitFields, Pass},
		{"remaining too high", full(9, func(h *hist) {
			h.add("k", ms(3500), ms(3500.4), adm, header("ratelimit-remaining", "3"))
		}), CheckRateLimitFields, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := result(t, tt.h.check(t, gridSpec), tt.check)
			if res.Verdict != tt.want {
				t.Errorf("%s = %s, want %s: %s", tt.check, res.Verdict, tt.want, res.Explanation)
			}
		})
	}
}

// Histories of a grid limiter with random traffic and latencies, decided
// at a random instant within each request, pass every check claimed on
// the grid; the same traffic's restarting windows fail some seeds.
func TestPropertyGridWindowsPass(t *testing.T) {
	const L, W = 10, 5000.0
	gen := func(seed uint64, grid bool) *hist {
		rng := rand.New(rand.NewPCG(seed, 7))
		var h hist
		start, count, at := math.NaN(), 0, 0.0
		type req struct{ s, d, e float64 }
		var reqs []req
		for range 400 {
			if rng.IntN(12) == 0 { // an idle gap of up to 6 s, else a burst
				at += rng.Float64() * 6000
			} else {
				at += rng.ExpFloat64() * 15
			}
			lat := 0.2 + rng.Float64()*rng.Float64()*40
			reqs = append(reqs, req{at, at + rng.Float64()*lat, at + lat})
		}
		byDecision := slices.Clone(reqs)
		slices.SortFunc(byDecision, func(a, b req) int { return cmp.Compare(a.d, b.d) })
		admitted, wait := map[float64]bool{}, map[float64]float64{}
		for _, r := range byDecision {
			switch {
			case math.IsNaN(start):
				start = r.d
			case r.d >= start+W && grid:
				start, count = start+math.Floor((r.d-start)/W)*W, 0
			case r.d >= start+W:
				start, count = r.d, 0
			}
			if count < L {
				count++
				admitted[r.s] = true
			} else {
				wait[r.s] = start + W - r.d
			}
		}
		for _, r := range reqs {
			if admitted[r.s] {
				h.add("k", ms(r.s), ms(r.e), adm)
				continue
			}
			h.add("k", ms(r.s), ms(r.e), rej, retryAfter(int(math.Ceil(wait[r.s]/1000))))
		}
		return &h
	}
	caught := 0
	for seed := uint64(1); seed <= 20; seed++ {
		for _, spec := range []string{gridSpec, gridSpec + ",idle=10s"} {
			for _, r := range gen(seed, true).check(t, spec).Results {
				if r.Verdict != Pass {
					t.Errorf("seed %d, %s: %s = %s: %s (proof %+v)", seed, spec, r.Name, r.Verdict, r.Explanation, r.Proof)
				}
			}
		}
		if result(t, gen(seed, false).check(t, gridSpec), CheckBudget).Verdict == Fail {
			caught++
		}
	}
	if caught == 0 {
		t.Errorf("no seed of 20 caught restarting windows claimed on the grid")
	}
}

// BenchmarkCheckGridWindows checks 200,000 records of 1000 keys, each
// sending 20 a second to a grid limiter of 10 per second for 10 s, claimed
// on the grid with and without idle=.
func BenchmarkCheckGridWindows(b *testing.B) {
	const n, keys = 200_000, 1000
	var h hist
	type state struct {
		start time.Duration
		count int
	}
	st := make([]state, keys)
	for i := range n {
		k := i % keys
		s := time.Duration(i) * 50 * time.Microsecond
		d := s + 100*time.Microsecond
		switch {
		case i < keys:
			st[k].start = d
		case d >= st[k].start+time.Second:
			st[k] = state{start: st[k].start + (d-st[k].start)/time.Second*time.Second}
		}
		out := rej
		if st[k].count < 10 {
			st[k].count++
			out = adm
		}
		h.add("key-"+strconv.Itoa(k), s, s+300*time.Microsecond, out)
	}
	for _, spec := range []string{"fixed_window:10/1s,start=first-grid", "fixed_window:10/1s,start=first-grid,idle=1h"} {
		p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(b, spec)}}}}
		b.Run(spec, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Check(h.source(), p)
				if err != nil {
					b.Fatal(err)
				}
				if res := result(b, rep, CheckBudget); res.Verdict != Pass {
					b.Fatalf("budget %s: %s", res.Verdict, res.Explanation)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
