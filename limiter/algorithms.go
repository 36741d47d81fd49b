package limiter

// This file is the single Go statement of every algorithm's arithmetic. The
// Lua scripts of limiter/redisstore mirror it line for line, and the
// conformance suite holds both to the same table.
//
// All quantities are int64: times in microseconds on the limiter's clock,
// budgets in units. Emission intervals are rounded up to whole microseconds
// (Limit.IntervalMicros), so no arithmetic drifts and none over-admits.
//
// Steps of the limiter's clock. Per-key time never runs backwards: every
// state records when it was last written (seen), and a decision at a time
// now before seen, after the clock stepped back, is taken as at seen. The
// state's times are moved back by seen − now first (stepBack), as though no
// time had passed since the write, and the moved state is written even when
// the request is rejected, so the key's time runs on from now: the step
// creates no budget, a client that had budget still has it, and a rejected
// client's wait is the one it was told at seen, which then elapses. Time
// between the last write and the step is not counted, so a step never
// over-admits. A forward step is time passing: buckets refill and windows
// roll over as they would have. Peeks decide the same way and write nothing.

// state is one key's stored state under one limit; the zero value is a fresh
// key. seen is the time of the last write (0 = never written). The other
// fields by algorithm:
//
//	TokenBucket:          a = tokens, b = time of the last refill
//	GCRA, LeakyBucket:    a = theoretical arrival time (TAT)
//	FixedWindow:          a = window start, b = count
//	SlidingWindowCounter: a = current window start, b = previous count, c = current count
//	SlidingWindowLog:     log = admitted units, oldest first; a = their sum
type state struct {
	a, b, c int64
	seen    int64
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

// outcome is an algorithm's verdict in microseconds, before it becomes a
// Decision. stepped reports that the clock had stepped back behind the
// state's last write, so the moved state must be stored even on a rejection.
type outcome struct {
	allowed                       bool
	stepped                       bool
	remaining                     int64
	resetAfter, retryAfter, delay int64
}

func (o *outcome) decision(l *Limit) Decision {
	return NewDecision(*l, o.allowed, o.remaining, o.resetAfter, o.retryAfter, o.delay)
}

// decide evaluates a request of cost n at time now against s and, if the
// request is admitted and out is not nil, writes the state to store to out
// (which may be s itself). When now is before s's last write, s is first
// moved back to now (stepBack) and, for n > 0, the moved state is written to
// out whatever the verdict; outcome.stepped says so. n = 0 peeks: nothing is
// written, Remaining and ResetAfter describe the state as it is, and Allowed
// and RetryAfter answer for one unit. decide reads all of s before it writes
// out.
func decide(p *params, s *state, now, n int64, out *state) outcome {
	if s.seen > now {
		return decideStepped(p, s, now, n, out)
	}
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

// decideStepped is decide for a state written after now, kept out of
// decide's common path.
func decideStepped(p *params, s *state, now, n int64, out *state) outcome {
	moved := stepBack(p, s, now)
	if out != nil && n > 0 {
		*out = moved
	}
	o := decide(p, &moved, now, n, out) // moved.seen == now: no step any more
	o.stepped = true
	return o
}

// stepBack returns s, last written at s.seen > now, with every time it holds
// moved back by s.seen − now: the same state as seen from now, on a clock
// that stepped back. It never shares s's log.
func stepBack(p *params, s *state, now int64) state {
	d := s.seen - now
	moved := *s
	moved.seen = now
	switch p.alg {
	case TokenBucket:
		moved.b -= d
	case GCRA, LeakyBucket, FixedWindow, SlidingWindowCounter:
		moved.a -= d
	case SlidingWindowLog:
		moved.log = make([]logEntry, len(s.log))
		for i, e := range s.log {
			moved.log[i] = logEntry{at: e.at - d, n: e.n}
		}
	}
	return moved
}

// ask is the number of units a request asks for: n, or 1 for a peek.
func ask(n int64) int64 { return max(n, 1) }

// tokenBucket refills burst tokens at one per emission interval t, lazily:
// the state keeps the time of the last whole refill, so a partial interval
// is never lost. A backward step of the clock refills nothing and shortens
// no wait (decide moves the refill time back with it); a forward step
// refills what the time passed brings, up to the burst.
func tokenBucket(p *params, s *state, now, n int64, out *state) outcome {
	t, burst := p.interval, p.capacity
	tokens, last := s.a, s.b
	if s.seen == 0 { // fresh key: a full bucket
		tokens, last = burst, now
	}
	if elapsed := now - last; elapsed > 0 {
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
		*out = state{a: tokens, b: last, seen: now}
	}
	return outcome{allowed: true, remaining: tokens, resetAfter: resetAfter(tokens)}
}

// gcra is the virtual-scheduling GCRA: a request of n units is conforming if
// its theoretical arrival time, pushed n emission intervals later, lies within
// burst intervals of now. For LeakyBucket the same test bounds the queue and
// the delay is the wait for the request's slot. A backward step of the clock
// moves the TAT back with it (decide), so the comparison is the one at the
// last write, max(now, seen): a client that had budget keeps it and a
// rejected one's wait does not grow by the step; a forward step lets the TAT
// fall behind now, a full burst.
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
		*out = state{a: newTAT, seen: now}
	}
	return o
}

