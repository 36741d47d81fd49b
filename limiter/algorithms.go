package limiter

// This file is the single Go statement of every algorithm's arithmetic. The
// Lua scripts of limiter/redisstore mirror it line for line, and the
// conformance suite holds both to the same table.
//
// All quantities are int64: times in microseconds on the limiter's clock,
// budgets in units. Emission intervals are rounded up to whole microseconds
// (Limit.IntervalMicros), so no arithmetic drifts and none over-admits.

// state is one key's stored state under one limit; the zero value is a fresh
// key. Its fields by algorithm:
//
//	TokenBucket:          a = tokens, b = time of the last refill (0 = never)
//	GCRA, LeakyBucket:    a = theoretical arrival time (TAT)
//	FixedWindow:          a = window start, b = count
//	SlidingWindowCounter: a = current window start, b = previous count, c = current count
//	SlidingWindowLog:     log = admitted units, oldest first; a = their sum
type state struct {
	a, b, c int64
	log     []logEntry
}

// logEntry is n units admitted at time at.
type logEntry struct{ at, n int64 }

// params are a limit's parameters in the units the algorithms compute in,
// derived once per key and limit rather than on every decision.
type params struct {
	alg      Algorithm
	interval int64 // emission interval (buckets) or window (windows), µs
	capacity int64 // burst (buckets) or limit per window (windows)
}

func paramsOf(l Limit) params {
	return params{alg: l.Algorithm, interval: l.IntervalMicros(), capacity: l.Capacity()}
}

// outcome is an algorithm's verdict in microseconds, before it becomes a Decision.
type outcome struct {
	allowed                       bool
	remaining                     int64
	resetAfter, retryAfter, delay int64
}

func (o *outcome) decision(l *Limit) Decision {
	return NewDecision(*l, o.allowed, o.remaining, o.resetAfter, o.retryAfter, o.delay)
}

// decide evaluates a request of cost n at time now against s and, if the
// request is admitted and out is not nil, writes the state to store to out
// (which may be s itself). n = 0 peeks: nothing is written, Remaining and
// ResetAfter describe the state as it is, and Allowed and RetryAfter answer
// for one unit. decide reads all of s before it writes out.
func decide(p *params, s *state, now, n int64, out *state) outcome {
	switch p.alg {
	case TokenBucket:
		return tokenBucket(p, s, now, n, out)
	case GCRA, LeakyBucket:
		return gcra(p, s, now, n, out)
	case FixedWindow:
		return fixedWindow(p, s, now, n, out)
	case SlidingWindowCounter:
		return slidingWindowCounter(p, s, now, n, out)
	case SlidingWindowLog:
		return slidingWindowLog(p, s, now, n, out)
	}
	return outcome{}
}

// ask is the number of units a request asks for: n, or 1 for a peek.
func ask(n int64) int64 { return max(n, 1) }

func tokenBucket(p *params, s *state, now, n int64, out *state) outcome {
	t, burst := p.interval, p.capacity
	tokens, last := s.a, s.b
	if last == 0 { // fresh key: a full bucket
		tokens, last = burst, now
	}
	if elapsed := now - last; elapsed > 0 { // a clock that steps back refills nothing
		if elapsed >= (burst-tokens)*t { // full again; no division needed
			tokens, last = burst, now
		} else {
			refill := elapsed / t
			tokens, last = tokens+refill, last+refill*t // keep the partial interval
		}
	}
	resetAfter := func(tok int64) int64 {
		if tok >= burst {
			return 0
		}
		return last + (burst-tok)*t - now
	}
	if tokens < ask(n) {
		return outcome{remaining: tokens, resetAfter: resetAfter(tokens), retryAfter: last + (ask(n)-tokens)*t - now}
	}
	tokens -= n
	if out != nil && n > 0 {
		*out = state{a: tokens, b: last}
	}
	return outcome{allowed: true, remaining: tokens, resetAfter: resetAfter(tokens)}
}

// gcra is the virtual-scheduling GCRA: a request of n units is conforming if
// its theoretical arrival time, pushed n emission intervals later, lies within
// burst intervals of now. For LeakyBucket the same test bounds the queue and
// the delay is the wait for the request's slot.
func gcra(p *params, s *state, now, n int64, out *state) outcome {
	t, burst := p.interval, p.capacity
	tat := max(s.a, now)
	capacity := burst * t
	remaining := func(at int64) int64 { return (capacity - (at - now)) / t }
	newTAT := tat + ask(n)*t
	if newTAT-now > capacity {
		return outcome{remaining: remaining(tat), resetAfter: tat - now, retryAfter: newTAT - capacity - now}
	}
	o := outcome{allowed: true}
	if p.alg == LeakyBucket {
		o.delay = tat - now
	}
	if n == 0 {
		o.remaining, o.resetAfter, o.delay = remaining(tat), tat-now, 0
		return o
	}
	o.remaining, o.resetAfter = remaining(newTAT), newTAT-now
	if out != nil {
		*out = state{a: newTAT}
	}
	return o
}

