package checker

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// shardClock is how one shard of a test run saw time: it started Late
// after the run's start (on the limiter's clock), its wall clock ran Ahead
// of the limiter's, and it recorded its offset to the limiter's clock
// with Uncertainty, wrong by Error (the limiter's clock minus the shard's,
// as recorded, less the true one).
type shardClock struct {
	Late, Ahead, Uncertainty, Error time.Duration
}

// shardEdit changes shard s's header and run record before they are written.
type shardEdit func(s int, h *history.Header, rec *runrecord.ScenarioRecord)

// shardedRun writes the history recs (times since epoch on the limiter's
// clock) as the run directories of len(clocks) shards under root, request i
// going to shard owner(i), each with its history written by a
// history.Writer and its run.json, edited by edits, and returns the
// directories.
func shardedRun(t *testing.T, root string, policies []string, recs []history.Record, clocks []shardClock, owner func(i int) int, edits ...shardEdit) []string {
	t.Helper()
	n := len(clocks)
	per := make([][]history.Record, n)
	for i, r := range recs {
		s := owner(i)
		late := int64(clocks[s].Late)
		r.ID = 0 // the shard's writer numbers its own
		r.IntendedNs, r.SentNs, r.ReceivedNs = r.IntendedNs-late, r.SentNs-late, r.ReceivedNs-late
		if r.Phase == "" {
			r.Phase = "steady"
		}
		per[s] = append(per[s], r)
	}
	var dirs []string
	for s, c := range clocks {
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", s))
		if err := os.MkdirAll(filepath.Join(dir, "sharded"), 0o755); err != nil {
			t.Fatal(err)
		}
		start := epoch.Add(c.Late + c.Ahead)
		offset := -c.Ahead + c.Error
		h := history.NewHeader(start)
		h.Scenario, h.RunID, h.ClockSource = "sharded", "5eed0001", history.ClockRedisTime
		h.Policies = []history.RoutePolicy{{Route: "", Limits: policies}}
		h.Instances = []string{fmt.Sprintf("api-%d", s)}
		h.Shard = &history.Shard{Index: s, Count: n}
		off := offset.Nanoseconds()
		h.ClockOffsetNs, h.ClockUncertaintyNs = &off, c.Uncertainty.Nanoseconds()
		rel := filepath.Join("sharded", "history.jsonl.gz")
		rec := runrecord.ScenarioRecord{
			Name: "sharded", Start: start, Duration: 2 * time.Second, History: rel, RunID: h.RunID,
			Redis: runrecord.RedisInfo{Provider: "external"}, Instances: h.Instances,
			ClockOffset: offset, ClockUncertainty: c.Uncertainty, ClockSource: history.ClockRedisTime, Shard: h.Shard,
			Checks: &runrecord.CheckSettings{LoadDelivered: 0.95, LagTolerance: 10 * time.Millisecond, MaxLatency: time.Second},
			Phases: []runrecord.PhaseRecord{{Name: "steady", Kind: runrecord.PhaseConstant, Planned: len(per[s]), Sent: len(per[s]), OnTime: len(per[s])}},
		}
		for _, edit := range edits {
			edit(s, &h, &rec)
		}
		w, err := history.Create(filepath.Join(dir, rel), h)
		if err != nil {
			t.Fatal(err)
		}
		for i := range per[s] {
			if err := w.Write(&per[s][i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		meta := runrecord.Meta{Hostname: fmt.Sprintf("host-%d", s), Start: start, CPUs: 2,
			Generator: &runrecord.GeneratorCeiling{Rate: 40_000 + float64(s), P50: 20 * time.Microsecond, P99: 90 * time.Microsecond}}
		run := runrecord.RunRecord{Schema: runrecord.Schema, Meta: meta, Scenarios: []runrecord.ScenarioRecord{rec}}
		if err := run.WriteFile(filepath.Join(dir, "run.json")); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// checkShardDirs loads the shards of dirs and checks their one scenario.
func checkShardDirs(t *testing.T, dirs []string, opts ShardOptions) (*ShardedReport, error) {
	t.Helper()
	scs, err := LoadShards(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 1 || scs[0].Name != "sharded" || len(scs[0].Shards) != len(dirs) {
		t.Fatalf("LoadShards = %+v, want scenario sharded in %d shards", scs, len(dirs))
	}
	return CheckShards(scs[0].Shards, opts)
}

// historyResults are a report's checks of the history: those not scoped to
// a shard.
func historyResults(rs []Result) []Result {
	return slices.DeleteFunc(slices.Clone(rs), func(r Result) bool { return strings.HasPrefix(r.Scope, "shard ") })
}

// skewed are three shards of a run whose hosts started at different times
// with clocks set differently, each offset measured exactly.
var skewed = []shardClock{
	{Late: 0, Ahead: 0},
	{Late: 3 * time.Millisecond, Ahead: 40 * time.Millisecond},
	{Late: -2 * time.Millisecond, Ahead: -15 * time.Second},
}

// A history split into three shards on hosts with skewed clocks, each
// offset recorded exactly, merges back to the verdicts of the whole
// history: a reference limiter's history that passes and the same with one
// rejection at a saturated moment turned into an admission, which fails.
func TestShardsVerdictsAsWhole(t *testing.T) {
	for _, spec := range []string{
		"gcra:10/1s,burst=5",
		"token_bucket:7/1s,burst=3",
		"fixed_window:5/500ms",
		"sliding_window_log:4/300ms",
		"sliding_window_counter:6/400ms",
		"gcra:20/1s,burst=10 + fixed_window:8/1s",
	} {
		limits := parseLimits(t, spec)
		for _, failing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/failing=%v", spec, failing), func(t *testing.T) {
				jitter := 2 * time.Millisecond
				policies := strings.Split(spec, " + ")
				checkWhole := func(g *generated) *Report {
					src := g.h.source()
					src.h.Policies = []history.RoutePolicy{{Limits: policies}}
					rep, err := Check(src, Policy{})
					if err != nil {
						t.Fatal(err)
					}
					return rep
				}
				g := generate(t, 1, limits, 300, jitter)
				whole := checkWhole(g)
				if whole.Verdict() != Pass {
					t.Fatalf("the reference's history is %s", whole.Verdict())
				}
				budgetFails := func(rep *Report) bool {
					return slices.ContainsFunc(rep.Results, func(r Result) bool { return r.Name == CheckBudget && r.Verdict == Fail })
				}
				if failing {
					// The first rejection whose admission the whole
					// history's check proves an excess.
					for i, dec := range g.decisions {
						r := &g.h.recs[i]
						if dec.Allowed {
							continue
						}
						r.Outcome, r.Status = adm, 200
						if whole = checkWhole(g); budgetFails(whole) {
							break
						}
						r.Outcome, r.Status = rej, 429
					}
					if !budgetFails(whole) {
						t.Fatal("no rejection to flip into a proven excess")
					}
				}
				rng := rand.New(rand.NewPCG(uint64(len(spec)), 3))
				owners := make([]int, len(g.h.recs))
				for i := range owners {
					owners[i] = rng.IntN(len(skewed))
				}
				dirs := shardedRun(t, t.TempDir(), policies, g.h.recs, skewed, func(i int) int { return owners[i] })
				rep, err := checkShardDirs(t, dirs, ShardOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if diffs := CompareResults(historyResults(rep.Results), whole.Results); len(diffs) > 0 {
					t.Errorf("the merged shards' verdicts differ from the whole history's:\n  %s", strings.Join(diffs, "\n  "))
				}
				if rep.Records != len(g.h.recs) || rep.Keys != whole.Keys || rep.Admitted != whole.Admitted || rep.Rejected != whole.Rejected {
					t.Errorf("counts = %+v, want %+v", rep.Counts, whole.Counts)
				}
			})
		}
	}
}

// A shard whose recorded clock offset is wrong by more than its recorded
// uncertainty can make a limiter that kept its promise fail the budget: its
// requests are placed where they did not happen. The same error within the
// uncertainty cannot, since each request's interval is widened by it.
// Two shards share one key at exactly the limit: shard 0 just before a
// window's end or a GCRA slot, shard 1 just after.
func TestShardsOffsetError(t *testing.T) {
	const u = time.Millisecond
	// fixedWindow: 10 admitted by shard 0 in the last 10 ms of the window
	// [0, 1 s), 10 by shard 1 from 300 µs into the next, each answered
	// 100 µs either side of its decision.
	fixedWindow := func() []history.Record {
		var recs []history.Record
		for i := range 10 {
			d := 990*time.Millisecond + time.Duration(i)*time.Millisecond
			recs = append(recs, history.Record{Key: "k", IntendedNs: int64(d - 100*time.Microsecond), SentNs: int64(d - 100*time.Microsecond), ReceivedNs: int64(d + 100*time.Microsecond), Status: 200, Outcome: adm})
		}
		for i := range 10 {
			d := 1000300*time.Microsecond + time.Duration(i)*time.Millisecond
			recs = append(recs, history.Record{Key: "k", IntendedNs: int64(d - 100*time.Microsecond), SentNs: int64(d - 100*time.Microsecond), ReceivedNs: int64(d + 100*time.Microsecond), Status: 200, Outcome: adm})
		}
		return recs
	}
	// gcra: one admission every 100 ms, the emission interval of
	// 10/1s with a burst of 1, alternating between the shards.
	gcra := func() []history.Record {
		var recs []history.Record
		for i := range 20 {
			d := time.Duration(i) * 100 * time.Millisecond
			recs = append(recs, history.Record{Key: "k", IntendedNs: int64(d - 100*time.Microsecond), SentNs: int64(d - 100*time.Microsecond), ReceivedNs: int64(d + 100*time.Microsecond), Status: 200, Outcome: adm})
		}
		return recs
	}
	tests := []struct {
		name   string
		policy string
		recs   func() []history.Record
		owner  func(i int) int
		err    time.Duration // shard 1's offset error: its requests placed this much later
		want   Verdict
	}{
		{"window exact", "fixed_window:10/1s", fixedWindow, func(i int) int { return i / 10 }, 0, Pass},
		{"window early within", "fixed_window:10/1s", fixedWindow, func(i int) int { return i / 10 }, -u, Pass},
		{"window late within", "fixed_window:10/1s", fixedWindow, func(i int) int { return i / 10 }, u, Pass},
		{"window early beyond", "fixed_window:10/1s", fixedWindow, func(i int) int { return i / 10 }, -5 * u, Fail},
		{"gcra exact", "gcra:10/1s,burst=1", gcra, func(i int) int { return i % 2 }, 0, Pass},
		{"gcra early within", "gcra:10/1s,burst=1", gcra, func(i int) int { return i % 2 }, -u, Pass},
		{"gcra late within", "gcra:10/1s,burst=1", gcra, func(i int) int { return i % 2 }, u, Pass},
		{"gcra early beyond", "gcra:10/1s,burst=1", gcra, func(i int) int { return i % 2 }, -5 * u, Fail},
		{"gcra late beyond", "gcra:10/1s,burst=1", gcra, func(i int) int { return i % 2 }, 5 * u, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clocks := []shardClock{
				{Uncertainty: u},
				{Late: 7 * time.Millisecond, Ahead: 3 * time.Second, Uncertainty: u, Error: tt.err},
			}
			dirs := shardedRun(t, t.TempDir(), []string{tt.policy}, tt.recs(), clocks, tt.owner)
			rep, err := checkShardDirs(t, dirs, ShardOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res := result(t, rep.Report, CheckBudget); res.Verdict != tt.want {
				t.Errorf("budget = %s, want %s: %s", res.Verdict, tt.want, res.Explanation)
			}
			if res := result(t, rep.Report, CheckFalseRejections); res.Verdict != Pass {
				t.Errorf("false rejections = %s: %s", res.Verdict, res.Explanation)
			}
			// Windows on the limiter's clock: the note says how the merge
			// placed them, not the merged header's offset of 0 ± 0.
			notes := strings.Join(rep.Notes, "\n")
			if windows := strings.HasPrefix(tt.policy, "fixed_window"); windows != strings.Contains(notes, "the merged history is on the limiter's clock") || strings.Contains(notes, "limiter clock offset 0s ± 0s") {
				t.Errorf("clock notes:\n%s", notes)
			}
		})
	}
}

// steadyTraffic is a passing history of 60 requests over 600 ms on three
// keys, against gcra:100/1s,burst=10.
func steadyTraffic() []history.Record {
	var recs []history.Record
	for i := range 60 {
		d := time.Duration(i) * 10 * time.Millisecond
		recs = append(recs, history.Record{Key: fmt.Sprintf("k%d", i%3), IntendedNs: int64(d), SentNs: int64(d), ReceivedNs: int64(d + time.Millisecond), Status: 200, Outcome: adm})
	}
	return recs
}

// The checks on the run itself judge each shard on its own records and
// run.json entry, one result per shard; the report notes each shard's
// calibration, and the merged history written as it is checked is the
// history checked.
func TestShardsRunChecks(t *testing.T) {
	recs := steadyTraffic()
	recs[40].ReceivedNs += int64(2 * time.Second) // slow: max-latency fails on its shard
	dirs := shardedRun(t, t.TempDir(), []string{"gcra:100/1s,burst=10"}, recs, skewed, func(i int) int { return i % 3 },
		func(s int, h *history.Header, rec *runrecord.ScenarioRecord) {
			if s == 2 { // the generator of shard 2 fell behind: 20 sent of 40 planned
				rec.Phases[0].Planned = 40
			}
			// The Retry-After probe ran on shard 0 alone.
			probe := runrecord.PhaseRecord{Name: "probe", Kind: runrecord.PhaseRetryAfterProbe}
			if s == 0 {
				probe.Planned, probe.Probe = 3, &runrecord.ProbeRecord{Rejected: true, Retried: true, Admitted: true, Wait: time.Second}
			}
			rec.Phases = append(rec.Phases, probe)
		})
	var merged bytes.Buffer
	rep, err := checkShardDirs(t, dirs, ShardOptions{History: &merged})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name, scope string
		verdict     Verdict
		status      Status
	}
	var got []row
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Scope, "shard ") {
			got = append(got, row{r.Name, r.Scope, r.Verdict, r.Status()})
		}
	}
	want := []row{
		{CheckLoadDelivered, "shard 0/3", Pass, StatusPass},
		{CheckHistoryComplete, "shard 0/3", Pass, StatusPass},
		{CheckMaxLatency, "shard 0/3", Pass, StatusPass},
		{CheckProbe, "shard 0/3 probe", Pass, StatusPass},
		{CheckLoadDelivered, "shard 1/3", Pass, StatusPass},
		{CheckHistoryComplete, "shard 1/3", Pass, StatusPass},
		{CheckMaxLatency, "shard 1/3", Fail, StatusFail},
		{CheckLoadDelivered, "shard 2/3", Fail, StatusError},
		{CheckHistoryComplete, "shard 2/3", Pass, StatusPass},
		{CheckMaxLatency, "shard 2/3", Unknown, StatusError}, // invalid: its generator fell behind
	}
	if !slices.Equal(got, want) {
		t.Errorf("per-shard results:\n got %v\nwant %v", got, want)
	}
	// Request 40 is shard 1's 14th (40 = 3·13 + 1): merged id 13·3 + 1 + 1.
	lat := rep.Results[slices.IndexFunc(rep.Results, func(r Result) bool { return r.Name == CheckMaxLatency && r.Scope == "shard 1/3" })]
	if lat.Proof == nil || !slices.Equal(lat.Proof.RequestIDs, []uint64{41}) {
		t.Errorf("max-latency proof = %+v, want request 41 of the merged history", lat.Proof)
	}
	// Shard 1 started 3 ms after the run on the limiter's clock, whose
	// merged start is shard 2's, 2 ms before the run.
	if want := int64(400*time.Millisecond + 2*time.Millisecond); lat.Proof.FromNs != want {
		t.Errorf("max-latency proof from %d ns, want %d (the merged clock)", lat.Proof.FromNs, want)
	}
	for _, r := range historyResults(rep.Results) {
		if r.Verdict != Pass {
			t.Errorf("%s (%s) = %s: %s", r.Name, r.Scope, r.Verdict, r.Explanation)
		}
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{
		"shard 0/3 on host-0: 20 records, limiter clock offset 0s ± 0s (Redis TIME), placed at +2ms",
		"shard 1/3 on host-1: 20 records, limiter clock offset -40ms ± 0s (Redis TIME), placed at +5ms",
		"shard 2/3 on host-2: 20 records, limiter clock offset 15s ± 0s (Redis TIME), placed at +0s",
		"load generator ceiling 40002 req/s (p50 20µs, p99 90µs)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if got, want := len(rep.Record.Shards), 3; got != want || rep.Record.Shards[1].Records != 20 || rep.Record.Shards[2].Generator.Rate != 40_002 {
		t.Errorf("merged record's shards = %+v", rep.Record.Shards)
	}
	if p := rep.Record.Phases[0]; p.Planned != 80 || p.Sent != 60 || p.OnTime != 60 {
		t.Errorf("merged phase = %+v, want 80 planned, 60 sent on time", p)
	}

	// The history written is the merged history: checked alone, it gives
	// the same verdicts of the history.
	r, err := history.NewReader(&merged, "merged")
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); !h.Start.Equal(rep.Header.Start) || *h.ClockOffsetNs != 0 {
		t.Errorf("merged history's header = %+v", h)
	}
	again, err := Check(r, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if diffs := CompareResults(again.Results, historyResults(rep.Results)); len(diffs) > 0 {
		t.Errorf("the merged history written checks otherwise:\n  %s", strings.Join(diffs, "\n  "))
	}
	if again.Records != 60 {
		t.Errorf("the merged history written holds %d records, want 60", again.Records)
	}
}

// CheckShards refuses shards that are not of one run, naming the file or
// shard at fault; a partial set is checked when allowed and says so.
func TestShardsErrors(t *testing.T) {
	recs := steadyTraffic()
	three := func(i int) int { return i % 3 }
	tests := []struct {
		name   string
		edit   shardEdit
		drop   int // a shard directory left out; -1 for none
		allow  bool
		want   string
		target error
	}{
		{"missing", nil, 1, false, "shard 1/3 is missing", history.ErrShards},
		{"other run", func(s int, h *history.Header, rec *runrecord.ScenarioRecord) {
			if s == 2 {
				h.RunID = "0badc0de"
			}
		}, -1, false, "is of run 5eed0001 and", history.ErrShards},
		{"offset unknown", func(s int, h *history.Header, rec *runrecord.ScenarioRecord) {
			if s == 1 {
				h.ClockOffsetNs, rec.ClockSource = nil, runrecord.ClockUnknown
			}
		}, -1, false, "shard-1/sharded/history.jsonl.gz (shard 1/3) has no clock offset", history.ErrShards},
		{"could not run", func(s int, h *history.Header, rec *runrecord.ScenarioRecord) {
			if s == 0 {
				rec.Error = "redis-server: not found"
			}
		}, -1, false, "shard-0: scenario sharded could not run: redis-server: not found", nil},
		{"record names another shard", func(s int, h *history.Header, rec *runrecord.ScenarioRecord) {
			if s == 0 {
				rec.Shard = &history.Shard{Index: 2, Count: 3}
			}
		}, -1, false, "history.jsonl.gz is shard 0/3, its run record says 2/3", nil},
		{"not a shard", func(s int, h *history.Header, rec *runrecord.ScenarioRecord) {
			h.Shard, rec.Shard = nil, nil
		}, -1, false, "names no shard in its header", history.ErrShards},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var edits []shardEdit
			if tt.edit != nil {
				edits = append(edits, tt.edit)
			}
			dirs := shardedRun(t, t.TempDir(), []string{"gcra:100/1s,burst=10"}, recs, skewed, three, edits...)
			if tt.drop >= 0 {
				dirs = slices.Delete(dirs, tt.drop, tt.drop+1)
			}
			_, err := checkShardDirs(t, dirs, ShardOptions{AllowMissing: tt.allow})
			if err == nil || !strings.Contains(err.Error(), tt.want) || tt.target != nil && !errors.Is(err, tt.target) {
				t.Fatalf("CheckShards = %v, want an error containing %q", err, tt.want)
			}
		})
	}

	t.Run("missing allowed", func(t *testing.T) {
		dirs := shardedRun(t, t.TempDir(), []string{"gcra:100/1s,burst=10"}, recs, skewed, three)
		rep, err := checkShardDirs(t, []string{dirs[0], dirs[2]}, ShardOptions{AllowMissing: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Missing, []history.Shard{{Index: 1, Count: 3}}) || rep.Records != 40 {
			t.Errorf("Missing = %v, %d records, want shard 1/3 missing and 40 records", rep.Missing, rep.Records)
		}
		if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "a partial set of shards: 1/3 missing, so the verdicts cover 2 of 3 shards only") {
			t.Errorf("notes do not say the set is partial:\n%s", notes)
		}
	})

	t.Run("offset from run.json", func(t *testing.T) {
		// Measured from Date headers during the traffic, the offset
		// reaches run.json only.
		dirs := shardedRun(t, t.TempDir(), []string{"gcra:100/1s,burst=10"}, recs, skewed, three,
			func(s int, h *history.Header, rec *runrecord.ScenarioRecord) {
				h.ClockOffsetNs, h.ClockSource, rec.ClockSource = nil, "", history.ClockHTTPDate
			})
		rep, err := checkShardDirs(t, dirs, ShardOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Header.ClockSource != history.ClockHTTPDate || rep.Verdict() != Pass {
			t.Errorf("clock source %q, verdict %s; want http_date, pass", rep.Header.ClockSource, rep.Verdict())
		}
	})

	if _, err := LoadShards([]string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "has no run.json") {
		t.Errorf("LoadShards of a directory without run.json = %v", err)
	}
}

// TestShardNotesAgreedStart: a shard's note says when its first phase was
// to begin, how the start was agreed and how late the shard began.
func TestShardNotesAgreedStart(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 500_000_000, time.UTC)
	notes := shardNotes([]runrecord.ShardRecord{
		{Shard: history.Shard{Index: 0, Count: 2}, Records: 5, ClockSource: history.ClockRedisTime,
			AgreedStart: &runrecord.AgreedStart{By: runrecord.StartBarrier, At: at, Clock: runrecord.StartClockLimiter, Barrier: "rlbench:{0a1b2c3d}:barrier:orders", Late: 3 * time.Millisecond}},
		{Shard: history.Shard{Index: 1, Count: 2}, Records: 5, ClockSource: history.ClockRedisTime,
			AgreedStart: &runrecord.AgreedStart{By: runrecord.StartAt, At: at, Clock: runrecord.StartClockLimiter, Late: 1234567}},
	}, nil, nil)
	for i, want := range []string{
		"; began 3ms after the start 2025-06-01T12:00:00.5Z on the limiter's clock, agreed at barrier rlbench:{0a1b2c3d}:barrier:orders",
		"; began 1.235ms after the start 2025-06-01T12:00:00.5Z on the limiter's clock, given by --start-at",
	} {
		if !strings.HasSuffix(notes[i], want) {
			t.Errorf("note %d = %q, want it to end %q", i, notes[i], want)
		}
	}
}
