// Package limiter is rlbench's reference rate limiter: the policy and decision
// types, the Limiter interface every store implements, the algorithms' exact
// integer arithmetic and the in-memory store. The Redis store lives in
// limiter/redisstore and the net/http middleware in limiter/httplimit.
//
// All algorithms work in whole microseconds on the limiter's clock (Redis TIME
// for the Redis store), so both stores take the same decisions to the request.
//
// Per-key time never runs backwards: when the limiter's clock steps back (an
// NTP correction, a Redis failover to a host whose clock is behind), a key is
// decided as at its last write and then runs on from the new time, so a step
// locks no client out and lengthens no wait; each algorithm's doc says what
// that means for it.
package limiter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Algorithm names a rate-limiting algorithm. The zero value is invalid.
type Algorithm string

const (
	// TokenBucket is a bucket of Burst tokens refilled lazily at Rate per
	// Period, one token per request unit (Turner, "New directions in
	// communications", 1986). State: tokens and the time of the last refill.
	// Clock steps: after a step back, the key decides as at its last write
	// (it refills nothing and no wait grows) and runs on from the new time;
	// a step forward refills what the time passed brings, up to Burst.
	TokenBucket Algorithm = "token_bucket"
	// GCRA is the Generic Cell Rate Algorithm in its virtual-scheduling form
	// (ATM Forum Traffic Management 4.0, §4.4.2; ITU-T I.371). It admits
	// exactly what TokenBucket admits but stores the theoretical arrival
	// time (TAT) and the time of its write. Clock steps: the TAT moves back
	// with a backward step, so a request is tested at max(now, last write)
	// and admitted whenever the token bucket would admit it; a step forward
	// leaves the TAT behind now, a full burst.
	GCRA Algorithm = "gcra"
	// LeakyBucket is the leaky bucket as a queue: an admitted request is given
	// a Delay until its slot at Rate per Period; at most Burst units wait.
	// It shapes egress traffic (as NGINX limit_req without nodelay does).
	// It is GCRA with delays and takes clock steps as GCRA does: the queue
	// moves back with a backward step, so no slot comes later than it was.
	LeakyBucket Algorithm = "leaky_bucket"
	// FixedWindow counts units per window of length Period aligned on the
	// limiter's clock (windows start at multiples of Period since the Unix
	// epoch) and admits at most Rate units per window. Clock steps: a
	// backward step moves the current window back with it, so its count
	// carries on and it ends when it would have had the clock not stepped;
	// the next request after it counts in the aligned window holding its
	// time. A forward step past the window's end is a fresh count.
	FixedWindow Algorithm = "fixed_window"
	// SlidingWindowLog keeps the time of every admitted unit and admits at
	// most Rate units in any window of length Period ending now. Exact.
	// Clock steps: a backward step moves every logged time back with it, so
	// entries slide out when they would have had the clock not stepped; a
	// forward step slides out what the time passed would have.
	SlidingWindowLog Algorithm = "sliding_window_log"
	// SlidingWindowCounter weights the previous aligned window's count by the
	// part of it still inside the sliding window and adds the current
	// window's count (the approximation Cloudflare described in "How we built
	// rate limiting capable of scaling to millions of domains", 2017).
	// Clock steps: a backward step moves the key's windows back with it, and
	// they keep that phase until the key is idle for two windows and starts
	// afresh, aligned; a forward step rolls the windows over.
	SlidingWindowCounter Algorithm = "sliding_window_counter"
)

// WindowStart says where a fixed window's windows begin. The zero value,
// StartAligned, is the only one the reference limiter enforces.
type WindowStart string

const (
	// StartAligned: windows start at multiples of Period since the Unix
	// epoch on the limiter's clock, the same for every key.
	StartAligned WindowStart = ""
	// StartFirst: a key's window starts at its first request and lasts
	// Period; the first request after it expired starts the next (the INCR
	// then EXPIRE of rate-limit-redis, ulule/limiter and
	// rate-limiter-flexible). Written "start=first". The policy syntax
	// accepts it so that it can be claimed for such a limiter (rlbench run
	// --claim); the reference limiter's stores refuse it (CheckRequest).
	StartFirst WindowStart = "first"
	// StartFirstGrid: a key's windows lie on a grid of Period anchored at
	// its first request, and keep their places whether or not requests
	// come (sethvargo/go-limiter's memorystore refills the key's bucket at
	// each tick (now − first request) / Period). Written
	// "start=first-grid": the windows start at the first request, then
	// every Period after it. Limit.Idle says when such a limiter forgets a
	// key. Like StartFirst it is claimed for another limiter, never
	// enforced by the reference's stores.
	StartFirstGrid WindowStart = "first-grid"
)

