// Package runrecord defines run.json, the record of what a run did beside
// summary.json's verdicts: its software, machine, Redis and instances, and
// everything the checks read besides the histories, so that both the report
// and every verdict can be computed again from a run directory alone
// (`rlbench report DIR`, `rlbench check DIR`).
//
// The harness records; it does not judge. Per scenario run.json holds the
// facts the checker (package checker, CheckRun) turns into verdicts: the
// fault windows as they happened and the drill's declared behaviour, the
// clock offset, the failure mode, the phases' planned and delivered
// figures with the Retry-After probes' outcomes, the bounds the scenario set
// for the checks on the run itself (CheckSettings: load delivered, latency,
// overhead), and the scans of Redis for keys left without a TTL. Latency
// distributions are kept as HDR snapshots for the report; the checks read
// each request's times from the history instead.
//
// The types here are shared by the recorder and the checker: FaultWindow is
// the one fault-window type (the fault schedule writes it, the checker
// reads it), Drill the one description of a drill, FailureMode the one
// failure-mode type (package scenarios aliases it).
package runrecord

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/harness/history"
)

// Schema is RunRecord.Schema for this version.
const Schema = "rlbench-run/v1"

// RunRecord is run.json: what a run did, beside summary.json's verdicts, so
// that `rlbench report DIR` can render the report again and `rlbench check
// DIR` compute every verdict again from the files alone.
// Schema rlbench-run/v1; times are RFC 3339, durations in nanoseconds,
// latencies in microseconds. Fields are never removed or retyped within v1.
type RunRecord struct {
	Schema    string           `json:"schema"`
	Meta      Meta             `json:"meta"`
	Scenarios []ScenarioRecord `json:"scenarios"`
}

// Meta describes the run's software and machine.
type Meta struct {
	Version   string        `json:"rlbench_version"`
	Commit    string        `json:"rlbench_commit"`
	GoVersion string        `json:"go_version"`
	OS        string        `json:"os"`
	Arch      string        `json:"arch"`
	CPUs      int           `json:"cpus"`
	Hostname  string        `json:"hostname"`
	Start     time.Time     `json:"start"`
	Duration  time.Duration `json:"duration_ns"`
	// Generator is the load generator's own ceiling on this machine,
	// measured against a no-op loopback handler before the scenarios ran.
	Generator *GeneratorCeiling `json:"generator,omitempty"`
	// ClockDrill, when set, says the run told a fiction about its clock,
	// for a drill or a test of merged shards on one machine; nil for a
	// run that read and recorded its clock as it is.
	ClockDrill *ClockDrill `json:"clock_drill,omitempty"`
}

// ClockDrill is the fiction a run told about its wall clock (rlbench run
// --clock-skew, --clock-misreport, --clock-uncertainty-floor).
type ClockDrill struct {
	// Skew: the run read its wall clock Skew ahead (the histories' start,
	// the offset measurement, the wait for an agreed start); a sound
	// offset measurement absorbs it.
	Skew time.Duration `json:"skew_ns,omitempty"`
	// Misreport was added to every recorded clock offset without widening
	// its uncertainty: the recorded offsets are wrong by it.
	Misreport time.Duration `json:"misreport_ns,omitempty"`
	// UncertaintyFloor: every recorded clock uncertainty is at least it.
	UncertaintyFloor time.Duration `json:"uncertainty_floor_ns,omitempty"`
}

// GeneratorCeiling is what the load generator sustains against a handler
// that does nothing: scenario rates near it measure the generator, not the
// target.
type GeneratorCeiling struct {
	Rate float64       `json:"rate_per_s"`
	P50  time.Duration `json:"p50_ns"`
	P99  time.Duration `json:"p99_ns"`
}

// NewMeta returns the metadata of a run of the given build started at start.
func NewMeta(version, commit string, start time.Time) Meta {
	host, _ := os.Hostname()
	return Meta{Version: version, Commit: commit, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Hostname: host, Start: start.UTC()}
}

