package checker

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios"
)

// sameMeaning fails t unless the checker's parser and the reference
// limiter's read spec alike: both reject it, or both accept it as the same
// limit (fields, capacity, window, the text results show) and the checker
// reads the limiter's own formatting of it (the history header's form) back
// to the same limit.
func sameMeaning(t *testing.T, spec string) (accepted bool) {
	t.Helper()
	ref, refErr := limiter.ParseLimit(spec)
	got, err := ParseLimit(spec)
	if (err == nil) != (refErr == nil) {
		t.Fatalf("ParseLimit(%q): checker error %v, limiter error %v", spec, err, refErr)
	}
	if err != nil {
		if !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("ParseLimit(%q) = %v, want an error wrapping ErrInvalidPolicy", spec, err)
		}
		if !strings.Contains(err.Error(), "invalid policy") {
			t.Errorf("ParseLimit(%q) error %q does not say what is wrong", spec, err)
		}
		return false
	}
	want := Limit{Name: ref.Name, Algorithm: Algorithm(ref.Algorithm), Rate: ref.Rate, Period: ref.Period, Burst: ref.Burst, Start: WindowStart(ref.Start), Idle: ref.Idle, LeaseTokens: ref.LeaseTokens, LeaseFor: ref.LeaseFor}
	if got != want {
		t.Fatalf("ParseLimit(%q) = %+v, the limiter reads %+v", spec, got, want)
	}
	if g, w := got.Capacity(), ref.Capacity(); g != w {
		t.Errorf("ParseLimit(%q).Capacity() = %d, the limiter's %d", spec, g, w)
	}
	if g, w := got.periodMicros(), ref.PeriodMicros(); g != w {
		t.Errorf("ParseLimit(%q).periodMicros() = %d, the limiter's %d", spec, g, w)
	}
	if g, w := got.String(), ref.String(); g != w {
		t.Errorf("ParseLimit(%q).String() = %q, the limiter's %q", spec, g, w)
	}
	back, err := ParseLimit(ref.Spec())
	if err != nil || back != got {
		t.Errorf("ParseLimit(%q), the limiter's Spec of %q, = %+v, %v; want %+v", ref.Spec(), spec, back, err, got)
	}
	return true
}

var specPattern = regexp.MustCompile("\\b(token_bucket|gcra|leaky_bucket|fixed_window|sliding_window_log|sliding_window_counter):[^\"'\\s\\]`]*[^\"'\\s\\]`.,;:)]")

