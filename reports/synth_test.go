package reports

import (
	"cmp"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/limitertest"
)

// synthScenario describes a scenario simulated on a fake clock: requests
// arrive as a seeded Poisson process, and the limited route's decisions come
// from limiter.MemoryStore, one shared by every instance or (the faulty
// variant) one private store per instance.
type synthScenario struct {
	name, desc string
	seed       uint64
	duration   time.Duration
	instances  []string
	private    bool
	limit      string
	route      string
	baseline   string
	keys       int
	keyPrefix  string  // default "key-"
	rate       float64 // requests per second on the limited route
	baseRate   float64 // requests per second on the baseline route
	fault      *runrecord.FaultWindow
	// drill, when set, makes the fault a drill the checks excuse: the
	// limiter fails open during it (every request admitted, no headers) and
	// its store restarts empty at the fault's end.
	drill *runrecord.Drill
	// probeKey, when set, is a key of the Retry-After probe phase "probe":
	// its records are of that phase, the others of "steady".
	probeKey string
}

// synthStart is the fake clock's start: midnight UTC, so windows align.
var synthStart = limitertest.T0

type synthRequest struct {
	rec      history.Record
	decideNs int64
}

// simulate returns the scenario's records in completion order.
func (s synthScenario) simulate(tb testing.TB) []history.Record {
	tb.Helper()
	rng := rand.New(rand.NewPCG(s.seed, s.seed^0x9e3779b97f4a7c15))
	lim, err := limiter.ParseLimit(s.limit)
	if err != nil {
		tb.Fatal(err)
	}
	total := s.rate + s.baseRate
	var reqs []synthRequest
	weights := make([]float64, s.keys)
	sum := 0.0
	for i := range weights {
		weights[i] = 1 / float64(i+1)
		sum += weights[i]
	}
	for t, id := int64(0), uint64(1); ; id++ {
		t += int64(rng.ExpFloat64() / total * 1e9)
		if t >= int64(s.duration) {
			break
		}
		r := history.Record{ID: id, Cost: 1, IntendedNs: t, Instance: s.instances[int(id)%len(s.instances)], Route: s.route}
		if rng.Float64()*total < s.baseRate {
			r.Route = s.baseline
		}
		x := rng.Float64() * sum
		for i, w := range weights {
			if x -= w; x < 0 || i == len(weights)-1 {
				r.Key = cmp.Or(s.keyPrefix, "key-") + strconv.Itoa(i)
				break
			}
		}
		if s.probeKey != "" {
			r.Phase = "steady"
			if r.Key == s.probeKey {
				r.Phase = "probe"
			}
		}
		r.SentNs = t + int64(rng.IntN(200_000))
		lat := int64(300_000 + rng.IntN(1_500_000))
		if r.Route == s.baseline {
			lat -= 150_000
		}
		if rng.IntN(100) == 0 {
			lat += int64(rng.IntN(20_000_000))
		}
		r.ReceivedNs = r.SentNs + lat
		reqs = append(reqs, synthRequest{rec: r, decideNs: r.SentNs + lat/2})
	}
	slices.SortFunc(reqs, func(a, b synthRequest) int { return cmp.Compare(a.decideNs, b.decideNs) })
	clock := limitertest.NewClock(synthStart)
	stores := map[string]*limiter.MemoryStore{}
	shared := limiter.NewMemoryStore(limiter.WithClock(clock.Now))
	for _, in := range s.instances {
		stores[in] = shared
		if s.private {
			stores[in] = limiter.NewMemoryStore(limiter.WithClock(clock.Now))
		}
	}
	out := make([]history.Record, 0, len(reqs))
	restarted := false
	for _, q := range reqs {
		r := q.rec
		if s.drill != nil && !restarted && q.decideNs >= s.fault.ToNs {
			restarted = true
			shared = limiter.NewMemoryStore(limiter.WithClock(clock.Now))
			for _, in := range s.instances {
				stores[in] = shared
			}
		}
		switch {
		case r.Route == s.baseline:
			r.Status = 200
		case s.fault != nil && s.drill != nil && q.decideNs >= s.fault.FromNs && q.decideNs < s.fault.ToNs:
			r.Status = 200 // failed open
		case s.fault != nil && r.SentNs >= s.fault.FromNs && r.SentNs < s.fault.ToNs:
			r.Status = 503
			r.Headers = map[string]string{"retry-after": "1"}
		default:
			clock.Set(synthStart.Add(time.Duration(q.decideNs)))
			d, err := stores[r.Instance].AllowN(tb.Context(), r.Key, r.Cost, lim)
			if err != nil {
				tb.Fatal(err)
			}
			r.Status = 200
			r.Headers = map[string]string{"ratelimit-remaining": strconv.FormatInt(d.Remaining, 10)}
			if !d.Allowed {
				r.Status = 429
				r.Headers["retry-after"] = strconv.FormatInt(d.RetryAfterSeconds(), 10)
			}
		}
		r.Outcome = history.OutcomeForStatus(r.Status)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b history.Record) int {
		return cmp.Or(cmp.Compare(a.ReceivedNs, b.ReceivedNs), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// writeSynthRun simulates the scenarios and writes a complete run directory
// in dir: each history, checked by the checker into summary.json, and
// run.json with latency histograms built from the records.
func writeSynthRun(tb testing.TB, dir string, scs []synthScenario) {
	tb.Helper()
	gen := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	summary := checker.NewSummary(gen)
	rr := &runrecord.RunRecord{Schema: runrecord.Schema, Meta: runrecord.Meta{
		Version: "v0.9.0", Commit: "4f2c1e7", GoVersion: "go1.26.0", OS: "linux", Arch: "amd64", CPUs: 8,
		Hostname: "ci-runner-3", Start: synthStart,
	}}
	for i, s := range scs {
		recs := s.simulate(tb)
		rel := filepath.Join(s.name, "history.jsonl.gz")
		if err := os.MkdirAll(filepath.Join(dir, s.name), 0o755); err != nil {
			tb.Fatal(err)
		}
		zero := int64(0)
		h := history.NewHeader(synthStart)
		h.Scenario, h.Target, h.Instances, h.ClockOffsetNs = s.name, "sampleapi", s.instances, &zero
		h.Policies = []history.RoutePolicy{{Route: s.route, Limits: []string{s.limit}}}
		w, err := history.Create(filepath.Join(dir, rel), h)
		if err != nil {
			tb.Fatal(err)
		}
		lat := map[string][2]*hdrhistogram.Histogram{}
		for j := range recs {
			r := &recs[j]
			if err := w.Write(r); err != nil {
				tb.Fatal(err)
			}
			hs, ok := lat[r.Route]
			if !ok {
				hs = [2]*hdrhistogram.Histogram{hdrhistogram.New(1, 100_000, 2), hdrhistogram.New(1, 100_000, 2)}
				lat[r.Route] = hs
			}
			hs[0].RecordValue((r.ReceivedNs - r.SentNs) / 1000)
			hs[1].RecordValue((r.ReceivedNs - r.IntendedNs) / 1000)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, rel))
		if err != nil {
			tb.Fatal(err)
		}
		src, err := history.NewReader(f, rel)
		if err != nil {
			tb.Fatal(err)
		}
		var policy checker.Policy
		if dr := s.drill; dr != nil {
			policy.Faults = dr
		}
		rep, err := checker.Check(src, policy)
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
		summary.AddReport(s.name, rep)
		lim, _ := limiter.ParseLimit(s.limit)
		sr := runrecord.ScenarioRecord{
			Name: s.name, Description: s.desc, Source: "scenarios/" + s.name + ".yaml", Seed: int64(s.seed),
			Start: synthStart.Add(time.Duration(i) * time.Minute), Duration: s.duration,
			Redis:     runrecord.RedisInfo{Provider: "embedded", Addr: "127.0.0.1:6390", Version: "7.4.2"},
			Instances: s.instances, History: rel, ClockUncertainty: 40 * time.Microsecond,
			Routes: []runrecord.RouteRecord{
				{Path: s.route, Cost: 1, Limits: []string{lim.Spec()}},
				{Path: s.baseline, Cost: 1, Baseline: true},
			},
			Latency: map[string]runrecord.LatencyRecord{},
		}
		for route, hs := range lat {
			sr.Latency[route] = runrecord.LatencyRecord{FromSent: hs[0].Export(), FromIntended: hs[1].Export()}
		}
		planned := int(s.duration.Seconds() * (s.rate + s.baseRate))
		sr.Phases = []runrecord.PhaseRecord{{
			Name: "steady", Kind: "constant", Planned: planned, Sent: len(recs), OnTime: len(recs), Delivered: 1,
			PlannedRate: s.rate + s.baseRate, AchievedRate: float64(len(recs)) / s.duration.Seconds(),
			Status: map[int]int{200: len(recs)}, LagP99: 180 * time.Microsecond,
		}}
		if s.probeKey != "" {
			sr.Phases = append(sr.Phases, runrecord.PhaseRecord{Name: "probe", Kind: runrecord.PhaseRetryAfterProbe})
		}
		if s.fault != nil {
			sr.Faults = []runrecord.FaultWindow{*s.fault}
		}
		sr.Drill = s.drill
		rr.Scenarios = append(rr.Scenarios, sr)
		rr.Meta.Duration += s.duration + time.Second
	}
	for name, write := range map[string]func(*os.File) error{
		SummaryFile: func(f *os.File) error { return summary.Write(f) },
		RunFile:     func(f *os.File) error { return rr.Write(f) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		if err := write(f); err != nil {
			tb.Fatal(err)
		}
		if err := f.Close(); err != nil {
			tb.Fatal(err)
		}
	}
}

// goldenScenarios is the fixed run of the golden test: a shared GCRA
// budget that holds, private per-instance token buckets that overspend
// (the mutation of DESIGN.md), and a fixed window through a Redis pause.
var goldenScenarios = []synthScenario{
	{
		name: "shared-gcra", desc: "Three instances share one GCRA budget per key under twice the allowed load.",
		seed: 7, duration: 12 * time.Second, instances: []string{"instance-1", "instance-2", "instance-3"},
		limit: "gcra:20/1s,burst=10", route: "/v1/search", baseline: "/v1/baseline", keys: 4, rate: 60, baseRate: 20,
	},
	{
		name: "private-buckets", desc: "Each instance keeps a private token bucket: together they admit three times the budget.",
		seed: 11, duration: 10 * time.Second, instances: []string{"instance-1", "instance-2", "instance-3"}, private: true,
		limit: "token_bucket:10/1s,burst=5", route: "/v1/search", baseline: "/v1/baseline", keys: 3, rate: 70, baseRate: 10,
	},
	{
		name: "fixed-window-pause", desc: "A fixed window of 30 per second while Redis pauses for two seconds (fail-closed).",
		seed: 13, duration: 10 * time.Second, instances: []string{"instance-1", "instance-2"},
		limit: "fixed_window:30/1s", route: "/v1/items", baseline: "/v1/baseline", keys: 2, rate: 50, baseRate: 10,
		fault: &runrecord.FaultWindow{Kind: "pause", Target: "redis", FromNs: 4e9, ToNs: 6e9},
	},
	{
		name: "gcra-kill-open", desc: "Redis is killed for two seconds and restarted empty; the limiter fails open meanwhile.",
		seed: 17, duration: 10 * time.Second, instances: []string{"instance-1", "instance-2", "instance-3"},
		limit: "gcra:10/1s,burst=10", route: "/v1/search", baseline: "/v1/baseline", keys: 3, rate: 45, baseRate: 10,
		fault: &runrecord.FaultWindow{Kind: "redis_kill", Target: "redis", FromNs: 3e9, ToNs: 5e9},
		drill: &runrecord.Drill{Mode: "open", Instances: 3, Timeout: 50 * time.Millisecond, Slack: 250 * time.Millisecond, Recovery: 2 * time.Second,
			Windows: []runrecord.FaultWindow{{Kind: "redis_kill", FromNs: 3e9, ToNs: 5e9, Unavailable: true, LosesState: true}}},
	},
}
