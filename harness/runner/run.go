//go:build unix

// Package runner carries out `rlbench run`: for each scenario it provisions
// Redis, starts the sample API instances, measures the offset to the
// limiter's clock, arms the fault schedule, fires the traffic phases while
// streaming every request into the history, optionally scans Redis for keys
// left without a TTL, stops everything, and has the checker judge what it
// recorded. Data only moves forward: the runner records and does not
// judge; the checker reads the history file and the run record
// (checker.CheckScenario, the function `rlbench check DIR` calls too),
// never the target.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/faults"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/instances"
	"github.com/rlbench/rlbench/harness/peers"
	"github.com/rlbench/rlbench/harness/progress"
	"github.com/rlbench/rlbench/harness/provider"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/storeprobe"
	"github.com/rlbench/rlbench/harness/traffic"
	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/sampleapi"
	"github.com/rlbench/rlbench/scenarios"
)

// Options configures a Runner.
type Options struct {
	// OutDir receives one directory per scenario; it must exist.
	OutDir string
	// Binary is the rlbench executable the instances run; empty means
	// this process's own.
	Binary string
	// Provider, when set, overrides every scenario's Redis provider, and
	// RedisURL is the external Redis's URL.
	Provider scenarios.Provider
	RedisURL string
	// Progress receives the live display and Log the run's messages; nil
	// discards them.
	Progress, Log io.Writer
	// Interactive draws a live bar on Progress instead of periodic lines.
	Interactive bool
	// Claims, by route, replace the policies the checks hold the target to
	// (the instances still run the scenario's): a stricter promise than the
	// target keeps must fail.
	Claims map[string][]limiter.Limit
	// GroupClaims, by identity group name, replace the policies the checks
	// hold the group's keys to, as Claims do a route's.
	GroupClaims map[string][]limiter.Limit
	// Faulty, when set, names the faulty limiter variant (package
	// sampleapi/faulty) every sample API instance runs instead of the
	// reference; it goes into each instance's configuration file.
	Faulty string
	// RunID, when set, names every scenario's identities instead of a
	// random id per scenario, so that a run can send again the identities
	// an earlier one recorded (its run.json's run_id).
	RunID scenarios.RunID
	// InstanceArgs are extra `rlbench serve` flags for every sample API
	// instance, overriding its configuration file (as a person running
	// `rlbench serve` would); prefer the fields above.
	InstanceArgs []string
	// Shard, when set, fires one shard of a sharded run of each scenario
	// (traffic.Plan): shard Shard.Index of Shard.Count, or of the
	// scenario's shards.count when Shard.Count is 0. It needs RunID, which
	// every shard of the run shares, and a scenario its shards can share a
	// budget in (Shard, scenarios.Scenario.Shardable). A shard refuses a
	// scenario whose offset to the limiter's clock is unknown before the
	// traffic: shards are merged on that clock.
	Shard *history.Shard
	// ScanKeys scans every key of the scenario's Redis after the traffic
	// for keys without a TTL and records the scan (the key-ttl check). Set
	// it only for a Redis that holds this run's keys alone: a scan of a
	// shared Redis would judge other programs' keys.
	ScanKeys bool
	// Start is when each scenario's first phase begins; the zero value:
	// as soon as it is set up.
	Start Start
	// Clock is this host's wall clock as the run reads and records it; the
	// zero value: as it is.
	Clock HostClock
	// Target, when set, is the target the parent of local shards started
	// (RunLocalShards): each scenario is run as an external target aimed
	// at it (LocalTarget.Apply), its instances named as the parent named
	// them, its identities as fresh as the parent's start made them.
	Target *LocalTarget
}

