package traffic

import (
	"math"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Schedule is an open-model send schedule: request i of N is due At(i)
// after the phase starts. At is nondecreasing, At(0) is 0 and every At(i)
// lies within the phase's duration.
type Schedule interface {
	// N is the number of requests the schedule holds.
	N() int
	// At is when request i (0 ≤ i < N) is due, from the phase's start.
	At(i int) time.Duration
	// Rate is the planned instantaneous rate at elapsed, in requests per
	// second; 0 outside the schedule.
	Rate(elapsed time.Duration) float64
	// Duration is the phase's planned length.
	Duration() time.Duration
}

// ConstantSchedule sends PerSecond requests per second for Length: request
// i is due at i/PerSecond. It holds floor(PerSecond·Length) requests.
type ConstantSchedule struct {
	PerSecond float64
	Length    time.Duration
}

// NewConstantSchedule returns the schedule of rate requests per second for d.
func NewConstantSchedule(rate float64, d time.Duration) ConstantSchedule {
	return ConstantSchedule{PerSecond: rate, Length: d}
}

// N implements Schedule.
func (c ConstantSchedule) N() int {
	if !(c.PerSecond > 0) || c.Length <= 0 {
		return 0
	}
	return int(math.Floor(c.PerSecond*c.Length.Seconds() + 1e-9))
}

// At implements Schedule.
func (c ConstantSchedule) At(i int) time.Duration {
	return time.Duration(float64(i) / c.PerSecond * float64(time.Second))
}

// Rate implements Schedule.
func (c ConstantSchedule) Rate(elapsed time.Duration) float64 {
	if elapsed < 0 || elapsed > c.Length {
		return 0
	}
	return c.PerSecond
}

// Duration implements Schedule.
func (c ConstantSchedule) Duration() time.Duration { return c.Length }

// RampSchedule moves the rate linearly from From to To requests per second
// over Length. Request i is due when the planned count ∫rate reaches i, so
// it holds floor((From+To)/2·Length) requests.
type RampSchedule struct {
	From, To float64
	Length   time.Duration
}

// NewRampSchedule returns the schedule of a ramp from from to to requests per
// second over d.
func NewRampSchedule(from, to float64, d time.Duration) RampSchedule {
	return RampSchedule{From: from, To: to, Length: d}
}

// N implements Schedule.
func (r RampSchedule) N() int {
	if r.Length <= 0 || r.From < 0 || r.To < 0 {
		return 0
	}
	return int(math.Floor((r.From+r.To)/2*r.Length.Seconds() + 1e-9))
}

// At implements Schedule. With a = (To−From)/(2·D) and b = From, the count
// at t is b·t + a·t², so request i is due at 2i / (b + √(b² + 4ai)), a form
// that stays exact when a or b is zero.
func (r RampSchedule) At(i int) time.Duration {
	if i <= 0 {
		return 0
	}
	d := r.Length.Seconds()
	a := (r.To - r.From) / (2 * d)
	b := r.From
	disc := math.Max(b*b+4*a*float64(i), 0)
	t := 2 * float64(i) / (b + math.Sqrt(disc))
	return min(time.Duration(t*float64(time.Second)), r.Length)
}

// Rate implements Schedule.
func (r RampSchedule) Rate(elapsed time.Duration) float64 {
	if elapsed < 0 || elapsed > r.Length {
		return 0
	}
	return r.From + (r.To-r.From)*elapsed.Seconds()/r.Length.Seconds()
}

// Duration implements Schedule.
func (r RampSchedule) Duration() time.Duration { return r.Length }

// schedulePacer drives a vegeta attack along a Schedule and learns when the
// attack began, so that every result's intended send time is known: vegeta
// calls Pace with the time elapsed since its own start, from one goroutine.
type schedulePacer struct {
	sched Schedule

	once  sync.Once
	mu    sync.Mutex
	began time.Time
}

var _ vegeta.Pacer = (*schedulePacer)(nil)

// Pace implements vegeta.Pacer: wait until request hits is due; stop once
// the schedule is exhausted.
func (p *schedulePacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	p.once.Do(func() {
		p.mu.Lock()
		p.began = time.Now().Add(-elapsed)
		p.mu.Unlock()
	})
	if hits >= uint64(p.sched.N()) {
		return 0, true
	}
	return p.sched.At(int(hits)) - elapsed, false
}

// Rate implements vegeta.Pacer.
func (p *schedulePacer) Rate(elapsed time.Duration) float64 { return p.sched.Rate(elapsed) }

// start is the attack's start on the local monotonic clock; zero before the
// first Pace call.
func (p *schedulePacer) start() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.began
}

// subSchedule is the part of a Schedule that one shard of a sharded run
// sends: request i is the whole schedule's request seq[i], due when the
// whole schedule has it due, so that the shards' schedules together are
// the whole one, time for time.
type subSchedule struct {
	whole Schedule
	at    []time.Duration
}

// ownSchedule narrows sched to plan, the requests of it this run sends
// (Plan): request i of the result is plan[i], due at plan[i].Intended.
// A plan of every request leaves sched as it is.
func ownSchedule(sched Schedule, plan []Planned) Schedule {
	if len(plan) == sched.N() {
		return sched
	}
	at := make([]time.Duration, len(plan))
	for i, p := range plan {
		at[i] = p.Intended
	}
	return subSchedule{whole: sched, at: at}
}

// N implements Schedule.
func (s subSchedule) N() int { return len(s.at) }

// At implements Schedule.
func (s subSchedule) At(i int) time.Duration { return s.at[i] }

// Rate implements Schedule: the whole schedule's rate times the share of
// its requests this part holds.
func (s subSchedule) Rate(elapsed time.Duration) float64 {
	n := s.whole.N()
	if n == 0 {
		return 0
	}
	return s.whole.Rate(elapsed) * float64(len(s.at)) / float64(n)
}

// Duration implements Schedule.
func (s subSchedule) Duration() time.Duration { return s.whole.Duration() }
