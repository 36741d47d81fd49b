package runrecord

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/harness/history"
)

// ShardRecord is one shard of a run merged from the shards of a sharded
// run (`rlbench check SHARD_DIR...`): where its run directory was, how its
// clock was placed on the limiter's, and what its machine's load generator
// sustains. A merged scenario's record lists its shards in order of index.
type ShardRecord struct {
	Shard history.Shard `json:"shard"`
	// Dir is the shard's run directory, and History its history relative
	// to Dir.
	Dir     string `json:"dir"`
	History string `json:"history"`
	// Hostname is the machine the shard ran on (its run.json's meta).
	Hostname string `json:"hostname,omitempty"`
	// Start is the shard's own start, on its own clock.
	Start time.Time `json:"start"`
	// ClockOffset ± ClockUncertainty is the limiter's clock minus the
	// shard's, from ClockSource.
	ClockOffset      time.Duration `json:"clock_offset_ns"`
	ClockUncertainty time.Duration `json:"clock_uncertainty_ns"`
	ClockSource      string        `json:"clock_source,omitempty"`
	// Shift is what was added to each of the shard's times to place it on
	// the merged run's clock (Start plus ClockOffset, less the merged
	// run's start); each request's interval was also widened by
	// ClockUncertainty on either side.
	Shift time.Duration `json:"shift_ns"`
	// Records counts the shard's requests.
	Records int `json:"records"`
	// Generator is the shard's load generator ceiling; nil when not measured.
	Generator *GeneratorCeiling `json:"generator,omitempty"`
	// AgreedStart is the start the shard's first phase waited for, and how
	// late it began (its record's); nil when it began at once.
	AgreedStart *AgreedStart `json:"agreed_start,omitempty"`
}

// ClockShards is ScenarioRecord.ClockSource of a run merged from shards
// whose clock offsets came from different sources: its times are on the
// limiter's clock, each shard placed by its own offset (Shards).
const ClockShards = "shards"

// MergeShards returns the record of the run merged from the shards' records
// recs, which shards describe one for one (their Shift and
// ClockUncertainty above all), the merged run starting at start on the
// limiter's clock. The merged record is what the checks of the merged run
// and its report read: the first shard's scenario, routes, check settings
// and failure mode; the instances of every shard; the phases' figures
// summed (rates too, lag p99 the largest, an upper bound of the merged
// one); latency histograms merged; the dropped results summed; the faults
// moved onto the merged clock, and the drill's windows widened by their
// shard's uncertainty: outward where a request may have met the fault, inward
// where the fault was surely in effect, so that the fault checks stay
// sound. Its clock offset is 0 ± 0 (the limiter's own clock), from the
// shards' clock source, ClockShards when they differ. Key scans and
// connection samples stay with each shard's own record. History is left
// empty for the caller.
//
// Errors: no record, records of different scenarios, or phases that differ
// in name or kind.
func MergeShards(start time.Time, recs []*ScenarioRecord, shards []ShardRecord) (ScenarioRecord, error) {
	if len(recs) == 0 || len(recs) != len(shards) {
		return ScenarioRecord{}, fmt.Errorf("merge shard records: %d records for %d shards", len(recs), len(shards))
	}
	first := recs[0]
	out := ScenarioRecord{
		Name: first.Name, Description: first.Description, Source: first.Source, Seed: first.Seed,
		Start: start.UTC(), Redis: first.Redis, RunID: first.RunID, ClockSource: first.ClockSource,
		FailureMode: first.FailureMode, Routes: first.Routes, Checks: first.Checks,
		Shards: slices.Clone(shards),
	}
	fresh := true
	for i, rec := range recs {
		sh := shards[i]
		if rec.Name != first.Name {
			return ScenarioRecord{}, fmt.Errorf("merge shard records: shard %s is of scenario %q, shard %s of %q", shards[0].Shard, first.Name, sh.Shard, rec.Name)
		}
		out.Duration = max(out.Duration, sh.Shift+rec.Duration)
		for _, inst := range rec.Instances {
			if !slices.Contains(out.Instances, inst) {
				out.Instances = append(out.Instances, inst)
			}
		}
		if rec.ClockSource != out.ClockSource {
			out.ClockSource = ClockShards
		}
		switch {
		case rec.IdentitiesFresh == nil:
			if out.IdentitiesFresh == nil || *out.IdentitiesFresh {
				out.IdentitiesFresh = nil
			}
			fresh = false
		case !*rec.IdentitiesFresh:
			f := false
			out.IdentitiesFresh, fresh = &f, false
		}
		out.Dropped += rec.Dropped
		phases, err := mergePhases(out.Phases, rec.Phases, i == 0)
		if err != nil {
			return ScenarioRecord{}, fmt.Errorf("merge shard records: shard %s: %w", sh.Shard, err)
		}
		out.Phases = phases
		if out.Latency, err = mergeLatency(out.Latency, rec.Latency); err != nil {
			return ScenarioRecord{}, fmt.Errorf("merge shard records: shard %s: %w", sh.Shard, err)
		}
		for _, w := range rec.Faults {
			out.Faults = append(out.Faults, shiftWindow(w, int64(sh.Shift)))
		}
		if d := rec.Drill; d != nil {
			if out.Drill == nil {
				out.Drill = &Drill{Mode: d.Mode, Instances: d.Instances, Timeout: d.Timeout, Slack: d.Slack, Recovery: d.Recovery}
			}
			for _, w := range d.Windows {
				out.Drill.Windows = append(out.Drill.Windows, widenWindow(w, int64(sh.Shift), int64(sh.ClockUncertainty)))
			}
		}
	}
	if fresh {
		t := true
		out.IdentitiesFresh = &t
	}
	if out.ClockSource == "" {
		out.ClockSource = ClockShards
	}
	return out, nil
}

