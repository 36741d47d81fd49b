package resilience

import (
	"sync"
	"time"
)

// State is a circuit breaker's state.
type State int

const (
	// Closed: decisions go to the store.
	Closed State = iota
	// Open: the store is skipped and the failure mode decides, paying no timeout.
	Open
	// HalfOpen: one probe is testing whether the store answers again.
	HalfOpen
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "unknown"
}

// BreakerConfig sets when a Breaker opens and how long it stays open. Zero
// fields take the Default* values.
type BreakerConfig struct {
	// ConsecutiveFailures opens the breaker after this many store failures
	// in a row.
	ConsecutiveFailures int
	// FailureRate opens the breaker when at least this fraction of the last
	// Window outcomes failed (0 < FailureRate ≤ 1), once Window outcomes are known.
	FailureRate float64
	// Window is the number of recent outcomes FailureRate is measured over.
	Window int
	// OpenFor is how long the breaker stays open before it lets one probe through.
	OpenFor time.Duration
}

// Breaker defaults.
const (
	DefaultConsecutiveFailures = 5
	DefaultFailureRate         = 0.5
	DefaultWindow              = 20
	DefaultOpenFor             = time.Second
)

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.ConsecutiveFailures <= 0 {
		c.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if c.FailureRate <= 0 || c.FailureRate > 1 {
		c.FailureRate = DefaultFailureRate
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.OpenFor <= 0 {
		c.OpenFor = DefaultOpenFor
	}
	return c
}

// Breaker is a circuit breaker (Nygard, "Release It!", 2007): closed, it
// passes calls and counts failures; after a run of failures or a failure
// rate it opens and refuses calls for OpenFor; then one caller at a time is
// let through as a probe (half-open), whose success closes it and whose
// failure opens it again. It is safe for concurrent use; time comes from the
// clock given to NewBreaker, so tests drive it with a fake one.
type Breaker struct {
	cfg      BreakerConfig
	now      func() time.Time
	onChange func(from, to State)

	mu          sync.Mutex
	state       State
	openedAt    time.Time
	consecutive int
	outcomes    []bool // ring of recent outcomes, true = failure
	next        int
	failures    int
	probing     bool
}

// NewBreaker returns a closed Breaker. onChange, if not nil, is called on
// every transition, outside the breaker's lock.
func NewBreaker(cfg BreakerConfig, now func() time.Time, onChange func(from, to State)) *Breaker {
	cfg = cfg.withDefaults()
	return &Breaker{cfg: cfg, now: now, onChange: onChange, outcomes: make([]bool, 0, cfg.Window)}
}

// State reports the breaker's state, moving an open breaker whose OpenFor
// has passed to half-open.
func (b *Breaker) State() State {
	b.mu.Lock()
	from, to := b.advance()
	st := b.state
	b.mu.Unlock()
	b.notify(from, to)
	return st
}

// Allow reports whether a call may go to the store now. In half-open state
// only one caller (the probe) gets true until it reports its outcome.
func (b *Breaker) Allow() bool {
	b.mu.Lock()
	from, to := b.advance()
	ok := false
	switch b.state {
	case Closed:
		ok = true
	case HalfOpen:
		if !b.probing {
			b.probing, ok = true, true
		}
	}
	b.mu.Unlock()
	b.notify(from, to)
	return ok
}

// RetryAfter is how long until an open breaker lets a probe through; zero
// when it is not open.
func (b *Breaker) RetryAfter() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != Open {
		return 0
	}
	return max(b.openedAt.Add(b.cfg.OpenFor).Sub(b.now()), 0)
}

// Record reports the outcome of a call Allow let through.
func (b *Breaker) Record(failed bool) {
	b.mu.Lock()
	from := b.state
	switch b.state {
	case HalfOpen:
		b.probing = false
		if failed {
			b.trip()
		} else {
			b.reset()
		}
	case Closed:
		b.observe(failed)
		if b.consecutive >= b.cfg.ConsecutiveFailures ||
			(len(b.outcomes) == b.cfg.Window && float64(b.failures) >= b.cfg.FailureRate*float64(b.cfg.Window)) {
			b.trip()
		}
	}
	to := b.state
	b.mu.Unlock()
	b.notify(from, to)
}

// advance moves an open breaker to half-open once OpenFor has passed; the
// caller holds b.mu and notifies after unlocking.
func (b *Breaker) advance() (from, to State) {
	from = b.state
	if b.state == Open && !b.now().Before(b.openedAt.Add(b.cfg.OpenFor)) {
		b.state, b.probing = HalfOpen, false
	}
	return from, b.state
}

func (b *Breaker) observe(failed bool) {
	if failed {
		b.consecutive++
	} else {
		b.consecutive = 0
	}
	if len(b.outcomes) < b.cfg.Window {
		b.outcomes = append(b.outcomes, failed)
	} else {
		if b.outcomes[b.next] {
			b.failures--
		}
		b.outcomes[b.next] = failed
		b.next = (b.next + 1) % b.cfg.Window
	}
	if failed {
		b.failures++
	}
}

func (b *Breaker) trip() {
	b.state, b.openedAt = Open, b.now()
	b.clearOutcomes()
}

func (b *Breaker) reset() {
	b.state = Closed
	b.clearOutcomes()
}

func (b *Breaker) clearOutcomes() {
	b.consecutive, b.failures, b.next = 0, 0, 0
	b.outcomes = b.outcomes[:0]
}

func (b *Breaker) notify(from, to State) {
	if from != to && b.onChange != nil {
		b.onChange(from, to)
	}
}
