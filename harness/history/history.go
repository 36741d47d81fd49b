package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
	RunID              string         `json:"run_id,omitempty"`
	IdentitiesFresh    *bool          `json:"identities_fresh,omitempty"`
	ClockSource        string         `json:"clock_source,omitempty"`
	ClockResolutionNs  int64          `json:"clock_resolution_ns,omitempty"`
	Shard              *Shard         `json:"shard,omitempty"`
	Extra              map[string]any `json:"extra,omitempty"`
}

// Where a header's clock offset came from (Header.ClockSource).
const (
	// ClockRedisTime: Redis TIME of the limiter's Redis, read around the
	// run; the uncertainty is half the shortest round trip.
	ClockRedisTime = "redis_time"
	// ClockHTTPDate: the Date headers of the target's responses (RFC 9110
	// §6.6.1), whole seconds of the target's clock, each bounding the
	// offset between its request's sent and received times.
	ClockHTTPDate = "http_date"
	// ClockDeclared: the scenario declared the offset and its uncertainty.
	ClockDeclared = "declared"
	// ClockLocal: the limiter runs on the harness's host and reads its
	// clock (an instance rlbench started without Redis): offset 0 ± 0.
	ClockLocal = "local"
)

// Shard names one shard of a sharded run (`rlbench run --shard I/N`): the
// shard's Index in [0, Count) and the run's Count of shards. Every planned
// request of the run belongs to exactly one shard; shards of one run share
// its run_id and are checked as one history by merging them onto the
// limiter's clock (each shard's own clock_offset_ns ± clock_uncertainty_ns).
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// MaxShards bounds Shard.Count.
const MaxShards = 1024

// String returns the shard as "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Validate reports a shard outside 0 <= Index < Count <= MaxShards.
func (s Shard) Validate() error {
	if s.Count < 1 || s.Count > MaxShards {
		return fmt.Errorf("shard count %d: want 1 to %d", s.Count, MaxShards)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard index %d of %d: want 0 to %d", s.Index, s.Count, s.Count-1)
	}
	return nil
}

// ParseShard parses "I/N", the shard I (0-based, as Kubernetes numbers an
// Indexed Job's pods in JOB_COMPLETION_INDEX) of N. Errors name the
// expected form.
func ParseShard(v string) (Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(v), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want I/N, as 0/3 (shard 0 of 3)", v)
	}
	var s Shard
	var err error
	if s.Index, err = strconv.Atoi(strings.TrimSpace(i)); err != nil {
		return Shard{}, fmt.Errorf("shard %q: index %q is not an integer: want I/N, as 0/3", v, i)
	}
	if s.Count, err = strconv.Atoi(strings.TrimSpace(n)); err != nil {
		return Shard{}, fmt.Errorf("shard %q: count %q is not an integer: want I/N, as 0/3", v, n)
	}
	if err := s.Validate(); err != nil {
		return Shard{}, fmt.Errorf("shard %q: %w", v, err)
	}
	return s, nil
}

// DefaultClockResolution is the clock resolution a reader assumes for a
// history whose header gives none (clock_resolution_ns absent or 0): one
// microsecond, the step of Redis TIME and of rlbench's reference limiter.
const DefaultClockResolution = time.Microsecond

// MaxClockResolution is the coarsest clock resolution a header may give:
// one hour. A limiter's clock that only ticks hourly could not enforce a
// rate anyway.
const MaxClockResolution = time.Hour