// ScenarioRecord is one scenario's run.
type ScenarioRecord struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Source      string        `json:"source"`
	Seed        int64         `json:"seed"`
	Start       time.Time     `json:"start"`
	Duration    time.Duration `json:"duration_ns"`
	Redis       RedisInfo     `json:"redis"`
	Instances   []string      `json:"instances"`
	// History is the recorded requests, relative to the run directory.
	History string `json:"history"`
	// RunID names the identities the run sent (key-<run_id>-0007), and
	// IdentitiesFresh says whether each began the run unknown to the
	// limiter; false when they are the same in every run (fixed names,
	// keys from a file) against a limiter that outlives runs.
	RunID           string `json:"run_id,omitempty"`
	IdentitiesFresh *bool  `json:"identities_fresh,omitempty"`
	// ClockOffset is the limiter's clock minus the harness's, ± ClockUncertainty.
	ClockOffset      time.Duration `json:"clock_offset_ns"`
	ClockUncertainty time.Duration `json:"clock_uncertainty_ns"`
	// Shard, in a sharded run, is the shard this record's history holds
	// (the history header's shard); nil for a whole run.
	Shard *history.Shard `json:"shard,omitempty"`
	// AgreedStart is the start the scenario's first phase waited for, and
	// how late it began; nil when it began as soon as it was set up.
	AgreedStart *AgreedStart `json:"agreed_start,omitempty"`
	// Shards, in the record of a run merged from the shards of a sharded
	// run (MergeShards), are its shards in order of index: where each
	// was, how its clock was placed on the limiter's, its load generator's
	// ceiling. History is then the merged history. Nil otherwise.
	Shards []ShardRecord `json:"shards,omitempty"`
	// ClockSource says where ClockOffset came from: "redis_time",
	// "http_date", "declared" (the history header's clock_source values),
	// ClockShards for a merged run whose shards' sources differ,
	// or ClockUnknown when nothing could measure it (ClockOffset is then 0
	// and means nothing). Empty in a record written before it was
	// recorded; see ClockKnown.
	ClockSource string `json:"clock_source,omitempty"`
	// FailureMode is what the target declared it does when its store fails;
	// empty for a target that declares nothing (an external API without
	// target.failure_mode). A fail-closed target's 503s are expected
	// statuses.
	FailureMode FailureMode `json:"failure_mode,omitempty"`
	// Routes lists the scenario's routes with their limits (limiter.Limit.Spec form).
	Routes []RouteRecord `json:"routes"`
	// Phases is what the generator planned and delivered, phase by phase.
	Phases []PhaseRecord `json:"phases"`
	// Dropped counts results missing from the history.
	Dropped int `json:"dropped"`
	// Checks are the bounds of the checks on the run itself; nil in a
	// record written before they were recorded, whose re-check then has
	// only the history's checks and the fault checks.
	Checks *CheckSettings `json:"checks,omitempty"`
	// Latency holds per route the latency distributions, as HDR histogram
	// snapshots in microseconds.
	Latency map[string]LatencyRecord `json:"latency"`
	// Faults are the scenario's faults in its order, as they happened.
	Faults []FaultWindow `json:"faults,omitempty"`
	// Drill is what the checks hold the faults to, so that `rlbench check`
	// can re-check the history alone; nil for a scenario without faults.
	Drill *Drill `json:"drill,omitempty"`
	// KeyScan is a scan of the run's Redis for keys without a TTL after the
	// traffic; nil when the run did not scan (the key-ttl check then does
	// not run).
	KeyScan *KeyScan `json:"key_scan,omitempty"`
	// Connections samples the client connections Redis saw during the
	// run; nil when none were sampled (the redis-connections check then
	// does not run).
	Connections *Connections `json:"connections,omitempty"`
	// Error is set when the scenario could not run.
	Error string `json:"error,omitempty"`
}

// AgreedStart is a start that a scenario's first phase waited for: given to
// every shard of a run, or agreed by the shards at a barrier.
type AgreedStart struct {
	// By says how the start was agreed: StartAt or StartBarrier.
	By string `json:"by"`
	// At is the start, on Clock.
	At time.Time `json:"at"`
	// Clock is the clock At is on: StartClockLimiter, mapped onto this
	// host's through the measured offset (ClockOffset), or StartClockHost.
	Clock string `json:"clock"`
	// Barrier is the barrier's Redis key, for a start agreed at one.
	Barrier string `json:"barrier,omitempty"`
	// Late is how long after At the first phase began, on this host's
	// clock, and Tolerance how late it could have: a later start fails
	// the scenario instead of running it.
	Late      time.Duration `json:"late_ns"`
	Tolerance time.Duration `json:"tolerance_ns"`
}

