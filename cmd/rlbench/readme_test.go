//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runMarker, on the line before a fenced sh block of README.md, marks the
// block as one a reader can paste as it is: TestREADMEBlocks runs it.
const runMarker = "<!-- test: run -->"

// readmeBlock is a runnable shell block of README.md.
type readmeBlock struct {
	line int // of the opening fence
	body string
}

// runnableBlocks returns the fenced sh blocks of md that follow runMarker.
func runnableBlocks(md []byte) ([]readmeBlock, error) {
	var out []readmeBlock
	sc := bufio.NewScanner(bytes.NewReader(md))
	n, marked := 0, 0
	var cur *readmeBlock
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		case marked == n-1 && marked > 0:
			if strings.TrimSpace(line) != "```sh" {
				return nil, fmt.Errorf("README.md:%d: %s is followed by %q, not a ```sh fence", marked, runMarker, line)
			}
			cur = &readmeBlock{line: n}
		case strings.TrimSpace(line) == runMarker:
			marked = n
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("README.md:%d: the block is never closed", cur.line)
	}
	return out, sc.Err()
}

// TestREADMEBlocks runs README.md's runnable blocks with bash -e, bin/rlbench
// replaced by the rlbench built from this tree: each must exit 0 within a
// minute, print what the README says it prints, and leave no process it
// started behind.
func TestREADMEBlocks(t *testing.T) {
	md, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := runnableBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	// What each block must print, in the README's order.
	wants := [][]string{{
		"my-api.yaml: valid (my-api, 3 phases", // Gating your own limiter: init, validate, run
		"retry-after-probe",
		"Verdict: pass",
	}, {
		"fault-injected", // the drill through the proxy
		"redis_latency #1 closed",
		"Verdict: pass",
	}, {
		"200 200 200 200 200 200 200 200 200 200 429 429 \n", // ten admitted: one burst over three instances
		"HTTP/1.1 429 Too Many Requests",
		"Retry-After: 1",
		`"limit":60,"remaining":0`,
		`rlbench_httplimit_rejected_total{policy="minute",route="data"}`,
	}}
	if len(blocks) != len(wants) {
		t.Fatalf("README.md has %d blocks marked %s, want %d (update this test with the README)", len(blocks), runMarker, len(wants))
	}
	for _, tool := range []string{"bash", "redis-server", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's blocks need %s: %v", tool, err)
		}
	}
	bin := buildRlbench(t)
	for i, b := range blocks {
		t.Run(fmt.Sprintf("line-%d", b.line), func(t *testing.T) {
			script := strings.ReplaceAll(b.body, "bin/rlbench", bin)
			var stdout, stderr bytes.Buffer
			var runErr error
			// A run the harness could not make valid (exit 3: a generator
			// that fell behind on a busy machine) judged no limiter, and
			// `bash -e` then stopped the block before its cleanup: it is
			// made once more.
			for attempt := 1; attempt <= 2; attempt++ {
				stdout.Reset()
				stderr.Reset()
				var left bool
				runErr, left = runBlock(script, t.TempDir(), &stdout, &stderr)
				var exit *exec.ExitError
				if errors.As(runErr, &exit) && exit.ExitCode() == exitHarnessError && attempt == 1 {
					t.Logf("README.md:%d: the harness could not make a valid test; running the block again:\n%s", b.line, stdout.String())
					continue
				}
				if left {
					t.Errorf("the block left processes running (it must stop exactly what it started)")
				}
				break
			}
			if runErr != nil {
				t.Fatalf("README.md:%d: %v\nstdout:\n%s\nstderr:\n%s", b.line, runErr, stdout.String(), stderr.String())
			}
			for _, want := range wants[i] {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("README.md:%d: output lacks %q:\n%s", b.line, want, stdout.String())
				}
			}
		})
	}
}

// runBlock runs script with bash -e in dir, in a process group of its own
// so that whatever it started can be found and killed, for at most a
// minute. left reports processes of the group still running after it
// (killed then).
func runBlock(script, dir string, stdout, stderr *bytes.Buffer) (err error, left bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	if cmd.Process != nil {
		if kerr := syscall.Kill(-cmd.Process.Pid, 0); !errors.Is(kerr, syscall.ESRCH) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			left = true
		}
	}
	return err, left
}
