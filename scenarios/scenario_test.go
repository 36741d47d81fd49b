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
		"hot-key", "ipv6-prefix", "lease-budget", "multi-instance-budget", "overhead", "plans", "quickstart", "retry-after", "tiers"}
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
	shipped, err := List()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		want    int
		wantErr error
	}{
		{"shipped name", []string{"concurrency"}, 1, nil},
		{"file", []string{"tiers.yaml"}, 1, nil},
		{"directory", []string{"."}, len(shipped), nil},
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
	_, err = Lookup("quikstart")
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

func TestBurstRepeat(t *testing.T) {
	src := `name: x
description: repeated bursts after a pause
target:
  instances: 1
  routes: [{path: /a, policies: ["gcra:10/1s,burst=10"]}]
traffic:
  - {kind: idle, duration: 30s}
  - {kind: burst, requests: 20, spread: 2ms, repeat: 10, gap: 50ms}
  - {kind: burst, requests: 5}
`
	s, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rep, one := s.Phases[1], s.Phases[2]
	checks := []struct {
		name      string
		got, want any
	}{
		{"Repeat", rep.Repeat, 10},
		{"Gap", rep.Gap, 50 * time.Millisecond},
		{"PlannedRequests", rep.PlannedRequests(), 200},
		{"BurstStart(0)", rep.BurstStart(0), time.Duration(0)},
		{"BurstStart(3)", rep.BurstStart(3), 156 * time.Millisecond},
		{"Length", rep.Length(), 10*2*time.Millisecond + 9*50*time.Millisecond},
		{"unrepeated Repeat", one.Repeat, 1},
		{"unrepeated Gap", one.Gap, time.Duration(0)},
		{"unrepeated PlannedRequests", one.PlannedRequests(), 5},
		{"unrepeated Length", one.Length(), time.Duration(0)},
		{"idle Length", s.Phases[0].Length(), 30 * time.Second},
		{"zero Repeat counts one burst", Phase{Kind: Burst, Requests: 3}.PlannedRequests(), 3},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestPhaseLength(t *testing.T) {
	const maxD = time.Duration(math.MaxInt64)
	tests := []struct {
		name  string
		phase Phase
		want  time.Duration
	}{
		{"constant", Phase{Kind: Constant, Duration: 8 * time.Second}, 8 * time.Second},
		{"ramp", Phase{Kind: Ramp, Duration: 5 * time.Second}, 5 * time.Second},
		{"idle", Phase{Kind: Idle, Duration: time.Hour}, time.Hour},
		{"burst", Phase{Kind: Burst, Spread: 5 * time.Millisecond}, 5 * time.Millisecond},
		{"repeated burst", Phase{Kind: Burst, Spread: time.Second, Repeat: 3, Gap: time.Minute}, 3*time.Second + 2*time.Minute},
		{"edge burst", Phase{Kind: EdgeBurst, Window: 5 * time.Second, Offset: time.Second, Spread: 5 * time.Millisecond}, 7*time.Second + 5*time.Millisecond},
		{"probe", Phase{Kind: RetryAfterProbe, Requests: 30}, MaxProbeWait},
		{"saturates", Phase{Kind: Burst, Spread: maxD / 2, Repeat: 1000, Gap: maxD / 3}, maxD},
	}
	for _, tt := range tests {
		if got := tt.phase.Length(); got != tt.want {
			t.Errorf("%s: Length = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestExternalClock: an external target declares its clock's resolution
// and offset; without them both are left for the run to measure.
func TestExternalClock(t *testing.T) {
	const base = `name: ext
description: an external API
redis: {provider: external, url: "redis://127.0.0.1:6390/0"}
target:
  external: ["http://127.0.0.1:8080"]
%s  routes:
    - path: /api/items
      policies: ["fixed_window:5/5s"]
traffic:
  - {kind: idle, duration: 1s}
`
	s, err := Parse("ext.yaml", []byte(fmt.Sprintf(base, "  clock_resolution: 1ms\n  clock: {offset: -700ms, uncertainty: 5ms}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Target.ClockResolution, time.Millisecond; got != want {
		t.Errorf("ClockResolution = %v, want %v", got, want)
	}
	if got, want := s.Target.Clock, (&Clock{Offset: -700 * time.Millisecond, Uncertainty: 5 * time.Millisecond}); got == nil || *got != *want {
		t.Errorf("Clock = %+v, want %+v", got, want)
	}
	if got, want := s.Redis, (Redis{Provider: ProviderExternal, URL: "redis://127.0.0.1:6390/0", Topology: TopologySingle}); got != want {
		t.Errorf("Redis = %+v, want %+v", got, want)
	}
	s, err = Parse("ext.yaml", []byte(fmt.Sprintf(base, "")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Target.ClockResolution != 0 || s.Target.Clock != nil {
		t.Errorf("undeclared: ClockResolution %v, Clock %+v; want 0 and nil", s.Target.ClockResolution, s.Target.Clock)
	}
}

// Windows from each key's first request may be claimed for a peer or an
// external target, whose limiter enforces them, but not for the sample
// API, whose reference limiter refuses them at request time.
func TestStartFirstOnlyWhereEnforced(t *testing.T) {
	for _, tt := range []struct {
		name, target string
		start        limiter.WindowStart
		ok           bool
	}{
		{"sample API", "instances: 2", limiter.StartFirst, false},
		{"peer", "peer: express\n  instances: 2", limiter.StartFirst, true},
		{"external", "external: [http://127.0.0.1:8080]", limiter.StartFirst, true},
		{"grid on the sample API", "instances: 2", limiter.StartFirstGrid, false},
		{"grid on a peer", "peer: go_limiter\n  instances: 1", limiter.StartFirstGrid, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: x\ndescription: first\ntarget:\n  " + tt.target +
				"\n  routes:\n    - path: /a\n      policies: [\"fixed_window:10/5s,start=" + string(tt.start) + "\"]\ntraffic:\n  - {kind: burst, requests: 5}\n"
			s, err := Parse("x.yaml", []byte(src))
			if got := err == nil; got != tt.ok {
				t.Fatalf("Parse: error %v, want accepted %v", err, tt.ok)
			}
			if tt.ok {
				if got := s.Target.Routes[0].Policies[0].Start; got != tt.start {
					t.Errorf("Start = %q, want %q", got, tt.start)
				}
				return
			}
			if want := "target.routes[0].policies[0]: start=" + string(tt.start); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		})
	}
}
