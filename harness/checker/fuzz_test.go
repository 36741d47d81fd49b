package checker

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
)

// fuzzInput reads a fuzz input a byte at a time, 0 past its end.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) next() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

// pick returns a choice among n.
func (in *fuzzInput) pick(n int) int { return int(in.next()) % n }

// The values a fuzzed history draws from: the extremes of the accepted
// ranges (history.MaxTimeNs and the start's bounds) and everyday ones.
var (
	fuzzPeriods = []time.Duration{time.Millisecond, time.Second, time.Minute, time.Hour,
		30 * 365 * 24 * time.Hour, time.Duration(history.MaxTimeNs) / time.Microsecond * time.Microsecond}
	fuzzStarts  = []time.Time{history.MinStart, time.Unix(1_700_000_000, 0), history.MaxStart.Add(-time.Nanosecond)}
	fuzzOrigins = []int64{0, history.MaxTimeNs - int64(time.Hour), -history.MaxTimeNs + int64(time.Hour)}
	fuzzOffsets = []int64{0, 3_000_000, -history.MaxTimeNs, history.MaxTimeNs}
	fuzzUncs    = []int64{0, 1000, 1_000_000, history.MaxTimeNs}
	fuzzRes     = []time.Duration{0, time.Nanosecond, time.Microsecond, time.Millisecond}
	fuzzSteps   = []int64{0, 1, 1000, 1_000_000, 1_000_000_000, int64(time.Minute), int64(time.Hour), history.MaxTimeNs / 8}
	fuzzCosts   = []int64{1, 1, 2, 5, history.MaxCost}
	fuzzHeaders = []map[string]string{
		nil,
		{"retry-after": "1"},
		{"retry-after": "60"},
		{"retry-after": "9223372036854775807"},
		{"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},
		{"ratelimit-limit": "5", "ratelimit-remaining": "3", "ratelimit-reset": "1"},
		{"ratelimit": "limit=5, remaining=0, reset=9223372036854775807"},
		{"ratelimit": `"default";r=2;t=1`, "ratelimit-policy": `"default";q=5;w=1`},
		{"x-ratelimit-limit": "5", "x-ratelimit-remaining": "9223372036854775807", "x-ratelimit-reset": "4102444799"},
	}
)

// fuzzHistory decodes data into a policy and a history of at most 32
// records with bounded values, written through history.Writer. It reports
// false when the limit it draws is not a valid one.
func fuzzHistory(t *testing.T, data []byte) (Policy, []byte, bool) {
	in := &fuzzInput{b: data}
	alg := algorithms[in.pick(len(algorithms))]
	lim := Limit{Algorithm: alg, Period: fuzzPeriods[in.pick(len(fuzzPeriods))], Rate: float64(1 + in.pick(12))}
	if alg.window() {
		lim.Burst = int64(lim.Rate)
		if alg == FixedWindow && in.pick(2) == 1 {
			lim.Start = StartFirst
			if in.pick(2) == 1 {
				lim.Start, lim.Idle = StartFirstGrid, time.Duration(in.pick(2))*3*lim.Period
			}
		}
	} else {
		lim.Burst = int64(1 + in.pick(12))
		lim.Rate /= float64(1 + in.pick(4))
	}
	if lim.Validate() != nil {
		return Policy{}, nil, false
	}
	p := Policy{
		Rules:             []Rule{{Limits: []Limit{lim}, Tolerance: float64(in.pick(2)) / 10}},
		Resolution:        fuzzRes[in.pick(len(fuzzRes))],
		TrustDecisionTime: in.pick(2) == 1,
	}
	start := fuzzStarts[in.pick(len(fuzzStarts))]
	h := history.NewHeader(start)
	if c := in.pick(len(fuzzOffsets) + 1); c < len(fuzzOffsets) {
		off := fuzzOffsets[c]
		h.ClockOffsetNs, h.ClockUncertaintyNs = &off, fuzzUncs[in.pick(len(fuzzUncs))]
	}
	var buf bytes.Buffer
	w, err := history.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	clamp := func(v int64) int64 { return min(max(v, -history.MaxTimeNs), history.MaxTimeNs) }
	now := fuzzOrigins[in.pick(len(fuzzOrigins))]
	for n := in.pick(33); n > 0; n-- {
		step := fuzzSteps[in.pick(len(fuzzSteps))]
		now = clamp(now + step*int64(in.pick(5)-1)) // a step back now and then
		sent := now
		recv := clamp(sent + fuzzSteps[in.pick(len(fuzzSteps))]*int64(1+in.pick(3)))
		r := history.Record{Key: "k" + strconv.Itoa(in.pick(3)), SentNs: sent, IntendedNs: sent, ReceivedNs: recv,
			Cost: fuzzCosts[in.pick(len(fuzzCosts))], Headers: fuzzHeaders[in.pick(len(fuzzHeaders))]}
		switch in.pick(6) {
		case 0, 1:
			r.Status = 200
		case 2:
			r.Status = 429
		case 3:
			r.Error = "context deadline exceeded"
		case 4:
			r.Error = "dial tcp: connection refused"
		case 5:
			r.Status = 503
		}
		r.Outcome = history.OutcomeForStatus(r.Status)
		if in.pick(2) == 1 { // a decision time near the request, on the limiter's clock
			us := start.UnixMicro() + (sent+(recv-sent)/2)/1000 + int64(in.pick(5)-2)
			r.DecisionUs = min(max(us, 0), history.MaxDecisionUs)
		}
		if err := w.Write(&r); err != nil {
			t.Fatalf("Write(%+v): %v", r, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p, buf.Bytes(), true
}

// FuzzCheck runs Check on histories drawn from the fuzz input: it never
// panics or hangs, gives the same report twice, and its reports hold their
// own arithmetic (the counts add up, a failed budget is over its bound).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"",
		"\x04\x02\x09\x00\x02\x01\x00\x00\x0b" + "\x00\x00\x00\x00\x01\x00\x00\x00\x00" + "\x00\x00\x02\x01\x00\x00\x00\x00\x00",
		"\x00\x01\x09\x04\x00\x02\x00\x02\x01\x01\x0c" + "\x02\x01\x01\x00\x01\x02\x00\x02\x01",
		"\x05\x05\x01\x00\x00\x03\x00\x02\x03\x03\x20" + "\x07\x02\x07\x02\x04\x05\x03\x01\x00",
		"\x03\x04\x02\x00\x03\x02\x01\x01\x02\x02\x10" + "\x01\x03\x06\x01\x03\x08\x04\x00\x01",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, hist, ok := fuzzHistory(t, data)
		if !ok {
			return
		}
		check := func() *Report {
			src, err := history.NewReader(bytes.NewReader(hist), "fuzz")
			if err != nil {
				t.Fatalf("the Writer wrote a history the Reader refuses: %v", err)
			}
			rep, err := Check(src, p)
			if errors.Is(err, ErrEmptyHistory) {
				return nil
			}
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			return rep
		}
		rep := check()
		if rep == nil {
			return
		}
		if again := check(); !reflect.DeepEqual(rep, again) {
			t.Fatalf("two checks of one history differ:\n%+v\n%+v", rep, again)
		}
		if got := rep.Admitted + rep.Rejected + rep.Unknown; got != rep.Records {
			t.Errorf("admitted %d + rejected %d + unknown %d = %d, want the %d records", rep.Admitted, rep.Rejected, rep.Unknown, got, rep.Records)
		}
		for _, r := range rep.Results {
			if r.Name == CheckBudget && r.Verdict == Fail && !(r.Observed > r.Bound) {
				t.Errorf("budget fails with %v units of %v allowed: %s", r.Observed, r.Bound, r.Explanation)
			}
			if r.Verdict != Pass && r.Verdict != Fail && r.Verdict != Unknown {
				t.Errorf("result %s has verdict %q", r.Name, r.Verdict)
			}
		}
	})
}
