package checker

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The checker's own description of a limit, parsed by its own code from the
// policy syntax that scenario files, the history's header and the command
// line use. It shares nothing with the reference limiter it judges: a fault
// in the limiter's parsing would otherwise be agreed with rather than
// caught. A test holds this parser and the limiter's to one meaning.

// Algorithm names the algorithm a limit declares, in the policy syntax's
// words. The zero value is invalid.
type Algorithm string

const (
	// TokenBucket: Burst tokens refilled at Rate per Period, one per unit.
	TokenBucket Algorithm = "token_bucket"
	// GCRA: the Generic Cell Rate Algorithm (ATM Forum Traffic Management
	// 4.0, §4.4.2), which admits what a token bucket of the same rate and
	// burst admits.
	GCRA Algorithm = "gcra"
	// LeakyBucket: the leaky bucket as a queue (NGINX limit_req without
	// nodelay): it admits what the GCRA of the same rate and burst admits,
	// and holds each admitted request until its slot, Rate per Period. The
	// leaky bucket as a meter (nodelay) is the GCRA.
	LeakyBucket Algorithm = "leaky_bucket"
	// FixedWindow: at most Rate units per window of length Period, windows
	// aligned on the limiter's clock (at multiples of Period since the Unix
	// epoch), or with Start StartFirst from each key's first request.
	FixedWindow Algorithm = "fixed_window"
	// SlidingWindowLog: at most Rate units in any window of length Period.
	SlidingWindowLog Algorithm = "sliding_window_log"
	// SlidingWindowCounter: the aligned window's count plus the previous
	// window's, weighted by the part of it still inside the sliding window,
	// at most Rate.
	SlidingWindowCounter Algorithm = "sliding_window_counter"
)

// WindowStart says where a fixed window's windows begin. The zero value,
// StartAligned, is the policy syntax's default.
type WindowStart string

const (
	// StartAligned: windows start at multiples of Period since the Unix
	// epoch on the limiter's clock, the same for every key.
	StartAligned WindowStart = ""
	// StartFirst: a key's window starts at its first request and
	// lasts Period; the first request after it expired starts the next
	// (INCR then EXPIRE: rate-limit-redis, ulule/limiter,
	// rate-limiter-flexible). Written "start=first".
	StartFirst WindowStart = "first"
	// StartFirstGrid: a key's windows lie on a grid of Period anchored at
	// its first request, and keep their places whether or not requests
	// come: the first starts at the first request, the m-th m Periods
	// after it (sethvargo/go-limiter v0.7.1 memorystore, which refills the
	// key's bucket to its limit at each tick (now − first request) /
	// Period). Written "start=first-grid"; Limit.Idle says when the
	// limiter may forget the key and anchor a new grid.
	StartFirstGrid WindowStart = "first-grid"
)

// algorithms lists the algorithms the policy syntax knows, in the order
// error messages name them.
var algorithms = []Algorithm{TokenBucket, GCRA, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter}

// window reports whether a is a window algorithm: Rate whole units per
// window of length Period, no separate burst.
func (a Algorithm) window() bool {
	return a == FixedWindow || a == SlidingWindowLog || a == SlidingWindowCounter
}

const (
	// minPeriod is the shortest period the policy syntax allows.
	minPeriod = time.Millisecond
	// maxCapacity is the most units a policy may declare at once: a
	// bucket's burst, a window's limit.
	maxCapacity = 1 << 40
	// maxSpanMicros bounds the time, in µs, a policy may take to refill its
	// whole capacity: one emission interval per unit of burst (plus one) for
	// a bucket, window times limit for the sliding window counter.
	maxSpanMicros = 1 << 62
)