// Outcome is one scenario's run.
type Outcome struct {
	Scenario *scenarios.Scenario
	// Start and Duration bound the traffic, from the first phase to the
	// last answer; Start is on the wall clock as the history's header
	// records it (Options.Clock).
	Start    time.Time
	Duration time.Duration
	// Redis describes the Redis the limiter used: provider, address and
	// server version; empty for an external target with no Redis.
	Redis runrecord.RedisInfo
	// Instances names the instances (or external URLs) the traffic went to.
	Instances []string
	// HistoryPath is the recorded history, relative to Options.OutDir.
	HistoryPath string
	// Report is the checker's verdicts on what the run recorded: the
	// history and the Record.
	Report *checker.Report
	// Stats is what the generator delivered.
	Stats *traffic.Stats
	// ClockOffset is the limiter's clock minus the harness's, ± ClockUncertainty.
	ClockOffset, ClockUncertainty time.Duration
	// Shard is the shard of a sharded run this outcome fired; nil for a
	// whole run.
	Shard *history.Shard
	// RunID names the run's identities (scenarios.Identities.Identity).
	// IdentitiesFresh reports whether every identity began the run unknown
	// to the limiter: generated for this run, or sent to a target and
	// store the run started. When false a key may begin with part of its
	// budget spent.
	RunID           scenarios.RunID
	IdentitiesFresh bool
	// ClockSource says where ClockOffset came from (history.ClockRedisTime,
	// ClockHTTPDate, ClockDeclared, ClockLocal), or runrecord.ClockUnknown
	// when nothing measured it: ClockOffset is then 0 and means nothing.
	ClockSource string
	// ClockResolution is the step of the limiter's clock the checks assume:
	// 1 µs for the sample API, the peer's own, or what the scenario
	// declares for an external target (1 µs when it does not).
	ClockResolution time.Duration
	// Faults are the scenario's faults as they happened, in ns since Start.
	Faults []runrecord.FaultWindow
	// KeyScan is the scan for keys without a TTL (Options.ScanKeys); nil
	// when none was made.
	KeyScan *runrecord.KeyScan
	// Connections samples the client connections Redis saw during a drill
	// that pauses or slows it; nil when none were sampled.
	Connections *runrecord.Connections
	// Stalls are the stretches, outside the declared faults, in which the
	// store probe saw the store answer no faster than the store timeout
	// (runrecord.FaultWindow.Observed); nil when none was seen or the run
	// was not probed (probesStore).
	Stalls []runrecord.FaultWindow
	// AgreedStart is the start the first phase waited for (Options.Start);
	// nil when it began at once.
	AgreedStart *runrecord.AgreedStart

	// offset is the limiter's clock minus the wall clock (HostClock) as
	// measured or declared, before HostClock.Record; began is the start
	// as time.Now() read it, which the monotonic times count from.
	offset time.Duration
	began  time.Time
}

// Runner runs scenarios one after the other.
type Runner struct{ opts Options }

// New returns a Runner.
func New(opts Options) *Runner {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	// The live display and the messages write from different goroutines,
	// often to one writer (standard error): one lock serves both, so a
	// writer that is not safe for concurrent use (a buffer) is fine.
	mu := &sync.Mutex{}
	opts.Progress = &lockedWriter{mu: mu, w: opts.Progress}
	opts.Log = &lockedWriter{mu: mu, w: opts.Log}
	return &Runner{opts: opts}
}

// lockedWriter serialises writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.opts.Log, format+"\n", args...)
}

