package checker

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/history"
)

// Header style bits: which families of rate-limit headers a response carried.
const (
	styleSeparate  uint8 = 1 << iota // RateLimit-Limit / -Remaining / -Reset (IETF drafts -00 to -06)
	styleCombined                    // RateLimit: limit=, remaining=, reset= (draft -07) or r=, t= (draft -08 and later)
	styleX                           // X-RateLimit-Limit / -Remaining / -Reset
	styleDisagree                    // the IETF and X- families disagree in one response
	styleMalformed                   // a rate-limit field could not be parsed
	styleBadReset                    // of those, a -Reset field (styleMalformed is set too)
)

// Retry-After sentinels in request.retryAfter, and the largest value kept:
// longer delays (292 years) saturate there, so that nanoseconds fit an int64.
const (
	maxRetryAfter = math.MaxInt64 / int64(time.Second)

	raNone = -1 // absent
	raBad  = -2 // present but neither delay-seconds nor an HTTP-date
)

// request is the compact form of one record the checks work on (96 bytes).
type request struct {
	// sent and recv bound the decision time: the record's sent and
	// received times, or the decision time it reported (Policy.TrustDecisionTime).
	sent, recv int64
	// answered is the record's received time, when the response arrived.
	answered   int64
	id         uint64
	cost       int64
	rlLimit    int64 // -1 when absent
	rlRemain   int64 // -1 when absent
	rlReset    int64 // seconds (at most maxRetryAfter); -1 when absent
	retryAfter int64 // seconds (at most maxRetryAfter), or raNone / raBad
	key        uint32
	route      uint32
	inst       uint32
	policy     uint32 // the interned RateLimit-Policy field; 0 when absent
	status     int16
	outcome    history.Outcome
	style      uint8
	// faulted marks a request during a fault or its recovery, which the
	// budget does not judge (a fail-open admission is declared behaviour).
	faulted bool
	// undelivered marks a request that provably never reached the target
	// (its connection was refused): it was not admitted.
	undelivered bool
	// unanswerable marks a request left without an answer that a fault
	// explains (noAnswerExpected): the status check excuses it.
	unanswerable bool
}

// dataset holds a history in compact form: per-record structs in one slice,
// with keys, routes and instances interned.
type dataset struct {
	header history.Header
	reqs   []request
	keys   []string
	routes []string
	insts  []string
	// policies are the distinct RateLimit-Policy fields; policies[0] is "",
	// none.
	policies []string
	// seq holds each record's 0-based position in the whole history when
	// the dataset is part of it (nil: the dataset is the whole history, in
	// order). rank orders the keys as a pass over the whole history meets
	// them: a key's is the position of its first record, and a key renamed
	// after a restart (applyFaults) has renamedRank set too.
	seq  []int64
	rank []uint64
}

// renamedRank marks the rank of a key renamed after a restart.
const renamedRank = 1 << 63

// seqOf is request i's position in the whole history.
func (d *dataset) seqOf(i int32) int64 {
	if d.seq == nil {
		return int64(i)
	}
	return d.seq[i]
}

type interner struct {
	ids   map[string]uint32
	names []string
	last  string // the string of the last look-up, whose id is lastID
	last1 uint32
}

func (in *interner) id(s string) uint32 {
	if len(in.names) > 0 && s == in.last {
		return in.last1
	}
	if id, ok := in.ids[s]; ok {
		in.last, in.last1 = s, id
		return id
	}
	if in.ids == nil {
		in.ids = make(map[string]uint32)
	}
	id := uint32(len(in.names))
	in.ids[s] = id
	in.names = append(in.names, s)
	in.last, in.last1 = s, id
	return id
}