// Limit is one limit a policy declares.
//
// For the bucket algorithms (token bucket, GCRA, leaky bucket) Rate units
// are admitted per Period on average and Burst units at once; Rate may be
// fractional. For the window algorithms Rate is the whole number of units
// admitted per window and Period is the window; Burst is zero or equal to
// Rate; a fixed window's Start says where its windows begin, and Idle, for
// windows on the grid from the first request, how long a key may go unused
// (from the start of the window of its last request) before the limiter may
// forget it, its next request anchoring a new grid (go-limiter's
// SweepMinTTL; 0: never). Name, when
// set, is the policy's name (in the RateLimit-Policy header, say); it makes
// two limits of equal parameters distinct budgets.
//
// LeaseTokens and LeaseFor, for the token bucket and the GCRA only, declare
// a lease ("lease=10/900ms"): an instance may take up to LeaseTokens units
// from the shared budget at once and spend them locally for LeaseFor. The
// budget is unchanged; the false-rejection test and the wait's upper bound
// allow for the units a lease holds (hold), and the remaining budget's lower
// bound for what a lease's holder cannot see (doc.go, "Leases").
//
// Limit is a comparable value, safe to copy and to use as a map key. Build
// one with ParseLimit, or fill the fields and let Check validate them.
type Limit struct {
	Name        string
	Algorithm   Algorithm
	Rate        float64
	Period      time.Duration
	Burst       int64
	Start       WindowStart
	Idle        time.Duration
	LeaseTokens int64
	LeaseFor    time.Duration
}

// leased reports whether l declares a lease.
func (l Limit) leased() bool { return l.LeaseTokens != 0 || l.LeaseFor != 0 }

// Capacity is the most units the limit admits at once: Burst for a bucket,
// Rate for a window.
func (l Limit) Capacity() int64 {
	if l.Algorithm.window() {
		return int64(l.Rate)
	}
	return l.Burst
}

// periodMicros is Period in whole microseconds, the window length the
// window models use.
func (l Limit) periodMicros() int64 { return int64(l.Period / time.Microsecond) }

// String formats l for people, as results name their scope: "10 req/s
// (burst 20)" for a token bucket, "10 req/s (burst 20, gcra)" for the other
// buckets, "100 req/1m (fixed window)" for windows, "10 req/5s (fixed
// window from first request)" for windows from each key's first request and
// "10 req/5s (fixed window on a grid from first request)" for windows on the
// grid it anchors.
// The name is not shown.
func (l Limit) String() string {
	rate := strconv.FormatFloat(l.Rate, 'g', -1, 64)
	per := perString(l.Period)
	alg := strings.ReplaceAll(string(l.Algorithm), "_", " ")
	switch {
	case l.Start == StartFirstGrid:
		return fmt.Sprintf("%s req/%s (%s on a grid from first request)", rate, per, alg)
	case l.Start == StartFirst:
		return fmt.Sprintf("%s req/%s (%s from first request)", rate, per, alg)
	case l.Algorithm.window():
		return fmt.Sprintf("%s req/%s (%s)", rate, per, alg)
	case l.Algorithm == TokenBucket:
		return fmt.Sprintf("%s req/%s (burst %d)", rate, per, l.Burst)
	}
	return fmt.Sprintf("%s req/%s (burst %d, %s)", rate, per, l.Burst, alg)
}

// Scope is l as results name their scope (Result.Scope of the budget
// checks, and each limit in a rule's): String, with the algorithm of
// every bucket (a token bucket's too), the lease and the name when l has
// them, so that limits that differ in any of these never share a label:
// "10 req/s (burst 20, token bucket)", "1000 req/s (burst 1000, gcra,
// lease=10/900ms)", "60 req/min (burst 10, gcra, name=minute)".
func (l Limit) Scope() string {
	s := l.String()
	var extra []string
	if l.Algorithm == TokenBucket && l.Start == StartAligned {
		extra = append(extra, "token bucket")
	}
	if l.leased() {
		extra = append(extra, fmt.Sprintf("lease=%d/%s", l.LeaseTokens, leaseDuration(l.LeaseFor)))
	}
	if l.Name != "" {
		extra = append(extra, "name="+l.Name)
	}
	if len(extra) == 0 {
		return s
	}
	return strings.TrimSuffix(s, ")") + ", " + strings.Join(extra, ", ") + ")"
}

// perString is the period after "req/": s, min and h for whole units, else
// the shortest duration text ("1m30s", "720h", "500ms").
func perString(d time.Duration) string {
	switch d {
	case time.Second:
		return "s"
	case time.Minute:
		return "min"
	case time.Hour:
		return "h"
	}
	return durationText(d)
}