// Algorithms lists every algorithm, in the order documentation shows them.
var Algorithms = []Algorithm{TokenBucket, GCRA, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter}

// IsWindow reports whether a is a window algorithm, whose limit is Rate units
// per window of length Period and which has no separate burst.
func (a Algorithm) IsWindow() bool {
	return a == FixedWindow || a == SlidingWindowLog || a == SlidingWindowCounter
}

// ErrInvalidLimit is wrapped by every error Limit.Validate returns.
var ErrInvalidLimit = errors.New("invalid limit")

// ErrCostExceedsCapacity is returned when one request costs more units than
// the limit can ever admit at once; waiting would never help.
var ErrCostExceedsCapacity = errors.New("cost exceeds the limit's capacity")

const (
	// MinPeriod is the shortest Period a Limit may have.
	MinPeriod = time.Millisecond
	// MaxCapacity bounds Burst (and Rate of window algorithms) so that every
	// quantity the algorithms compute fits in an int64 of microseconds and
	// stays exact in Redis Lua's doubles.
	MaxCapacity = 1 << 40
	// maxSpanMicros bounds the time a full budget takes to refill (emission
	// interval times burst, or window times limit for the sliding window
	// counter's scaled estimate) so that timestamps never overflow an int64:
	// about 146,000 years. Redis Lua computes in doubles, exact below 2^53 µs
	// (285 years) and within a few microseconds beyond.
	maxSpanMicros = 1 << 62
)

// Limit is a rate-limiting policy: an algorithm and its parameters.
//
// For the bucket algorithms (TokenBucket, GCRA, LeakyBucket) Rate units are
// admitted per Period on average and Burst units at once; Rate may be
// fractional (1e-10 per second is valid). For the window algorithms Rate is
// the whole number of units admitted per window and Period is the window; Burst
// must be zero or equal to Rate.
//
// Start, for a fixed window only, says where its windows begin. Idle, for
// windows on the grid from the first request only, is how long a key may
// go unused, from the start of the window of its last request, before the
// limiter may forget it and anchor a new grid at its next request
// (go-limiter's SweepMinTTL); 0 means the limiter never forgets a key.
//
// LeaseTokens and LeaseFor, for GCRA and TokenBucket only, let a store
// that supports leases (see package limiter/lease) grant up to LeaseTokens
// units at once to one instance, to spend locally for LeaseFor after the
// request that took them was sent; zero means no lease. A lease keeps the
// shared budget exact but holds up to LeaseTokens + LeaseFor·rate units of
// burst that other instances cannot use meanwhile (see LeaseN). The lease
// is part of the policy, not of its state: ID and StateID leave it out.
//
// Name identifies the policy in storage keys and in the RateLimit-Policy
// header; when empty, ID derives one from the parameters. Limit is a
// comparable value, safe to copy and to use as a map key.
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

// Leased reports whether l declares a lease.
func (l Limit) Leased() bool { return l.LeaseTokens != 0 || l.LeaseFor != 0 }

// WithoutLease is l with its lease removed: the same budget, decided on the
// store for every request.
func (l Limit) WithoutLease() Limit {
	l.LeaseTokens, l.LeaseFor = 0, 0
	return l
}

// PerSecond returns a token bucket of rate units per second and the given burst.
func PerSecond(rate float64, burst int64) Limit {
	return Limit{Algorithm: TokenBucket, Rate: rate, Period: time.Second, Burst: burst}
}

// PerMinute returns a token bucket of rate units per minute and the given burst.
func PerMinute(rate float64, burst int64) Limit {
	return Limit{Algorithm: TokenBucket, Rate: rate, Period: time.Minute, Burst: burst}
}

// PerHour returns a token bucket of rate units per hour and the given burst.
func PerHour(rate float64, burst int64) Limit {
	return Limit{Algorithm: TokenBucket, Rate: rate, Period: time.Hour, Burst: burst}
}

// Window returns a window limit of algorithm alg admitting limit units per window.
func Window(alg Algorithm, limit int64, window time.Duration) Limit {
	return Limit{Algorithm: alg, Rate: float64(limit), Period: window, Burst: limit}
}

