package checker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// ShardRun is one shard of a sharded run as its run directory (the --out of
// `rlbench run --shard I/N`) holds it.
type ShardRun struct {
	// Dir is the shard's run directory.
	Dir string
	// Record is the scenario's entry of Dir/run.json.
	Record *runrecord.ScenarioRecord
	// Meta is Dir/run.json's meta: the shard's machine and its load
	// generator's ceiling.
	Meta runrecord.Meta
}

// ShardedScenario is one scenario of a sharded run with its shards' runs of
// it, in the order of the directories that hold them.
type ShardedScenario struct {
	Name   string
	Shards []ShardRun
}

// LoadShards reads run.json in each of dirs, the run directories of the
// shards of one run, and returns their scenarios, each with its shards'
// runs, in the order the scenarios first appear. Errors: a directory
// without a run.json or with a malformed one, naming it.
func LoadShards(dirs []string) ([]ShardedScenario, error) {
	var out []ShardedScenario
	for _, dir := range dirs {
		path := filepath.Join(dir, "run.json")
		f, err := os.Open(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s has no run.json: give the run directories of the shards (the --out of rlbench run --shard I/N)", dir)
			}
			return nil, fmt.Errorf("open run record: %w", err)
		}
		rec, err := runrecord.Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for i := range rec.Scenarios {
			sc := &rec.Scenarios[i]
			k := len(out)
			for j := range out {
				if out[j].Name == sc.Name {
					k = j
				}
			}
			if k == len(out) {
				out = append(out, ShardedScenario{Name: sc.Name})
			}
			out[k].Shards = append(out[k].Shards, ShardRun{Dir: dir, Record: sc, Meta: rec.Meta})
		}
	}
	return out, nil
}

// ShardOptions are how CheckShards checks a set of shards. The zero value
// checks a complete set and writes nothing.
type ShardOptions struct {
	// AllowMissing checks a partial set of shards: the verdicts then cover
	// the shards present only, and a note names the missing ones.
	AllowMissing bool
	// History, when set, receives the merged history as it is checked,
	// written by a history.Writer (gzip compressed), for the run directory
	// of the merged run.
	History io.Writer
	// KeyScan, when set, is a scan of the Redis every shard shared, made
	// after the last shard finished (rlbench run --local-shards, whose
	// parent started that Redis): the merged record keeps it and key-ttl
	// judges it once, for the whole run. A shard's own scan stays with its
	// record and is judged on its row.
	KeyScan *runrecord.KeyScan
}

// ShardedReport is the check of one scenario of a sharded run.
type ShardedReport struct {
	// Report holds the checks of the merged history and each shard's
	// checks on its run, and, in its notes, each shard's calibration.
	*Report
	// Record is the merged run's entry for its run.json
	// (runrecord.MergeShards); History is left to the caller.
	Record runrecord.ScenarioRecord
	// Header is the merged history's header.
	Header history.Header
	// Missing lists the shards absent from a partial set.
	Missing []history.Shard
}

