//go:build unix

package k8s

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWaitScript runs the check pod's wait with sh: it ends as soon as
// every shard has written run.json, and fails naming the missing ones
// once its time is up.
func TestWaitScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	tests := []struct {
		name    string
		written []string // run.json files there at the start
		late    string   // one written a second in
		timeout string
		code    int
		stdout  string
		stderr  string
	}{
		{name: "all there", written: []string{"shard-0", "shard-1", "shard-2"}, timeout: "30", stdout: "all 3 shards have written"},
		{name: "one late", written: []string{"shard-0", "shard-2"}, late: "shard-1", timeout: "60", stdout: "waiting for shards 1\nall 3 shards"},
		{name: "two missing", written: []string{"shard-1"}, timeout: "1", code: 1, stdout: "waiting for shards 0 2\n",
			stderr: "shards 0 2 wrote no run.json within 1s"},
		{name: "a directory without run.json", written: []string{"shard-0", "shard-1"}, late: "shard-2/", timeout: "1", code: 1,
			stderr: "shards 2 wrote no run.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, s := range tt.written {
				writeFiles(t, dir, map[string]string{filepath.Join(s, "run.json"): "{}"})
			}
			cmd := exec.Command(sh, "-c", waitScript)
			cmd.Env = append(os.Environ(), "RESULTS="+dir, "SHARDS=3", "TIMEOUT_SECONDS="+tt.timeout, "POLL_SECONDS=1")
			var stdout, stderr syncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tt.late != "" {
				// Once it has looked and found it missing.
				for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "waiting for"); {
					if time.Now().After(deadline) {
						t.Fatalf("the script says nothing of waiting: %q %q", stdout.String(), stderr.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
				if strings.HasSuffix(tt.late, "/") {
					if err := os.MkdirAll(filepath.Join(dir, tt.late), 0o755); err != nil {
						t.Fatal(err)
					}
				} else {
					writeFiles(t, dir, map[string]string{filepath.Join(tt.late, "run.json"): "{}"})
				}
			}
			err := cmd.Wait()
			code := 0
			if err != nil {
				ee, ok := err.(*exec.ExitError)
				if !ok {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