// windowStart is the start of the aligned window of length w holding now.
func windowStart(now, w int64) int64 { return now - now%w }

// fixedWindow counts units in windows of length w aligned on the clock. A
// backward step moves the current window back with it (decide), so its count
// carries on and it ends when it would have ended had the clock not stepped;
// that window is then the key's own, unaligned, and once it ends the next
// request starts a fresh count in the aligned window holding now, which may
// have begun before. A forward step past the window's end is a fresh count.
func fixedWindow(p *params, s *state, now, n int64, out *state) outcome {
	w, limit := p.interval, p.capacity
	start, count := windowStart(now, w), int64(0)
	if now < s.a+w { // the stored window still runs; else a fresh count, whatever the old key's TTL said
		start, count = s.a, s.b
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
		*out = state{a: start, b: count, seen: now}
	}
	return outcome{allowed: true, remaining: limit - count, resetAfter: reset}
}

// slidingWindowCounter weighs the previous window's count by the part of it
// still inside the sliding window ending now. Windows are aligned on the
// clock when a key starts; a backward step moves the key's windows back with
// it (decide), so the estimate is the one at the last write, and the key's
// windows keep that phase, one after the other, until it is idle for two
// windows and starts afresh, aligned. A forward step rolls the windows over
// as the time passed would have.
func slidingWindowCounter(p *params, s *state, now, n int64, out *state) outcome {
	w, limit := p.interval, p.capacity
	start, prev, curr := windowStart(now, w), int64(0), int64(0)
	switch since := now - s.a; {
	case since < w: // the stored window still runs
		start, prev, curr = s.a, s.b, s.c
	case since < 2*w: // the next one: the current count becomes the previous
		start, prev = s.a+w, s.c
	} // else nothing weighs any more: a fresh, aligned window
	elapsed := now - start
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
		*out = state{a: start, b: prev, c: curr, seen: now}
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

// slidingWindowLog counts the units admitted in the window of length w
// ending now. A backward step moves every entry back with it (decide), so
// entries slide out when they would have had the clock not stepped; a
// forward step slides out what the time passed would have.
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
		*out = state{a: count, seen: now, log: log}
	}
	return outcome{allowed: true, remaining: limit - count, resetAfter: resetAfter(log)}
}

// fresh reports whether s decides every later request exactly as a fresh key
// would, so a sweep may drop it. A state written after now (the clock
// stepped back) is decided as at its write, which charged it: never fresh.
func fresh(p *params, s *state, now int64) bool {
	if s.seen > now {
		return false
	}
	switch p.alg {
	case TokenBucket:
		return s.seen == 0 || s.a+(now-s.b)/p.interval >= p.capacity
	case GCRA, LeakyBucket:
		return s.a <= now
	case FixedWindow:
		return now >= s.a+p.interval
	case SlidingWindowCounter:
		return now-s.a >= 2*p.interval
	case SlidingWindowLog:
		return len(s.log) == 0 || s.log[len(s.log)-1].at <= now-p.interval
	}
	return true
}