// Every policy of every shipped scenario means the same to the checker as
// to the reference limiter.
func TestParseLimitShippedScenarios(t *testing.T) {
	var files []string
	for _, dir := range []string{"", "mutation", "peers"} {
		got, err := filepath.Glob(filepath.Join("..", "..", "scenarios", dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Fatalf("no scenario files in scenarios/%s", dir)
		}
		files = append(files, got...)
	}
	seen := map[string]bool{}
	for _, file := range files {
		sc, err := scenarios.LoadFile(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		// The policies as the file writes them: every one the routes
		// declare must be among them, so none escapes the comparison.
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		specs := specPattern.FindAllString(string(data), -1)
		declared := 0
		for _, rt := range sc.Target.Routes {
			declared += len(rt.Policies)
		}
		if len(specs) < declared {
			t.Errorf("%s: found %d policy strings %q in the text, but the routes declare %d", file, len(specs), specs, declared)
		}
		for _, spec := range specs {
			if !sameMeaning(t, spec) {
				t.Errorf("%s: shipped policy %q is rejected", file, spec)
			}
			seen[spec] = true
		}
	}
	if len(seen) < 20 {
		t.Fatalf("only %d distinct policies in %d scenario files; the scenarios moved?", len(seen), len(files))
	}
}

// parseCases are edge cases of the policy syntax, each accepted (with the
// limit it means) or rejected, by both parsers.
var parseCases = []struct {
	spec string
	want *Limit // nil: rejected
}{
	// The documented forms.
	{"gcra:20/1s,burst=10", &Limit{Algorithm: GCRA, Rate: 20, Period: time.Second, Burst: 10}},
	{"token_bucket:10/1s,burst=20", &Limit{Algorithm: TokenBucket, Rate: 10, Period: time.Second, Burst: 20}},
	{"leaky_bucket:5/1s,burst=5", &Limit{Algorithm: LeakyBucket, Rate: 5, Period: time.Second, Burst: 5}},
	{"fixed_window:100/1m", &Limit{Algorithm: FixedWindow, Rate: 100, Period: time.Minute, Burst: 100}},
	{"sliding_window_log:100/1m", &Limit{Algorithm: SlidingWindowLog, Rate: 100, Period: time.Minute, Burst: 100}},
	{"sliding_window_counter:100/1m", &Limit{Algorithm: SlidingWindowCounter, Rate: 100, Period: time.Minute, Burst: 100}},
	// Defaults: the algorithm, the burst.
	{"10/1s", &Limit{Algorithm: TokenBucket, Rate: 10, Period: time.Second, Burst: 10}},
	{"gcra:2.5/1s", &Limit{Algorithm: GCRA, Rate: 2.5, Period: time.Second, Burst: 3}},
	{"gcra:0.5/1s", &Limit{Algorithm: GCRA, Rate: 0.5, Period: time.Second, Burst: 1}},
	{"fixed_window:10/1s,burst=0", &Limit{Algorithm: FixedWindow, Rate: 10, Period: time.Second}},
	{"fixed_window:10/1s,burst=10", &Limit{Algorithm: FixedWindow, Rate: 10, Period: time.Second, Burst: 10}},
	// Each unit.
	{"gcra:10/s", &Limit{Algorithm: GCRA, Rate: 10, Period: time.Second, Burst: 10}},
	{"gcra:10/m", &Limit{Algorithm: GCRA, Rate: 10, Period: time.Minute, Burst: 10}},
	{"gcra:10/min", &Limit{Algorithm: GCRA, Rate: 10, Period: time.Minute, Burst: 10}},
	{"gcra:10/h", &Limit{Algorithm: GCRA, Rate: 10, Period: time.Hour, Burst: 10}},
	{"gcra:10/d", &Limit{Algorithm: GCRA, Rate: 10, Period: 24 * time.Hour, Burst: 10}},
	{"gcra:1/1ms", &Limit{Algorithm: GCRA, Rate: 1, Period: time.Millisecond, Burst: 1}},
	{"gcra:1/1000us", &Limit{Algorithm: GCRA, Rate: 1, Period: time.Millisecond, Burst: 1}},
	{"gcra:1/1000µs", &Limit{Algorithm: GCRA, Rate: 1, Period: time.Millisecond, Burst: 1}},
	{"gcra:10/1.5s", &Limit{Algorithm: GCRA, Rate: 10, Period: 1500 * time.Millisecond, Burst: 10}},
	{"gcra:10/1m30s", &Limit{Algorithm: GCRA, Rate: 10, Period: 90 * time.Second, Burst: 10}},
	{"gcra:10/1h", &Limit{Algorithm: GCRA, Rate: 10, Period: time.Hour, Burst: 10}},
	{"gcra:10/24h", &Limit{Algorithm: GCRA, Rate: 10, Period: 24 * time.Hour, Burst: 10}},
	{"fixed_window:12/30d", &Limit{Algorithm: FixedWindow, Rate: 12, Period: 30 * 24 * time.Hour, Burst: 12}},
	{"fixed_window:12/1.5d", &Limit{Algorithm: FixedWindow, Rate: 12, Period: 36 * time.Hour, Burst: 12}},
	{"fixed_window:12/0.5d", &Limit{Algorithm: FixedWindow, Rate: 12, Period: 12 * time.Hour, Burst: 12}},
	{"gcra:10/0.5ms", nil},
	{"gcra:10/999us", nil},
	{"gcra:10/0s", nil},
	{"gcra:10/-1s", nil},
	{"gcra:10/-1d", nil},
	{"gcra:10/NaNd", nil},
	{"gcra:10/infd", nil},
	{"gcra:10/106752d", nil},
	{"gcra:10/1w", nil},
	{"gcra:10/1", nil},
	{"gcra:10/sec", nil},
	// Names.
	{"gcra:60/1m,burst=5,name=minute", &Limit{Name: "minute", Algorithm: GCRA, Rate: 60, Period: time.Minute, Burst: 5}},
	{"fixed_window:12/30d,name=month", &Limit{Name: "month", Algorithm: FixedWindow, Rate: 12, Period: 30 * 24 * time.Hour, Burst: 12}},
	{"name=first,name=second", nil},
	{"token_bucket:50/1s,name=units,burst=50", &Limit{Name: "units", Algorithm: TokenBucket, Rate: 50, Period: time.Second, Burst: 50}},
	{"gcra:1/1s,name=a.b-c_d/e", &Limit{Name: "a.b-c_d/e", Algorithm: GCRA, Rate: 1, Period: time.Second, Burst: 1}},
	{"gcra:1/1s,name=a=b", &Limit{Name: "a=b", Algorithm: GCRA, Rate: 1, Period: time.Second, Burst: 1}},
	{"gcra:1/1s,name=", &Limit{Algorithm: GCRA, Rate: 1, Period: time.Second, Burst: 1}},
	{"gcra:1/1s,name=a b", nil},
	{"gcra:1/1s,name=a:b", nil},
	{"gcra:1/1s,name={tag}", nil},
	{"gcra:1/1s,name=x,name=y", nil},
	// Where a fixed window's windows start.
	{"fixed_window:10/5s,start=first", &Limit{Algorithm: FixedWindow, Rate: 10, Period: 5 * time.Second, Burst: 10, Start: StartFirst}},
	{"fixed_window:10/5s,name=api,start=first", &Limit{Name: "api", Algorithm: FixedWindow, Rate: 10, Period: 5 * time.Second, Burst: 10, Start: StartFirst}},
	{"fixed_window:10/5s,start=aligned", &Limit{Algorithm: FixedWindow, Rate: 10, Period: 5 * time.Second, Burst: 10}},
	{"fixed_window:10/5s,start=first,start=first", nil},
	{"fixed_window:10/5s,start=last", nil},
	{"fixed_window:10/5s,start=", nil},
	{"sliding_window_counter:10/5s,start=first", nil},
	{"sliding_window_log:10/5s,start=first", nil},
	{"gcra:10/5s,start=first", nil},
	// Windows on the grid from the first request, and when it is forgotten.
	{"fixed_window:10/5s,start=first-grid", &Limit{Algorithm: FixedWindow, Rate: 10, Period: 5 * time.Second, Burst: 10, Start: StartFirstGrid}},
	{"fixed_window:10/5s,start=first-grid,idle=12h", &Limit{Algorithm: FixedWindow, Rate: 10, Period: 5 * time.Second, Burst: 10, Start: StartFirstGrid, Idle: 12 * time.Hour}},
	{"fixed_window:10/5s,idle=10s,start=first-grid,name=api", &Limit{Name: "api", Algorithm: FixedWindow, Rate: 10, Period: 5 * time.Second, Burst: 10, Start: StartFirstGrid, Idle: 10 * time.Second}},
	{"fixed_window:10/5s,start=first-grid,idle=9s", nil},
	{"fixed_window:10/5s,start=first-grid,idle=0s", nil},
	{"fixed_window:10/5s,start=first-grid,idle=-1h", nil},
	{"fixed_window:10/5s,start=first-grid,idle=12", nil},
	{"fixed_window:10/5s,start=first-grid,idle=1h,idle=2h", nil},
	{"fixed_window:10/5s,start=first,idle=12h", nil},
	{"fixed_window:10/5s,idle=12h", nil},
	{"sliding_window_log:10/5s,start=first-grid", nil},
	{"gcra:10/5s,start=first-grid", nil},
	// Space.
	{"  gcra : 10 / 1s , burst=5 ", &Limit{Algorithm: GCRA, Rate: 10, Period: time.Second, Burst: 5}},
	{"gcra:10/1s,burst= 5", nil},
	{"gcra:10/1s,burst =5", nil},
	// Large and small values.
	{"token_bucket:1000000/1s", &Limit{Algorithm: TokenBucket, Rate: 1e6, Period: time.Second, Burst: 1e6}},
	{"token_bucket:1000001/1s", nil},
	{"gcra:1e-10/1s,burst=1", &Limit{Algorithm: GCRA, Rate: 1e-10, Period: time.Second, Burst: 1}},
	{"gcra:1e-12/1s,burst=1000", nil},
	{"gcra:1/1s,burst=1099511627776", &Limit{Algorithm: GCRA, Rate: 1, Period: time.Second, Burst: 1 << 40}},
	{"gcra:1/1s,burst=1099511627777", nil},
	{"gcra:1/1s,burst=99999999999999999999", nil},
	{"fixed_window:1099511627776/1h", &Limit{Algorithm: FixedWindow, Rate: 1 << 40, Period: time.Hour, Burst: 1 << 40}},
	{"fixed_window:1099511627777/1h", nil},
	{"sliding_window_counter:1000000/30d", &Limit{Algorithm: SlidingWindowCounter, Rate: 1e6, Period: 30 * 24 * time.Hour, Burst: 1e6}},
	{"sliding_window_counter:1099511627776/30d", nil},
	{"gcra:0x1p4/1s", &Limit{Algorithm: GCRA, Rate: 16, Period: time.Second, Burst: 16}},
	{"gcra:1e3/1m", &Limit{Algorithm: GCRA, Rate: 1000, Period: time.Minute, Burst: 1000}},
	{"gcra:1_000/1s", &Limit{Algorithm: GCRA, Rate: 1000, Period: time.Second, Burst: 1000}},
	// Malformed.
	{"", nil},
	{"gcra", nil},
	{"gcra:", nil},
	{"gcra:10", nil},
	{"gcra:10/", nil},
	{"gcra:/1s", nil},
	{"gcra:ten/1s", nil},
	{":10/1s", nil},
	{"GCRA:10/1s", nil},
	{"rolling:10/1s", nil},
	{"gcra:0/1s", nil},
	{"gcra:-1/1s", nil},
	{"gcra:NaN/1s", nil},
	{"gcra:inf/1s", nil},
	{"gcra:10/1s,burst=0", nil},
	{"gcra:10/1s,burst=-1", nil},
	{"gcra:10/1s,burst=1.5", nil},
	{"gcra:10/1s,burst=", nil},
	{"gcra:10/1s,burst=5,burst=6", nil},
	{"gcra:10/1s,cost=2", nil},
	{"gcra:10/1s,", nil},
	{"gcra:10/1s;burst=5", nil},
	{"fixed_window:10.5/1s", nil},
	{"fixed_window:10/1s,burst=5", nil},
	{"sliding_window_log:0/1m", nil},
	// Leases: buckets only, within the burst.
	{"gcra:1000/1s,burst=1000,lease=10/900ms", &Limit{Algorithm: GCRA, Rate: 1000, Period: time.Second, Burst: 1000, LeaseTokens: 10, LeaseFor: 900 * time.Millisecond}},
	{"token_bucket:100/1s,burst=50,lease=5/200ms", &Limit{Algorithm: TokenBucket, Rate: 100, Period: time.Second, Burst: 50, LeaseTokens: 5, LeaseFor: 200 * time.Millisecond}},
	{"gcra:1000/1s,burst=1000,lease=10/990ms", &Limit{Algorithm: GCRA, Rate: 1000, Period: time.Second, Burst: 1000, LeaseTokens: 10, LeaseFor: 990 * time.Millisecond}},
	{"gcra:1000/1s,burst=1000,lease=11/990ms", nil},
	{"gcra:10/1s,lease=2", nil},
	{"gcra:10/1s,lease=0/100ms", nil},
	{"gcra:10/1s,lease=2/0s", nil},
	{"gcra:10/1s,lease=2/500us", nil},
	{"gcra:10/1s,burst=10,lease=2/100ms,lease=2/100ms", nil},
	{"leaky_bucket:10/1s,lease=2/100ms", nil},
	{"fixed_window:10/1s,lease=2/100ms", nil},
	{"gcra:10/1s,burst=10,lease=1/100ms", nil},
	{"gcra:10/1s,burst=10,lease=2/100ms", &Limit{Algorithm: GCRA, Rate: 10, Period: time.Second, Burst: 10, LeaseTokens: 2, LeaseFor: 100 * time.Millisecond}},
	{"gcra:10/1s,burst=20,lease=11/1s", nil},
	{"gcra:100000/1s,burst=1000000,lease=10/10000h", nil},
}

func TestParseLimitEdges(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.spec, func(t *testing.T) {
			accepted := sameMeaning(t, tc.spec)
			if got, want := accepted, tc.want != nil; got != want {
				t.Fatalf("ParseLimit(%q) accepted = %v, want %v", tc.spec, got, want)
			}
			if tc.want == nil {
				return
			}
			if got, _ := ParseLimit(tc.spec); got != *tc.want {
				t.Errorf("ParseLimit(%q) = %+v, want %+v", tc.spec, got, *tc.want)
			}
		})
	}
}