// durationText is d.String() without zero trailing units: "1h", "1m30s".
func durationText(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// Validate reports why l is not a limit the policy syntax can declare, or
// nil. Errors wrap ErrInvalidPolicy and name the field at fault.
func (l Limit) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidPolicy, field, fmt.Sprintf(format, args...))
	}
	switch {
	case l.Algorithm == "":
		return bad("algorithm", "missing; use one of %s", algorithmNames())
	case !known(l.Algorithm):
		return bad("algorithm", "unknown %q; use one of %s", string(l.Algorithm), algorithmNames())
	case strings.ContainsAny(l.Name, "{}: \t\r\n"):
		return bad("name", "%q may not contain braces, colons or spaces", l.Name)
	case l.Start != StartAligned && l.Start != StartFirst && l.Start != StartFirstGrid:
		return bad("start", "unknown %q; use first, first-grid, or leave it out for windows aligned on the clock", string(l.Start))
	case l.Start != StartAligned && l.Algorithm != FixedWindow:
		return bad("start", "start=%s applies to fixed_window only, not %s", l.Start, l.Algorithm)
	case l.Idle != 0 && l.Start != StartFirstGrid:
		return bad("idle", "applies to start=first-grid only (a grid that a forgotten key re-anchors); remove idle=%v", l.Idle)
	case l.Idle < 0:
		return bad("idle", "%v is negative; give the idle time after which the limiter may forget a key, or leave it out for never", l.Idle)
	case l.Idle != 0 && l.Idle/2 < l.Period:
		return bad("idle", "%v is shorter than two periods (%v); a limiter forgetting a key so soon is not a fixed window: raise idle to at least %v", l.Idle, l.Period, 2*l.Period)
	case l.Period < minPeriod:
		return bad("period", "%v is shorter than the minimum %v", l.Period, minPeriod)
	case math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate <= 0:
		return bad("rate", "%v must be a positive number", l.Rate)
	}
	if l.Algorithm.window() {
		switch {
		case l.Rate != math.Trunc(l.Rate):
			return bad("rate", "a %s admits a whole number of units per window, not %v", l.Algorithm, l.Rate)
		case l.Rate > maxCapacity:
			return bad("rate", "%v exceeds the maximum %d per window", l.Rate, int64(maxCapacity))
		case l.Burst != 0 && l.Burst != int64(l.Rate):
			return bad("burst", "a %s has no separate burst; leave it 0 or equal to the rate %v", l.Algorithm, l.Rate)
		case l.Algorithm == SlidingWindowCounter && float64(l.periodMicros())*l.Rate > maxSpanMicros:
			return bad("rate", "limit %v times window %v is beyond the longest span a policy may have", l.Rate, l.Period)
		}
		return l.validateLease(bad)
	}
	interval := float64(l.periodMicros()) / l.Rate // µs per unit
	switch {
	case interval < 1:
		return bad("rate", "%v per %v is above one unit per microsecond", l.Rate, l.Period)
	case l.Burst < 1:
		return bad("burst", "%d must be at least 1", l.Burst)
	case l.Burst > maxCapacity:
		return bad("burst", "%d exceeds the maximum %d", l.Burst, int64(maxCapacity))
	case math.Ceil(interval)*float64(l.Burst+1) > maxSpanMicros:
		return bad("rate", "%v per %v with burst %d would take over 146,000 years to refill", l.Rate, l.Period, l.Burst)
	}
	return l.validateLease(bad)
}

// validateLease checks a valid limit's lease: for a token bucket or a GCRA
// only, at least 2 tokens (a limiter grants a lease only when it holds more
// units than the request's cost) for at least minPeriod, the tokens and the
// refill over the duration (at the emission interval rounded up to whole
// µs) within the burst. Its messages are the reference limiter's.
func (l Limit) validateLease(bad func(field, format string, args ...any) error) error {
	if !l.leased() {
		return nil
	}
	switch {
	case l.Algorithm != GCRA && l.Algorithm != TokenBucket:
		return bad("lease", "applies to gcra and token_bucket only, not %s; remove lease=%d/%v or use gcra", l.Algorithm, l.LeaseTokens, l.LeaseFor)
	case l.LeaseTokens < 2:
		return bad("lease", "lease=%d/%s never grants: a store grants a lease only when it holds more units than the request's cost, so a lease needs at least 2 tokens; write lease=N/DURATION with N of 2 or more, as in lease=10/900ms, or remove it", l.LeaseTokens, leaseDuration(l.LeaseFor))
	case l.LeaseFor < minPeriod:
		return bad("lease", "%v is shorter than the minimum %v; write lease=N/DURATION, as in lease=10/900ms", l.LeaseFor, minPeriod)
	}
	t := math.Ceil(float64(l.periodMicros()) / l.Rate) // µs per unit
	hold := float64(l.LeaseFor/time.Microsecond) / t   // the refill the duration brings, in units
	if hold+float64(l.LeaseTokens) > float64(l.Burst) {
		var fits []string // the largest tokens, then the longest duration, that fit
		if n := l.Burst - int64(math.Ceil(hold)); n >= 2 {
			fits = append(fits, fmt.Sprintf("lease=%d/%s", n, leaseDuration(l.LeaseFor)))
		}
		if d := time.Duration(float64(l.Burst-l.LeaseTokens)*t) * time.Microsecond; d >= minPeriod {
			fits = append(fits, fmt.Sprintf("lease=%d/%s", l.LeaseTokens, leaseDuration(d)))
		}
		fix := "lower its tokens and its duration"
		if len(fits) > 0 {
			fix = "lower it to " + strings.Join(fits, " or ")
		}
		return bad("lease", "lease=%d/%s holds %d + %s of refill = %s units, more than the burst %d; %s", l.LeaseTokens, leaseDuration(l.LeaseFor), l.LeaseTokens, units(hold), units(hold+float64(l.LeaseTokens)), l.Burst, fix)
	}
	return nil
}

