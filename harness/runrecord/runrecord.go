// Package runrecord defines run.json, the record of what a run did beside
// summary.json's verdicts (its software, machine, Redis, instances, load
// delivered, latency distributions and fault windows), so that a report can
// be rendered again from a run directory alone.
package runrecord

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Schema is RunRecord.Schema for this version.
const Schema = "rlbench-run/v1"

// RunRecord is run.json: what a run did, beside summary.json's verdicts, so
// that `rlbench report DIR` can render the report again from the files alone.
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
	// ClockOffset is the limiter's clock minus the harness's, ± ClockUncertainty.
	ClockOffset      time.Duration `json:"clock_offset_ns"`
	ClockUncertainty time.Duration `json:"clock_uncertainty_ns"`
	// Routes lists the scenario's routes with their limits (limiter.Limit.Spec form).
	Routes []RouteRecord `json:"routes"`
	// Phases is what the generator planned and delivered, phase by phase.
	Phases []PhaseRecord `json:"phases"`
	// Dropped counts results missing from the history.
	Dropped int `json:"dropped"`
	// Latency holds per route the latency distributions, as HDR histogram
	// snapshots in microseconds.
	Latency map[string]LatencyRecord `json:"latency"`
	// Faults are the fault windows of the run, in ns since Start.
	Faults []FaultWindow `json:"faults,omitempty"`
	// Drill is what the checks held the faults to, so that `rlbench check`
	// can re-check the history alone; nil for a scenario without faults.
	Drill *Drill `json:"drill,omitempty"`
	// Error is set when the scenario could not run.
	Error string `json:"error,omitempty"`
}

// Drill is a drill's declared behaviour and the windows its checks used.
type Drill struct {
	Mode      string        `json:"failure_mode"`
	Instances int           `json:"instances"`
	Timeout   time.Duration `json:"store_timeout_ns"`
	Slack     time.Duration `json:"slack_ns"`
	Recovery  time.Duration `json:"recovery_ns"`
	Windows   []DrillWindow `json:"windows"`
}

// DrillWindow is a fault window as the checks treat it.
type DrillWindow struct {
	Kind        string `json:"kind"`
	FromNs      int64  `json:"from_ns"`
	ToNs        int64  `json:"to_ns"`
	Unavailable bool   `json:"store_unavailable"`
	LosesState  bool   `json:"loses_state"`
	Instance    string `json:"instance,omitempty"`
}

// RouteRecord is a route of a scenario.
type RouteRecord struct {
	Path     string   `json:"path"`
	Cost     int64    `json:"cost"`
	Limits   []string `json:"limits"`
	Baseline bool     `json:"baseline,omitempty"`
}

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
	Probe        *ProbeRecord  `json:"probe,omitempty"`
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
}

// ProbeRecord is a Retry-After probe's result.
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

// FaultWindow is a fault injected during a run: what, on which target, and
// when, in ns since the scenario's start (ToNs 0: never healed).
type FaultWindow struct {
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"`
	FromNs int64  `json:"from_ns"`
	ToNs   int64  `json:"to_ns"`
	// Err is what went wrong injecting or healing the fault, if anything.
	Err string `json:"error,omitempty"`
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