// MergeMeta is the meta of a run merged from shards whose run.json metas
// are metas: the first shard's software, every shard's host (joined by ",
// "), their CPUs summed, from the earliest start to the latest end. The
// load generator's ceiling is each shard's own (ShardRecord.Generator).
func MergeMeta(metas []Meta) Meta {
	if len(metas) == 0 {
		return Meta{}
	}
	out := metas[0]
	out.Generator = nil
	end := out.Start.Add(out.Duration)
	var hosts []string
	out.CPUs = 0
	for _, m := range metas {
		if m.Start.Before(out.Start) {
			out.Start = m.Start
		}
		if e := m.Start.Add(m.Duration); e.After(end) {
			end = e
		}
		if m.Hostname != "" && !slices.Contains(hosts, m.Hostname) {
			hosts = append(hosts, m.Hostname)
		}
		out.CPUs += m.CPUs
	}
	out.Duration = end.Sub(out.Start)
	out.Hostname = strings.Join(hosts, ", ")
	return out
}

// mergePhases adds b's figures to a's, phase by phase; first says a is
// empty and b the first shard's.
func mergePhases(a, b []PhaseRecord, first bool) ([]PhaseRecord, error) {
	if first {
		out := make([]PhaseRecord, len(b))
		for i, p := range b {
			out[i] = p
			out[i].Status = nil
			out[i].Bursts = slices.Clone(p.Bursts)
			addStatus(&out[i], p.Status)
		}
		return out, nil
	}
	if len(a) != len(b) {
		return nil, fmt.Errorf("%d phases, where the first shard has %d: the shards of one run run one scenario", len(b), len(a))
	}
	for i := range a {
		p, q := &a[i], &b[i]
		if p.Name != q.Name || p.Kind != q.Kind {
			return nil, fmt.Errorf("phase %d is %s (%s), where the first shard's is %s (%s)", i+1, q.Name, q.Kind, p.Name, p.Kind)
		}
		p.Planned += q.Planned
		p.Sent += q.Sent
		p.OnTime += q.OnTime
		p.Withheld += q.Withheld
		p.PlannedRate += q.PlannedRate
		p.AchievedRate += q.AchievedRate
		p.LagP99 = max(p.LagP99, q.LagP99)
		if want := p.Planned - p.Withheld; want > 0 {
			p.Delivered = float64(p.OnTime) / float64(want)
		}
		addStatus(p, q.Status)
		p.AchievedSpread = max(p.AchievedSpread, q.AchievedSpread)
		p.Bursts = append(p.Bursts, q.Bursts...)
		if q.Probe != nil && (p.Probe == nil || !q.Probe.Admitted) {
			p.Probe = q.Probe // a probe that failed anywhere shows
		}
	}
	return a, nil
}

func addStatus(p *PhaseRecord, status map[int]int) {
	if len(status) == 0 {
		return
	}
	if p.Status == nil {
		p.Status = make(map[int]int, len(status))
	}
	for code, n := range status {
		p.Status[code] += n
	}
}

// mergeLatency merges the histograms of b into a's, route by route.
func mergeLatency(a, b map[string]LatencyRecord) (map[string]LatencyRecord, error) {
	if len(b) == 0 {
		return a, nil
	}
	if a == nil {
		a = make(map[string]LatencyRecord, len(b))
	}
	for route, l := range b {
		m := a[route]
		var err1, err2 error
		m.FromSent, err1 = mergeSnapshot(m.FromSent, l.FromSent)
		m.FromIntended, err2 = mergeSnapshot(m.FromIntended, l.FromIntended)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("latency of %s: %w", route, err)
		}
		a[route] = m
	}
	return a, nil
}

func mergeSnapshot(a, b *hdrhistogram.Snapshot) (*hdrhistogram.Snapshot, error) {
	switch {
	case b == nil:
		return a, nil
	case a == nil:
		return b, nil
	}
	h := hdrhistogram.Import(a)
	if dropped := h.Merge(hdrhistogram.Import(b)); dropped > 0 {
		return nil, fmt.Errorf("%d values outside the histogram's range", dropped)
	}
	return h.Export(), nil
}

// shiftWindow moves a fault as it happened onto the merged clock: every
// time it records, 0 (never) staying 0.
func shiftWindow(w FaultWindow, shift int64) FaultWindow {
	at := func(ns int64) int64 {
		if ns == 0 {
			return 0
		}
		return ns + shift
	}
	w.FromNs, w.ToNs, w.InjectedNs, w.HealNs = at(w.FromNs), at(w.ToNs), at(w.InjectedNs), at(w.HealNs)
	for _, c := range []*CommandRun{w.Inject, w.Heal} {
		if c != nil {
			cc := *c
			cc.StartNs = at(cc.StartNs)
			if c == w.Inject {
				w.Inject = &cc
			} else {
				w.Heal = &cc
			}
		}
	}
	return w
}

// widenWindow moves a drill's fault window onto the merged clock for the
// checks, its shard's clock uncertainty u taken either way: FromNs and
// ToNs, the interval in which a request may have met the fault, widen by
// u; the part in which it was surely in effect (InEffect) narrows by u,
// and when nothing is left of it, becomes an interval no request fits in.
func widenWindow(w FaultWindow, shift, u int64) FaultWindow {
	from, to := w.InEffect()
	out := shiftWindow(w, shift)
	out.Inject, out.Heal = nil, nil
	out.FromNs -= u
	if out.ToNs != 0 {
		out.ToNs += u
	}
	out.InjectedNs = from + shift + u
	if to != 0 {
		out.HealNs = max(to+shift-u, 1)
		if out.InjectedNs > out.HealNs {
			out.InjectedNs = out.HealNs + 1 // sent after it, received before it: none
		}
	}
	return out
}
