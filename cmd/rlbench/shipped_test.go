package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shipped is the run of every shipped scenario, made once (about three
// minutes) for the tests that judge it. TestMain starts it in the
// background when one of them is selected, so that it runs beside the
// package's other tests instead of before them: it is light on the CPU (a
// few dozen requests per second, mostly waiting), and it runs from a copy
// of the binary of its own, so that its leftover check sees its processes
// alone and the other tests' checks never see them.
var shipped struct {
	start               sync.Once
	done                chan struct{} // closed when the run has returned
	cmd                 *exec.Cmd
	err                 error // the run could not start
	out, output, stderr string
	code                int
	left                []string // processes of the run's binary still running after it
}

// shippedTests are the tests that judge the shipped run.
var shippedTests = []string{"TestRunShippedScenariosPass", "TestCheckRechecksSavedRun"}

// startShipped starts the shipped run, once, unless -short; its outcome
// is in shipped once shipped.done is closed.
func startShipped() {
	shipped.start.Do(func() {
		shipped.done = make(chan struct{})
		if testing.Short() {
			shipped.err = errors.New("-short")
			close(shipped.done)
			return
		}
		if _, err := exec.LookPath("redis-server"); err != nil {
			shipped.err = err
			close(shipped.done)
			return
		}
		bin, err := copyBinary("shipped")
		if err != nil {
			shipped.err = err
			close(shipped.done)
			return
		}
		// Under the binary's directory, which TestMain removes.
		shipped.out = filepath.Join(filepath.Dir(bin), "out")
		cmd := exec.Command(bin, "run", "--out", shipped.out, "--redis-provider", "process", "../../scenarios/")
		cmd.Env = append(os.Environ(), "CI=true")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			shipped.err = err
			close(shipped.done)
			return
		}
		shipped.cmd = cmd
		go func() {
			err := cmd.Wait()
			var exit *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &exit):
				shipped.code = exit.ExitCode()
			default:
				shipped.err = err
			}
			shipped.output, shipped.stderr = stdout.String(), stderr.String()
			shipped.left = leftovers(bin)
			close(shipped.done)
		}()
	})
}

// stopShipped ends a shipped run still going when the tests are over (they
// failed before waiting for it): SIGTERM, which rlbench run answers by
// stopping what it started, then SIGKILL after 30 s.
func stopShipped() {
	if shipped.cmd == nil {
		return
	}
	select {
	case <-shipped.done:
		return
	default:
	}
	_ = shipped.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-shipped.done:
	case <-time.After(30 * time.Second):
		_ = shipped.cmd.Process.Kill()
		<-shipped.done
	}
}

// runShipped waits for the shipped run (starting it if TestMain did not)
// and returns its output directory, exit code and output; the processes it
// left behind are in shipped.left.
func runShipped(t *testing.T) (out string, code int, output string) {
	t.Helper()
	needRunPrerequisites(t)
	buildRlbench(t)
	startShipped()
	<-shipped.done
	if shipped.err != nil {
		t.Fatalf("rlbench run of the shipped scenarios: %v", shipped.err)
	}
	return shipped.out, shipped.code, shipped.output
}

// selected reports whether go test's -run and -skip flags select any of
// the top-level tests names.
func selected(names ...string) bool {
	run, skip := flagValue("test.run"), flagValue("test.skip")
	for _, name := range names {
		if matchesTop(run, name, true) && !matchesTop(skip, name, false) {
			return true
		}
	}
	return false
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// matchesTop reports whether the top-level part of a -run or -skip pattern
// matches name; an empty pattern matches as empty says.
func matchesTop(pattern, name string, empty bool) bool {
	if pattern == "" {
		return empty
	}
	top, _, _ := strings.Cut(pattern, "/")
	re, err := regexp.Compile(top)
	return err != nil || re.MatchString(name) // a bad pattern: go test reports it
}

// copyBinary copies the built binary into a directory of its own, named
// name under the build's directory, and returns the copy's path.
func copyBinary(name string) (string, error) {
	bin, err := builtBinary()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(bin), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst := filepath.Join(dir, "rlbench")
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return "", err
	}
	return dst, f.Close()
}

// leftovers lists the processes still running bin: a run must leave
// nothing behind.
func leftovers(bin string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if args[0] == bin {
			found = append(found, strings.Join(args, " "))
		}
	}
	return found
}
