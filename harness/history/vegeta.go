package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// VegetaConfig says how vegeta results map into records. The zero value keys
// every request by its URL, with cost 1 and no instance.
type VegetaConfig struct {
	// KeyHeader names a response header holding the identity the limiter
	// keyed on; when empty, or absent from a result, the key is the URL.
	KeyHeader string
	// InstanceHeader names a response header naming the instance that
	// answered; when empty the instance is "".
	InstanceHeader string
	// CostHeader names a response header holding the request's cost; when
	// empty or absent the cost is Cost.
	CostHeader string
	// Cost is every request's cost when CostHeader gives none; 0 means 1.
	Cost int64
}

// vegetaResult is one line of `vegeta encode --to json`, the JSON form of
// vegeta's lib.Result (github.com/tsenart/vegeta/v12/lib).
type vegetaResult struct {
	Seq       uint64              `json:"seq"`
	Code      int                 `json:"code"`
	Timestamp time.Time           `json:"timestamp"`
	Latency   int64               `json:"latency"`
	Error     string              `json:"error"`
	Method    string              `json:"method"`
	URL       string              `json:"url"`
	Headers   map[string][]string `json:"headers"`
}

// VegetaReader reads vegeta's JSON results as records. Sent times are
// relative to the first result's timestamp (later lines may hold earlier
// timestamps, giving negative times); vegeta records no schedule, so the
// intended time equals the sent time. Record IDs are line numbers. Every
// record is validated as Reader validates them (Record.Validate): the first
// timestamp must lie in [MinStart, MaxStart), every other within MaxTimeNs
// of it, and timestamp plus latency too. Results that end early are read up
// to the last whole one (see Truncated). It is not safe for concurrent use.
type VegetaReader struct {
	lines
	cfg     VegetaConfig
	start   time.Time
	pending bool
	res     vegetaResult
}

// NewVegetaReader reads the first result of r (gzip compressed or not) to
// fix the run's start and returns a reader for all of them. Errors about the
// input are *FormatError wrapping ErrFormat; a cfg.Cost outside [0, MaxCost]
// is an error naming it.
func NewVegetaReader(r io.Reader, name string, cfg VegetaConfig) (*VegetaReader, error) {
	if cfg.Cost < 0 || cfg.Cost > MaxCost {
		return nil, fmt.Errorf("vegeta cost %d: want a whole number in [1, %d]", cfg.Cost, int64(MaxCost))
	}
	l, err := newLines(r, name)
	if err != nil {
		return nil, err
	}
	vr := &VegetaReader{lines: l, cfg: cfg}
	if err := vr.decode(&vr.res); err != nil {
		if err == io.EOF {
			if t := vr.trunc; t != nil {
				return nil, &FormatError{File: name, Line: max(vr.n, 1), Err: fmt.Errorf("no whole vegeta result: %w", t)}
			}
			return nil, &FormatError{File: name, Line: 1, Err: errors.New("no vegeta results")}
		}
		return nil, err
	}
	if ts := vr.res.Timestamp; ts.Before(MinStart) || !ts.Before(MaxStart) {
		return nil, &FormatError{File: name, Line: vr.n, Field: "timestamp", Err: fmt.Errorf("%s is outside the accepted range [%s, %s)",
			ts.Format(time.RFC3339Nano), MinStart.Format(time.RFC3339), MaxStart.Format(time.RFC3339))}
	}
	vr.start, vr.pending = vr.res.Timestamp, true
	return vr, nil
}

// Truncated reports whether the results ended early, as Reader.Truncated
// does for a history.
func (r *VegetaReader) Truncated() error { return r.trunc }

// Header returns a header whose Start is the first result's timestamp.
func (r *VegetaReader) Header() Header {
	h := NewHeader(r.start)
	h.defaults()
	h.Target = "vegeta results"
	return h
}

func (r *VegetaReader) decode(res *vegetaResult) error {
	line, err := r.next()
	if err != nil {
		return err
	}
	*res = vegetaResult{}
	if err := json.Unmarshal(line, res); err != nil {
		if r.last && incomplete(line) {
			return r.partial()
		}
		return &FormatError{File: r.name, Line: r.n, Field: jsonFieldOf(err), Err: err}
	}
	if res.Timestamp.IsZero() {
		return &FormatError{File: r.name, Line: r.n, Field: "timestamp", Err: errors.New("missing")}
	}
	if res.Latency < 0 {
		return &FormatError{File: r.name, Line: r.n, Field: "latency", Err: fmt.Errorf("%d is negative", res.Latency)}
	}
	return nil
}

// Read fills rec with the next result and returns io.EOF after the last
// whole one.
func (r *VegetaReader) Read(rec *Record) error {
	res := &r.res
	if r.pending {
		r.pending = false
	} else if err := r.decode(res); err != nil {
		return err
	}
	bad := func(field string, err error) error {
		return &FormatError{File: r.name, Line: r.n, Field: field, Err: err}
	}
	// Sub saturates at ±292 years, well beyond the accepted range.
	sent := res.Timestamp.Sub(r.start).Nanoseconds()
	if !inTimeRange(sent) {
		return bad("timestamp", fmt.Errorf("%s is %v from the first result's %s, beyond the accepted ±%d ns (about 36.5 years)",
			res.Timestamp.Format(time.RFC3339Nano), time.Duration(sent), r.start.Format(time.RFC3339Nano), int64(MaxTimeNs)))
	}
	if res.Latency > MaxTimeNs-sent {
		return bad("latency", fmt.Errorf("%d ns, added to the request's time of %v after the first result, ends beyond the accepted %d ns (about 36.5 years)",
			res.Latency, time.Duration(sent), int64(MaxTimeNs)))
	}
	h := http.Header(res.Headers)
	headers := rec.Headers
	clear(headers)
	*rec = Record{
		ID:         uint64(r.n),
		Key:        res.URL,
		Cost:       max(r.cfg.Cost, 1),
		IntendedNs: sent,
		SentNs:     sent,
		ReceivedNs: sent + res.Latency,
		Status:     res.Code,
		Outcome:    OutcomeForStatus(res.Code),
		Error:      res.Error,
		Headers:    headers,
	}
	if u, err := url.Parse(res.URL); err == nil {
		rec.Route = u.Path
	}
	if r.cfg.KeyHeader != "" {
		if v := h.Get(r.cfg.KeyHeader); v != "" {
			rec.Key = v
		}
	}
	if r.cfg.InstanceHeader != "" {
		rec.Instance = h.Get(r.cfg.InstanceHeader)
	}
	if r.cfg.CostHeader != "" {
		if v := h.Get(r.cfg.CostHeader); v != "" {
			c, err := strconv.ParseInt(v, 10, 64)
			if err != nil || c < 1 || c > MaxCost {
				return bad("headers."+r.cfg.CostHeader, fmt.Errorf("cost %q is not a whole number in [1, %d]", v, int64(MaxCost)))
			}
			rec.Cost = c
		}
	}
	for name, vs := range h {
		lower := strings.ToLower(name)
		if !isRateLimitHeader(lower) || len(vs) == 0 {
			continue
		}
		if rec.Headers == nil {
			rec.Headers = make(map[string]string, 4)
		}
		rec.Headers[lower] = strings.Join(vs, ", ")
	}
	if err := rec.Validate(); err != nil {
		fe := err.(*FormatError)
		fe.File, fe.Line = r.name, r.n
		if fe.Field == "status" {
			fe.Field = "code"
		}
		return fe
	}
	return nil
}