// RoutePolicy names the limits, in limiter.ParseLimit syntax, in force on a
// route; the empty route means every route. Key, when set, narrows it to
// the keys it matches (a trailing "*" matches by prefix: "free-*", the
// keys of one plan); the first entry whose route and key match a request
// is its policy.
type RoutePolicy struct {
	Route  string   `json:"route"`
	Key    string   `json:"key,omitempty"`
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
	// Admitted: the request passed the limiter (a 1xx, 2xx or 3xx answer).
	Admitted Outcome = iota
	// Rejected: the limiter turned the request away (429 Too Many Requests,
	// RFC 6585 §4).
	Rejected
	// Error: no response, a timeout, a 5xx or a 4xx other than 429. The
	// limiter may or may not have admitted and charged the request (a 401
	// may come from an authentication step before the limiter or after
	// it); the checker treats it as an indeterminate operation (Jepsen,
	// Knossos), admitted or not, whichever a check must assume to stay
	// sound.
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

// OutcomeForStatus is the outcome a status code implies, the one
// classification of every writer and reader of histories (the runner, the
// vegeta reader, the checker for records whose outcome says admitted): 429
// is Rejected; 1xx, 2xx and 3xx are Admitted; 0 (no response), every other
// 4xx (401, 403, 404: the request may never have reached the
// limiter) and every 5xx are Error, an unknown outcome. A 503 that a
// fail-closed limiter answers by design is Error as well: during a fault
// the checker judges it by the failure-mode check, and elsewhere it may
// have been charged (a store that timed out may still run the charge).
func OutcomeForStatus(status int) Outcome {
	switch {
	case status == http.StatusTooManyRequests:
		return Rejected
	case status >= 100 && status < 400:
		return Admitted
	}
	return Error
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
	// Shard, in a history merged from the shards of a sharded run
	// (NewMerge), is the shard that recorded the request; nil in a
	// shard's own history and in an unsharded one. Records of one shard
	// share one Shard value: do not modify it through the pointer.
	Shard *Shard `json:"shard,omitempty"`
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

// Bounds on the values of a history. Every reader rejects a value outside
// them, and the Writer refuses to write one, so that any sum a check of the
// history computes stays inside an int64 of nanoseconds: the run's start as
// Unix time (below 4.11·10^18 ns before MaxStart) plus a record time, the
// clock offset, its uncertainty and one window or emission period (each at
// most MaxTimeNs, 1.15·10^18 ns) stays below 8.72·10^18, under the int64
// maximum of 9.22·10^18 with 5·10^17 ns to spare for the clock resolution.
// Twice a window, or a time minus two windows, fits as well.
const (
	// MaxTimeNs bounds a record's times and the header's clock offset and
	// uncertainty: each lies in [-MaxTimeNs, MaxTimeNs] nanoseconds, about
	// ±36.5 years from the run's start.
	MaxTimeNs = 1 << 60
	// MaxCost is the most units a record may cost: 2^40, the largest
	// capacity a limit may have (limiter.MaxCapacity), above which no limit
	// could ever admit the request.
	MaxCost = 1 << 40
	// MaxDecisionUs bounds a record's decision_us: MaxStart plus twice
	// MaxTimeNs, in microseconds since the Unix epoch (the year 2173).
	MaxDecisionUs = maxStartUnix*1_000_000 + 2*MaxTimeNs/1000

	maxStartUnix = 4_102_444_800 // 2100-01-01T00:00:00Z
)

// MinStart and MaxStart bound a header's start, inclusive and exclusive: a
// run starts in [1970-01-01, 2100-01-01) UTC, so that its Unix time in
// nanoseconds is between 0 and 2^61.83.
var (
	MinStart = time.Unix(0, 0).UTC()
	MaxStart = time.Unix(maxStartUnix, 0).UTC()
)

// Validate reports the first field of r that breaks the format, or nil: a
// cost outside [1, MaxCost] (0 is accepted as the default 1), a time outside
// [-MaxTimeNs, MaxTimeNs], a received time before the sent time, a status
// outside 0..999, an unknown outcome, a decision time outside
// [0, MaxDecisionUs], or a shard outside 0 <= index < count <= MaxShards.
// The error is a *FormatError without file and line.
func (r *Record) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &FormatError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case r.Cost < 0 || r.Cost > MaxCost:
		return bad("cost", "%d is outside [1, %d]; a request costs at least 1 unit and at most the largest capacity a limit may have", r.Cost, int64(MaxCost))
	case !inTimeRange(r.IntendedNs):
		return timeRangeError("intended_ns", r.IntendedNs)
	case !inTimeRange(r.SentNs):
		return timeRangeError("sent_ns", r.SentNs)
	case !inTimeRange(r.ReceivedNs):
		return timeRangeError("received_ns", r.ReceivedNs)
	case r.ReceivedNs < r.SentNs:
		return bad("received_ns", "%d is before sent_ns %d; a response cannot arrive before its request was sent", r.ReceivedNs, r.SentNs)
	case r.Status < 0 || r.Status > 999:
		return bad("status", "%d is not an HTTP status code (0 for no response, else 100..999)", r.Status)
	case r.Outcome > Error:
		return bad("outcome", "invalid outcome %d", r.Outcome)
	case r.DecisionUs < 0 || r.DecisionUs > MaxDecisionUs:
		return bad("decision_us", "%d is outside [0, %d] µs since the Unix epoch (1970 to 2173); use 0 when the target reports none", r.DecisionUs, int64(MaxDecisionUs))
	case r.Shard != nil && r.Shard.Validate() != nil:
		return bad("shard", "%v", r.Shard.Validate())
	}
	return nil
}

func inTimeRange(ns int64) bool { return ns >= -MaxTimeNs && ns <= MaxTimeNs }

func timeRangeError(field string, ns int64) error {
	return &FormatError{Field: field, Err: fmt.Errorf("%d ns is outside the accepted range of ±%d ns (about 36.5 years) from the run's start", ns, int64(MaxTimeNs))}
}

func (h *Header) validate() error {
	bad := func(field, format string, args ...any) error {
		return &FormatError{Line: 1, Field: field, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case h.Format != Format:
		return bad("format", "%q is not %q", h.Format, Format)
	case h.Version != Version:
		return bad("version", "version %d is not supported; this reader reads version %d", h.Version, Version)
	case h.Start.IsZero():
		return bad("start", "missing")
	case h.Start.Before(MinStart) || !h.Start.Before(MaxStart):
		return bad("start", "%s is outside the accepted range [%s, %s)", h.Start.Format(time.RFC3339Nano), MinStart.Format(time.RFC3339), MaxStart.Format(time.RFC3339))
	case h.ClockOffsetNs != nil && !inTimeRange(*h.ClockOffsetNs):
		return bad("clock_offset_ns", "%d is outside the accepted range of ±%d ns", *h.ClockOffsetNs, int64(MaxTimeNs))
	case h.ClockUncertaintyNs < 0:
		return bad("clock_uncertainty_ns", "%d is negative", h.ClockUncertaintyNs)
	case h.ClockUncertaintyNs > MaxTimeNs:
		return bad("clock_uncertainty_ns", "%d is above the accepted maximum of %d ns", h.ClockUncertaintyNs, int64(MaxTimeNs))
	case h.ClockResolutionNs < 0 || h.ClockResolutionNs > int64(MaxClockResolution):
		return bad("clock_resolution_ns", "%d is outside [0, %d] ns (0 for the default of 1 µs, at most one hour)", h.ClockResolutionNs, int64(MaxClockResolution))
	case h.Shard != nil && h.Shard.Validate() != nil:
		return bad("shard", "%v", h.Shard.Validate())
	}
	return nil
}

// defaults fills in what a reader assumes of a header that does not say:
// the clock resolution of a history written before it was recorded.
func (h *Header) defaults() {
	if h.ClockResolutionNs == 0 {
		h.ClockResolutionNs = int64(DefaultClockResolution)
	}
}

// jsonFieldOf extracts the field name from a json error, when it names one.
func jsonFieldOf(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field
	}
	return ""
}