// CheckShards checks the shards' runs of one scenario as one run.
//
// The shards' histories are merged onto the limiter's clock
// (history.NewMerge: each request's interval shifted by its shard's start
// and clock offset, and widened by its uncertainty), and the checks of the
// history (status, budget, false rejections, Retry-After, RateLimit
// fields, header style, the boundary-burst ratio, and the fault checks of
// a drill, its windows moved and widened likewise by
// runrecord.MergeShards) run on the merged history, under the scenario's
// settings as the first shard recorded them. The checks on the run itself
// (load-delivered, history-complete, max-latency, latency-overhead,
// retry-after-probe, fault-injected, key-ttl, redis-connections) judge each
// shard's own requests and run.json entry, as CheckRun does for a whole
// run (a Retry-After probe that another shard ran has no verdict on
// this one's): each appears once per shard, its scope led by the shard ("shard
// 1/3"), its proof on the merged clock and ids. Each shard's calibration,
// its clock offset with its uncertainty and source, where the merge placed
// it and its load generator's ceiling, is a note of the report and a
// runrecord.ShardRecord of the merged record.
//
// The merged verdicts are proofs whenever every shard's true clock offset
// lies within its recorded uncertainty (see the package documentation,
// "Sharded runs").
//
// Errors: a shard that could not run, a history missing or malformed,
// shards that are not of one run (wrapping history.ErrShards, a missing
// shard as a *history.MissingShardsError unless opts.AllowMissing), and
// Check's.
func CheckShards(shards []ShardRun, opts ShardOptions) (*ShardedReport, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%w: no shard to check", history.ErrShards)
	}
	inputs := make([]history.ShardSource, len(shards))
	readers := make([]*history.Reader, len(shards))
	for i, sh := range shards {
		rec := sh.Record
		if rec.Error != "" {
			return nil, fmt.Errorf("%s: scenario %s could not run: %s", sh.Dir, rec.Name, rec.Error)
		}
		if rec.History == "" {
			return nil, fmt.Errorf("%s: the run record of scenario %s names no history", sh.Dir, rec.Name)
		}
		path := filepath.Join(sh.Dir, rec.History)
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open history: %w", err)
		}
		defer f.Close()
		r, err := history.NewReader(f, path)
		if err != nil {
			return nil, fmt.Errorf("read history: %w", err)
		}
		h := r.Header()
		if h.Scenario != "" && h.Scenario != rec.Name {
			return nil, fmt.Errorf("%s is of scenario %q, its run record of %q", path, h.Scenario, rec.Name)
		}
		if h.Shard != nil && rec.Shard != nil && *h.Shard != *rec.Shard {
			return nil, fmt.Errorf("%s is shard %s, its run record says %s", path, h.Shard, rec.Shard)
		}
		if rec.ClockKnown() {
			// As CheckRun: run.json's offset, measured to the end of the
			// traffic, over the header's.
			off := rec.ClockOffset.Nanoseconds()
			h.ClockOffsetNs, h.ClockUncertaintyNs = &off, rec.ClockUncertainty.Nanoseconds()
			if rec.ClockSource != "" {
				h.ClockSource = rec.ClockSource
			}
		}
		inputs[i] = history.ShardSource{Name: path, Source: withHeader{r, h}}
		readers[i] = r
	}
	merge, err := history.NewMerge(inputs, history.MergeConfig{AllowMissing: opts.AllowMissing})
	if err != nil {
		return nil, err
	}
	placed := merge.Shards() // in order of shard index
	recs := make([]*runrecord.ScenarioRecord, len(placed))
	calib := make([]runrecord.ShardRecord, len(placed))
	for k, p := range placed {
		sh := shards[p.Input]
		recs[k] = sh.Record
		calib[k] = runrecord.ShardRecord{
			Shard: p.Shard, Dir: sh.Dir, History: sh.Record.History, Hostname: sh.Meta.Hostname, Start: p.Header.Start.UTC(),
			ClockOffset: time.Duration(*p.Header.ClockOffsetNs), ClockUncertainty: time.Duration(p.UncertaintyNs), ClockSource: p.Header.ClockSource,
			Shift: time.Duration(p.ShiftNs), Generator: sh.Meta.Generator, AgreedStart: sh.Record.AgreedStart,
			ClockDrill: sh.Meta.ClockDrill,
		}
	}
	hdr := merge.Header()
	merged, err := runrecord.MergeShards(hdr.Start, recs, calib)
	if err != nil {
		return nil, err
	}
	var src history.Source = merge
	var w *history.Writer
	if opts.History != nil {
		if w, err = history.NewWriter(opts.History, hdr); err != nil {
			return nil, err
		}
		defer w.Close()
		src = teed{src, w}
	}
	// The checks on each shard's run see its own records, on the merged
	// clock and ids (as the merged history and the report drawn from it
	// have them) but not widened: latencies and lags as the shard measured
	// them.
	timings := make([]*timings, len(placed))
	byIndex := make(map[int]int, len(placed))
	for k, p := range placed {
		timings[k] = newTimings(recs[k])
		byIndex[p.Shard.Index] = k
	}
	src = observed{src, func(r *history.Record) {
		k := byIndex[r.Shard.Index]
		u := placed[k].UncertaintyNs
		r.SentNs, r.ReceivedNs = r.SentNs+u, r.ReceivedNs-u
		timings[k].add(r)
		r.SentNs, r.ReceivedNs = r.SentNs-u, r.ReceivedNs+u
	}}
	zero := time.Duration(0)
	src, p := fromRecord(src, &merged, Policy{ClockOffset: &zero})
	rep, err := Check(src, p)
	if err != nil {
		return nil, err
	}
	if w != nil {
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("write the merged history: %w", err)
		}
	}
	placed = merge.Shards()
	probeKeys := map[string]struct{}{}
	checked := len(rep.Results) // the merged history's checks
	var gaps []string
	dups := false
	for k, pl := range placed {
		merged.Shards[k].Records = pl.Records
		t := timings[k]
		t.cut, t.file = readers[pl.Input].Truncated(), readers[pl.Input].Name()
		for _, res := range t.results(recs[k]) {
			res.Scope = strings.TrimSpace("shard " + pl.Shard.String() + " " + res.Scope)
			if pr := res.Proof; pr != nil && res.Name == CheckConnections {
				// Redis was sampled on the shard's clock.
				pr.FromNs, pr.ToNs = pr.FromNs+pl.ShiftNs, pr.ToNs+pl.ShiftNs
			}
			rep.Results = append(rep.Results, res)
		}
		for key := range t.probeKeys {
			probeKeys[key] = struct{}{}
		}
		if t.gap != "" {
			gaps = append(gaps, "shard "+pl.Shard.String()+": "+t.gap)
			dups = dups || t.ids.dups > 0
		}
	}
	if len(gaps) > 0 {
		unproven(rep.Results[:checked], strings.Join(gaps, "; "), dups)
	}
	rep.withoutProbeKeys(len(probeKeys))
	if opts.KeyScan != nil {
		merged.KeyScan = opts.KeyScan
		rep.Results = append(rep.Results, keyTTL(opts.KeyScan))
	}
	classify(rep.Results)
	for i, n := range rep.Notes {
		if strings.HasPrefix(n, "limiter clock offset ") { // clockNotes' note on the merged header's 0 ± 0
			rep.Notes[i] = "the merged history is on the limiter's clock, each shard's requests placed by its own clock offset and widened by its uncertainty (see the shards' notes): window checks place the limiter's windows on it"
		}
	}
	out := &ShardedReport{Report: rep, Record: merged, Header: hdr}
	for _, m := range merge.Missing() {
		out.Missing = append(out.Missing, history.Shard{Index: m, Count: placed[0].Shard.Count})
	}
	rep.Notes = append(rep.Notes, shardNotes(merged.Shards, out.Missing, readers)...)
	return out, nil
}