// How a start was agreed (AgreedStart.By) and the clock it is on
// (AgreedStart.Clock).
const (
	// StartAt: the same start time was given to every shard.
	StartAt = "start_at"
	// StartBarrier: the shards met at a barrier in the run's Redis, and
	// the last to arrive fixed the start as Redis TIME plus a lead.
	StartBarrier = "barrier"
	// StartClockLimiter: the limiter's clock (Redis TIME, or the offset
	// the scenario declares).
	StartClockLimiter = "limiter"
	// StartClockHost: this host's clock.
	StartClockHost = "host"
)

// ClockUnknown is ScenarioRecord.ClockSource for a limiter's clock whose
// offset nothing measured: an external target without a Redis to read TIME
// from, without Date headers and without a declared offset.
const ClockUnknown = "unknown"

// ClockKnown reports whether ClockOffset holds a measured or declared
// offset. A record without ClockSource predates it: the runner then
// measured the offset on Redis TIME whenever the run had a Redis, and
// recorded an unmeasured 0 otherwise.
func (r *ScenarioRecord) ClockKnown() bool {
	if r.ClockSource == "" {
		return r.Redis.Provider != ""
	}
	return r.ClockSource != ClockUnknown
}

// FailureMode is what a limiter declares it does when its store fails: the
// scenario's target.failure_mode, the drill's declared behaviour.
type FailureMode string

// Failure modes.
const (
	// FailOpen admits requests while the store is unavailable.
	FailOpen FailureMode = "open"
	// FailClosed rejects them with 503 and a Retry-After.
	FailClosed FailureMode = "closed"
	// FailFallback decides on a local in-memory limiter holding each
	// instance's share of the budget.
	FailFallback FailureMode = "fallback"
)

// Drill is a drill's declared behaviour and the fault windows its checks
// use. The zero Mode declares no failure mode (no failure-mode check).
type Drill struct {
	Mode FailureMode `json:"failure_mode"`
	// Instances is the number of instances sharing the budget; a fallback
	// holds each to its 1/Instances share.
	Instances int `json:"instances"`
	// Timeout is the store timeout and Slack what a request may take beyond
	// it during a fault (network, queueing, the generator's own delays).
	Timeout time.Duration `json:"store_timeout_ns"`
	Slack   time.Duration `json:"slack_ns"`
	// Recovery is how long after a fault's end the shared budget must hold
	// again: requests within it are judged by the fault checks only.
	Recovery time.Duration `json:"recovery_ns"`
	// Windows are the faults that took effect (FromNs above 0), followed
	// by the store stalls the harness observed outside them (Observed).
	Windows []FaultWindow `json:"windows"`
}

