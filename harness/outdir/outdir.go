//go:build unix

// Package outdir keeps two runs from writing into one output directory at
// once: `rlbench run --out DIR` and `rlbench mutate --out DIR` hold an
// exclusive lock on DIR/.rlbench.lock (flock(2)) for as long as they run,
// and a second run into the same DIR fails at once, naming the directory
// and the process that holds it, instead of interleaving histories and
// overwriting the first run's summary.json.
//
// The lock belongs to the open file, not to the lock file's existence: the
// kernel releases it when the holder exits however it exits (SIGINT,
// SIGKILL, a crash), so a lock file left behind by a killed run never
// blocks the next one. The file is opened close-on-exec, so the processes
// a run starts (sample API instances, Redis) do not inherit it. flock
// locks are advisory and may not hold across machines on a network file
// system.
package outdir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LockFile is the name of the lock file in an output directory.
const LockFile = ".rlbench.lock"

// ErrLocked is matched by errors.Is for a *LockedError.
var ErrLocked = errors.New("output directory in use")

// LockedError is the error of Acquire when another process, or another
// Lock of this one, holds the directory.
type LockedError struct {
	// Dir is the output directory as Acquire was given it.
	Dir string
	// PID is the holder's process id, as it wrote it into the lock file;
	// 0 when it has not written it yet.
	PID int
}

func (e *LockedError) Error() string {
	holder := "another rlbench run"
	if e.PID > 0 {
		holder += " (pid " + strconv.Itoa(e.PID) + ")"
	}
	return fmt.Sprintf("output directory %s is in use by %s, which holds %s; wait for it to end or write into another directory",
		e.Dir, holder, filepath.Join(e.Dir, LockFile))
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is a held output directory. Its methods are safe for one goroutine
// at a time.
type Lock struct {
	f   *os.File
	dir string
}

// Acquire creates dir (and its parents) when missing and locks it for this
// process, writing the process id into the lock file. It does not wait: when
// the directory is held, the error is a *LockedError (errors.Is(err,
// ErrLocked)) naming the holder's pid. Other errors come from creating the
// directory or opening or locking the file.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644) // close-on-exec, as os opens every file
	if err != nil {
		return nil, fmt.Errorf("output directory lock: %w", err)
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Dir: dir, PID: holder(f)}
		}
		return nil, fmt.Errorf("output directory lock %s: %w", path, err)
	}
	if err := writePID(f); err != nil {
		f.Close() // releases the lock
		return nil, fmt.Errorf("output directory lock %s: %w", path, err)
	}
	return &Lock{f: f, dir: dir}, nil
}

// Dir is the directory the lock holds.
func (l *Lock) Dir() string { return l.dir }

// Release empties the lock file and unlocks the directory; the file stays,
// so that a process about to lock it locks the same file. Releasing a nil
// or released Lock does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	terr := f.Truncate(0)
	uerr := flock(f, syscall.LOCK_UN)
	return errors.Join(terr, uerr, f.Close())
}

// flock calls flock(2), again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// holder reads the pid the holder wrote into f, waiting briefly for a
// holder that has locked the file and not written it yet; 0 if none.
func holder(f *os.File) int {
	for try := 0; ; try++ {
		data, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if try == 4 {
			return 0
		}
		time.Sleep(20 * time.Millisecond)
	}
}
