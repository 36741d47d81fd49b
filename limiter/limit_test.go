package limiter_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

func TestLimitString(t *testing.T) {
	tests := []struct {
		limit limiter.Limit
		want  string
	}{
		{limiter.PerSecond(10, 20), "10 req/s (burst 20)"},
		{limiter.PerMinute(600, 100), "600 req/min (burst 100)"},
		{limiter.Limit{Algorithm: limiter.GCRA, Rate: 5, Period: time.Second, Burst: 5}, "5 req/s (burst 5, gcra)"},
		{limiter.Window(limiter.FixedWindow, 100, time.Minute), "100 req/min (fixed window)"},
		{limiter.Window(limiter.SlidingWindowLog, 3, 90*time.Second), "3 req/1m30s (sliding window log)"},
		{limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 1e-10, Period: time.Second, Burst: 1}, "1e-10 req/s (burst 1)"},
	}
	for _, tc := range tests {
		if got := tc.limit.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestLimitID(t *testing.T) {
	tests := []struct {
		limit limiter.Limit
		want  string
	}{
		{limiter.PerHour(5, 2), "tb-5per1h-b2"},
		{limiter.Window(limiter.SlidingWindowCounter, 100, time.Minute), "swc-100per1m"},
		{limiter.Limit{Name: "export", Algorithm: limiter.GCRA, Rate: 1, Period: time.Second, Burst: 1}, "export"},
	}
	for _, tc := range tests {
		if got := tc.limit.ID(); got != tc.want {
			t.Errorf("ID() = %q, want %q", got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		limit   limiter.Limit
		wantErr string // empty: valid
	}{
		{"token bucket", limiter.PerSecond(10, 20), ""},
		{"extreme slow rate", limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 1e-10, Period: time.Second, Burst: 1}, ""},
		{"missing algorithm", limiter.Limit{Rate: 1, Period: time.Second, Burst: 1}, "algorithm: missing"},
		{"unknown algorithm", limiter.Limit{Algorithm: "leaky", Rate: 1, Period: time.Second, Burst: 1}, `unknown "leaky"`},
		{"zero rate", limiter.PerSecond(0, 1), "rate: 0 must be a positive number"},
		{"negative rate", limiter.PerSecond(-3, 1), "rate: -3 must be a positive number"},
		{"zero burst", limiter.PerSecond(1, 0), "burst: 0 must be at least 1"},
		{"window under 1ms", limiter.Window(limiter.FixedWindow, 1, 999*time.Microsecond), "shorter than the minimum 1ms"},
		{"fractional window limit", limiter.Limit{Algorithm: limiter.FixedWindow, Rate: 2.5, Period: time.Second}, "whole number"},
		{"window with other burst", limiter.Limit{Algorithm: limiter.FixedWindow, Rate: 5, Period: time.Second, Burst: 7}, "no separate burst"},
		{"rate finer than a microsecond", limiter.PerSecond(2e6, 1), "above one unit per microsecond"},
		{"refill overflows", limiter.Limit{Algorithm: limiter.GCRA, Rate: 1e-12, Period: time.Second, Burst: 1 << 20}, "overflows"},
		{"huge burst", limiter.PerSecond(1, 1<<41), "exceeds the maximum"},
		{"counter overflows", limiter.Window(limiter.SlidingWindowCounter, 1<<40, 24*time.Hour), "overflows exact arithmetic"},
		{"name with a brace", limiter.Limit{Name: "a{b}", Algorithm: limiter.GCRA, Rate: 1, Period: time.Second, Burst: 1}, "braces"},
	}
	for _, tc := range tests {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			err := tc.limit.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, limiter.ErrInvalidLimit) {
				t.Fatalf("Validate() = %v, want an ErrInvalidLimit containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in      string
		want    limiter.Limit
		wantErr string
	}{
		{in: "token_bucket:10/1s,burst=20", want: limiter.PerSecond(10, 20)},
		{in: "10/s", want: limiter.PerSecond(10, 10)},
		{in: "gcra:600/1m,burst=100,name=api", want: limiter.Limit{Name: "api", Algorithm: limiter.GCRA, Rate: 600, Period: time.Minute, Burst: 100}},
		{in: "fixed_window:100/1m", want: limiter.Window(limiter.FixedWindow, 100, time.Minute)},
		{in: "sliding_window_log:2/min", want: limiter.Window(limiter.SlidingWindowLog, 2, time.Minute)},
		{in: "token_bucket:10000/30d,burst=10000", want: limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 10000, Period: 720 * time.Hour, Burst: 10000}},
		{in: "token_bucket:0.5/1s", want: limiter.Limit{Algorithm: limiter.TokenBucket, Rate: 0.5, Period: time.Second, Burst: 1}},
		{in: "gcra:10", wantErr: "want RATE/PERIOD"},
		{in: "gcra:ten/1s", wantErr: `rate "ten"`},
		{in: "gcra:10/fortnight", wantErr: `period "fortnight"`},
		{in: "gcra:10/1s,burts=3", wantErr: `unknown option "burts"`},
		{in: "gcra:10/1s,burst=x", wantErr: `burst "x"`},
		{in: "bucket:10/1s", wantErr: `unknown "bucket"`},
		{in: "gcra:10/1e9d", wantErr: "beyond the longest period"},
		{in: "gcra:10/NaNd", wantErr: "beyond the longest period"},
		{in: "gcra:1e30/1s", wantErr: "above one unit per microsecond"},
		{in: "gcra:10/1s,burst=99999999999999999999", wantErr: "out of range"},
		{in: "gcra:10/1s,burst=10,burst=3", wantErr: `option "burst" is given twice`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := limiter.ParseLimit(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseLimit(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLimit(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseLimit(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"gcra:10/1s,burst=5", "fixed_window:3/10s", "1e-10/1s", "x:y/z,,=", "sliding_window_counter:7/250ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := limiter.ParseLimit(s)
		if err != nil {
			return
		}
		if verr := l.Validate(); verr != nil {
			t.Fatalf("ParseLimit(%q) returned %#v that fails Validate: %v", s, l, verr)
		}
		if l.Capacity() < 1 || l.IntervalMicros() < 1 {
			t.Fatalf("ParseLimit(%q) = %#v with capacity %d, interval %d µs", s, l, l.Capacity(), l.IntervalMicros())
		}
	})
}

func TestSpecRoundTrip(t *testing.T) {
	for _, l := range []limiter.Limit{
		limiter.PerSecond(10, 20),
		{Name: "monthly", Algorithm: limiter.FixedWindow, Rate: 10000, Period: 720 * time.Hour, Burst: 10000},
		{Algorithm: limiter.GCRA, Rate: 1e-10, Period: time.Second, Burst: 1},
		{Algorithm: limiter.LeakyBucket, Rate: 2.5, Period: 1500 * time.Millisecond, Burst: 3},
		limiter.Window(limiter.SlidingWindowCounter, 7, 90*time.Second),
		{Name: "api", Algorithm: limiter.FixedWindow, Rate: 10, Period: 5 * time.Second, Burst: 10, Start: limiter.StartFirst},
	} {
		got, err := limiter.ParseLimit(l.Spec())
		if err != nil || got != l {
			t.Errorf("ParseLimit(%q) = %#v, %v; want %#v", l.Spec(), got, err, l)
		}
	}
}

func TestTextRoundTrip(t *testing.T) {
	want := limiter.Limit{Name: "search", Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 5}
	text, err := want.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	if got, wantText := string(text), "gcra:10/1s,burst=5,name=search"; got != wantText {
		t.Fatalf("MarshalText = %q, want %q", got, wantText)
	}
	var got limiter.Limit
	if err := got.UnmarshalText(text); err != nil || got != want {
		t.Fatalf("UnmarshalText(%q) = %#v, %v; want %#v", text, got, err, want)
	}
	before := got
	if err := got.UnmarshalText([]byte("gcra:0/1s")); !errors.Is(err, limiter.ErrInvalidLimit) || got != before {
		t.Fatalf("UnmarshalText of an invalid limit: error %v, limit %#v; want ErrInvalidLimit and the limit unchanged", err, got)
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		rate    float64
		period  time.Duration
		wantErr string
	}{
		{in: "10/1s", rate: 10, period: time.Second},
		{in: " 50 / s ", rate: 50, period: time.Second},
		{in: "50/min", rate: 50, period: time.Minute},
		{in: "50/m", rate: 50, period: time.Minute},
		{in: "50/1m", rate: 50, period: time.Minute},
		{in: "3000/1h", rate: 3000, period: time.Hour},
		{in: "3000/h", rate: 3000, period: time.Hour},
		{in: "10000/30d", rate: 10000, period: 720 * time.Hour},
		{in: "1/d", rate: 1, period: 24 * time.Hour},
		{in: "2.5/1m30s", rate: 2.5, period: 90 * time.Second},
		{in: "0/1s", rate: 0, period: time.Second},   // syntax only: ParseLimit's Validate refuses it
		{in: "5/-1s", rate: 5, period: -time.Second}, // idem
		{in: "10", wantErr: "want RATE/PERIOD"},
		{in: "ten/1s", wantErr: `rate "ten" is not a number`},
		{in: "10/fortnight", wantErr: `period "fortnight"`},
		{in: "10/", wantErr: `period ""`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			rate, period, err := limiter.ParseRate(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseRate(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil || rate != tc.rate || period != tc.period {
				t.Fatalf("ParseRate(%q) = %v, %v, %v; want %v, %v", tc.in, rate, period, err, tc.rate, tc.period)
			}
		})
	}
}

// A fixed window from each key's first request is a policy to claim for
// another limiter: the syntax reads it, the reference's stores refuse it.
func TestStartFirstIsClaimedNotEnforced(t *testing.T) {
	l, err := limiter.ParseLimit("fixed_window:10/5s,start=first")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Spec(), "fixed_window:10/5s,burst=10,start=first"; got != want {
		t.Errorf("Spec() = %q, want %q", got, want)
	}
	if got, want := l.String(), "10 req/5s (fixed window from first request)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := limiter.CheckRequest(1, []limiter.Limit{l}); !errors.Is(err, limiter.ErrInvalidLimit) || !strings.Contains(err.Error(), "start=first") {
		t.Errorf("CheckRequest = %v, want ErrInvalidLimit naming start=first", err)
	}
	if _, err := limiter.NewMemoryStore().AllowNAt("k", 1, time.Unix(0, 0), l); !errors.Is(err, limiter.ErrInvalidLimit) {
		t.Errorf("MemoryStore.AllowNAt = %v, want ErrInvalidLimit", err)
	}
	if _, err := limiter.ParseLimit("gcra:10/5s,start=first"); !errors.Is(err, limiter.ErrInvalidLimit) {
		t.Errorf("ParseLimit of a bucket from its first request: %v, want ErrInvalidLimit", err)
	}
}

// Windows on the grid of each key's first request, and the idle time after
// which such a limiter forgets a key, are claimed for another limiter too:
// Spec and String carry them, the stores refuse them, and idle= applies to
// that form only, at two periods at least.
func TestStartFirstGridIsClaimedNotEnforced(t *testing.T) {
	l, err := limiter.ParseLimit("fixed_window:10/5s,start=first-grid,idle=12h")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Spec(), "fixed_window:10/5s,burst=10,start=first-grid,idle=12h"; got != want {
		t.Errorf("Spec() = %q, want %q", got, want)
	}
	if got, want := l.String(), "10 req/5s (fixed window on a grid from first request)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := limiter.CheckRequest(1, []limiter.Limit{l}); !errors.Is(err, limiter.ErrInvalidLimit) || !strings.Contains(err.Error(), "start=first-grid") {
		t.Errorf("CheckRequest = %v, want ErrInvalidLimit naming start=first-grid", err)
	}
	for _, tt := range []struct{ spec, want string }{
		{"fixed_window:10/5s,start=first,idle=12h", "idle: applies to start=first-grid only"},
		{"fixed_window:10/5s,start=first-grid,idle=9s", "raise idle to at least 10s"},
		{"fixed_window:10/5s,start=first-grid,idle=12", "want a positive duration such as 12h"},
		{"gcra:10/5s,start=first-grid", "start=first-grid applies to fixed_window only"},
		{"fixed_window:10/5s,start=grid", "first-grid (windows on the grid it anchors)"},
	} {
		if _, err := limiter.ParseLimit(tt.spec); !errors.Is(err, limiter.ErrInvalidLimit) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseLimit(%q) = %v, want ErrInvalidLimit saying %q", tt.spec, err, tt.want)
		}
	}
}
