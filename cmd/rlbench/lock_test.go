//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/outdir"
)

// TestRunAndMutateRefuseBusyOut: `rlbench run` and `rlbench mutate` into an
// output directory another run holds exit 2 at once, naming the directory
// and the holder's pid, and write nothing there.
func TestRunAndMutateRefuseBusyOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	lock, err := outdir.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	want := fmt.Sprintf("output directory %s is in use by another rlbench run (pid %d)", dir, os.Getpid())
	for _, args := range [][]string{
		{"run", "--out", dir, "quickstart"},
		{"mutate", "--out", dir, "no-ttl"},
	} {
		t.Run(args[0], func(t *testing.T) {
			var stderr bytes.Buffer
			start := time.Now()
			if code := run(context.Background(), args, &stderr); code != exitInvalid {
				t.Fatalf("exit %d, want %d:\n%s", code, exitInvalid, stderr.String())
			}
			if !strings.Contains(stderr.String(), want) {
				t.Fatalf("stderr lacks %q:\n%s", want, stderr.String())
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to refuse; it must fail at once", d)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != outdir.LockFile {
		t.Fatalf("the refused runs wrote into %s: %v", dir, entries)
	}
}

// slowScenario writes a scenario that sends nothing for a minute to an
// external target (so that a run of it starts no process a kill would
// orphan) and returns its path.
func slowScenario(t *testing.T, dir string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	path := filepath.Join(dir, "slow.yaml")
	src := "name: slow\ndescription: sends nothing for a minute, holding its output directory\n" +
		"target:\n  external: [" + srv.URL + "]\n  routes: [{path: /a, policies: [\"gcra:10/1s,burst=10\"]}]\n" +
		"traffic:\n  - {kind: idle, duration: 60s}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startHolder starts `rlbench run --out out scenario` and returns once the
// run holds out: its pid is in the lock file.
func startHolder(t *testing.T, bin, out, scenario string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--out", out, scenario)
	cmd.Env = append(os.Environ(), "CI=true")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	pid := strconv.Itoa(cmd.Process.Pid)
	for deadline := time.Now().Add(30 * time.Second); ; {
		data, _ := os.ReadFile(filepath.Join(out, outdir.LockFile))
		if strings.TrimSpace(string(data)) == pid {
			return cmd, &output
		}
		if time.Now().After(deadline) {
			t.Fatalf("rlbench run did not lock %s within 30s:\n%s", out, output.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunLocksOutAcrossProcesses drives the built binary: while one
// `rlbench run` writes into --out, a second run and a mutate into it exit
// 2 at once, naming the directory and the first run's pid; the first run,
// interrupted with SIGINT, frees the directory; and a run killed with
// SIGKILL leaves a lock file that does not block the next run.
func TestRunLocksOutAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs rlbench end to end")
	}
	bin := buildRlbench(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	scenario := slowScenario(t, dir)

	first, firstOutput := startHolder(t, bin, out, scenario)
	want := fmt.Sprintf("output directory %s is in use by another rlbench run (pid %d)", out, first.Process.Pid)
	for _, args := range [][]string{{"run", "--out", out, scenario}, {"mutate", "--out", out, "no-ttl"}} {
		start := time.Now()
		code, output := rlbenchRun(t, bin, args...)
		if code != 2 || !strings.Contains(output, want) {
			t.Fatalf("rlbench %s into a held --out: exit %d, want 2 with %q:\n%s", args[0], code, want, output)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("rlbench %s took %v to refuse; it must fail at once", args[0], d)
		}
	}

	// SIGINT: the run stops and the directory is free again.
	if err := first.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("rlbench run did not stop within 30s of SIGINT:\n%s", firstOutput.String())
	}
	lock, err := outdir.Acquire(out)
	if err != nil {
		t.Fatalf("after SIGINT: %v\n%s", err, firstOutput.String())
	}
	lock.Release()

	// SIGKILL: the lock file stays, with the killed run's pid, and does
	// not block.
	second, _ := startHolder(t, bin, out, scenario)
	if err := second.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second.Wait()
	data, err := os.ReadFile(filepath.Join(out, outdir.LockFile))
	if err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(second.Process.Pid) {
		t.Fatalf("lock file after SIGKILL = %q, %v; want the killed run's pid %d", data, err, second.Process.Pid)
	}
	lock, err = outdir.Acquire(out)
	if err != nil {
		t.Fatalf("a stale lock file blocks the next run: %v", err)
	}
	lock.Release()
}