// teed is a history.Source that writes every record it reads to w.
type teed struct {
	history.Source
	w *history.Writer
}

func (t teed) Read(r *history.Record) error {
	if err := t.Source.Read(r); err != nil {
		return err
	}
	// Write assigns an id to a record without one; the merge gives each
	// its own, so the record is written as read.
	return t.w.Write(r)
}

// shardNotes are the report's notes on the shards: each shard's
// calibration and agreed start, the shards a partial set lacks, and the
// histories that ended early.
func shardNotes(shards []runrecord.ShardRecord, missing []history.Shard, readers []*history.Reader) []string {
	var notes []string
	for _, s := range shards {
		source := ""
		switch s.ClockSource {
		case history.ClockRedisTime:
			source = " (Redis TIME)"
		case history.ClockHTTPDate:
			source = " (the target's Date headers)"
		case history.ClockDeclared:
			source = " (declared)"
		case history.ClockLocal:
			source = " (this host's clock)"
		}
		host := ""
		if s.Hostname != "" {
			host = " on " + s.Hostname
		}
		gen := "load generator ceiling not measured"
		if g := s.Generator; g != nil {
			gen = fmt.Sprintf("load generator ceiling %.0f req/s (p50 %v, p99 %v)", g.Rate, g.P50, g.P99)
		}
		start := ""
		if a := s.AgreedStart; a != nil {
			how := "given by --start-at"
			if a.By == runrecord.StartBarrier {
				how = "agreed at barrier " + a.Barrier
			}
			clock := "the limiter's clock"
			if a.Clock != runrecord.StartClockLimiter {
				clock = "its host's clock"
			}
			start = fmt.Sprintf("; began %v after the start %s on %s, %s", a.Late.Round(time.Microsecond), a.At.UTC().Format(time.RFC3339Nano), clock, how)
		}
		drill := ""
		if d := s.ClockDrill; d != nil {
			var told []string
			if d.Skew != 0 {
				told = append(told, fmt.Sprintf("its wall clock read %v ahead (a sound offset absorbs it)", d.Skew))
			}
			if d.Misreport != 0 {
				told = append(told, fmt.Sprintf("its recorded offset misreported by %v, outside what its uncertainty covers when larger than it: a failure of this run may be false", d.Misreport))
			}
			if d.UncertaintyFloor != 0 {
				told = append(told, fmt.Sprintf("its uncertainty raised to at least %v", d.UncertaintyFloor))
			}
			if len(told) > 0 {
				drill = "; clock drill: " + strings.Join(told, ", ")
			}
		}
		notes = append(notes, fmt.Sprintf("shard %s%s: %s, limiter clock offset %v ± %v%s, placed at +%v on the merged clock, each request widened by ± %v; %s%s%s",
			s.Shard, host, Count(s.Records, "records"), s.ClockOffset, s.ClockUncertainty, source, s.Shift, s.ClockUncertainty, gen, start, drill))
	}
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = m.String()
		}
		notes = append(notes, fmt.Sprintf("a partial set of shards: %s missing, so the verdicts cover %d of %s only", strings.Join(names, ", "), len(shards), Count(missing[0].Count, "shards")))
	}
	for _, r := range readers {
		if err := r.Truncated(); err != nil {
			notes = append(notes, fmt.Sprintf("%v; the verdict covers the records before it only (an interrupted shard?)", err))
		}
	}
	return notes
}
