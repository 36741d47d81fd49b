//go:build unix

package runner

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
	"sync/atomic"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/traffic"
	"github.com/rlbench/rlbench/scenarios"
)

// shardedScenario is an external target at url whose hot key every shard
// spreads, with a constant phase and a repeated burst.
func shardedScenario(t *testing.T, url string) *scenarios.Scenario {
	t.Helper()
	src := fmt.Sprintf(`name: sharded
description: Two load generators share one run against one API.
target:
  external: ["%s"]
  clock: {offset: 0s, uncertainty: 1ms}  # on this host: a shard needs a known clock
  routes:
    - path: /api/items
      policies: ["gcra:1000/1s,burst=1000"]
identities: {count: 6, distribution: hot, share: 0.5}
traffic:
  - {kind: constant, name: steady, rate: 100/1s, duration: 1s}
  - {kind: burst, name: bursts, requests: 10, spread: 2ms, repeat: 2, gap: 20ms}
# Each shard plans about half the run, so its load-delivered check passes
# only if it counts its own share, even on a busy machine.
checks: {headers: false, load_delivered: 0.7}
shards: {count: 2, spread: [hot]}
`, url)
	sc, err := scenarios.Parse("sharded.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestRunShards runs both shards of a two-shard run against one API:
// each sends its own plan, records its shard in the history header and
// run.json, counts its own plan as planned, so that its load-delivered
// check passes, and together they send the scenario's traffic once.
func TestRunShards(t *testing.T) {
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	sc := shardedScenario(t, srv.URL)
	whole := 0
	for _, ph := range sc.Phases {
		whole += ph.PlannedRequests()
	}
	sent := 0
	for k := range 2 {
		out := t.TempDir()
		// --shard K: the count comes from the scenario's shards.count.
		o, err := New(Options{OutDir: out, RunID: "3f9a1c07", Shard: &history.Shard{Index: k}}).Run(context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		want := history.Shard{Index: k, Count: 2}
		if o.Shard == nil || *o.Shard != want {
			t.Fatalf("Outcome.Shard = %v, want %v", o.Shard, want)
		}
		if rec := o.Record(); rec.Shard == nil || *rec.Shard != want || rec.RunID != "3f9a1c07" {
			t.Errorf("run.json shard %v, run id %q; want %v and 3f9a1c07", rec.Shard, rec.RunID, want)
		}
		f, err := os.Open(filepath.Join(out, o.HistoryPath))
		if err != nil {
			t.Fatal(err)
		}
		rd, err := history.NewReader(f, o.HistoryPath)
		if err != nil {
			t.Fatal(err)
		}
		if h := rd.Header(); h.Shard == nil || *h.Shard != want {
			t.Errorf("history header shard = %v, want %v", h.Shard, want)
		}
		f.Close()
		for i, p := range o.Stats.Phases {
			plan, err := traffic.Plan(sc, i, want)
			if err != nil {
				t.Fatal(err)
			}
			if p.Planned != len(plan) || p.Sent != len(plan) {
				t.Errorf("shard %v, phase %s: planned %d, sent %d; its plan holds %d", want, p.Name, p.Planned, p.Sent, len(plan))
			}
			if len(plan) == 0 || len(plan) == whole {
				t.Errorf("shard %v, phase %s plans %d of the run's requests; want a share", want, p.Name, len(plan))
			}
			sent += p.Sent
		}
		for _, r := range o.Report.Results {
			if r.Name == checker.CheckLoadDelivered && r.Verdict != checker.Pass {
				t.Errorf("shard %v: %s %s = %s: %s", want, r.Name, r.Scope, r.Verdict, r.Explanation)
			}
		}
	}
	if sent != whole || seen.Load() != int64(whole) {
		t.Errorf("the shards sent %d requests and the API saw %d; the scenario plans %d", sent, seen.Load(), whole)
	}
}

// TestShardErrors: a shard the runner cannot run is refused before
// anything starts, with what to give instead.
func TestShardErrors(t *testing.T) {
	sharded := shardedScenario(t, "http://127.0.0.1:1")
	noCount := shardedScenario(t, "http://127.0.0.1:1")
	noCount.Shards.Count = 0
	quickstart, err := scenarios.Lookup("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		sc   *scenarios.Scenario
		want string // "" for none
	}{
		{"whole run", Options{}, quickstart, ""},
		{"shard of the scenario's count", Options{RunID: "3f9a1c07", Shard: &history.Shard{Index: 1}}, sharded, ""},
		{"no run id", Options{Shard: &history.Shard{Index: 0, Count: 2}}, sharded, ErrNoRunID.Error()},
		{"no count", Options{RunID: "3f9a1c07", Shard: &history.Shard{Index: 1}}, noCount,
			"scenario sharded gives no shards.count; give the count of shards, as 1/3 for shard 1 of 3"},
		{"index beyond the count", Options{RunID: "3f9a1c07", Shard: &history.Shard{Index: 2}}, sharded,
			"scenario sharded: shard index 2 of 2: want 0 to 1"},
		{"instances on their own Redis", Options{RunID: "3f9a1c07", Shard: &history.Shard{Index: 0, Count: 2}}, quickstart,
			"embedded:quickstart.yaml: not shardable: target.instances: every shard would start its own sample API instances on its own Redis"},
		{"instances on a shared Redis", Options{RunID: "3f9a1c07", Shard: &history.Shard{Index: 0, Count: 2},
			Provider: scenarios.ProviderExternal, RedisURL: "redis://127.0.0.1:6390/0"}, quickstart, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.opts).Shard(tt.sc)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Shard() = %v", err)
			case tt.want == "" && (s == nil) != (tt.opts.Shard == nil):
				t.Errorf("Shard() = %v for Options.Shard %v", s, tt.opts.Shard)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("Shard() = %v, %v; want an error starting %q", s, err, tt.want)
			}
		})
	}
	if _, err := New(Options{Shard: &history.Shard{Count: 2}}).Run(context.Background(), sharded); !errors.Is(err, ErrNoRunID) {
		t.Errorf("Run without a run id = %v, want ErrNoRunID", err)
	}
}

// A plan with a Retry-After probe or clients that honour Retry-After is an
// upper bound on what the run sends; one of open-model phases alone is exact.
func TestPlannedRequests(t *testing.T) {
	tests := []struct {
		scenario string
		want     string
	}{
		{"quickstart", "up to 991"},      // constant, then a Retry-After probe
		{"retry-after", "up to 341"},     // clients that honour Retry-After
		{"boundary-burst", "120"},        // edge bursts only
		{"multi-instance-budget", "360"}, // constant phases only
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			scs, err := scenarios.Load(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			if got := PlannedRequests(scs[0], nil).String(); got != tt.want {
				t.Errorf("PlannedRequests(%s) = %q, want %q", tt.scenario, got, tt.want)
			}
		})
	}
}