// load reads every record of src, a whole history, into a dataset, letting
// narrow shrink each request's [sent, received] to a reported decision
// time. A partitioned check reads its parts with loadTask.
func load(src history.Source, narrow narrowing) (*dataset, error) {
	d := &dataset{header: src.Header()}
	var keys, routes, insts, policies interner
	policies.id("")
	var rec history.Record
	start := d.header.Start
	for {
		err := src.Read(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read history: %w", err)
		}
		key := keys.id(rec.Key)
		if int(key) == len(d.rank) {
			d.rank = append(d.rank, uint64(len(d.reqs)))
		}
		q := request{
			sent: rec.SentNs, recv: rec.ReceivedNs, answered: rec.ReceivedNs, id: rec.ID, cost: max(rec.Cost, 1),
			key: key, route: routes.id(rec.Route), inst: insts.id(rec.Instance),
			status: int16(rec.Status), outcome: outcomeOf(&rec), retryAfter: raNone,
			rlLimit: -1, rlRemain: -1, rlReset: -1,
		}
		if len(rec.Headers) > 0 {
			hs := headersOf(rec.Headers)
			parseHeaders(&q, &hs, start.Add(time.Duration(rec.ReceivedNs)))
			if v, ok := hs.get(hPolicy); ok {
				q.policy = policies.id(v)
			}
		}
		q.undelivered = rec.Status == 0 && strings.Contains(rec.Error, "connection refused")
		narrow.apply(&q, rec.DecisionUs)
		d.reqs = append(d.reqs, q)
	}
	d.keys, d.routes, d.insts, d.policies = keys.names, routes.names, insts.names, policies.names
	return d, nil
}

// outcomeOf is the outcome the checks take rec to have: the recorded one,
// except that an admission needs a status that admits
// (history.OutcomeForStatus): a 401 or 404 recorded as admitted, as
// histories written before that classification hold them, may never have
// reached the limiter and is of unknown outcome. A record without a status
// (0) keeps its outcome: some writers record outcomes alone.
func outcomeOf(rec *history.Record) history.Outcome {
	if rec.Outcome == history.Admitted && rec.Status != 0 && history.OutcomeForStatus(rec.Status) != history.Admitted {
		return history.Error
	}
	return rec.Outcome
}

// headerSet is the rate-limit fields of a response (history.RateLimitHeaders),
// by index: one pass over a record's map in place of a look-up per field.
type headerSet struct {
	vals [maxRateLimitHeaders]string
	has  uint16
}

// maxRateLimitHeaders bounds len(history.RateLimitHeaders) (a test holds
// it): headerSet keeps that many.
const maxRateLimitHeaders = 16

// Indexes of the fields parseHeaders reads.
var (
	hRetryAfter = headerIndexOf("retry-after")
	hCombined   = headerIndexOf("ratelimit")
	hPolicy     = headerIndexOf("ratelimit-policy")
	hLimit      = headerIndexOf("ratelimit-limit")
	hRemaining  = headerIndexOf("ratelimit-remaining")
	hReset      = headerIndexOf("ratelimit-reset")
	hXLimit     = headerIndexOf("x-ratelimit-limit")
	hXRemaining = headerIndexOf("x-ratelimit-remaining")
	hXReset     = headerIndexOf("x-ratelimit-reset")
)

func headersOf(h map[string]string) headerSet {
	var hs headerSet
	for name, v := range h {
		if i := headerIndexOf(name); i >= 0 {
			hs.vals[i], hs.has = v, hs.has|1<<i
		}
	}
	return hs
}

// get returns field i and whether the response carried it.
func (hs *headerSet) get(i int) (string, bool) { return hs.vals[i], hs.has&(1<<i) != 0 }