// windowStart is the start of the aligned window of length w holding now.
func windowStart(now, w int64) int64 { return now - now%w }

func fixedWindow(p *params, s *state, now, n int64, out *state) outcome {
	w, limit := p.interval, p.capacity
	start, count := windowStart(now, w), s.b
	switch {
	case s.a < start: // a later window: a fresh count, whatever the old key's TTL said
		count = 0
	case s.a > start: // the clock stepped back into an earlier window: keep counting the newer one
		start = s.a
	}
	end := start + w - now
	if count+ask(n) > limit {
		return outcome{remaining: limit - count, resetAfter: end, retryAfter: end}
	}
	count += n
	reset := end
	if count == 0 {
		reset = 0
	}
	if out != nil && n > 0 {
		*out = state{a: start, b: count}
	}
	return outcome{allowed: true, remaining: limit - count, resetAfter: reset}
}

func slidingWindowCounter(p *params, s *state, now, n int64, out *state) outcome {
	w, limit := p.interval, p.capacity
	start, prev, curr := windowStart(now, w), s.b, s.c
	switch {
	case s.a == start:
	case s.a == start-w:
		prev, curr = curr, 0
	case s.a < start-w:
		prev, curr = 0, 0
	default: // the clock stepped back: stay in the newer window, at its start
		start = s.a
	}
	elapsed := max(now-start, 0)
	// The estimate prev·(w−elapsed)/w + curr, scaled by w to stay in integers.
	estimate := prev*(w-elapsed) + curr*w
	capacity := limit * w
	resetAfter := func(prev, curr int64) int64 {
		switch {
		case curr > 0:
			return start + 2*w - now
		case prev > 0:
			return start + w - now
		}
		return 0
	}
	if estimate+ask(n)*w > capacity {
		return outcome{
			remaining:  max(capacity-estimate, 0) / w,
			resetAfter: resetAfter(prev, curr),
			retryAfter: slidingCounterWait(w, limit, prev, curr, ask(n), elapsed),
		}
	}
	curr += n
	estimate += n * w
	if out != nil && n > 0 {
		*out = state{a: start, b: prev, c: curr}
	}
	return outcome{allowed: true, remaining: (capacity - estimate) / w, resetAfter: resetAfter(prev, curr)}
}

// slidingCounterWait is the time from elapsed (into the current window) until
// a request of n units fits: within this window once enough of prev has
// slid out, else in the next window, where curr becomes the previous count.
func slidingCounterWait(w, limit, prev, curr, n, elapsed int64) int64 {
	// At offset e into a window with previous count p and current count c, n
	// fits when p·(w−e) ≤ (limit−c−n)·w, i.e. e ≥ w − floor((limit−c−n)·w / p).
	fitsAt := func(p, c int64) int64 {
		room := (limit - c - n) * w
		if p == 0 {
			return 0
		}
		return max(w-room/p, 0)
	}
	if curr+n <= limit {
		return fitsAt(prev, curr) - elapsed
	}
	return w - elapsed + fitsAt(curr, 0)
}

func slidingWindowLog(p *params, s *state, now, n int64, out *state) outcome {
	w, limit := p.interval, p.capacity
	log, count := s.log, s.a
	for len(log) > 0 && log[0].at <= now-w { // an entry counts while now − at < w
		count -= log[0].n
		log = log[1:]
	}
	resetAfter := func(log []logEntry) int64 {
		if len(log) == 0 {
			return 0
		}
		return log[len(log)-1].at + w - now
	}
	if count+ask(n) > limit {
		// Wait for the oldest entries holding the excess to slide out.
		excess, wait := count+ask(n)-limit, int64(0)
		for _, e := range log {
			excess -= e.n
			if excess <= 0 {
				wait = e.at + w - now
				break
			}
		}
		return outcome{remaining: limit - count, resetAfter: resetAfter(log), retryAfter: wait}
	}
	if n > 0 {
		// Entries of the same instant stay separate: merging one would
		// write into an array that an uncommitted decision may share.
		log = append(log, logEntry{at: now, n: n})
		count += n
	}
	if out != nil && n > 0 {
		*out = state{a: count, log: log}
	}
	return outcome{allowed: true, remaining: limit - count, resetAfter: resetAfter(log)}
}

// fresh reports whether s decides every later request exactly as a fresh key
// would, so a sweep may drop it.
func fresh(p *params, s *state, now int64) bool {
	switch p.alg {
	case TokenBucket:
		return s.b == 0 || s.a+(now-s.b)/p.interval >= p.capacity
	case GCRA, LeakyBucket:
		return s.a <= now
	case FixedWindow:
		return s.a < windowStart(now, p.interval)
	case SlidingWindowCounter:
		return s.a < windowStart(now, p.interval)-p.interval
	case SlidingWindowLog:
		return len(s.log) == 0 || s.log[len(s.log)-1].at <= now-p.interval
	}
	return true
}
