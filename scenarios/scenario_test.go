package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

// TestInvalid parses every fixture under testdata/invalid; each holds one
// fault and, on its first line, "# want: " and the error's text after the
// file name.
func TestInvalid(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found %d fixtures under testdata/invalid, want at least 20", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := bytes.Cut(data, []byte("\n"))
			want, ok := strings.CutPrefix(string(first), "# want: ")
			if !ok {
				t.Fatalf("first line %q does not start with \"# want: \"", first)
			}
			s, err := LoadFile(file)
			if err == nil {
				t.Fatalf("LoadFile accepted %s as scenario %q", file, s.Name)
			}
			if got, want := err.Error(), file+want; got != want {
				t.Errorf("error:\n got %s\nwant %s", got, want)
			}
			var se *ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *ScenarioError", err)
			}
			if se.File != file || se.Line == 0 {
				t.Errorf("ScenarioError File, Line = %q, %d; want %q and a line", se.File, se.Line, file)
			}
			if !errors.Is(err, ErrInvalidScenario) {
				t.Errorf("errors.Is(err, ErrInvalidScenario) = false")
			}
		})
	}
}

func TestPolicyErrorUnwraps(t *testing.T) {
	_, err := LoadFile("testdata/invalid/bad-policy.yaml")
	if !errors.Is(err, limiter.ErrInvalidLimit) {
		t.Fatalf("errors.Is(%v, limiter.ErrInvalidLimit) = false", err)
	}
}

func TestShipped(t *testing.T) {
	infos, err := List()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bearer-post", "boundary-burst", "concurrency", "cost-weighted",
		"drill-clock-skew", "drill-clock-step", "drill-instance-kill", "drill-redis-failover", "drill-redis-kill-closed", "drill-redis-kill-fallback", "drill-redis-kill-open", "drill-redis-pause", "drill-redis-slow", "drill-replica-clock",
		"hot-key", "ipv6-prefix", "multi-instance-budget", "overhead", "quickstart", "retry-after", "tiers"}
	var got []string
	for _, in := range infos {
		got = append(got, in.Name)
		if len(in.Description) < 40 {
			t.Errorf("%s: description %q is too short to say what it proves", in.Name, in.Description)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("List() names = %v, want %v", got, want)
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			s, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := s.Source, "embedded:"+name+".yaml"; got != want {
				t.Errorf("Source = %q, want %q (file name and name key must agree)", got, want)
			}
			var total time.Duration
			for _, p := range s.Phases {
				total += p.Duration + p.Offset + p.Window
			}
			if total > 20*time.Second {
				t.Errorf("phases last about %v; shipped scenarios must take seconds, not minutes", total)
			}
			// The directory on disk and the embedded copy are the same files.
			disk, err := LoadFile(name + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			if disk.Name != s.Name || len(disk.Phases) != len(s.Phases) {
				t.Errorf("file on disk and embedded copy differ")
			}
		})
	}
}