// parseHeaders fills q's header fields from the rate-limit fields h of a
// response received at wall-clock time at.
func parseHeaders(q *request, h *headerSet, at time.Time) {
	if v, ok := h.get(hRetryAfter); ok {
		q.retryAfter = parseRetryAfter(v, at)
	}
	bad := false
	field := func(name int) int64 {
		v, ok := h.get(name)
		if !ok {
			return -1
		}
		n, ok := firstInt(v)
		if !ok || n < 0 {
			bad = true
			if name == hReset || name == hXReset {
				q.style |= styleBadReset
			}
			return -1
		}
		return n
	}
	var ietf [3]int64
	if v, ok := h.get(hCombined); ok {
		q.style |= styleCombined
		policy, _ := h.get(hPolicy)
		ietf = parseCombined(v, policy, &bad)
	} else {
		ietf = [3]int64{field(hLimit), field(hRemaining), field(hReset)}
		if ietf != [3]int64{-1, -1, -1} {
			q.style |= styleSeparate
		}
	}
	x := [3]int64{field(hXLimit), field(hXRemaining), field(hXReset)}
	if x != [3]int64{-1, -1, -1} {
		q.style |= styleX
		if x[2] > 1e9 { // an epoch time, as GitHub sends it: make it a delay
			x[2] = max(int64(math.Ceil(time.Unix(x[2], 0).Sub(at).Seconds())), 0)
		}
	}
	vals := ietf
	if q.style&(styleSeparate|styleCombined) == 0 {
		vals = x
	} else if q.style&styleX != 0 {
		for i := range 2 { // limit and remaining must agree; reset may be rounded differently
			if ietf[i] >= 0 && x[i] >= 0 && ietf[i] != x[i] {
				q.style |= styleDisagree
			}
		}
	}
	// A reset beyond maxRetryAfter seconds (292 years) saturates there, as
	// Retry-After does, so that it fits an int64 of nanoseconds.
	q.rlLimit, q.rlRemain, q.rlReset = vals[0], vals[1], min(vals[2], maxRetryAfter)
	if bad {
		q.style |= styleMalformed
	}
}

// parseRetryAfter reads RFC 9110 §10.2.3 Retry-After: delay-seconds, or an
// HTTP-date turned into a delay from at, rounded up.
func parseRetryAfter(v string, at time.Time) int64 {
	v = strings.TrimSpace(v)
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err == nil && n >= 0:
		return min(n, maxRetryAfter)
	case err == nil:
		return raBad
	case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-"):
		return maxRetryAfter
	}
	if t, err := http.ParseTime(v); err == nil {
		return int64(min(max(math.Ceil(t.Sub(at).Seconds()), 0), float64(maxRetryAfter)))
	}
	return raBad
}

// firstInt parses the first comma-separated item of v as an integer,
// ignoring parameters after ';' (RateLimit-Limit: 10, 10;w=1).
func firstInt(v string) (int64, bool) {
	item, _, _ := strings.Cut(v, ",")
	item, _, _ = strings.Cut(item, ";")
	n, err := strconv.ParseInt(strings.TrimSpace(item), 10, 64)
	return n, err == nil
}

// parseCombined reads the combined RateLimit field: the draft -07 dictionary
// "limit=10, remaining=5, reset=3", or the draft -08 and later list
// `"default";r=5;t=3` whose limit comes from RateLimit-Policy `"default";q=10;w=1`
// (draft-ietf-httpapi-ratelimit-headers). It returns limit, remaining and
// reset, -1 for those absent.
func parseCombined(v, policy string, bad *bool) [3]int64 {
	out := [3]int64{-1, -1, -1}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < 0 {
			*bad = true
			return -1
		}
		return n
	}
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
		k, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue // a policy name in the list form
		}
		switch strings.TrimSpace(k) {
		case "limit":
			out[0] = num(val)
		case "remaining", "r":
			out[1] = num(val)
		case "reset", "t":
			out[2] = num(val)
		}
	}
	if out[0] < 0 && policy != "" {
		for _, item := range strings.FieldsFunc(policy, func(r rune) bool { return r == ',' || r == ';' }) {
			if k, val, ok := strings.Cut(strings.TrimSpace(item), "="); ok && strings.TrimSpace(k) == "q" {
				out[0] = num(val)
				break
			}
		}
		if out[0] < 0 {
			if n, ok := firstInt(policy); ok {
				out[0] = n
			}
		}
	}
	return out
}
