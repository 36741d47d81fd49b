//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// shardedFile writes a shardable scenario aimed at url into dir.
func shardedFile(t *testing.T, dir, url string) string {
	t.Helper()
	src := fmt.Sprintf(`name: sharded
description: Two load generators fire one run at one API.
target:
  external: ["%s"]
  clock: {offset: 0s, uncertainty: 1ms}  # on this host: a shard needs a known clock
  routes:
    - path: /api/items
      policies: ["gcra:1000/1s,burst=1000"]
identities: {count: 4}
traffic:
  - {kind: constant, rate: 40/1s, duration: 500ms}
checks: {headers: false, load_delivered: 0.5}  # a busy machine still passes
shards: {count: 2}
`, url)
	path := filepath.Join(dir, "sharded.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunShardFlag: --shard is refused with exit 2, before anything runs,
// when it cannot name a shard every other shard of the run agrees on.
func TestRunShardFlag(t *testing.T) {
	dir := t.TempDir()
	file := shardedFile(t, dir, "http://127.0.0.1:1")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no run id", []string{"--shard", "0/2", file}, "--shard 0/2 needs --run-id: the shards of one run send the same identities only under one run id; give every shard the same, such as --run-id "},
		{"not I/N", []string{"--shard", "a/b", "--run-id", "3f9a1c07", file}, `--shard a/b: shard "a/b": index "a" is not an integer: want I/N, as 0/3`},
		{"not an index", []string{"--shard", "x", "--run-id", "3f9a1c07", file}, `--shard x: want I/N, as 0/3 (shard 0 of 3), or I (from 0) for shard I of the scenario's shards.count`},
		{"index beyond the scenario's count", []string{"--shard", "2", "--run-id", "3f9a1c07", file}, "--shard 2: scenario sharded: shard index 2 of 2: want 0 to 1"},
		{"a drill", []string{"--shard", "0/2", "--run-id", "3f9a1c07", file, "drill-redis-pause"},
			"--shard 0/2: embedded:drill-redis-pause.yaml: not shardable: faults: a drill's faults act on one Redis or instance"},
		{"instances on their own Redis", []string{"--shard", "1/3", "--run-id", "3f9a1c07", "quickstart"},
			"--shard 1/3: embedded:quickstart.yaml: not shardable: target.instances: every shard would start its own sample API instances on its own Redis"},
		{"a scenario without shards.count", []string{"--shard", "1", "--run-id", "3f9a1c07", "--redis-provider", "external", "--redis-url", "redis://127.0.0.1:1/0", "quickstart"},
			"--shard 1: scenario quickstart gives no shards.count; give the count of shards, as 1/3 for shard 1 of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(tt.name, " ", "-"))
			err := (&runCommand{stdout: io.Discard, stderr: io.Discard}).Run(context.Background(), append([]string{"--out", out}, tt.args...))
			var ue *usageError
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("run %q = %v; want a usage error starting %q", tt.args, err, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("run %q wrote %s before refusing", tt.args, out)
			}
		})
	}
}

// TestRunShards runs both shards of a run, one with the scenario's count
// (--shard 0) and one with its own (--shard 1/2): each passes, and
// run.json records its shard and the shared run id.
func TestRunShards(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	dir := t.TempDir()
	file := shardedFile(t, dir, srv.URL)
	planned := 0
	for k, shard := range []string{"0", "1/2"} {
		out := filepath.Join(dir, "out-"+fmt.Sprint(k))
		err := (&runCommand{stdout: io.Discard, stderr: io.Discard}).Run(context.Background(), []string{"--shard", shard, "--run-id", "3f9a1c07", "--out", out, file})
		if err != nil {
			t.Fatalf("--shard %s: %v", shard, err)
		}
		f, err := os.Open(filepath.Join(out, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := runrecord.Read(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		sc := rec.Scenarios[0]
		if want := (history.Shard{Index: k, Count: 2}); sc.Shard == nil || *sc.Shard != want || sc.RunID != "3f9a1c07" {
			t.Errorf("--shard %s: run.json shard %v, run id %q; want %v and 3f9a1c07", shard, sc.Shard, sc.RunID, want)
		}
		planned += sc.Phases[0].Planned
	}
	if planned != 20 {
		t.Errorf("the shards planned %d requests together, want the scenario's 20", planned)
	}
}