// leaseDuration formats a lease's duration readably: d.String() without
// zero trailing units, in days when it is a whole number of them ("30d").
func leaseDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return durationText(d)
}

// units formats a number of units for messages in full ("360000000",
// never "3.6e+08"), to at most two decimals.
func units(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// LeaseAlone reports an error when limits, applied together to the same
// requests (one Rule), are several and one of them declares a lease: a
// leasing limiter takes a lease only for a request under one limit, so the
// hold the lease widens the checks by would be allowed for nothing. It
// returns the index of that limit and an error wrapping ErrInvalidPolicy
// that names it and the fix (the reference limiter's CheckLeaseAlone
// words it alike), or -1 and nil.
func LeaseAlone(limits []Limit) (int, error) {
	if len(limits) < 2 {
		return -1, nil
	}
	for i, l := range limits {
		if l.leased() {
			return i, fmt.Errorf("%w: lease: lease=%d/%s: %s", ErrInvalidPolicy, l.LeaseTokens, leaseDuration(l.LeaseFor), leaseAloneText(len(limits)))
		}
	}
	return -1, nil
}

// leaseAloneText is the reason and fix of LeaseAlone's error, for a rule
// of n limits.
func leaseAloneText(n int) string {
	return fmt.Sprintf("a lease applies to a rule of one limit, and this one has %d; remove lease= or split the route's policies", n)
}

func known(a Algorithm) bool {
	for _, k := range algorithms {
		if a == k {
			return true
		}
	}
	return false
}

func algorithmNames() string {
	names := make([]string, len(algorithms))
	for i, a := range algorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// ParseLimit parses a limit in the policy syntax
// "[ALGORITHM:]RATE/PERIOD[,burst=N][,start=first|first-grid][,idle=DUR][,lease=N/DUR][,name=NAME]":
// "gcra:20/1s,burst=10", "token_bucket:10/1s,burst=20",
// "fixed_window:100/1m", "fixed_window:10/5s,start=first" (windows from
// each key's first request; start=aligned is the default),
// "fixed_window:10/5s,start=first-grid,idle=12h" (windows on the grid the
// key's first request anchors, a key unused for 12 h forgotten),
// "sliding_window_log:12/30d,name=month",
// "gcra:1000/1s,burst=1000,lease=10/900ms" (an instance may take 10 units
// at once and spend them locally for 900 ms). Without an algorithm the limit is
// a token bucket. PERIOD is a Go duration (500ms, 1m, 1h30m), a number of
// days (30d, 1.5d), or a unit alone (s, m or min, h, d) meaning one of it.
// Without burst a window's burst is its rate and a bucket's is its rate
// rounded up, at least 1. The result is validated; every error wraps
// ErrInvalidPolicy and quotes s.
func ParseLimit(s string) (Limit, error) {
	l := Limit{Algorithm: TokenBucket}
	spec := strings.TrimSpace(s)
	if alg, rest, ok := strings.Cut(spec, ":"); ok {
		l.Algorithm, spec = Algorithm(strings.TrimSpace(alg)), rest
	}
	parts := strings.Split(spec, ",")
	rate, period, ok := strings.Cut(strings.TrimSpace(parts[0]), "/")
	if !ok {
		return Limit{}, fmt.Errorf("%w: %q: want RATE/PERIOD, as in \"10/1s\"", ErrInvalidPolicy, s)
	}
	var err error
	if l.Rate, err = strconv.ParseFloat(strings.TrimSpace(rate), 64); err != nil {
		return Limit{}, fmt.Errorf("%w: rate %q in %q is not a number", ErrInvalidPolicy, rate, s)
	}
	if l.Period, err = parsePeriod(strings.TrimSpace(period)); err != nil {
		return Limit{}, fmt.Errorf("%w: period %q in %q: want a duration such as 1s, 1m, 24h or 30d (%v)", ErrInvalidPolicy, period, s, err)
	}
	var hasBurst, hasName, hasStart, hasIdle, hasLease bool
	for _, opt := range parts[1:] {
		key, val, _ := strings.Cut(strings.TrimSpace(opt), "=")
		switch {
		case key == "start" && !hasStart:
			hasStart = true
			switch val {
			case "first":
				l.Start = StartFirst
			case "first-grid":
				l.Start = StartFirstGrid
			case "aligned":
				l.Start = StartAligned
			default:
				return Limit{}, fmt.Errorf("%w: start %q in %q: use first (windows from each key's first request), first-grid (windows on the grid it anchors) or aligned", ErrInvalidPolicy, val, s)
			}
		case key == "idle" && !hasIdle:
			hasIdle = true
			if l.Idle, err = time.ParseDuration(val); err != nil || l.Idle <= 0 {
				return Limit{}, fmt.Errorf("%w: idle %q in %q: want a positive duration such as 12h, after which the limiter may forget an unused key", ErrInvalidPolicy, val, s)
			}
		case key == "burst" && !hasBurst:
			hasBurst = true
			if l.Burst, err = strconv.ParseInt(val, 10, 64); err != nil {
				if errors.Is(err, strconv.ErrRange) {
					return Limit{}, fmt.Errorf("%w: burst %s in %q is out of range; the most is %d", ErrInvalidPolicy, val, s, int64(maxCapacity))
				}
				return Limit{}, fmt.Errorf("%w: burst %q in %q is not a whole number", ErrInvalidPolicy, val, s)
			}
		case key == "name" && !hasName:
			hasName, l.Name = true, val
		case key == "lease" && !hasLease:
			hasLease = true
			n, d, ok := strings.Cut(val, "/")
			tokens, nerr := strconv.ParseInt(n, 10, 64)
			dur, derr := time.ParseDuration(d)
			if !ok || nerr != nil || tokens < 1 || derr != nil || dur <= 0 {
				return Limit{}, fmt.Errorf("%w: lease %q in %q: want TOKENS/DURATION, a whole number of at least 1 and a positive Go duration, as in lease=10/900ms", ErrInvalidPolicy, val, s)
			}
			l.LeaseTokens, l.LeaseFor = tokens, dur
		case key == "burst" || key == "name" || key == "start" || key == "idle" || key == "lease":
			return Limit{}, fmt.Errorf("%w: option %q is given twice in %q", ErrInvalidPolicy, key, s)
		default:
			return Limit{}, fmt.Errorf("%w: unknown option %q in %q; valid options are burst, start, idle, lease and name", ErrInvalidPolicy, key, s)
		}
	}
	// The default burst, only from a rate that can be one; Validate reports
	// the others.
	if !hasBurst && l.Rate > 0 && l.Rate <= maxCapacity {
		l.Burst = int64(math.Max(1, math.Ceil(l.Rate)))
		if l.Algorithm.window() {
			l.Burst = int64(l.Rate)
		}
	}
	return l, l.Validate()
}

// parsePeriod reads a period: a unit alone (s, m or min, h, d), a number of
// days ("30d"), or a Go duration.
func parsePeriod(s string) (time.Duration, error) {
	switch s {
	case "s":
		return time.Second, nil
	case "m", "min":
		return time.Minute, nil
	case "h":
		return time.Hour, nil
	case "d":
		return 24 * time.Hour, nil
	}
	days, ok := strings.CutSuffix(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseFloat(days, 64)
	if err != nil {
		return 0, err
	}
	const day = float64(24 * time.Hour)
	if !(n >= 0 && n*day <= math.MaxInt64) {
		return 0, fmt.Errorf("%s days is beyond the longest period, about 106,751 days", days)
	}
	return time.Duration(n * day), nil
}