// Capacity is the most units the limit admits at once: Burst for the bucket
// algorithms, Rate for the window algorithms.
func (l Limit) Capacity() int64 {
	if l.Algorithm.IsWindow() {
		return int64(l.Rate)
	}
	return l.Burst
}

// IntervalMicros is the emission interval of a bucket limit, Period/Rate, in
// microseconds, rounded up so the enforced rate never exceeds the declared
// one (the difference is under one microsecond per unit). Window limits
// return their window.
func (l Limit) IntervalMicros() int64 {
	p := float64(l.Period / time.Microsecond)
	if l.Algorithm.IsWindow() {
		return int64(p)
	}
	return int64(math.Ceil(p / l.Rate))
}

// PeriodMicros is Period in whole microseconds.
func (l Limit) PeriodMicros() int64 { return int64(l.Period / time.Microsecond) }

// Validate reports why l cannot be enforced, or nil. Errors wrap
// ErrInvalidLimit and name the field at fault.
func (l Limit) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidLimit, field, fmt.Sprintf(format, args...))
	}
	switch l.Algorithm {
	case TokenBucket, GCRA, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter:
	case "":
		return bad("algorithm", "missing; use one of %s", algorithmList())
	default:
		return bad("algorithm", "unknown %q; use one of %s", string(l.Algorithm), algorithmList())
	}
	if strings.ContainsAny(l.Name, "{}: \t\r\n") {
		return bad("name", "%q may not contain braces, colons or spaces", l.Name)
	}
	switch {
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
	}
	if l.Period < MinPeriod {
		return bad("period", "%v is shorter than the minimum %v", l.Period, MinPeriod)
	}
	if math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate <= 0 {
		return bad("rate", "%v must be a positive number", l.Rate)
	}
	if l.Algorithm.IsWindow() {
		if l.Rate != math.Trunc(l.Rate) {
			return bad("rate", "a %s admits a whole number of units per window, not %v", l.Algorithm, l.Rate)
		}
		if l.Rate > MaxCapacity {
			return bad("rate", "%v exceeds the maximum %d per window", l.Rate, int64(MaxCapacity))
		}
		if l.Burst != 0 && l.Burst != int64(l.Rate) {
			return bad("burst", "a %s has no separate burst; leave it 0 or equal to the rate %v", l.Algorithm, l.Rate)
		}
		if l.Algorithm == SlidingWindowCounter && float64(l.PeriodMicros())*l.Rate > maxSpanMicros {
			return bad("rate", "limit %v times window %v overflows exact arithmetic; shorten the window or lower the limit", l.Rate, l.Period)
		}
		return l.validateLease(bad)
	}
	interval := float64(l.PeriodMicros()) / l.Rate
	if interval < 1 {
		return bad("rate", "%v per %v is above one unit per microsecond, the finest the limiter resolves", l.Rate, l.Period)
	}
	if l.Burst < 1 {
		return bad("burst", "%d must be at least 1", l.Burst)
	}
	if l.Burst > MaxCapacity {
		return bad("burst", "%d exceeds the maximum %d", l.Burst, int64(MaxCapacity))
	}
	if math.Ceil(interval)*float64(l.Burst+1) > maxSpanMicros {
		return bad("rate", "%v per %v with burst %d overflows: refilling the bucket would take over 146,000 years", l.Rate, l.Period, l.Burst)
	}
	return l.validateLease(bad)
}

