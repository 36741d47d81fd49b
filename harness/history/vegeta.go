package history

import (
	"bufio"
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
// intended time equals the sent time. Record IDs are line numbers. It is not
// safe for concurrent use.
type VegetaReader struct {
	name    string
	cfg     VegetaConfig
	br      *bufio.Reader
	line    int
	start   time.Time
	pending *vegetaResult
	res     vegetaResult
}

// NewVegetaReader reads the first result of r (gzip compressed or not) to
// fix the run's start and returns a reader for all of them. Errors are
// *FormatError wrapping ErrFormat.
func NewVegetaReader(r io.Reader, name string, cfg VegetaConfig) (*VegetaReader, error) {
	br, err := maybeGunzip(r)
	if err != nil {
		return nil, &FormatError{File: name, Line: 1, Err: fmt.Errorf("gzip: %w", err)}
	}
	vr := &VegetaReader{name: name, cfg: cfg, br: br}
	if err := vr.decode(&vr.res); err != nil {
		if err == io.EOF {
			return nil, &FormatError{File: name, Line: 1, Err: errors.New("no vegeta results")}
		}
		return nil, err
	}
	vr.start, vr.pending = vr.res.Timestamp, &vr.res
	return vr, nil
}

// Header returns a header whose Start is the first result's timestamp.
func (r *VegetaReader) Header() Header {
	h := NewHeader(r.start)
	h.Target = "vegeta results"
	return h
}

func (r *VegetaReader) decode(res *vegetaResult) error {
	for {
		line, err := r.br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return io.EOF
		}
		if err != nil && err != io.EOF {
			return &FormatError{File: r.name, Line: r.line + 1, Err: err}
		}
		r.line++
		if len(line) <= 1 && (len(line) == 0 || line[0] == '\n') {
			continue
		}
		*res = vegetaResult{}
		if err := json.Unmarshal(line, res); err != nil {
			return &FormatError{File: r.name, Line: r.line, Field: jsonFieldOf(err), Err: err}
		}
		if res.Timestamp.IsZero() {
			return &FormatError{File: r.name, Line: r.line, Field: "timestamp", Err: errors.New("missing")}
		}
		if res.Latency < 0 {
			return &FormatError{File: r.name, Line: r.line, Field: "latency", Err: fmt.Errorf("%d is negative", res.Latency)}
		}
		return nil
	}
}

// Read fills rec with the next result and returns io.EOF after the last one.
func (r *VegetaReader) Read(rec *Record) error {
	res := r.pending
	r.pending = nil
	if res == nil {
		res = &r.res
		if err := r.decode(res); err != nil {
			return err
		}
	}
	h := http.Header(res.Headers)
	headers := rec.Headers
	clear(headers)
	*rec = Record{
		ID:      uint64(r.line),
		Key:     res.URL,
		Cost:    max(r.cfg.Cost, 1),
		SentNs:  res.Timestamp.Sub(r.start).Nanoseconds(),
		Status:  res.Code,
		Outcome: OutcomeForStatus(res.Code),
		Error:   res.Error,
		Headers: headers,
	}
	rec.IntendedNs, rec.ReceivedNs = rec.SentNs, rec.SentNs+res.Latency
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
			if err != nil || c < 1 {
				return &FormatError{File: r.name, Line: r.line, Field: "headers." + r.cfg.CostHeader, Err: fmt.Errorf("cost %q is not a whole number >= 1", v)}
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
	return nil
}