// FaultWindow is a fault of a run: what the scenario scheduled (Kind,
// Target, At, Duration), when it took effect and was healed (FromNs, ToNs,
// in ns since the scenario's start; FromNs 0: never injected, ToNs 0: never
// healed, lasting to the end of the history), and what it means for the
// checks (Unavailable, LosesState, Instance).
type FaultWindow struct {
	// Kind names the fault ("redis_kill", "redis_pause", ...; the
	// scenario's fault kinds) and Target the instance it acted on, if any.
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"`
	// At and Duration are the schedule: injected At after the traffic
	// started, healed Duration after it took effect.
	At       time.Duration `json:"at_ns,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	// FromNs is when the injection was sent (stamped before acting, so a
	// request cut off while the fault took hold falls inside the window)
	// and ToNs when the heal returned.
	FromNs int64 `json:"from_ns"`
	ToNs   int64 `json:"to_ns"`
	// InjectedNs is when the injection returned and HealNs when the heal
	// was sent: between them the fault was surely in effect, so the
	// declared failure mode must decide every request answered then. Zero
	// in records written before they were recorded (FromNs and ToNs then
	// stand in; see InEffect). For a redis_failover HealNs is the last
	// moment the Sentinel still named the old master: the store was
	// unavailable until then, whatever the heal did later.
	InjectedNs int64 `json:"injected_ns,omitempty"`
	HealNs     int64 `json:"heal_ns,omitempty"`
	// Err is what went wrong injecting or healing the fault, if anything;
	// for a command fault it quotes the failing command's output.
	Err string `json:"error,omitempty"`
	// Inject and Heal are a command fault's commands as they ran (nil for
	// rlbench's own faults, and Heal for a command fault without one), and
	// Log the file, relative to the run directory, that holds their output.
	Inject *CommandRun `json:"inject,omitempty"`
	Heal   *CommandRun `json:"heal,omitempty"`
	Log    string      `json:"log,omitempty"`
	// Unavailable says the limiter's store could not answer in time during
	// the fault (it was dead, paused, cut off or slower than the timeout),
	// so the declared failure mode must decide every request.
	Unavailable bool `json:"store_unavailable"`
	// LosesState says the store came back empty (a restarted Redis): the
	// budget is checked separately before and after.
	LosesState bool `json:"loses_state"`
	// PartialState, with LosesState, says the store came back with part of
	// its state rather than empty (a promoted replica, which lacks the
	// writes not yet replicated): what it lost may be admitted again, as
	// after a restart, and what it kept may reject beyond a fresh key's
	// budget until it refilled.
	PartialState bool `json:"partial_state,omitempty"`
	// StepNs, when not 0, is a step of a clock by that many ns (negative:
	// backwards) at some instant between FromNs and ToNs: the limiter's
	// clock (Redis TIME) for a fault on Redis, the instance's own clock
	// when Instance is set.
	StepNs int64 `json:"clock_step_ns,omitempty"`
	// Instance, when set, limits the fault to the requests sent to that
	// instance (a killed instance); the others are checked as usual.
	Instance string `json:"instance,omitempty"`
	// Observed says the window was not declared but seen: the harness's
	// store probe found the store answering no faster than the store
	// timeout from FromNs to ToNs, outside every declared fault (Kind
	// KindStoreStall, Unavailable set, no schedule). The checks excuse the
	// requests it overlaps as they do a declared fault's, but hold no
	// request in it to the failure mode or the fault latency: not every
	// request in a stall met it.
	Observed bool `json:"observed,omitempty"`
}

// KindStoreStall is the Kind of an observed window: the store stalled
// beyond the store timeout outside the declared faults (a starved Redis on
// a loaded host).
const KindStoreStall = "store_stall"

// InEffect returns the part of the window in which the fault was surely in
// effect, in ns since the scenario's start: from InjectedNs to HealNs, or
// FromNs and ToNs where those are missing. to is 0 when the fault was never
// healed (it lasted to the end of the history).
func (w FaultWindow) InEffect() (from, to int64) {
	from, to = w.FromNs, w.ToNs
	if w.InjectedNs > 0 {
		from = w.InjectedNs
	}
	if w.HealNs > 0 {
		to = w.HealNs
	}
	return from, to
}

// CommandRun is one run of a command fault's inject or heal command: the
// command as the scenario gives it (run with `sh -c` in Dir), when it was
// started in ns since the scenario's start, how long it took, how it ended
// and what it printed (at most MaxCommandOutput bytes of each stream, the
// rest cut, with Truncated set).
type CommandRun struct {
	Command  string        `json:"command"`
	Dir      string        `json:"dir"`
	StartNs  int64         `json:"start_ns"`
	Duration time.Duration `json:"duration_ns"`
	// ExitCode is the command's exit status; -1 when it did not exit by
	// itself (killed at its timeout or when the run was cancelled) or
	// could not be started.
	ExitCode int `json:"exit_code"`
	// TimedOut says the command outlived its timeout and its process group
	// was killed.
	TimedOut bool `json:"timed_out,omitempty"`
	// Err says why the command failed when the exit code alone does not:
	// it could not start, it timed out, the run was cancelled.
	Err       string `json:"error,omitempty"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Failed reports whether the command did not end with exit status 0.
func (c *CommandRun) Failed() bool { return c.ExitCode != 0 || c.Err != "" }

// MaxCommandOutput is the most bytes of each output stream a CommandRun
// keeps.
const MaxCommandOutput = 64 << 10

// CheckSettings are the bounds a scenario set for the checks on the run
// itself rather than on the limiter's decisions.
type CheckSettings struct {
	// LoadDelivered is the least fraction of the open-model phases' planned
	// requests that must be sent within LagTolerance of their schedule for
	// latency figures to count.
	LoadDelivered float64       `json:"load_delivered"`
	LagTolerance  time.Duration `json:"lag_tolerance_ns"`
	// MaxLatency, when positive, bounds every request's latency from its
	// intended send time.
	MaxLatency time.Duration `json:"max_latency_ns,omitempty"`
	// Overhead, when set, bounds the latency the limiter adds.
	Overhead *OverheadBounds `json:"overhead,omitempty"`
	// MaxExcess is the scenario's checks.budget.max_excess: the units per
	// key the budget check tolerates above the policy's bound.
	MaxExcess int64 `json:"max_excess,omitempty"`
	// FalseRejectionsMaxRate is the scenario's
	// checks.false_rejections.max_rate: the fraction of a rule's requests
	// that may be false rejections; nil (a record written before it was
	// recorded, or a scenario without the bound) tolerates none.
	FalseRejectionsMaxRate *float64 `json:"false_rejections_max_rate,omitempty"`
	// Headers is the scenario's checks.headers: false leaves out the
	// retry-after, ratelimit-fields and header-style checks; nil (a record
	// written before it was recorded) runs them.
	Headers *bool `json:"headers,omitempty"`
}

// OverheadBounds bound the latency Route adds over Baseline, the same
// handler with the limiter bypassed, at three percentiles; a zero bound is
// not checked. With Versus, another limited route, the Ratio bounds are the
// most Route's overhead may be as a multiple of Versus's at each
// percentile.
type OverheadBounds struct {
	Route     string        `json:"route"`
	Baseline  string        `json:"baseline"`
	P50       time.Duration `json:"p50_ns,omitempty"`
	P99       time.Duration `json:"p99_ns,omitempty"`
	P999      time.Duration `json:"p999_ns,omitempty"`
	Versus    string        `json:"versus,omitempty"`
	RatioP50  float64       `json:"ratio_p50,omitempty"`
	RatioP99  float64       `json:"ratio_p99,omitempty"`
	RatioP999 float64       `json:"ratio_p999,omitempty"`
}

// KeyScan is a scan of every key of the run's Redis for keys that exist
// without an expiry (DESIGN.md: every key written has a TTL in the same
// atomic step).
type KeyScan struct {
	// AtNs is when the scan began, in ns since the scenario's start.
	AtNs int64 `json:"at_ns"`
	// WithoutTTL counts the keys found without a TTL, and Examples holds
	// the first MaxKeyExamples of them in sorted order.
	WithoutTTL int      `json:"without_ttl"`
	Examples   []string `json:"examples,omitempty"`
}

// Connections is what Redis reported of its client connections
// (connected_clients of INFO clients) during a run, sampled every Interval
// over a connection of the harness's own that bypasses any proxy, and what
// the connections may number: each of Instances instances holds at most
// PoolSize connections to Redis, and the harness Monitor of its own (the
// sampler's and the clock offset's).
type Connections struct {
	Interval time.Duration `json:"interval_ns"`
	// Samples are in time order.
	Samples   []ConnectionSample `json:"samples"`
	PoolSize  int                `json:"pool_size"`
	Instances int                `json:"instances"`
	Monitor   int                `json:"monitor"`
	// Err is why sampling stopped early, if it did.
	Err string `json:"error,omitempty"`
}

// ConnectionSample is one reading of connected_clients, AtNs after the
// scenario's start.
type ConnectionSample struct {
	AtNs    int64 `json:"at_ns"`
	Clients int   `json:"clients"`
}

// Bound is the most connections Redis may see: every instance's pool full,
// plus the harness's own.
func (c *Connections) Bound() int { return c.PoolSize*c.Instances + c.Monitor }

// Peak returns the largest sample (the first, on a tie); ok is false when
// there is none.
func (c *Connections) Peak() (peak ConnectionSample, ok bool) {
	for i, s := range c.Samples {
		if i == 0 || s.Clients > peak.Clients {
			peak, ok = s, true
		}
	}
	return peak, ok
}

// MaxKeyExamples is the most keys a KeyScan lists.
const MaxKeyExamples = 10

// RouteRecord is a route of a scenario.
type RouteRecord struct {
	Path     string   `json:"path"`
	Cost     int64    `json:"cost"`
	Limits   []string `json:"limits"`
	Baseline bool     `json:"baseline,omitempty"`
}

// Phase kinds, as PhaseRecord.Kind names them (the scenario's phase kinds).
const (
	PhaseConstant        = "constant"
	PhaseRamp            = "ramp"
	PhaseRetryAfterProbe = "retry_after_probe"
)

// PhaseRecord is one phase's plan and delivery.
type PhaseRecord struct {
	Name         string        `json:"name"`
	Kind         string        `json:"kind"`
	Planned      int           `json:"planned"`
	Sent         int           `json:"sent"`
	OnTime       int           `json:"on_time"`
	Withheld     int           `json:"withheld"`
	Delivered    float64       `json:"delivered"`
	PlannedRate  float64       `json:"planned_rate"`
	AchievedRate float64       `json:"achieved_rate"`
	Status       map[int]int   `json:"status"`
	LagP99       time.Duration `json:"lag_p99_ns"`
	// Probe is a retry_after_probe phase's outcome; nil for other phases
	// (and, in older records, for a probe never rejected).
	Probe *ProbeRecord `json:"probe,omitempty"`
	// Spread is a burst's (or each half of an edge burst's) planned
	// spread; AchievedSpread the widest spread its bursts achieved
	// (BurstRecord.Achieved); Bursts what each burst achieved, in order.
	// All three are absent for phases without bursts.
	Spread         time.Duration `json:"spread_ns,omitempty"`
	AchievedSpread time.Duration `json:"achieved_spread_ns,omitempty"`
	Bursts         []BurstRecord `json:"bursts,omitempty"`
}

// BurstRecord is what one burst achieved: one repetition of a burst phase
// or one half of an edge burst.
type BurstRecord struct {
	// Requests is the number of sends the burst planned; Sent those handed
	// to their connection, Written those written whole.
	Requests int `json:"requests"`
	Sent     int `json:"sent"`
	Written  int `json:"written"`
	// SentSpread is the time from the burst's first send to its last;
	// WrittenSpread from its first request written whole to its last.
	SentSpread    time.Duration `json:"sent_spread_ns"`
	WrittenSpread time.Duration `json:"written_spread_ns"`
	// Achieved is the larger of the two: the burst's achieved spread.
	Achieved time.Duration `json:"achieved_spread_ns"`
	// Late is how long after its first planned send the burst's first
	// request was sent.
	Late time.Duration `json:"late_ns"`
	// MaxIdle is the longest any of its connections was open before its
	// request was written.
	MaxIdle time.Duration `json:"max_idle_ns"`
	// Redialled counts its requests sent again, late, on a new connection
	// because the target had answered or closed theirs before they were
	// written (so it had not read them).
	Redialled int `json:"redialled,omitempty"`
	// Raised reports whether its requests were written by releasers
	// running at a raised priority (on Linux with CAP_SYS_NICE or a
	// sufficient RLIMIT_NICE, for a burst planned within 50 ms); false in
	// records written before it was recorded.
	Raised bool `json:"raised_priority,omitempty"`
}

// OpenModel reports whether the phase sends on a schedule whatever the
// responses do (constant and ramp): the phases whose delivery counts.
func (p *PhaseRecord) OpenModel() bool { return p.Kind == PhaseConstant || p.Kind == PhaseRamp }

// ProbeRecord is a Retry-After probe's result: whether it met a rejection,
// whether that rejection carried a usable Retry-After so the probe waited
// Wait and retried, and whether the retry was admitted.
type ProbeRecord struct {
	Rejected bool          `json:"rejected"`
	Retried  bool          `json:"retried"`
	Admitted bool          `json:"admitted"`
	Wait     time.Duration `json:"wait_ns"`
}

// RedisInfo describes a run's Redis.
type RedisInfo struct {
	Provider string `json:"provider"`
	Addr     string `json:"addr"`
	Version  string `json:"version"`
}

// LatencyRecord is one route's latency from the actual and from the
// intended send time.
type LatencyRecord struct {
	FromSent     *hdrhistogram.Snapshot `json:"from_sent"`
	FromIntended *hdrhistogram.Snapshot `json:"from_intended"`
}

// Write encodes r as indented JSON.
func (r *RunRecord) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write run record: %w", err)
	}
	return nil
}

// Read decodes run.json and checks its schema.
func Read(rd io.Reader) (*RunRecord, error) {
	var r RunRecord
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("read run record: %w", err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("read run record: schema %q is not %q", r.Schema, Schema)
	}
	return &r, nil
}

// WriteFile writes r to the file at path (run.json), replacing it. Errors
// are those of creating and writing the file.
func (r *RunRecord) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write run record: %w", err)
	}
	if err := r.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write run record: %w", err)
	}
	return nil
}
