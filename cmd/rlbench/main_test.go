package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// built is the rlbench binary, built once for every test that runs it.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildRlbench returns the path of the rlbench binary, built from this
// package on first use and shared by every test after.
func buildRlbench(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if built.dir, built.err = os.MkdirTemp("", "rlbench-test-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "rlbench")
		if out, err := exec.Command(goBin, "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatalf("build rlbench: %v", built.err)
	}
	return built.bin
}

// TestUsageDescribesEveryCommand: the top-level usage lists every command
// with its one-line description.
func TestUsageDescribesEveryCommand(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), nil, &out); code != exitInvalid {
		t.Fatalf("no arguments: exit %d, want %d", code, exitInvalid)
	}
	for name := range commands {
		desc := summaries[name]
		if desc == "" {
			t.Errorf("command %q has no description in summaries", name)
			continue
		}
		if !strings.Contains(out.String(), desc) {
			t.Errorf("usage lacks %q's description:\n%s", name, out.String())
		}
	}
	if code := run(context.Background(), []string{"frobnicate"}, &out); code != exitInvalid || !strings.Contains(out.String(), `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: exit %d, output:\n%s", code, out.String())
	}
}
