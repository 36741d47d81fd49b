//go:build unix

package outdir

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdEnv, when set in the environment of this test binary, makes it a
// holder process: it locks the directory the variable names, prints
// "held", and waits for stdin to close or a signal to end it.
const holdEnv = "RLBENCH_OUTDIR_TEST_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		l, err := Acquire(dir)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Println("held")
		bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin or kills us
		if err := l.Release(); err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holderProcess starts this test binary as a process holding dir and
// returns once it holds it; closing the returned pipe ends it normally.
func holderProcess(t *testing.T, dir string) (*exec.Cmd, io.Closer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("holder process: %q, %v", line, err)
	}
	return cmd, stdin
}

// TestAcquireRelease: a held directory refuses a second lock, even from
// the same process, with a *LockedError naming the directory and the pid;
// released, it can be locked again, and the lock file stays.
func TestAcquireRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "nested")
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), strconv.Itoa(os.Getpid())+"\n"; got != want {
		t.Errorf("lock file holds %q, want %q", got, want)
	}
	_, err = Acquire(dir)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire = %v, want a *LockedError", err)
	}
	if le.Dir != dir || le.PID != os.Getpid() {
		t.Errorf("LockedError{Dir: %q, PID: %d}, want {%q, %d}", le.Dir, le.PID, dir, os.Getpid())
	}
	want := fmt.Sprintf("output directory %s is in use by another rlbench run (pid %d), which holds %s", dir, os.Getpid(), filepath.Join(dir, LockFile))
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to contain %q", err, want)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockFile)); err != nil {
		t.Errorf("lock file after Release: %v", err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l2.Release()
}

// TestAcquireFailsOnAFileDir: a --out that is a file is an error of its
// own, not a lock held by someone.
func TestAcquireFailsOnAFileDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(file); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("Acquire(a file) = %v, want an error other than ErrLocked", err)
	}
}

// TestLockHeldByAnotherProcess: while another process holds the
// directory, Acquire fails at once naming that process's pid; when the
// holder ends normally, the directory is free.
func TestLockHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd, stdin := holderProcess(t, dir)
	start := time.Now()
	_, err := Acquire(dir)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Acquire while held = %v, want a *LockedError", err)
	}
	if got, want := le.PID, cmd.Process.Pid; got != want {
		t.Errorf("LockedError.PID = %d, want the holder's %d", got, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Acquire took %v to fail; it must not wait", d)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after the holder ended: %v", err)
	}
	l.Release()
}

// TestStaleLockFileDoesNotBlock: a holder killed with SIGKILL releases
// nothing itself and leaves its lock file with its pid behind; the kernel
// has dropped the lock, so the next Acquire succeeds and writes its own pid.
func TestStaleLockFileDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := holderProcess(t, dir)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("holder ended with %v, want killed by SIGKILL", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(data)), strconv.Itoa(cmd.Process.Pid); got != want {
		t.Fatalf("stale lock file holds %q, want the killed holder's pid %s", got, want)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire over a stale lock file: %v", err)
	}
	defer l.Release()
	data, _ = os.ReadFile(filepath.Join(dir, LockFile))
	if got, want := strings.TrimSpace(string(data)), strconv.Itoa(os.Getpid()); got != want {
		t.Errorf("lock file holds %q after Acquire, want %s", got, want)
	}
}