// Run runs one scenario and checks it. Everything it started is stopped
// before it returns, also when ctx is cancelled or a step fails. An error
// means the scenario could not be run or checked; failed checks are in the
// Outcome's Report.
func (r *Runner) Run(ctx context.Context, sc *scenarios.Scenario) (*Outcome, error) {
	if r.opts.Target != nil {
		sc = r.opts.Target.Apply(sc)
	}
	shard, err := r.Shard(sc)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	// Absolute, as every path handed to a child process (instance config, peer prefix) must be.
	dir, err := filepath.Abs(filepath.Join(r.opts.OutDir, sc.Name))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	out := &Outcome{Scenario: sc, Shard: shard, HistoryPath: filepath.Join(sc.Name, "history.jsonl.gz")}

	// Everything started below is stopped by these, in reverse order.
	var cleanups []func()
	defer func() {
		for _, c := range slices.Backward(cleanups) {
			c()
		}
	}()

	red, rdb, err := r.provision(ctx, sc, out, &cleanups)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	env := faults.Env{Dir: commandDir(sc), Clocks: map[string]faults.ClockStepper{}}
	redisURL := ""
	var sentinel *provider.Sentinel
	if red != nil {
		redisURL = red.URL()
		env.Redis, _ = red.(faults.Redis)
		if c, ok := red.(faults.ClockStepper); ok && sc.NeedsFakeClock() {
			env.Clocks[scenarios.ClockStepRedis] = c
		}
		if s, ok := red.(*provider.Sentinel); ok {
			sentinel, env.Failover = s, s
			env.Redis = nil // its faults act through the Sentinel group
		}
		if needsProxy(sc) {
			// The limiter reaches Redis through the proxy, so that its link
			// to it can be degraded without touching Redis itself: the
			// instances by the URL below, an external target because its
			// owner pointed it at redis.proxy.
			p, err := faults.StartProxy(sc.Redis.Proxy, red.Addr())
			if err != nil {
				return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
			}
			cleanups = append(cleanups, p.Close)
			env.Proxy = p
			if redisURL, err = faults.URLThrough(red.URL(), p.Addr()); err != nil {
				return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
			}
			r.logf("%s: Redis proxy on %s, forwarding to %s", sc.Name, p.Addr(), scenarios.RedactURL(red.URL()))
		}
	}

	// The run's identities are named before the target starts: the sample
	// API's configuration lists the keys of identity groups.
	out.RunID = r.opts.RunID
	if out.RunID == "" {
		out.RunID = scenarios.NewRunID()
	}
	g, urls, names, cfgs, err := r.startTarget(ctx, sc, dir, redisURL, out.RunID, sentinel, &cleanups)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	out.Instances = names
	env.Instances = map[string]faults.Instance{}
	for i, in := range g {
		env.Instances[in.Name()] = in
		env.Clocks[in.Name()] = &instanceClock{in: in, path: cfgs[i].path, cfg: cfgs[i].cfg}
	}
	if err := faults.Validate(sc.Faults, env); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}

	out.ClockResolution = clockResolution(sc)
	clock := r.opts.Clock
	// Until measured, the limiter is taken to read this host's clock.
	out.offset = clock.Offset(0)
	uncertainty := time.Duration(0)
	switch out.ClockSource = limiterClock(sc, rdb != nil); out.ClockSource {
	case history.ClockDeclared:
		out.offset, uncertainty = clock.Offset(sc.Target.Clock.Offset), sc.Target.Clock.Uncertainty
	case history.ClockRedisTime:
		out.offset, uncertainty, err = clock.MeasureOffset(ctx, func(ctx context.Context) (time.Time, error) {
			return rdb.Time(ctx).Result()
		})
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	if out.ClockSource != "" {
		out.ClockOffset, out.ClockUncertainty = clock.Record(out.offset, uncertainty)
	}
	// An external target's offset left unknown here is measured from the
	// Date headers of its responses while the traffic runs (fire).

	// Last before the traffic: the start the shards agree on.
	begin, err := r.agreeStart(ctx, sc, rdb, out)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}

	monitorURL := ""
	if red != nil {
		monitorURL = red.URL() // Redis itself, never through the proxy
	}
	probeURL := ""
	if red != nil && sentinel == nil && probesStore(sc) {
		probeURL = redisURL // as the limiter reaches it: through the proxy, if any
	}
	fireErr := r.fire(ctx, sc, filepath.Join(r.opts.OutDir, out.HistoryPath), urls, names, env, monitorURL, probeURL, begin, out)
	if err := writeCommandLogs(r.opts.OutDir, sc, out.Faults); err != nil {
		fireErr = errors.Join(fireErr, err)
	}
	if fireErr != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, fireErr)
	}
	if r.opts.ScanKeys && rdb != nil {
		if out.KeyScan, err = scanKeys(ctx, rdb, out.began); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	// Stop the target before checking, so no instance outlives a long check.
	for _, c := range slices.Backward(cleanups) {
		c()
	}
	cleanups = nil

	rec := out.Record()
	if out.Shard != nil && PlannedRequests(sc, out.Shard).Requests == 0 {
		// Its history holds no request for Check to judge; the check of
		// the shards as one run judges the others'.
		out.Report = &checker.Report{Notes: []string{fmt.Sprintf("shard %s plans no request of this scenario (every request belongs to another shard): "+
			"nothing to check here; check the shards as one run", out.Shard)}}
		return out, nil
	}
	if out.Report, err = checker.CheckScenario(r.opts.OutDir, &rec); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	return out, nil
}

