package traffic

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios"
)

// Histogram bounds: latencies are recorded in microseconds from 1 µs to
// 10 minutes with three significant digits; longer values are recorded as
// the maximum.
const (
	histMin     = 1
	histMax     = int64(10 * time.Minute / time.Microsecond)
	histSigFigs = 3
)

func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histSigFigs) }

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), histMin), histMax)
	_ = h.RecordValue(us) // cannot fail: us is within the bounds
}

// Latency holds latency distributions in microseconds: FromSent from the
// actual send, FromIntended from the intended send (which includes the
// generator's own lag, so coordinated omission cannot hide a stall).
type Latency struct {
	FromSent     *hdrhistogram.Histogram
	FromIntended *hdrhistogram.Histogram
}

func newLatency() *Latency { return &Latency{FromSent: newHistogram(), FromIntended: newHistogram()} }

func (l *Latency) record(r *Result) {
	record(l.FromSent, r.Latency())
	record(l.FromIntended, r.LatencyFromIntended())
}

func (l *Latency) merge(o *Latency) {
	l.FromSent.Merge(o.FromSent)
	l.FromIntended.Merge(o.FromIntended)
}

// Quantile returns the latency from the actual send at quantile q (0.5,
// 0.99, 0.999) and from the intended send.
func (l *Latency) Quantile(q float64) (fromSent, fromIntended time.Duration) {
	return time.Duration(l.FromSent.ValueAtQuantile(q*100)) * time.Microsecond,
		time.Duration(l.FromIntended.ValueAtQuantile(q*100)) * time.Microsecond
}

// PhaseStats is what one phase planned and delivered.
type PhaseStats struct {
	Name string
	Kind scenarios.PhaseKind
	// Planned is the number of requests the phase's schedule held (for a
	// probe, the requests it sent).
	Planned int
	// Sent counts the requests sent, one result each.
	Sent int
	// Withheld counts requests clients honouring Retry-After held back.
	Withheld int
	// OnTime counts requests sent within the lag tolerance of their
	// intended time.
	OnTime int
	// Admitted, Rejected (429) and Errors (no answer, a 5xx or a 4xx other
	// than 429: an unknown outcome) partition Sent, as
	// history.OutcomeForStatus classifies every response.
	Admitted, Rejected, Errors int
	// Status counts answers by HTTP status code (0: no answer).
	Status map[int]int
	// Began and Ended are the phase's start and the last answer's arrival.
	Began, Ended time.Time
	// FirstSent and LastSent bound the sends, for the achieved rate.
	FirstSent, LastSent time.Time
	// PlannedDuration is the schedule's length.
	PlannedDuration time.Duration
	// Edge is, for an edge burst, the window edge on the limiter's clock;
	// EdgeLocal the same instant on the local clock.
	Edge, EdgeLocal time.Time
	// Spread is, for a burst or an edge burst, the planned spread of each
	// of its bursts; Bursts is what each achieved, in order: the
	// repetitions of a burst, the two halves of an edge burst.
	Spread time.Duration
	Bursts []BurstStats
	// Lag is the distribution of send delays behind the schedule, in µs.
	Lag *hdrhistogram.Histogram
	// Latency covers every request of the phase; Routes splits it by route.
	Latency *Latency
	Routes  map[string]*Latency
	// ProbeRejected reports whether a probe met a rejection; ProbeRetried
	// whether that rejection carried a usable Retry-After, so the probe
	// waited ProbeWait and retried; ProbeAdmitted whether the retry was
	// admitted.
	ProbeRejected, ProbeRetried, ProbeAdmitted bool
	ProbeWait                                  time.Duration
}

// Delivered is the fraction of the planned requests (less those withheld
// on a Retry-After) that were sent on time; 1 for a phase that planned none.
func (s *PhaseStats) Delivered() float64 {
	want := s.Planned - s.Withheld
	if want <= 0 {
		return 1
	}
	return float64(s.OnTime) / float64(want)
}

// AchievedRate is the rate at which requests were sent, per second, from
// the first send to the last; 0 with fewer than two.
func (s *PhaseStats) AchievedRate() float64 {
	span := s.LastSent.Sub(s.FirstSent).Seconds()
	if s.Sent < 2 || span <= 0 {
		return 0
	}
	return float64(s.Sent-1) / span
}

// AchievedSpread is the widest achieved spread (BurstStats.Achieved) of
// the phase's bursts; 0 for a phase without bursts.
func (s *PhaseStats) AchievedSpread() time.Duration {
	var d time.Duration
	for _, b := range s.Bursts {
		d = max(d, b.Achieved())
	}
	return d
}

// PlannedRate is the schedule's mean rate, per second; 0 for phases without
// a duration.
func (s *PhaseStats) PlannedRate() float64 {
	if s.PlannedDuration <= 0 {
		return 0
	}
	return float64(s.Planned) / s.PlannedDuration.Seconds()
}