// FuzzParseLimit holds the two parsers to one meaning on any string.
func FuzzParseLimit(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.spec)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		sameMeaning(t, spec)
	})
}

// The lease errors read the same from both parsers and name the fix: the
// largest tokens and the longest duration that fit.
func TestLeaseErrorsMatchTheLimiters(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"gcra:10/1s,burst=20,lease=11/1s", "lease: lease=11/1s holds 11 + 10 of refill = 21 units, more than the burst 20; lower it to lease=10/1s or lease=11/900ms"},
		{"gcra:10/1s,burst=20,lease=19/2s", "lease: lease=19/2s holds 19 + 20 of refill = 39 units, more than the burst 20; lower it to lease=19/100ms"},
		{"gcra:100000/1s,burst=1000000,lease=10/10000h", "lease: lease=10/10000h holds 10 + 3600000000000 of refill = 3600000000010 units, more than the burst 1000000; lower it to lease=10/9.9999s"},
		{"token_bucket:10/1s,burst=10,lease=1/100ms", "lease: lease=1/100ms never grants: a store grants a lease only when it holds more units than the request's cost, so a lease needs at least 2 tokens; write lease=N/DURATION with N of 2 or more, as in lease=10/900ms, or remove it"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := ParseLimit(tt.spec)
			_, refErr := limiter.ParseLimit(tt.spec)
			if err == nil || refErr == nil {
				t.Fatalf("errors %v, %v; want both", err, refErr)
			}
			got, _ := strings.CutPrefix(err.Error(), "invalid policy: ")
			ref, _ := strings.CutPrefix(refErr.Error(), "invalid limit: ")
			if got != tt.want || ref != tt.want {
				t.Errorf("checker %q\nlimiter %q\nwant    %q", got, ref, tt.want)
			}
		})
	}
}

