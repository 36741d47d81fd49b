// Package resilience wraps any limiter.Limiter so that a failing store (a
// dead, paused, slow or unreachable Redis) never hangs or breaks a request:
// every decision has a timeout, store failures are answered by the declared
// failure mode (fail-open, fail-closed or a local fallback), and a circuit
// breaker stops paying the timeout while the store is down.
package resilience

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// Mode is what a decision becomes when the store fails.
type Mode string

const (
	// FailOpen admits the request and marks the decision Degraded.
	FailOpen Mode = "open"
	// FailClosed rejects the request, Degraded; HTTP answers 503 with
	// Retry-After (RFC 9110 §15.6.4), not 429, since no limit was exceeded.
	FailClosed Mode = "closed"
	// Fallback decides on an in-memory store in this process with the
	// instance's share of every limit (rate, burst and window limits divided
	// by Config.Instances, at least 1), so N instances together stay within
	// the shared limit while the store is away.
	Fallback Mode = "fallback"
)

// ParseMode parses "open", "closed" or "fallback".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case FailOpen, FailClosed, Fallback:
		return m, nil
	}
	return "", fmt.Errorf("unknown failure mode %q: use open, closed or fallback", s)
}

// DefaultTimeout bounds one decision on the store.
const DefaultTimeout = 50 * time.Millisecond

// Config configures a Limiter. Zero fields take their defaults.
type Config struct {
	// Mode is the failure mode; the default is FailOpen.
	Mode Mode
	// Timeout bounds each store call (DefaultTimeout). The store must honour
	// its context's deadline: a go-redis client needs ContextTimeoutEnabled.
	Timeout time.Duration
	// Instances is the number of instances sharing the store, for Fallback's
	// share of each limit; the default is 1.
	Instances int
	// Breaker configures the circuit breaker.
	Breaker BreakerConfig
	// Clock is the time source of the breaker and the fallback store; the
	// default is time.Now.
	Clock func() time.Time
	// Logger receives breaker transitions and the first store error of each
	// outage; the default is slog.Default().
	Logger *slog.Logger
}

// Pinger is implemented by stores that can be probed without deciding; the
// breaker then probes in the background while requests keep being served
// by the failure mode.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Stats counts what the wrapper did. Read it with Limiter.Stats.
type Stats struct {
	StoreErrors   int64 // store calls that failed or timed out
	FailedOpen    int64 // decisions admitted by FailOpen
	FailedClosed  int64 // decisions rejected by FailClosed
	FellBack      int64 // decisions taken on the local fallback store
	ShortCircuits int64 // decisions taken without calling the store (breaker open)
	BreakerOpens  int64 // transitions to Open
}

// Limiter is a limiter.Limiter that guards another one. It is safe for
// concurrent use.
type Limiter struct {
	store    limiter.Limiter
	cfg      Config
	breaker  *Breaker
	local    *limiter.MemoryStore
	log      *slog.Logger
	pinger   Pinger
	probeCtx context.Context
	stop     context.CancelFunc
	probes   sync.WaitGroup

	storeErrors, failedOpen, failedClosed, fellBack, shortCircuits, opens atomic.Int64
	onChange                                                              atomic.Pointer[func(from, to State)]
}

