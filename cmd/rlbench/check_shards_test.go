package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// writeShardDirs lays out, under root, the run directories 0, 1 and 2 of
// the three shards of one run of scenario "cli" (gcra:5/1s,burst=5), as
// `rlbench run --shard I/3` on three hosts leaves them: each shard sends
// eight requests of its own key at 1 ms intervals, admitted[s] of them
// admitted and the rest rejected with an honest Retry-After; shard s
// started s·7 ms after the run and its clock runs s·30 ms ahead of the
// limiter's, which its offset says within 100 µs.
func writeShardDirs(t *testing.T, root string, admitted [3]int) []string {
	t.Helper()
	var dirs []string
	for s := range 3 {
		dir := filepath.Join(root, fmt.Sprint(s))
		if err := os.MkdirAll(filepath.Join(dir, "cli"), 0o755); err != nil {
			t.Fatal(err)
		}
		late, ahead := time.Duration(s)*7*time.Millisecond, time.Duration(s)*30*time.Millisecond
		h := history.NewHeader(checkStart.Add(late + ahead))
		h.Scenario, h.RunID, h.ClockSource = "cli", "c0ffee00", history.ClockRedisTime
		h.Policies = []history.RoutePolicy{{Route: "", Limits: []string{"gcra:5/1s,burst=5"}}}
		h.Shard = &history.Shard{Index: s, Count: 3}
		off := -ahead.Nanoseconds()
		h.ClockOffsetNs, h.ClockUncertaintyNs = &off, 100_000
		rel := filepath.Join("cli", "history.jsonl.gz")
		w, err := history.Create(filepath.Join(dir, rel), h)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			at := int64(i) * int64(time.Millisecond)
			r := &history.Record{Key: fmt.Sprint("key-", s), Instance: "api-0", Route: "/v1/items", IntendedNs: at, SentNs: at, ReceivedNs: at + 2_000_000, Status: 200, Phase: "steady"}
			if i >= admitted[s] {
				r.Status, r.Outcome, r.Headers = 429, history.Rejected, map[string]string{"retry-after": "1"}
			}
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rec := &runrecord.RunRecord{Schema: runrecord.Schema,
			Meta: runrecord.Meta{Hostname: fmt.Sprintf("node-%d", s), Start: h.Start, Generator: &runrecord.GeneratorCeiling{Rate: 30_000, P50: 30 * time.Microsecond, P99: 120 * time.Microsecond}},
			Scenarios: []runrecord.ScenarioRecord{{
				Name: "cli", History: rel, Start: h.Start, RunID: h.RunID, Shard: h.Shard, Redis: runrecord.RedisInfo{Provider: "external"},
				ClockOffset: time.Duration(off), ClockUncertainty: 100 * time.Microsecond, ClockSource: history.ClockRedisTime,
				Checks: &runrecord.CheckSettings{LoadDelivered: 0.98, LagTolerance: 50 * time.Millisecond, MaxLatency: time.Second},
				Phases: []runrecord.PhaseRecord{{Name: "steady", Kind: runrecord.PhaseConstant, Planned: 8, Sent: 8}},
			}}}
		if err := rec.WriteFile(filepath.Join(dir, "run.json")); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// TestCheckShards: `rlbench check SHARD_DIR...` and `rlbench check
// SHARDS_ROOT` check the shards of a run as one run; --out writes the
// merged run, which `rlbench check DIR` checks again from its shards.
func TestCheckShards(t *testing.T) {
	runCheck := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		prev := commands["check"]
		commands["check"] = func() command { return &checkCommand{stdout: &out} }
		defer func() { commands["check"] = prev }()
		code := run(context.Background(), append([]string{"check"}, args...), &errOut)
		return code, out.String(), errOut.String()
	}
	root := filepath.Join(t.TempDir(), "shards")
	dirs := writeShardDirs(t, root, [3]int{5, 5, 5})
	code, out, errOut := runCheck(t, dirs...)
	if code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"[cli] 3 shards of run c0ffee00 merged onto the limiter's clock",
		"24 records, 3 keys: 15 admitted, 9 rejected",
		"Note: shard 1/3 on node-1: 8 records, limiter clock offset -30ms ± 100µs (Redis TIME), placed at +7ms on the merged clock",
		"load generator ceiling 30000 req/s (p50 30µs, p99 120µs)",
		"Verdict: pass. 1 scenario: 1 passed (3 shard directories checked as one run).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, row := range []string{`load-delivered +shard 0/3 +PASS`, `max-latency +shard 2/3 +PASS +2 +1000 +ms .*: request 3\n`} {
		if !regexp.MustCompile(row).MatchString(out) {
			t.Errorf("output lacks a row %s:\n%s", row, out)
		}
	}
	// Each shard's history stands for its run directory.
	var hists []string
	for _, d := range dirs {
		hists = append(hists, filepath.Join(d, "cli", "history.jsonl.gz"))
	}
	if code, histOut, _ := runCheck(t, hists...); code != exitOK || histOut != out {
		t.Errorf("the shards' histories: exit %d, output\n%s\nwant that of the directories:\n%s", code, histOut, out)
	}
	// The directory holding the shards' directories, as a Kubernetes job
	// leaves them on a shared volume, is the same run.
	if code, rootOut, _ := runCheck(t, root); code != exitOK || rootOut != out {
		t.Errorf("SHARDS_ROOT: exit %d, output\n%s\nwant that of the directories:\n%s", code, rootOut, out)
	}

	merged := filepath.Join(t.TempDir(), "merged")
	if code, out, errOut = runCheck(t, "--out", merged, "--summary", filepath.Join(merged, "copy.json"), root); code != exitOK {
		t.Fatalf("--out: exit %d:\n%s\n%s", code, out, errOut)
	}
	for _, f := range []string{"summary.json", "junit.xml", "report.html", "run.json", "cli/history.jsonl.gz", "copy.json"} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Errorf("--out wrote no %s: %v", f, err)
		}
	}
	s := readSummaryFile(t, filepath.Join(merged, "summary.json"))
	if len(s.Scenarios) != 1 || s.Scenarios[0].Counts.Records != 24 || s.Status != checker.StatusPass {
		t.Errorf("summary.json = %+v", s)
	}
	rec, err := readRunRecord(merged)
	if err != nil || rec == nil {
		t.Fatalf("run.json: %v", err)
	}
	if sc := rec.Scenarios[0]; len(sc.Shards) != 3 || sc.History != filepath.Join("cli", "history.jsonl.gz") || sc.Phases[0].Planned != 24 || sc.Shards[2].Dir != dirs[2] && !filepath.IsAbs(sc.Shards[2].Dir) {
		t.Errorf("merged run.json's scenario = %+v", sc)
	}
	if html, _ := os.ReadFile(filepath.Join(merged, "report.html")); !bytes.Contains(html, []byte("node-2: 8 records, clock offset -60ms ± 100µs (Redis TIME), placed at &#43;14ms")) {
		t.Errorf("report.html lacks shard 2's facts")
	}
	if code, out, errOut = runCheck(t, merged); code != exitOK || !strings.Contains(out, "re-checked from its 3 shards") || !strings.Contains(out, "Every check agrees with") {
		t.Errorf("re-check of the merged run: exit %d:\n%s\n%s", code, out, errOut)
	}
	// A second merge into the same --out replaces the first.
	if code, _, errOut = runCheck(t, "--out", merged, root); code != exitOK {
		t.Errorf("--out over a merged run: exit %d: %s", code, errOut)
	}
	// The merged run beside the shards is no shard of them.
	if code, _, errOut = runCheck(t, "--out", filepath.Join(root, "merged"), root); code != exitOK {
		t.Fatalf("--out within SHARDS_ROOT: exit %d: %s", code, errOut)
	}
	if code, _, errOut = runCheck(t, root); code != exitOK {
		t.Errorf("SHARDS_ROOT holding a merged run: exit %d: %s", code, errOut)
	}
	// Beside its shards, as the Kubernetes check leaves /results/report
	// beside /results/shard-I, the merged run names them relative to
	// itself, and their directory copied whole is checked again.
	if rec, err := readRunRecord(filepath.Join(root, "merged")); err != nil || rec.Scenarios[0].Shards[1].Dir != filepath.Join("..", filepath.Base(dirs[1])) {
		t.Errorf("a shard beside the merged run is recorded as %+v (%v), want ../%s", rec.Scenarios[0].Shards[1], err, filepath.Base(dirs[1]))
	}
	if html, _ := os.ReadFile(filepath.Join(root, "merged", "report.html")); bytes.Contains(html, []byte(root)) {
		t.Errorf("report.html beside the shards names %s", root)
	}
	copied := filepath.Join(t.TempDir(), "copied")
	if err := os.CopyFS(copied, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runCheck(t, filepath.Join(copied, "merged")); code != exitOK || !strings.Contains(out, "re-checked from its 3 shards: "+filepath.Join(copied, filepath.Base(dirs[0]))) {
		t.Errorf("re-check of a copied merged run beside its shards: exit %d:\n%s\n%s", code, out, errOut)
	}

	// One shard alone is a run directory whose verdicts cover that shard.
	if code, out, _ = runCheck(t, dirs[1]); code != exitOK || !strings.Contains(out, "Note: this is shard 1/3 of run c0ffee00: its verdicts cover its own requests only") {
		t.Errorf("one shard alone: exit %d:\n%s", code, out)
	}

	// A merged run that holds its shards (as `rlbench run --local-shards`
	// leaves them) records them relative to itself, so it can be moved
	// whole and checked again.
	holder := filepath.Join(t.TempDir(), "run")
	inner := writeShardDirs(t, filepath.Join(holder, "shards"), [3]int{5, 5, 5})
	if code, out, errOut = runCheck(t, append([]string{"--out", holder}, inner...)...); code != exitOK {
		t.Fatalf("--out holding the shards: exit %d:\n%s\n%s", code, out, errOut)
	}
	if rec, err := readRunRecord(holder); err != nil || rec.Scenarios[0].Shards[1].Dir != filepath.Join("shards", "1") {
		t.Errorf("a shard within the merged run is recorded as %+v (%v), want shards/1", rec.Scenarios[0].Shards[1], err)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(holder, moved); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runCheck(t, moved); code != exitOK || !strings.Contains(out, "re-checked from its 3 shards: "+filepath.Join(moved, "shards", "0")) {
		t.Errorf("re-check of a moved merged run: exit %d:\n%s\n%s", code, out, errOut)
	}

	// Shard 1 admitted six requests within 5 ms: over budget.
	failing := writeShardDirs(t, t.TempDir(), [3]int{5, 6, 5})
	if code, out, _ = runCheck(t, failing...); code != exitCheckFailed || !strings.Contains(out, `key "key-1": 6 units admitted`) {
		t.Errorf("over budget: exit %d, want %d:\n%s", code, exitCheckFailed, out)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"missing shard", []string{dirs[0], dirs[2]}, exitInvalid, "scenario cli: shard 1/3 is missing: a run of 3 shards is checked from all 3; give every shard's run directory, or check the shards present with --allow-missing-shards"},
		{"history flags", []string{"--policy", "gcra:5/1s", dirs[0], dirs[1]}, exitInvalid, "--policy: the shards of a run are checked as they were run"},
		{"a file among them", []string{dirs[0], filepath.Join(dirs[1], "run.json")}, exitInvalid, "run.json is neither a shard's run directory nor a history in one"},
		{"out over a shard", []string{"--out", dirs[1], root}, exitInvalid, "is a shard's run directory"},
		{"out over the shards' root", []string{"--out", root, root}, exitInvalid, "holds the shards' run directories (0): a merged run written there"},
		{"out over a run", []string{"--out", dirs[1], dirs[0], dirs[2]}, exitInvalid, "holds a run (run.json) that is not a merged one"},
		{"shard flags on a history", []string{"--allow-missing-shards", filepath.Join(dirs[0], "cli", "history.jsonl.gz")}, exitInvalid, "--allow-missing-shards: --out and --allow-missing-shards apply to the shards"},
		{"shard flags on a run", []string{"--out", t.TempDir(), dirs[0]}, exitInvalid, "--out: a run directory is re-checked as it was run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCheck(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d, with %q:\n%s\n%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
	code, out, errOut = runCheck(t, "--allow-missing-shards", dirs[0], dirs[2])
	if code != exitOK || !strings.Contains(out, "Note: a partial set of shards: 1/3 missing, so the verdicts cover 2 of 3 shards only.") {
		t.Errorf("--allow-missing-shards: exit %d:\n%s\n%s", code, out, errOut)
	}
}