func TestQuickstartValues(t *testing.T) {
	s, err := Lookup("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	gcra, _ := limiter.ParseLimit("gcra:10/1s,burst=10")
	checks := []struct {
		name      string
		got, want any
	}{
		{"Seed", s.Seed, int64(1)},
		{"Redis.Provider", s.Redis.Provider, ProviderAuto},
		{"Target.Instances", s.Target.Instances, 3},
		{"Target.NumInstances", s.Target.NumInstances(), 3},
		{"Target.Spread", s.Target.Spread, RoundRobin},
		{"Target.Store", s.Target.Store, StoreRedis},
		{"Target.FailureMode", s.Target.FailureMode, FailOpen},
		{"Target.StoreTimeout", s.Target.StoreTimeout, DefaultStoreTimeout},
		{"Routes[0].Method", s.Target.Routes[0].Method, "GET"},
		{"Routes[0].Cost", s.Target.Routes[0].Cost, int64(1)},
		{"Routes[0].Policies[0]", s.Target.Routes[0].Policies[0], gcra},
		{"Target.Algorithms", fmt.Sprint(s.Target.Algorithms()), "[gcra]"},
		{"Identities.Count", s.Identities.Count, 8},
		{"Identities.Header", s.Identities.Header, "X-API-Key"},
		{"Phases[0].Kind", s.Phases[0].Kind, Constant},
		{"Phases[0].Rate", s.Phases[0].Rate, 120.0},
		{"Phases[0].Duration", s.Phases[0].Duration, 8 * time.Second},
		{"Phases[0].PlannedRequests", s.Phases[0].PlannedRequests(), 960},
		{"Phases[0].Routes", len(s.Phases[0].Routes), 1},
		{"Phases[1].Name", s.Phases[1].Name, "probe"},
		{"Checks.FalseRejections.MaxRate", s.Checks.FalseRejections.MaxRate, 0.01},
		{"Checks.Headers", s.Checks.Headers, true},
		{"Checks.MaxLatency", s.Checks.MaxLatency, time.Second},
		{"Checks.LoadDelivered", s.Checks.LoadDelivered, DefaultLoadDelivered},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestEdgeBurstWindowFromPolicy(t *testing.T) {
	s, err := Lookup("boundary-burst")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(s.Target.Algorithms()), "[token_bucket gcra leaky_bucket fixed_window sliding_window_log sliding_window_counter]"; got != want {
		t.Errorf("Algorithms() = %s, want %s", got, want)
	}
	for _, p := range s.Phases {
		if got, want := p.Window, time.Second; got != want {
			t.Errorf("%s: Window = %v, want %v", p.Name, got, want)
		}
		if got, want := p.PlannedRequests(), 20; got != want {
			t.Errorf("%s: PlannedRequests = %d, want %d", p.Name, got, want)
		}
	}
}

func TestEdgeBurstDefaultOffset(t *testing.T) {
	tests := []struct {
		policy string
		want   time.Duration
	}{
		{"fixed_window:100/1m", time.Second},
		{"fixed_window:10/2s", 500 * time.Millisecond},
		{"sliding_window_counter:10/200ms", 50 * time.Millisecond},
	}
	for _, tt := range tests {
		src := fmt.Sprintf("name: x\ndescription: edge\ntarget:\n  instances: 1\n  routes:\n    - path: /a\n      policies: [%q]\ntraffic:\n  - {kind: edge_burst, requests: 5}\n", tt.policy)
		s, err := Parse("x.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Phases[0].Offset; got != tt.want {
			t.Errorf("%s: Offset = %v, want %v", tt.policy, got, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    int
		wantErr error
	}{
		{"shipped name", []string{"concurrency"}, 1, nil},
		{"file", []string{"tiers.yaml"}, 1, nil},
		{"directory", []string{"."}, 21, nil},
		{"file and name", []string{"tiers.yaml", "hot-key"}, 2, nil},
		{"unknown name", []string{"quikstart"}, 0, ErrNotFound},
		{"missing file", []string{"nope/none.yaml"}, 0, ErrNotFound},
		{"same name twice", []string{"tiers", "tiers.yaml"}, 0, ErrInvalidScenario},
		{"directory of invalid files", []string{"testdata/invalid"}, 0, ErrInvalidScenario},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(tt.args...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Load(%q) error = %v, want %v", tt.args, err, tt.wantErr)
			}
			if len(got) != tt.want {
				t.Fatalf("Load(%q) returned %d scenarios, want %d", tt.args, len(got), tt.want)
			}
		})
	}
	_, err := Lookup("quikstart")
	if got, want := err.Error(), `scenario not found: "quikstart"; did you mean "quickstart"?`; got != want {
		t.Errorf("Lookup error = %q, want %q", got, want)
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"50/1s", 50, true},
		{"50/s", 50, true},
		{"600/1m", 10, true},
		{"600/m", 10, true},
		{"600/min", 10, true},
		{"3000/1h", 3000.0 / 3600, true},
		{"7200/h", 2, true},
		{"86400/1d", 1, true},
		{"86400/d", 1, true},
		{"5/100ms", 50, true},
		{" 10 / 2s ", 5, true},
		{"0/1s", 0, true},
		{"1e9/1s", 1e9, true},
		{"", 0, false},
		{"7", 0, false}, // a rate names its period, as a policy's does
		{"ten/1s", 0, false},
		{"10/0s", 0, false},
		{"10/-1s", 0, false},
		{"-5/1s", 0, false},
		{"NaN/1s", 0, false},
		{"2e9/1s", 0, false},
		{"10/fortnight", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if (err == nil) != tt.ok || (tt.ok && math.Abs(got-tt.want) > 1e-12*tt.want) {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestRateMeansWhatAPolicySays holds the traffic rate and a policy's
// RATE/PERIOD to one grammar and one meaning: every form one accepts the
// other does, as the same units per second.
func TestRateMeansWhatAPolicySays(t *testing.T) {
	for _, rate := range []string{
		"50/1s", "50/s", "50/min", "50/m", "50/1m", "3000/1h", "3000/h", "10000/30d", "24/d",
		"5/100ms", "1/2ms", "0.5/1s", "1e3/1m30s", " 12 / 2s ", "120/60s",
		"50", "50 per second", "ten/1s", "10/fortnight", "10/1y", "10/", "/1s",
	} {
		t.Run(rate, func(t *testing.T) {
			perSecond, rateErr := ParseRate(rate)
			l, policyErr := limiter.ParseLimit("token_bucket:" + rate + ",burst=1000")
			if (rateErr == nil) != (policyErr == nil) {
				t.Fatalf("traffic rate error %v, policy error %v: one grammar must accept or refuse both", rateErr, policyErr)
			}
			if rateErr != nil {
				return
			}
			if got, want := perSecond, l.Rate/l.Period.Seconds(); math.Abs(got-want) > 1e-12*want {
				t.Fatalf("traffic rate %v/s, policy %v per %v = %v/s", got, l.Rate, l.Period, want)
			}
		})
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"50/1s", "600/1m", "50/min", "5/100ms", "7", "1e9/1ns", "3000/1.5d", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
			t.Fatalf("ParseRate(%q) = %v without error", s, r)
		}
	})
}

// FuzzParse checks that no input makes Parse panic, and that every error is
// a *ScenarioError naming the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("*.yaml")
	more, _ := filepath.Glob("testdata/invalid/*.yaml")
	for _, file := range append(files, more...) {
		data, err := os.ReadFile(file)
		if err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			var se *ScenarioError
			if !errors.As(err, &se) || se.File != "fuzz.yaml" {
				t.Fatalf("error %v (%T) is not a *ScenarioError for fuzz.yaml", err, err)
			}
			return
		}
		if s.Name == "" || len(s.Phases) == 0 || s.Target.NumInstances() == 0 {
			t.Fatalf("accepted an incomplete scenario: %+v", s)
		}
	})
}