// New wraps store. Close stops its background probes.
func New(store limiter.Limiter, cfg Config) *Limiter {
	if cfg.Mode == "" {
		cfg.Mode = FailOpen
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Instances < 1 {
		cfg.Instances = 1
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Limiter{store: store, cfg: cfg, log: cfg.Logger}
	l.pinger, _ = store.(Pinger)
	l.probeCtx, l.stop = context.WithCancel(context.Background())
	l.breaker = NewBreaker(cfg.Breaker, cfg.Clock, l.transition)
	if cfg.Mode == Fallback {
		l.local = limiter.NewMemoryStore(limiter.WithClock(cfg.Clock))
	}
	return l
}

// OnTransition registers f to be called on every breaker transition (after
// the log line); metrics hook in here.
func (l *Limiter) OnTransition(f func(from, to State)) { l.onChange.Store(&f) }

func (l *Limiter) transition(from, to State) {
	if to == Open {
		l.opens.Add(1)
	}
	l.log.Warn("rate limiter store circuit breaker", "from", from.String(), "to", to.String(), "mode", string(l.cfg.Mode))
	if f := l.onChange.Load(); f != nil {
		(*f)(from, to)
	}
}

// Close stops background probes and waits for them.
func (l *Limiter) Close() error {
	l.stop()
	l.probes.Wait()
	return nil
}

// Stats returns the counters so far.
func (l *Limiter) Stats() Stats {
	return Stats{
		StoreErrors: l.storeErrors.Load(), FailedOpen: l.failedOpen.Load(), FailedClosed: l.failedClosed.Load(),
		FellBack: l.fellBack.Load(), ShortCircuits: l.shortCircuits.Load(), BreakerOpens: l.opens.Load(),
	}
}

// BreakerState reports the circuit breaker's state.
func (l *Limiter) BreakerState() State { return l.breaker.State() }

// AllowN implements limiter.Limiter. It returns an error only for invalid
// input or a cancelled caller context; store failures become decisions.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64, limits ...limiter.Limit) (limiter.Decision, error) {
	return l.guard(ctx, n, limits, func(ctx context.Context) (limiter.Decision, error) {
		return l.store.AllowN(ctx, key, n, limits...)
	}, func() (limiter.Decision, error) {
		return l.local.AllowN(ctx, key, n, l.shares(limits)...)
	})
}

// Peek implements limiter.Limiter.
func (l *Limiter) Peek(ctx context.Context, key string, limits ...limiter.Limit) (limiter.Decision, error) {
	return l.guard(ctx, 1, limits, func(ctx context.Context) (limiter.Decision, error) {
		return l.store.Peek(ctx, key, limits...)
	}, func() (limiter.Decision, error) {
		return l.local.Peek(ctx, key, l.shares(limits)...)
	})
}

// Reset implements limiter.Limiter; it resets the fallback state too.
func (l *Limiter) Reset(ctx context.Context, key string, limits ...limiter.Limit) error {
	if l.local != nil {
		if err := l.local.Reset(ctx, key, l.shares(limits)...); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	return l.store.Reset(ctx, key, limits...)
}

func (l *Limiter) guard(ctx context.Context, n int64, limits []limiter.Limit,
	onStore func(context.Context) (limiter.Decision, error), onLocal func() (limiter.Decision, error)) (limiter.Decision, error) {
	if err := limiter.CheckRequest(n, limits); err != nil {
		return limiter.Decision{}, err
	}
	if l.pinger != nil && l.breaker.State() != Closed {
		// Requests never probe a store that can be pinged: a background
		// ping does, and they are answered by the failure mode meanwhile.
		l.shortCircuits.Add(1)
		l.probeInBackground()
		return l.degraded(limits, onLocal)
	}
	if !l.breaker.Allow() {
		l.shortCircuits.Add(1)
		return l.degraded(limits, onLocal)
	}
	callCtx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	d, err := onStore(callCtx)
	cancel()
	if err == nil {
		l.breaker.Record(false)
		return d, nil
	}
	if ctx.Err() != nil { // the caller gave up: not the store's fault
		l.breaker.Record(false)
		return limiter.Decision{}, ctx.Err()
	}
	if isInputError(err) {
		l.breaker.Record(false)
		return limiter.Decision{}, err
	}
	if l.storeErrors.Add(1) == 1 || l.breaker.State() == Closed {
		l.log.Warn("rate limiter store failed", "err", err, "mode", string(l.cfg.Mode))
	}
	l.breaker.Record(true)
	return l.degraded(limits, onLocal)
}

// probeInBackground pings a Pinger store once the breaker is half-open, so
// no request pays the probe's timeout.
func (l *Limiter) probeInBackground() {
	// Allow hands out the half-open probe slot to one caller only.
	if l.breaker.State() != HalfOpen || !l.breaker.Allow() {
		return
	}
	l.probes.Add(1)
	go func() {
		defer l.probes.Done()
		ctx, cancel := context.WithTimeout(l.probeCtx, l.cfg.Timeout)
		defer cancel()
		l.breaker.Record(l.pinger.Ping(ctx) != nil)
	}()
}

func isInputError(err error) bool {
	return errors.Is(err, limiter.ErrInvalidLimit) || errors.Is(err, limiter.ErrInvalidCost) || errors.Is(err, limiter.ErrCostExceedsCapacity)
}

// degraded is the failure mode's decision.
func (l *Limiter) degraded(limits []limiter.Limit, onLocal func() (limiter.Decision, error)) (limiter.Decision, error) {
	var d limiter.Decision
	switch l.cfg.Mode {
	case FailClosed:
		l.failedClosed.Add(1)
		wait := max(l.breaker.RetryAfter(), time.Second).Microseconds()
		d = limiter.NewDecision(limits[0], false, 0, wait, wait, 0)
	case Fallback:
		l.fellBack.Add(1)
		var err error
		d, err = onLocal()
		if errors.Is(err, limiter.ErrCostExceedsCapacity) {
			// The request costs more than this instance's share can ever
			// hold: reject it until the shared store is back.
			wait := max(l.breaker.RetryAfter(), time.Second).Microseconds()
			d, err = limiter.NewDecision(limits[0], false, 0, wait, wait, 0), nil
		}
		if err != nil {
			return limiter.Decision{}, fmt.Errorf("fallback: %w", err)
		}
	default:
		l.failedOpen.Add(1)
		d = limiter.NewDecision(limits[0], true, 0, 0, 0, 0)
	}
	d.Degraded = true
	return d, nil
}

// shares divides every limit by the instance count for the fallback store.
func (l *Limiter) shares(limits []limiter.Limit) []limiter.Limit {
	n := l.cfg.Instances
	out := make([]limiter.Limit, len(limits))
	for i, lim := range limits {
		out[i] = Share(lim, n)
	}
	return out
}

// Share is one instance's part of lim when n instances enforce it without
// a shared store: the rate and the capacity divided by n, rounded down but
// at least one unit (a limit below n units can then be exceeded n-fold at
// most, the price of no coordination).
func Share(lim limiter.Limit, n int) limiter.Limit {
	if n <= 1 {
		return lim
	}
	share := lim
	share.Rate = lim.Rate / float64(n)
	if lim.Algorithm.IsWindow() {
		share.Rate = math.Max(1, math.Floor(lim.Rate/float64(n)))
		share.Burst = int64(share.Rate)
	} else {
		share.Burst = max(1, lim.Burst/int64(n))
	}
	return share
}
