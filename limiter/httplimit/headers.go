package httplimit

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// HeaderStyle selects the rate-limit header fields written on every limited
// response. Styles are bit flags and combine with |; the zero value writes
// none (Retry-After on a 429 is always written).
type HeaderStyle uint8

const (
	// HeadersIETF writes RateLimit-Policy and RateLimit as structured fields
	// (RFC 9651), as draft-ietf-httpapi-ratelimit-headers-10 defines them:
	//
	//	RateLimit-Policy: "minute";q=100;w=10, "month";q=100000;w=2592000
	//	RateLimit: "minute";r=42;t=21
	//
	// RateLimit-Policy lists every limit applied to the request; q is the
	// limit's capacity (the burst of a bucket, the limit of a window) and w,
	// in whole seconds rounded up, the time in which q units are admitted:
	// a window algorithm's window, or for a bucket the time to refill the
	// whole burst at the sustained rate (burst × period / rate), so q/w is
	// the sustained rate and q the burst. RateLimit reports the deciding
	// limit (the rejecting one, or the one with the least remaining): r the
	// units remaining, t the seconds until the budget is full again, rounded
	// up.
	HeadersIETF HeaderStyle = 1 << iota
	// HeadersDraft06 writes the separate fields of
	// draft-ietf-httpapi-ratelimit-headers-06 for the deciding limit:
	// RateLimit-Limit (capacity), RateLimit-Remaining (units) and
	// RateLimit-Reset (seconds until the budget is full, rounded up).
	HeadersDraft06
	// HeadersLegacy writes the unstandardised fields many APIs use:
	// X-RateLimit-Limit (capacity), X-RateLimit-Remaining (units) and
	// X-RateLimit-Reset, as GitHub does, the Unix time in seconds (rounded
	// up) at which the budget is full again.
	HeadersLegacy

	// DefaultHeaderStyle is the style a Middleware uses unless WithHeaders
	// says otherwise.
	DefaultHeaderStyle = HeadersIETF
)

// DecisionTimeHeader is the opt-in response field (see WithDecisionTime)
// carrying the instance's wall-clock time, in Unix microseconds, at which the
// limiter's answer arrived. The decision itself was taken on the store's
// clock at or before that instant. It is not a standard field: rlbench's
// harness records it to narrow the interval in which a decision fell.
const DecisionTimeHeader = "X-RateLimit-Decision-Time"

// ParseHeaderStyle parses a comma-separated list of style names: "ietf",
// "draft06", "legacy", or "none".
func ParseHeaderStyle(s string) (HeaderStyle, error) {
	var style HeaderStyle
	for name := range strings.SplitSeq(s, ",") {
		switch strings.TrimSpace(name) {
		case "ietf":
			style |= HeadersIETF
		case "draft06":
			style |= HeadersDraft06
		case "legacy":
			style |= HeadersLegacy
		case "none", "":
		default:
			return 0, &styleError{name: strings.TrimSpace(name)}
		}
	}
	return style, nil
}

type styleError struct{ name string }

func (e *styleError) Error() string {
	return "unknown header style " + strconv.Quote(e.name) + "; use ietf, draft06, legacy or none"
}

// windowSeconds is the w parameter of a limit in RateLimit-Policy.
func windowSeconds(l limiter.Limit) int64 {
	us := l.PeriodMicros()
	if !l.Algorithm.IsWindow() {
		us = l.IntervalMicros() * l.Burst
	}
	return max((us+999_999)/1_000_000, 1)
}

// Canonical forms of the fields written, so that setting them allocates no key.
var (
	hRateLimitPolicy    = http.CanonicalHeaderKey("RateLimit-Policy")
	hRateLimit          = http.CanonicalHeaderKey("RateLimit")
	hRateLimitLimit     = http.CanonicalHeaderKey("RateLimit-Limit")
	hRateLimitRemaining = http.CanonicalHeaderKey("RateLimit-Remaining")
	hRateLimitReset     = http.CanonicalHeaderKey("RateLimit-Reset")
	hXRateLimitLimit    = http.CanonicalHeaderKey("X-RateLimit-Limit")
	hXRateLimitRemain   = http.CanonicalHeaderKey("X-RateLimit-Remaining")
	hXRateLimitReset    = http.CanonicalHeaderKey("X-RateLimit-Reset")
	hRetryAfter         = http.CanonicalHeaderKey("Retry-After")
	hDecisionTime       = http.CanonicalHeaderKey(DecisionTimeHeader)
)