// validateLease checks the lease option of a valid bucket limit: at least
// 2 tokens (a store grants a lease only when it holds more units than the
// request's cost, so a 1-token lease would never be granted), a duration
// of at least MinPeriod, and both held together (tokens plus the refill the
// duration brings) within the burst, so that a grant fits in a bucket that
// was full.
func (l Limit) validateLease(bad func(field, format string, args ...any) error) error {
	if !l.Leased() {
		return nil
	}
	switch {
	case l.Algorithm != GCRA && l.Algorithm != TokenBucket:
		return bad("lease", "applies to gcra and token_bucket only, not %s; remove lease=%d/%v or use gcra", l.Algorithm, l.LeaseTokens, l.LeaseFor)
	case l.LeaseTokens < 2:
		return bad("lease", "lease=%d/%s never grants: a store grants a lease only when it holds more units than the request's cost, so a lease needs at least 2 tokens; write lease=N/DURATION with N of 2 or more, as in lease=10/900ms, or remove it", l.LeaseTokens, leaseDuration(l.LeaseFor))
	case l.LeaseFor < MinPeriod:
		return bad("lease", "%v is shorter than the minimum %v; write lease=N/DURATION, as in lease=10/900ms", l.LeaseFor, MinPeriod)
	}
	t := math.Ceil(float64(l.PeriodMicros()) / l.Rate) // µs per unit
	hold := float64(l.LeaseFor/time.Microsecond) / t   // the refill the duration brings, in units
	if hold+float64(l.LeaseTokens) > float64(l.Burst) {
		var fits []string // the largest tokens, then the longest duration, that fit
		if n := l.Burst - int64(math.Ceil(hold)); n >= 2 {
			fits = append(fits, fmt.Sprintf("lease=%d/%s", n, leaseDuration(l.LeaseFor)))
		}
		if d := time.Duration(float64(l.Burst-l.LeaseTokens)*t) * time.Microsecond; d >= MinPeriod {
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
	return compactDuration(d)
}

// units formats a number of units for messages in full ("360000000",
// never "3.6e+08"), to at most two decimals.
func units(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// CheckLeaseAlone reports an error when limits, applied together to the
// same requests (one rule: a route's policies, a plan's tiers), are several
// and one of them declares a lease: package lease decides only a request
// under one limit locally, and sends every other to the store, so such a
// lease would never be taken. It returns the index of that limit and an
// error wrapping ErrInvalidLimit that names it and the fix, or -1 and nil.
func CheckLeaseAlone(limits []Limit) (int, error) {
	if len(limits) < 2 {
		return -1, nil
	}
	for i, l := range limits {
		if l.Leased() {
			return i, fmt.Errorf("%w: lease: lease=%d/%s: %s", ErrInvalidLimit, l.LeaseTokens, leaseDuration(l.LeaseFor), leaseAloneText(len(limits)))
		}
	}
	return -1, nil
}

// leaseAloneText is the reason and fix of CheckLeaseAlone's error, for a
// rule of n limits.
func leaseAloneText(n int) string {
	return fmt.Sprintf("a lease applies to a rule of one limit, and this one has %d; remove lease= or split the route's policies", n)
}

func algorithmList() string {
	names := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// ID is the policy's name in storage keys and headers: Name when set, else
// a compact form of the parameters such as "gcra-10per1s-b20".
func (l Limit) ID() string {
	if l.Name != "" {
		return l.Name
	}
	rate := strconv.FormatFloat(l.Rate, 'g', -1, 64)
	if l.Start == StartFirst {
		return fmt.Sprintf("%s-%sper%s-first", shortAlgorithm[l.Algorithm], rate, compactDuration(l.Period))
	}
	if l.Start == StartFirstGrid {
		return fmt.Sprintf("%s-%sper%s-firstgrid", shortAlgorithm[l.Algorithm], rate, compactDuration(l.Period))
	}
	if l.Algorithm.IsWindow() {
		return fmt.Sprintf("%s-%sper%s", shortAlgorithm[l.Algorithm], rate, compactDuration(l.Period))
	}
	return fmt.Sprintf("%s-%sper%s-b%d", shortAlgorithm[l.Algorithm], rate, compactDuration(l.Period), l.Burst)
}

// StateID names the state a store keeps for the limit: ID, and for a named
// limit its parameters too ("minute.gcra-60per1m-b10"), so that a plan
// whose parameters change starts from a fresh state in every store rather
// than reading the old state with the new parameters (a GCRA arrival time
// computed at 0.001/min means nothing at 60/min).
func (l Limit) StateID() string {
	if l.Name == "" {
		return l.ID()
	}
	unnamed := l
	unnamed.Name = ""
	return l.Name + "." + unnamed.ID()
}

var shortAlgorithm = map[Algorithm]string{
	TokenBucket: "tb", GCRA: "gcra", LeakyBucket: "lb",
	FixedWindow: "fw", SlidingWindowLog: "swl", SlidingWindowCounter: "swc",
}

// String formats l for people: "10 req/s (burst 20)" for a token bucket,
// "10 req/s (burst 20, gcra)" for the other buckets,
// "100 req/1m (fixed window)" for windows and "10 req/5s (fixed window from
// first request)" for windows from each key's first request and "10 req/5s
// (fixed window on a grid from first request)" for windows on the grid it
// anchors.
func (l Limit) String() string {
	rate := strconv.FormatFloat(l.Rate, 'g', -1, 64)
	per := periodString(l.Period)
	if l.Start == StartFirstGrid {
		return fmt.Sprintf("%s req/%s (%s on a grid from first request)", rate, per, strings.ReplaceAll(string(l.Algorithm), "_", " "))
	}
	if l.Start == StartFirst {
		return fmt.Sprintf("%s req/%s (%s from first request)", rate, per, strings.ReplaceAll(string(l.Algorithm), "_", " "))
	}
	if l.Algorithm.IsWindow() {
		return fmt.Sprintf("%s req/%s (%s)", rate, per, strings.ReplaceAll(string(l.Algorithm), "_", " "))
	}
	if l.Algorithm == TokenBucket {
		return fmt.Sprintf("%s req/%s (burst %d)", rate, per, l.Burst)
	}
	return fmt.Sprintf("%s req/%s (burst %d, %s)", rate, per, l.Burst, strings.ReplaceAll(string(l.Algorithm), "_", " "))
}

func periodString(d time.Duration) string {
	switch d {
	case time.Second:
		return "s"
	case time.Minute:
		return "min"
	case time.Hour:
		return "h"
	}
	return compactDuration(d)
}

// compactDuration is d.String() without zero trailing units: "1h", "1m30s".
func compactDuration(d time.Duration) string {
	s := d.String() // "1h0m0s", "1m30s", "10s", "500ms"
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// Spec formats l in the compact form ParseLimit reads, so that
// ParseLimit(l.Spec()) == l for every valid l: "gcra:10/1s,burst=20".
func (l Limit) Spec() string {
	spec := fmt.Sprintf("%s:%s/%s,burst=%d", l.Algorithm, strconv.FormatFloat(l.Rate, 'g', -1, 64), compactDuration(l.Period), l.Burst)
	if l.Start != StartAligned {
		spec += ",start=" + string(l.Start)
	}
	if l.Idle != 0 {
		spec += ",idle=" + compactDuration(l.Idle)
	}
	if l.Leased() {
		spec += fmt.Sprintf(",lease=%d/%s", l.LeaseTokens, compactDuration(l.LeaseFor))
	}
	if l.Name != "" {
		spec += ",name=" + l.Name
	}
	return spec
}

// ParseLimit parses the compact form used on command lines and in scenario
// files: "ALGORITHM:RATE/PERIOD[,burst=N][,start=first|first-grid][,idle=DUR][,lease=N/DUR][,name=NAME]",
// for example "token_bucket:10/1s,burst=20", "gcra:600/1m,burst=100",
// "fixed_window:100/1m", "fixed_window:10/5s,start=first" (windows from
// each key's first request, which only other limiters enforce; start=aligned
// is the default) or "fixed_window:10/5s,start=first-grid,idle=12h" (windows
// on the grid the key's first request anchors, the key forgotten after 12 h
// unused). "gcra:1000/1s,burst=1000,lease=10/900ms" lets an instance take
// up to 10 units at once and spend them locally for 900 ms (gcra and
// token_bucket only). The algorithm may be omitted (token bucket). The
// result is validated.
func ParseLimit(s string) (Limit, error) {
	var l Limit
	spec := strings.TrimSpace(s)
	l.Algorithm = TokenBucket
	if alg, rest, ok := strings.Cut(spec, ":"); ok {
		l.Algorithm = Algorithm(strings.TrimSpace(alg))
		spec = rest
	}
	parts := strings.Split(spec, ",")
	var err error
	if l.Rate, l.Period, err = ParseRate(parts[0]); err != nil {
		return Limit{}, fmt.Errorf("%w: %q: %w", ErrInvalidLimit, s, err)
	}
	seen := map[string]bool{}
	for _, opt := range parts[1:] {
		key, val, _ := strings.Cut(strings.TrimSpace(opt), "=")
		if seen[key] {
			return Limit{}, fmt.Errorf("%w: option %q is given twice in %q", ErrInvalidLimit, key, s)
		}
		seen[key] = true
		switch key {
		case "burst":
			if l.Burst, err = strconv.ParseInt(val, 10, 64); err != nil {
				if errors.Is(err, strconv.ErrRange) {
					return Limit{}, fmt.Errorf("%w: burst %s in %q is out of range; the most is %d", ErrInvalidLimit, val, s, int64(MaxCapacity))
				}
				return Limit{}, fmt.Errorf("%w: burst %q in %q is not a whole number", ErrInvalidLimit, val, s)
			}
		case "name":
			l.Name = val
		case "start":
			switch val {
			case "first":
				l.Start = StartFirst
			case "first-grid":
				l.Start = StartFirstGrid
			case "aligned":
				l.Start = StartAligned
			default:
				return Limit{}, fmt.Errorf("%w: start %q in %q: use first (windows from each key's first request), first-grid (windows on the grid it anchors) or aligned", ErrInvalidLimit, val, s)
			}
		case "idle":
			if l.Idle, err = time.ParseDuration(val); err != nil || l.Idle <= 0 {
				return Limit{}, fmt.Errorf("%w: idle %q in %q: want a positive duration such as 12h, after which the limiter may forget an unused key", ErrInvalidLimit, val, s)
			}
		case "lease":
			if l.LeaseTokens, l.LeaseFor, err = parseLease(val); err != nil {
				return Limit{}, fmt.Errorf("%w: lease %q in %q: want TOKENS/DURATION, as in lease=10/900ms (%v)", ErrInvalidLimit, val, s, err)
			}
		default:
			return Limit{}, fmt.Errorf("%w: unknown option %q in %q; valid options are burst, start, idle, lease and name", ErrInvalidLimit, key, s)
		}
	}
	// Defaults only from values that fit; Validate reports the others.
	fits := l.Rate > 0 && l.Rate <= MaxCapacity
	switch {
	case seen["burst"]:
	case l.Algorithm.IsWindow() && fits:
		l.Burst = int64(l.Rate)
	case fits:
		l.Burst = int64(math.Max(1, math.Ceil(l.Rate)))
	}
	return l, l.Validate()
}

// parseLease reads a lease's "TOKENS/DURATION": a whole number of tokens
// and a Go duration, both positive.
func parseLease(s string) (int64, time.Duration, error) {
	n, d, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, errors.New("no slash")
	}
	tokens, err := strconv.ParseInt(n, 10, 64)
	if err != nil || tokens < 1 {
		return 0, 0, fmt.Errorf("tokens %q is not a whole number of at least 1", n)
	}
	dur, err := time.ParseDuration(d)
	if err != nil || dur <= 0 {
		return 0, 0, fmt.Errorf("duration %q is not a positive Go duration", d)
	}
	return tokens, dur, nil
}

// MarshalText formats l as Spec does, so that l reads back with
// UnmarshalText (and YAML, JSON and flag.TextVar carry it as that string).
func (l Limit) MarshalText() ([]byte, error) { return []byte(l.Spec()), nil }

// UnmarshalText sets l to ParseLimit(text); its errors are ParseLimit's.
func (l *Limit) UnmarshalText(text []byte) error {
	parsed, err := ParseLimit(string(text))
	if err != nil {
		return err
	}
	*l = parsed
	return nil
}

// ParseRate parses the RATE/PERIOD form that limits and traffic rates share:
// a number of units, a slash and a period, for example "10/1s", "50/s",
// "600/1m", "50/min", "3000/1h" or "10000/30d". The period is a Go duration
// ("1s", "100ms", "1m30s"), a number of days ("30d", "0.5d") or a bare unit
// meaning one of it ("s", "m" or "min", "h", "d"). Spaces around the parts
// are ignored. ParseRate checks the syntax only: the rate may be zero or
// negative and the period zero or negative; callers bound them (ParseLimit
// through Validate). Errors name the part at fault.
func ParseRate(s string) (rate float64, period time.Duration, err error) {
	r, p, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want RATE/PERIOD, as in \"10/1s\"", strings.TrimSpace(s))
	}
	r, p = strings.TrimSpace(r), strings.TrimSpace(p)
	if rate, err = strconv.ParseFloat(r, 64); err != nil {
		return 0, 0, fmt.Errorf("rate %q is not a number", r)
	}
	if period, err = parsePeriod(p); err != nil {
		return 0, 0, fmt.Errorf("period %q: want a duration such as 1s, 1m, 1h or 1d (%v)", p, err)
	}
	return rate, period, nil
}

// parsePeriod accepts Go durations, days ("30d") and the unit-only
// shorthands s, m, min, h, d.
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
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return 0, err
		}
		if !(days*float64(24*time.Hour) <= math.MaxInt64) || days < 0 {
			return 0, fmt.Errorf("%s days is beyond the longest period, about 106,751 days", n)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}