// limiterClock says where a run of sc, with a Redis or none, takes its
// offset to the limiter's clock from before the traffic: the offset the
// scenario declares (history.ClockDeclared); the limiter's Redis, started
// by rlbench or given by an external target's redis.url, whose TIME is the
// clock a limiter on it decides by (ClockRedisTime); this host's clock,
// which instances rlbench started without Redis read (ClockLocal); or ""
// for an external target without either, whose offset only the Date
// headers of its responses can tell, while the traffic runs.
func limiterClock(sc *scenarios.Scenario, redis bool) string {
	switch {
	case sc.Target.Clock != nil:
		return history.ClockDeclared
	case redis:
		return history.ClockRedisTime
	case len(sc.Target.External) == 0:
		return history.ClockLocal
	}
	return ""
}

// scanKeys records the keys of the Redis behind rdb that have no TTL.
func scanKeys(ctx context.Context, rdb *redis.Client, start time.Time) (*runrecord.KeyScan, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	at := time.Since(start)
	keys, err := redistest.KeysWithoutTTL(ctx, rdb)
	if err != nil {
		return nil, fmt.Errorf("scan keys for a TTL: %w", err)
	}
	return &runrecord.KeyScan{AtNs: at.Nanoseconds(), WithoutTTL: len(keys), Examples: keys[:min(len(keys), runrecord.MaxKeyExamples)]}, nil
}

// needsProxy reports whether the limiter of sc reaches Redis through
// rlbench's proxy: the scenario names the proxy's address (the one an
// external target is pointed at), or a fault acts on the link to Redis.
func needsProxy(sc *scenarios.Scenario) bool {
	return sc.Redis.Proxy != "" || slices.ContainsFunc(sc.Faults, func(f scenarios.Fault) bool { return f.Kind.NeedsProxy() })
}

// commandDir is the directory the command faults of sc run in: its file's,
// or the current directory for a shipped scenario.
func commandDir(sc *scenarios.Scenario) string {
	if sc.Source == "" || strings.HasPrefix(sc.Source, "embedded:") {
		return ""
	}
	dir, err := filepath.Abs(filepath.Dir(sc.Source))
	if err != nil {
		return filepath.Dir(sc.Source)
	}
	return dir
}

// redacted returns err with rawURL's password masked wherever the message
// quotes it, as a driver's error may.
func redacted(err error, rawURL string) error {
	if err == nil || rawURL == "" {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), rawURL, scenarios.RedactURL(rawURL))
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// provision makes the scenario's Redis available; it returns no Redis for
// a target that needs none.
func (r *Runner) provision(ctx context.Context, sc *scenarios.Scenario, out *Outcome, cleanups *[]func()) (provider.Redis, *redis.Client, error) {
	kind, url := sc.Redis.Provider, sc.Redis.URL
	if r.opts.Provider != "" && kind != scenarios.ProviderNone {
		kind, url = r.opts.Provider, r.opts.RedisURL
	}
	if kind == scenarios.ProviderNone {
		return nil, nil, nil
	}
	red, err := provider.Start(ctx, kind, provider.Options{
		URL: url, Algorithms: algorithms(sc), Logf: r.logf,
		FakeClock: sc.NeedsFakeClock(), Topology: sc.Redis.Topology, ReplicaClock: sc.Redis.ReplicaClock,
	})
	if err != nil {
		return nil, nil, redacted(err, url)
	}
	*cleanups = append(*cleanups, func() { red.Close() })
	opts, err := redis.ParseURL(red.URL())
	if err != nil {
		return nil, nil, redacted(fmt.Errorf("redis url %s: %w", scenarios.RedactURL(red.URL()), err), red.URL())
	}
	opts.DisableIdentity = true
	opts.PoolSize = monitorPool
	rdb := redis.NewClient(opts)
	*cleanups = append(*cleanups, func() { rdb.Close() })
	out.Redis = runrecord.RedisInfo{Provider: string(red.Provider()), Addr: red.Addr(), Version: redisVersion(ctx, rdb)}
	return red, rdb, nil
}