// A lease is refused in a rule of several limits, by LeaseAlone as by the
// limiter's CheckLeaseAlone and by Check's policy validation.
func TestLeaseAlone(t *testing.T) {
	const leased = "gcra:50/1s,burst=20,lease=5/200ms"
	for _, tt := range []struct {
		name  string
		specs []string
		at    int
	}{
		{"one leased limit", []string{leased}, -1},
		{"two plain limits", []string{"gcra:50/1s,burst=20", "fixed_window:1000/1m"}, -1},
		{"leased second", []string{"fixed_window:1000/1m", leased}, 1},
		{"leased first", []string{leased, "fixed_window:1000/1m"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var limits []Limit
			var refs []limiter.Limit
			for _, s := range tt.specs {
				limits = append(limits, mustLimit(t, s))
				ref, err := limiter.ParseLimit(s)
				if err != nil {
					t.Fatal(err)
				}
				refs = append(refs, ref)
			}
			at, err := LeaseAlone(limits)
			refAt, refErr := limiter.CheckLeaseAlone(refs)
			if at != tt.at || refAt != tt.at {
				t.Fatalf("LeaseAlone at %d, limiter's %d; want %d", at, refAt, tt.at)
			}
			checkErr := (&Policy{Rules: []Rule{{Limits: limits}}}).validate()
			if tt.at < 0 {
				if err != nil || refErr != nil || checkErr != nil {
					t.Fatalf("errors %v, %v, %v; want none", err, refErr, checkErr)
				}
				return
			}
			const want = "lease: lease=5/200ms: a lease applies to a rule of one limit, and this one has 2; remove lease= or split the route's policies"
			if got := err.Error(); got != "invalid policy: "+want || !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("LeaseAlone error %q", got)
			}
			if got := refErr.Error(); got != "invalid limit: "+want {
				t.Errorf("CheckLeaseAlone error %q", got)
			}
			if checkErr == nil || !strings.Contains(checkErr.Error(), want) {
				t.Errorf("Policy.validate error %v, want %q", checkErr, want)
			}
		})
	}
}

// Results name every bucket's algorithm, and a limit's lease and name, so
// that two limits differing only in those never share a label.
func TestLimitScope(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"token_bucket:10/1s,burst=20", "10 req/s (burst 20, token bucket)"},
		{"gcra:10/1s,burst=4", "10 req/s (burst 4, gcra)"},
		{"gcra:1000/1s,burst=1000,lease=10/900ms", "1000 req/s (burst 1000, gcra, lease=10/900ms)"},
		{"token_bucket:60/1m,burst=10,lease=2/1s,name=minute", "60 req/min (burst 10, token bucket, lease=2/1s, name=minute)"},
		{"fixed_window:100/1m", "100 req/min (fixed window)"},
		{"fixed_window:10/5s,start=first,name=w", "10 req/5s (fixed window from first request, name=w)"},
	} {
		if got := mustLimit(t, tt.spec).Scope(); got != tt.want {
			t.Errorf("scope of %s = %q, want %q", tt.spec, got, tt.want)
		}
	}
}
