package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInterruptedAdvice: an interrupted run of local shards names only the
// shard directories and histories that exist, each in the command that
// checks it.
func TestInterruptedAdvice(t *testing.T) {
	const name = "quickstart"
	// layout gives each shard what it left: "run" a run.json (it finished),
	// "history" a history without one (cut short), "" nothing.
	tests := []struct {
		name   string
		dir    string // the shards' directory, under a temporary one
		layout []string
		want   string // with ROOT for the shards' directory
	}{
		{"nothing recorded", "out/quickstart/shards", []string{"", ""}, ""},
		{"every shard finished", "out/quickstart/shards", []string{"run", "run"},
			"every shard finished; check them as one run:\n  rlbench check ROOT/shard-0 ROOT/shard-1"},
		{"some finished, some cut short", "out/quickstart/shards", []string{"run", "history", ""},
			"1 of 3 shards finished; check those as one run, the verdicts covering them only:\n  rlbench check --allow-missing-shards ROOT/shard-0\n" +
				"1 shard cut short; check each history alone, its verdicts covering that shard's requests before the interrupt:\n  rlbench check ROOT/shard-1/quickstart/history.jsonl.gz"},
		{"all cut short", "out/quickstart/shards", []string{"history", "history"},
			"2 shards cut short; check each history alone, its verdicts covering that shard's requests before the interrupt:\n" +
				"  rlbench check ROOT/shard-0/quickstart/history.jsonl.gz\n  rlbench check ROOT/shard-1/quickstart/history.jsonl.gz"},
		{"a path the shell would split", "my runs/quickstart/shards", []string{"run", "run"},
			"every shard finished; check them as one run:\n  rlbench check 'ROOT/shard-0' 'ROOT/shard-1'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), tt.dir)
			for i, what := range tt.layout {
				dir := filepath.Join(root, "shard-"+string(rune('0'+i)))
				var file string
				switch what {
				case "run":
					file = filepath.Join(dir, "run.json")
				case "history":
					file = filepath.Join(dir, name, "history.jsonl.gz")
				default:
					// A shard that recorded nothing may still have its directory.
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := tt.want
			if want != "" {
				want = strings.ReplaceAll(want, "ROOT", root)
			}
			if got := interruptedAdvice(root, name, len(tt.layout)); got != want {
				t.Errorf("advice =\n%s\nwant\n%s", got, want)
			}
		})
	}
}
