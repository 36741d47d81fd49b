package outdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Stale names the subdirectories holding a history of a scenario this run
// did not write, and nothing else.
func TestStale(t *testing.T) {
	tests := []struct {
		name  string
		files []string // under the output directory
		ran   []string
		want  string
	}{
		{"none", nil, []string{"quickstart"}, ""},
		{"the run's own", []string{"quickstart/history.jsonl.gz", "summary.json"}, []string{"quickstart"}, ""},
		{"an earlier scenario", []string{"quickstart/history.jsonl.gz", "hot-key/history.jsonl.gz"}, []string{"quickstart"}, "hot-key"},
		{"an earlier run's local shards", []string{"tiers/shards/shard-0/tiers/history.jsonl.gz"}, []string{"quickstart"}, "tiers"},
		{"no history: not a scenario's", []string{"notes/readme.txt", "bin/history.json"}, nil, ""},
		{"sorted", []string{"b/history.jsonl.gz", "a/history.jsonl.gz", "c/history.jsonl.gz"}, []string{"b"}, "a c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				path := filepath.Join(dir, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stale, err := Stale(dir, tt.ran)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(stale, " "); got != tt.want {
				t.Errorf("Stale = %q, want %q", got, tt.want)
			}
			for _, f := range tt.files {
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil {
					t.Errorf("Stale touched %s: %v", f, err)
				}
			}
		})
	}
	if stale, err := Stale(filepath.Join(t.TempDir(), "missing"), nil); err != nil || stale != nil {
		t.Errorf("Stale of a missing directory = %v, %v; want none, nil", stale, err)
	}
}
