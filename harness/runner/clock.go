package runner

import (
	"net/http"
	"time"
)

// dateClock bounds an external target's clock offset (its clock minus the
// harness's) from the Date headers of its responses, read as the traffic
// runs: it sends nothing of its own.
//
// A Date (RFC 9110 §6.6.1) is the second, truncated, in which the origin
// server generated the response, on its clock. The server generated it
// between the request's send s and its answer's receipt e (harness
// times), so its clock then read T in [D, D+1s) at some harness time g in
// [s, e], and the offset T − g lies in [D − e, D + 1s − s]. Every response
// gives one such interval and the offset lies in all of them: their
// intersection narrows to about a round trip once responses fall on both
// sides of the server's second boundaries, which a run of many requests
// spread over time does.
//
// Each instance (base URL) is bounded on its own, and the offset reported
// is the hull of the instances' intervals: the instances may keep
// different clocks and the limiter reads one of them. The bound assumes
// the limiter's clock is the clock that writes the Date header (the
// application server's): a limiter deciding on another clock (a Redis) is
// measured by Redis TIME instead, when the scenario gives its redis.url. A
// Date written by a cache, or by a server whose clock is not the one
// that stamped other responses, makes an instance's intervals disjoint, and
// the offset is then unknown rather than wrong.
//
// A dateClock is not safe for concurrent use; the runner feeds it from the
// one goroutine that receives results.
type dateClock struct {
	// start is the history's start as time.Now() read it, and wall its
	// wall-clock reading as the history records it (HostClock.Wall);
	// harness times are wall plus the monotonic time since start.
	start, wall time.Time
	instances   map[int]*dateBounds
}

// dateBounds is one instance's intersection of intervals, in ns.
type dateBounds struct {
	lo, hi int64
}

func newDateClock(start, wall time.Time) *dateClock {
	return &dateClock{start: start, wall: wall, instances: map[int]*dateBounds{}}
}

// observe narrows instance's bounds by the Date of a response to a request
// sent at sent and answered at received (monotonic readings). A response
// without a Date, or with one that does not parse, tells nothing.
func (c *dateClock) observe(instance int, h http.Header, sent, received time.Time) {
	v := h.Get("Date")
	if v == "" {
		return
	}
	date, err := http.ParseTime(v)
	if err != nil {
		return
	}
	base := c.wall.UnixNano()
	s := base + sent.Sub(c.start).Nanoseconds()
	e := base + received.Sub(c.start).Nanoseconds()
	d := date.UnixNano()
	lo, hi := d-e, d+int64(time.Second)-s
	b := c.instances[instance]
	if b == nil {
		c.instances[instance] = &dateBounds{lo: lo, hi: hi}
		return
	}
	b.lo, b.hi = max(b.lo, lo), min(b.hi, hi)
}

// estimate returns the offset and its uncertainty (the half-width of the
// interval that holds it), and false when no response carried a Date or an
// instance's Dates contradict each other.
func (c *dateClock) estimate() (offset, uncertainty time.Duration, ok bool) {
	if len(c.instances) == 0 {
		return 0, 0, false
	}
	first := true
	var lo, hi int64
	for _, b := range c.instances {
		if b.lo > b.hi {
			return 0, 0, false
		}
		if first {
			lo, hi, first = b.lo, b.hi, false
			continue
		}
		lo, hi = min(lo, b.lo), max(hi, b.hi)
	}
	mid := lo + (hi-lo)/2
	return time.Duration(mid), time.Duration(max(mid-lo, hi-mid)), true
}