// Stats is what a run delivered, phase by phase.
type Stats struct {
	Phases []*PhaseStats
	// Dropped counts results the consumer was too slow to take; they are
	// counted in every figure here but missing from its history.
	Dropped int
	// LagTolerance is the lag within which a send counted as on time.
	LagTolerance time.Duration
}

// Delivered is the load delivered over the open-model phases (constant and
// ramp): requests sent on time over requests planned, less those withheld.
// 1 when the scenario has no such phase.
func (s *Stats) Delivered() float64 {
	var onTime, want int
	for _, p := range s.Phases {
		if p.Kind == scenarios.Constant || p.Kind == scenarios.Ramp {
			onTime += p.OnTime
			want += p.Planned - p.Withheld
		}
	}
	if want <= 0 {
		return 1
	}
	return float64(onTime) / float64(want)
}

// Routes merges the per-route latency of every phase.
func (s *Stats) Routes() map[string]*Latency {
	out := map[string]*Latency{}
	for _, p := range s.Phases {
		for route, l := range p.Routes {
			if out[route] == nil {
				out[route] = newLatency()
			}
			out[route].merge(l)
		}
	}
	return out
}

// collector receives every result, keeps the statistics and hands results
// to the consumer through a bounded buffer, never blocking the generator on
// a slow consumer.
type collector struct {
	lagTol   time.Duration
	in       chan *Result
	handoff  chan *Result
	done     chan struct{}
	consDone chan struct{}
	dropped  atomic.Int64
	// scrub, when set, removes secrets from a result as it is added; it
	// runs on the adding goroutine.
	scrub func(*Result)

	mu     sync.Mutex // guards phases
	phases []*PhaseStats
}

// collectBuffer decouples result producers from the statistics goroutine.
const collectBuffer = 4096

func newCollector(phases []scenarios.Phase, cfg Config) *collector {
	c := &collector{
		lagTol:   cfg.LagTolerance,
		in:       make(chan *Result, collectBuffer),
		handoff:  make(chan *Result, cfg.HandoffBuffer),
		done:     make(chan struct{}),
		consDone: make(chan struct{}),
	}
	for _, ph := range phases {
		c.phases = append(c.phases, &PhaseStats{
			Name: ph.Name, Kind: ph.Kind, Status: map[int]int{},
			Lag: newHistogram(), Latency: newLatency(), Routes: map[string]*Latency{},
		})
	}
	return c
}

func (c *collector) start(consume func(*Result)) {
	go func() {
		defer close(c.consDone)
		for r := range c.handoff {
			if consume != nil {
				consume(r)
			}
		}
	}()
	go func() {
		defer close(c.done)
		for r := range c.in {
			c.account(r)
			select {
			case c.handoff <- r:
			default:
				c.dropped.Add(1)
			}
		}
	}()
}

// add hands a result to the collector, scrubbed of secrets; it blocks
// only while the statistics goroutine is behind by collectBuffer results.
func (c *collector) add(r *Result) {
	if c.scrub != nil {
		c.scrub(r)
	}
	c.in <- r
}

// phaseMeta updates the phase statistics the generator owns (plan, times).
func (c *collector) phaseMeta(i int, f func(*PhaseStats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.phases[i])
}

func (c *collector) account(r *Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.phases[r.PhaseIndex]
	s.Sent++
	s.Status[r.Status]++
	switch history.OutcomeForStatus(r.Status) {
	case history.Admitted:
		s.Admitted++
	case history.Rejected:
		s.Rejected++
	default:
		s.Errors++
	}
	lag := r.Sent.Sub(r.Intended)
	record(s.Lag, lag)
	if lag <= c.lagTol {
		s.OnTime++
	}
	if s.FirstSent.IsZero() || r.Sent.Before(s.FirstSent) {
		s.FirstSent = r.Sent
	}
	if r.Sent.After(s.LastSent) {
		s.LastSent = r.Sent
	}
	if r.Received.After(s.Ended) {
		s.Ended = r.Received
	}
	s.Latency.record(r)
	if s.Routes[r.Route] == nil {
		s.Routes[r.Route] = newLatency()
	}
	s.Routes[r.Route].record(r)
}

// finish waits for every result to be accounted and consumed.
func (c *collector) finish() *Stats {
	close(c.in)
	<-c.done
	close(c.handoff)
	<-c.consDone
	c.mu.Lock()
	defer c.mu.Unlock()
	return &Stats{Phases: c.phases, Dropped: int(c.dropped.Load()), LagTolerance: c.lagTol}
}

// discard reads and drops a response body, so the connection is reused.
func discard(resp *http.Response) (int64, error) {
	n, err := io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	return n, err
}