// headerCache memoises what depends on the limits alone: the
// RateLimit-Policy value of each set of limits and each limit's ID, plain
// and quoted. Limits come from configuration, never from requests, so it stays
// as small as the set of plans and routes. It is safe for concurrent use.
type headerCache struct {
	policies sync.Map // policyKey → string
	names    sync.Map // limiter.Limit → string, quoted
	ids      sync.Map // limiter.Limit → string
}

// id returns l.ID().
func (c *headerCache) id(l limiter.Limit) string {
	if l.Name != "" {
		return l.Name
	}
	if v, ok := c.ids.Load(l); ok {
		return v.(string)
	}
	v, _ := c.ids.LoadOrStore(l, l.ID())
	return v.(string)
}

// policyKey identifies a set of up to four limits; larger sets are not cached.
type policyKey struct {
	n      int
	limits [4]limiter.Limit
}

// name returns l.ID() as a structured-field String.
func (c *headerCache) name(l limiter.Limit) string {
	if v, ok := c.names.Load(l); ok {
		return v.(string)
	}
	var b strings.Builder
	writeSFString(&b, c.id(l))
	v, _ := c.names.LoadOrStore(l, b.String())
	return v.(string)
}

// policy returns the RateLimit-Policy value of limits.
func (c *headerCache) policy(limits []limiter.Limit) string {
	var key policyKey
	cacheable := len(limits) <= len(key.limits)
	if cacheable {
		key.n = copy(key.limits[:], limits)
		if v, ok := c.policies.Load(key); ok {
			return v.(string)
		}
	}
	var b []byte
	for i, l := range limits {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, c.name(l)...)
		b = append(b, ";q="...)
		b = strconv.AppendInt(b, l.Capacity(), 10)
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, windowSeconds(l), 10)
	}
	if !cacheable {
		return string(b)
	}
	v, _ := c.policies.LoadOrStore(key, string(b))
	return v.(string)
}

// write sets the fields of style for decision d, whose RateLimit-Policy
// value is policy, at time now.
func (c *headerCache) write(h http.Header, style HeaderStyle, d limiter.Decision, policy string, now time.Time) {
	if style&HeadersIETF != 0 {
		var buf [96]byte
		b := append(buf[:0], c.name(d.Limit)...)
		b = append(b, ";r="...)
		b = strconv.AppendInt(b, d.Remaining, 10)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, d.ResetAfterSeconds(), 10)
		vals := [2]string{policy, string(b)} // one allocation for both fields
		h[hRateLimitPolicy], h[hRateLimit] = vals[0:1:1], vals[1:2:2]
	}
	if style&(HeadersDraft06|HeadersLegacy) == 0 {
		return
	}
	capacity, remaining := strconv.FormatInt(d.Limit.Capacity(), 10), strconv.FormatInt(d.Remaining, 10)
	if style&HeadersDraft06 != 0 {
		vals := [3]string{capacity, remaining, strconv.FormatInt(d.ResetAfterSeconds(), 10)}
		h[hRateLimitLimit], h[hRateLimitRemaining], h[hRateLimitReset] = vals[0:1:1], vals[1:2:2], vals[2:3:3]
	}
	if style&HeadersLegacy != 0 {
		vals := [3]string{capacity, remaining, strconv.FormatInt(resetEpoch(now, d), 10)}
		h[hXRateLimitLimit], h[hXRateLimitRemain], h[hXRateLimitReset] = vals[0:1:1], vals[1:2:2], vals[2:3:3]
	}
}

// resetEpoch is the Unix second, rounded up, at which d's budget is full.
func resetEpoch(now time.Time, d limiter.Decision) int64 {
	us := now.UnixMicro()
	sec := us / 1_000_000
	if us%1_000_000 != 0 {
		sec++
	}
	if d.ResetAfter == 0 {
		return sec
	}
	end := us + d.ResetAfter.Microseconds()
	if end < us { // saturated
		return sec + d.ResetAfterSeconds()
	}
	return (end + 999_999) / 1_000_000
}

// writeSFString writes s as a structured-field String (RFC 9651 §3.3.3):
// quoted, with '"' and '\' escaped and characters outside printable ASCII
// replaced by '?'.
func writeSFString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
