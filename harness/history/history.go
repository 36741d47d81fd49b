package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const (
	// Format is the value of the header's "format" field.
	Format = "rlbench-history"
	// Version is the format version this package writes and reads.
	Version = 1
)

// ErrFormat is wrapped by every error about a malformed history.
var ErrFormat = errors.New("malformed history")

// FormatError is a fault in a history file: the line (1-based; the header is
// line 1), the field at fault when known, and the cause. It wraps ErrFormat.
type FormatError struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *FormatError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	fmt.Fprintf(&b, "%d", e.Line)
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the cause.
func (e *FormatError) Unwrap() error { return e.Err }

// Is reports whether target is ErrFormat.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// Header is a history's first line: the format, the run's wall-clock start
// and the run's metadata. See the package documentation for each field.
type Header struct {
	Format             string         `json:"format"`
	Version            int            `json:"version"`
	Start              time.Time      `json:"start"`
	Scenario           string         `json:"scenario,omitempty"`
	Target             string         `json:"target,omitempty"`
	Instances          []string       `json:"instances,omitempty"`
	Policies           []RoutePolicy  `json:"policies,omitempty"`
	ClockOffsetNs      *int64         `json:"clock_offset_ns,omitempty"`
	ClockUncertaintyNs int64          `json:"clock_uncertainty_ns,omitempty"`
	Extra              map[string]any `json:"extra,omitempty"`
}

// RoutePolicy names the limits, in limiter.ParseLimit syntax, in force on a
// route; the empty route means every route.
type RoutePolicy struct {
	Route  string   `json:"route"`
	Limits []string `json:"limits"`
}

// NewHeader returns a version-1 header for a run started at start.
func NewHeader(start time.Time) Header {
	return Header{Format: Format, Version: Version, Start: start}
}

// Outcome is what the limiter decided for a request, as the client saw it.
// The zero value is Admitted.
type Outcome uint8

const (
	// Admitted: the request passed the limiter (any status but 429 and 5xx).
	Admitted Outcome = iota
	// Rejected: the limiter turned the request away (429 Too Many Requests,
	// RFC 6585 §4).
	Rejected
	// Error: no response, a timeout or a 5xx. The limiter may or may not have
	// admitted and charged the request; the checker treats it as an
	// indeterminate operation (Jepsen, Knossos), admitted or not, whichever
	// a check must assume to stay sound.
	Error
)

var outcomeNames = [...]string{Admitted: "admitted", Rejected: "rejected", Error: "error"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// MarshalText implements encoding.TextMarshaler.
func (o Outcome) MarshalText() ([]byte, error) {
	if int(o) >= len(outcomeNames) {
		return nil, fmt.Errorf("invalid outcome %d", uint8(o))
	}
	return []byte(outcomeNames[o]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Outcome) UnmarshalText(b []byte) error {
	for i, name := range outcomeNames {
		if string(b) == name {
			*o = Outcome(i)
			return nil
		}
	}
	return fmt.Errorf("unknown outcome %q; want admitted, rejected or error", b)
}

// OutcomeForStatus is the outcome a status code implies: 0 (no response) and
// 5xx are Error, 429 is Rejected, anything else Admitted.
func OutcomeForStatus(status int) Outcome {
	switch {
	case status == 0 || status >= 500:
		return Error
	case status == http.StatusTooManyRequests:
		return Rejected
	}
	return Admitted
}

// Record is one request. Times are nanoseconds since the header's Start on
// the harness's monotonic clock. See the package documentation for each
// field.
type Record struct {
	ID         uint64            `json:"id"`
	Key        string            `json:"key"`
	Instance   string            `json:"instance,omitempty"`
	Route      string            `json:"route,omitempty"`
	Cost       int64             `json:"cost"`
	IntendedNs int64             `json:"intended_ns"`
	SentNs     int64             `json:"sent_ns"`
	ReceivedNs int64             `json:"received_ns"`
	Status     int               `json:"status"`
	Outcome    Outcome           `json:"outcome"`
	Error      string            `json:"error,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	DecisionUs int64             `json:"decision_us,omitempty"`
	Phase      string            `json:"phase,omitempty"`
}

// RateLimitHeaders lists, in lower case, the response headers a record keeps.
var RateLimitHeaders = []string{
	"retry-after",
	"ratelimit",
	"ratelimit-policy",
	"ratelimit-limit",
	"ratelimit-remaining",
	"ratelimit-reset",
	"x-ratelimit-limit",
	"x-ratelimit-remaining",
	"x-ratelimit-reset",
	"x-ratelimit-used",
}

// RateLimitHeaderValues returns the rate-limit headers of h (see
// RateLimitHeaders) keyed in lower case, several values joined by ", ", or
// nil when there are none.
func RateLimitHeaderValues(h http.Header) map[string]string {
	var m map[string]string
	for name, vs := range h {
		lower := strings.ToLower(name)
		if !isRateLimitHeader(lower) || len(vs) == 0 {
			continue
		}
		if m == nil {
			m = make(map[string]string, 4)
		}
		m[lower] = strings.Join(vs, ", ")
	}
	return m
}

func isRateLimitHeader(lower string) bool {
	for _, n := range RateLimitHeaders {
		if n == lower {
			return true
		}
	}
	return false
}

// Validate reports the first field of r that breaks the format, or nil.
func (r *Record) Validate() error {
	switch {
	case r.Cost < 0:
		return &FormatError{Field: "cost", Err: fmt.Errorf("%d is negative", r.Cost)}
	case r.ReceivedNs < r.SentNs:
		return &FormatError{Field: "received_ns", Err: fmt.Errorf("%d is before sent_ns %d", r.ReceivedNs, r.SentNs)}
	case r.Status < 0 || r.Status > 999:
		return &FormatError{Field: "status", Err: fmt.Errorf("%d is not an HTTP status code", r.Status)}
	case r.Outcome > Error:
		return &FormatError{Field: "outcome", Err: fmt.Errorf("invalid outcome %d", r.Outcome)}
	}
	return nil
}

func (h *Header) validate() error {
	if h.Format != Format {
		return &FormatError{Line: 1, Field: "format", Err: fmt.Errorf("%q is not %q", h.Format, Format)}
	}
	if h.Version != Version {
		return &FormatError{Line: 1, Field: "version", Err: fmt.Errorf("version %d is not supported; this reader reads version %d", h.Version, Version)}
	}
	if h.Start.IsZero() {
		return &FormatError{Line: 1, Field: "start", Err: errors.New("missing")}
	}
	if h.ClockUncertaintyNs < 0 {
		return &FormatError{Line: 1, Field: "clock_uncertainty_ns", Err: fmt.Errorf("%d is negative", h.ClockUncertaintyNs)}
	}
	return nil
}

// jsonFieldOf extracts the field name from a json error, when it names one.
func jsonFieldOf(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field
	}
	return ""
}