// redisVersion reads redis_version from INFO server, or "unknown".
func redisVersion(ctx context.Context, rdb *redis.Client) string {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

// algorithms lists the algorithms of every policy of the scenario, its
// routes' and its identity groups'.
func algorithms(sc *scenarios.Scenario) []limiter.Algorithm {
	var algs []limiter.Algorithm
	add := func(limits []limiter.Limit) {
		for _, l := range limits {
			if !slices.Contains(algs, l.Algorithm) {
				algs = append(algs, l.Algorithm)
			}
		}
	}
	for _, rt := range sc.Target.Routes {
		add(rt.Policies)
	}
	for _, g := range sc.Identities.Groups {
		add(g.Policies)
	}
	return algs
}

// startTarget starts the sample API instances (or the scenario's peer
// limiter), or returns the external URLs.
// Instances of a sentinel group find the master through it; a peer other
// than redis_rate starts its own processes. startTarget returns, for the
// sample API instances, each one's configuration and its file.
func (r *Runner) startTarget(ctx context.Context, sc *scenarios.Scenario, dir, redisURL string, run scenarios.RunID, sentinel *provider.Sentinel, cleanups *[]func()) (g instances.Group, urls, names []string, cfgs []instanceFile, err error) {
	if t := r.opts.Target; t != nil {
		return nil, t.URLs, t.Names, nil, nil
	}
	if len(sc.Target.External) > 0 {
		return nil, sc.Target.External, sc.Target.External, nil, nil
	}
	if sc.Target.Peer != "" && sc.Target.Peer != scenarios.PeerRedisRate {
		p, err := peers.Start(ctx, sc, dir, redisURL)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		*cleanups = append(*cleanups, p.Stop)
		return nil, p.URLs(), p.Names(), nil, nil
	}
	specs := make([]instances.Spec, sc.Target.Instances)
	for i := range specs {
		cfg := InstanceConfig(sc, i, redisURL, r.opts.Faulty)
		if err := ApplyPlans(&cfg, sc, run); err != nil {
			return nil, nil, nil, nil, err
		}
		if sentinel != nil && cfg.Store == sampleapi.StoreRedis {
			cfg.RedisSentinel = &sampleapi.SentinelConfig{Master: sentinel.MasterName(), Addrs: sentinel.SentinelAddrs()}
		}
		path := filepath.Join(dir, cfg.Instance+".yaml")
		if err := WriteInstanceConfig(path, cfg); err != nil {
			return nil, nil, nil, nil, err
		}
		cfgs = append(cfgs, instanceFile{path: path, cfg: cfg})
		specs[i] = instances.Spec{Name: cfg.Instance, Binary: r.opts.Binary, Config: path, Args: r.opts.InstanceArgs}
	}
	if g, err = instances.StartGroup(ctx, specs); err != nil {
		return nil, nil, nil, nil, err
	}
	*cleanups = append(*cleanups, func() { g.Stop(5 * time.Second) })
	for _, in := range g {
		names = append(names, in.Name())
	}
	return g, g.URLs(), names, cfgs, nil
}

// instanceFile is a sample API instance's configuration and its file.
type instanceFile struct {
	path string
	cfg  sampleapi.Config
}

// instanceClock steps an instance's clock: it rewrites the instance's
// configuration with the clock offset moved and restarts it (stopped
// gracefully, so requests in flight are answered), the least a running
// sample API has to offer for it.
type instanceClock struct {
	in   *instances.Instance
	path string
	mu   sync.Mutex
	cfg  sampleapi.Config
}

// StepClock implements faults.ClockStepper.
func (c *instanceClock) StepClock(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg := c.cfg
	cfg.ClockOffset += d
	if err := WriteInstanceConfig(c.path, cfg); err != nil {
		return err
	}
	if err := c.in.Stop(time.Second); err != nil {
		return fmt.Errorf("step the clock of %s: %w", c.in.Name(), err)
	}
	if err := c.in.Restart(ctx); err != nil {
		return fmt.Errorf("step the clock of %s: %w", c.in.Name(), err)
	}
	c.cfg = cfg
	return nil
}

// fire runs the traffic, streaming every result into the history file,
// its first phase beginning at begin when that is not nil.
//
// probeURL, when set, is the Redis the limiter uses, watched by a store
// probe throughout the traffic: its stalls beyond the store timeout
// outside the declared faults become Outcome.Stalls.
func (r *Runner) fire(ctx context.Context, sc *scenarios.Scenario, path string, urls, names []string, env faults.Env, monitorURL, probeURL string, begin *startPoint, out *Outcome) error {
	start := time.Now()
	if begin != nil {
		var err error
		if start, err = r.wait(ctx, sc, begin, out); err != nil {
			return err
		}
		out.AgreedStart = begin.rec
	}
	wall := r.opts.Clock.Wall(start)
	hdr := history.NewHeader(wall)
	hdr.Scenario = sc.Name
	hdr.Target = strings.Join(urls, " ")
	hdr.Instances = names
	hdr.Policies = r.headerPolicies(sc)
	out.IdentitiesFresh = identitiesFresh(sc, r.opts.RunID != "", out.Redis.Provider)
	if r.opts.Target != nil {
		out.IdentitiesFresh = r.opts.Target.IdentitiesFresh
	}
	hdr.RunID, hdr.IdentitiesFresh = string(out.RunID), &out.IdentitiesFresh
	hdr.Shard = out.Shard
	hdr.ClockResolutionNs = out.ClockResolution.Nanoseconds()
	var dates *dateClock
	if out.ClockSource != "" {
		offsetNs := out.ClockOffset.Nanoseconds()
		hdr.ClockOffsetNs = &offsetNs
		hdr.ClockUncertaintyNs = out.ClockUncertainty.Nanoseconds()
		hdr.ClockSource = out.ClockSource
	} else {
		// Unknown when the header is written: the header says so (no
		// offset), and run.json gets what the Date headers tell.
		dates = newDateClock(start, wall)
	}
	w, err := history.Create(path, hdr)
	if err != nil {
		return err
	}
	var counters progress.Counters
	display := progress.Start(r.opts.Progress, sc.Name, PlannedRequests(sc, out.Shard), r.opts.Interactive, 0, &counters)
	var probe *storeprobe.Probe
	if probeURL != "" {
		if probe, err = storeprobe.Start(ctx, probeURL, start, sc.Target.StoreTimeout, 0); err != nil {
			display.Stop(err)
			_ = w.Close()
			return err
		}
	}
	var sampler *connSampler
	if r.sampleConnections(sc, out) {
		harness := monitorConns
		if probe != nil {
			harness++ // the probe's one connection
		}
		sampler = startConnSampler(ctx, monitorURL, start, sc.Target.Instances, sampleapi.DefaultRedisPoolSize(), harness)
	}
	schedule := faults.Start(ctx, start, sc.Faults, env)
	var writeErr error
	stats, runErr := traffic.Run(ctx, traffic.Config{
		Scenario:      sc,
		BaseURLs:      urls,
		InstanceNames: names,
		ClockOffset:   r.opts.Clock.Process(out.offset),
		RunID:         out.RunID,
		Shard:         out.Shard,
		OnResult: func(res *traffic.Result) {
			counters.SetPhase(res.Phase)
			if dates != nil && res.Status != 0 {
				dates.observe(res.Instance, res.Header, res.Sent, res.Received)
			}
			rec := res.Record(start)
			counters.Add(rec.Outcome) // the outcome the checker counts
			if err := w.Write(&rec); err != nil && writeErr == nil {
				writeErr = err
			}
		},
	})
	if dates != nil {
		if off, unc, ok := dates.estimate(); ok {
			out.offset, out.ClockSource = off, history.ClockHTTPDate
			out.ClockOffset, out.ClockUncertainty = r.opts.Clock.Record(off, unc)
			r.logf("%s: the target's clock is %v ± %v ahead of this host's, from its Date headers", sc.Name, off, unc)
		} else {
			out.ClockSource = runrecord.ClockUnknown
			r.logf("%s: the target's clock offset is unknown (no usable Date header, no redis.url, no target.clock): window checks use offset-free bounds", sc.Name)
		}
	}
	for i, w := range schedule.Stop() {
		out.Faults = append(out.Faults, classify(w, sc.Faults[i], sc.Target.StoreTimeout, sc.Redis.ReplicaClock))
	}
	if probe != nil {
		stalls, probes := probe.Stop()
		out.Stalls = storeprobe.Outside(stalls, out.Faults)
		if len(out.Stalls) > 0 {
			r.logf("%s: the store stalled beyond the store timeout %v outside the declared faults: %s in %d probes", sc.Name, sc.Target.StoreTimeout, checker.Count(len(out.Stalls), "stalls"), probes)
		}
	}
	if sampler != nil {
		out.Connections = sampler.Stop()
	}
	cause := context.Cause(ctx) // nil unless the run was cut short
	if cause == nil {
		cause = runErr
	}
	display.Stop(cause)
	out.Start, out.began, out.Duration, out.Stats = wall, start, time.Since(start), stats
	if ctx.Err() != nil {
		// The history of a run cut short says so, so that a check of it
		// alone says its verdict covers part of the run.
		_ = w.Interrupt(context.Cause(ctx).Error())
	}
	if err := errors.Join(runErr, writeErr, w.Close()); err != nil {
		return fmt.Errorf("fire traffic: %w", err)
	}
	return nil
}

// clockResolution is the step of the limiter's clock under sc: a peer's
// own, an external target's as the scenario declares it, and otherwise
// (the sample API, an external target that declares none) 1 µs.
func clockResolution(sc *scenarios.Scenario) time.Duration {
	if sc.Target.Peer != "" {
		if res := peers.ClockResolution(sc.Target.Peer); res > 0 {
			return res
		}
	}
	if sc.Target.ClockResolution > 0 {
		return sc.Target.ClockResolution
	}
	return history.DefaultClockResolution
}

// claimed is the policy the checks hold route rt to.
func (r *Runner) claimed(rt scenarios.Route) []limiter.Limit {
	if claim, ok := r.opts.Claims[rt.Path]; ok {
		return claim
	}
	return rt.Policies
}

// identityPrefix keeps this run's keys apart from an earlier run's on a
// Redis that outlives runs (external); a Redis the run started is empty.
func (r *Runner) identityPrefix(out *Outcome, start time.Time) string {
	if out.Redis.Provider != string(scenarios.ProviderExternal) {
		return ""
	}
	return fmt.Sprintf("r%x-", start.Unix())
}

// identitiesFresh reports whether every identity of sc begins the run
// unknown to the limiter: generated for this run (not sent again with a
// given run id, as --run-id does), or any identity on a target and store
// this run started (redisProvider is the provider of the run's Redis).
func identitiesFresh(sc *scenarios.Scenario, runIDGiven bool, redisProvider string) bool {
	return (sc.Identities.Fresh() && !runIDGiven) ||
		(len(sc.Target.External) == 0 && redisProvider != string(scenarios.ProviderExternal))
}
