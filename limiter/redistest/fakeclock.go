//go:build unix

package redistest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The clock of a server started with Options.FakeClock is libfaketime's
// (Debian package faketime): the wall clock the server reads (Redis TIME,
// key expiry) is the host's shifted by an offset kept in a file that
// libfaketime reads on every call (FAKETIME_TIMESTAMP_FILE with
// FAKETIME_NO_CACHE), so SetClockOffset steps it while the server runs. Its
// monotonic clock, which drives its timers, is left alone
// (FAKETIME_DONT_FAKE_MONOTONIC). Debian's redis-server links jemalloc,
// which libfaketime cannot initialise under (libfaketime issue #130); glibc's
// libc_malloc_debug, preloaded first, hands the server glibc's allocator
// and so breaks the cycle.

// FaketimeLibs are the libraries preloaded into a server with a fake clock,
// in order, and FaketimeInstall says how to get them.
var (
	FaketimeLibs = []string{
		"/lib/x86_64-linux-gnu/libc_malloc_debug.so.0",
		"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	}
	FaketimeInstall = "make deps, or apt-get install faketime"
)

// ErrNoFaketime is returned by Start for Options.FakeClock when libfaketime
// (or glibc's libc_malloc_debug) is missing.
var ErrNoFaketime = errors.New("libfaketime not found: a Redis clock that steps needs it; install it with " + FaketimeInstall)

// faketimeLibs returns the libraries to preload, or ErrNoFaketime naming the
// missing one. Other architectures' library directories are found from the
// x86_64 paths' file names.
func faketimeLibs() ([]string, error) {
	var out []string
	for _, lib := range FaketimeLibs {
		if _, err := os.Stat(lib); err == nil {
			out = append(out, lib)
			continue
		}
		matches, _ := filepath.Glob(filepath.Join("/usr/lib/*-linux-gnu", filepath.Base(filepath.Dir(lib)), filepath.Base(lib)))
		more, _ := filepath.Glob(filepath.Join("/lib/*-linux-gnu", filepath.Base(lib)))
		matches = append(matches, more...)
		if len(matches) == 0 {
			return nil, fmt.Errorf("%w (%s is missing)", ErrNoFaketime, lib)
		}
		out = append(out, matches[0])
	}
	return out, nil
}

// FaketimeAvailable reports whether servers can be started with a fake
// clock here, or why not (wrapping ErrNoFaketime).
func FaketimeAvailable() error {
	_, err := faketimeLibs()
	return err
}

// clockFile is the file holding the fake clock's offset.
func (s *Server) clockFile() string { return filepath.Join(s.dir, "faketime.rc") }

// fakeClockEnv returns the environment of a server with a fake clock,
// writing the offset file first.
func (s *Server) fakeClockEnv() ([]string, error) {
	libs, err := faketimeLibs()
	if err != nil {
		return nil, err
	}
	if err := s.writeClockOffset(s.ClockOffset()); err != nil {
		return nil, err
	}
	preload := ""
	for i, lib := range libs {
		if i > 0 {
			preload += ":"
		}
		preload += lib
	}
	return append(os.Environ(),
		"LD_PRELOAD="+preload,
		"FAKETIME_TIMESTAMP_FILE="+s.clockFile(),
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
		"FAKETIME_DONT_RESET=1",
	), nil
}

// ClockOffset is the offset of the server's fake clock from the host's
// (Options.ClockOffset, then as SetClockOffset set it); 0 without a fake
// clock.
func (s *Server) ClockOffset() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clockOffset
}

// SetClockOffset steps the server's fake clock to run d ahead of the host's
// (behind for a negative d) from now on, without restarting it: the next
// time the server reads the clock it reads the new one. It keeps the offset
// across Restart. Errors: the server has no fake clock
// (Options.FakeClock), or the offset file cannot be written.
func (s *Server) SetClockOffset(d time.Duration) error {
	if !s.opts.FakeClock {
		return errors.New("set clock offset: the server was started without a fake clock (Options.FakeClock)")
	}
	if err := s.writeClockOffset(d); err != nil {
		return err
	}
	s.mu.Lock()
	s.clockOffset = d
	s.mu.Unlock()
	return nil
}

// writeClockOffset replaces the offset file atomically (a rename), so the
// server never reads half a line.
func (s *Server) writeClockOffset(d time.Duration) error {
	tmp := s.clockFile() + ".tmp"
	// libfaketime's relative offset: signed seconds with a fraction.
	line := strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
	if d >= 0 {
		line = "+" + line
	}
	if err := os.WriteFile(tmp, []byte(line+"\n"), 0o644); err != nil {
		return fmt.Errorf("set clock offset: %w", err)
	}
	if err := os.Rename(tmp, s.clockFile()); err != nil {
		return fmt.Errorf("set clock offset: %w", err)
	}
	return nil
}
