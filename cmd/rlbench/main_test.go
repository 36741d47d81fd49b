package main

import (
	"bytes"
	"context"
	"flag"
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

// TestMain starts the run of the shipped scenarios in the background when
// a test that judges it is selected (see shipped), and removes the binary
// the tests built, once the run is over.
func TestMain(m *testing.M) {
	flag.Parse()
	if selected(shippedTests...) {
		startShipped()
	}
	code := m.Run()
	stopShipped()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// builtBinary returns the path of the rlbench binary, built from this
// package on first use and shared by every test after.
func builtBinary() (string, error) {
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
	return built.bin, built.err
}

// buildRlbench is builtBinary for a test, which fails when the build does.
func buildRlbench(t *testing.T) string {
	t.Helper()
	bin, err := builtBinary()
	if err != nil {
		t.Fatalf("build rlbench: %v", err)
	}
	return bin
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
