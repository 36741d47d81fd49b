//go:build unix

// Package redistest starts and controls throwaway redis-server processes on
// free loopback ports, for tests: a single server or a Redis Cluster of
// masters, with the faults a store must survive (kill, restart empty, pause,
// resume). StartForTest and StartClusterForTest tie a server's life to a test
// and fail it if a key is left without a TTL.
//
// It lives in the limiter's tree so that the limiter's own tests need
// nothing outside it; rlbench's harness uses it too, for its "process" Redis
// provider and its tests. It does not import package testing (see TB), so
// linking it adds no test code to a program.
//
// Every server runs without persistence (save "", appendonly no) in its own
// temporary directory, logs to a buffer that Logs returns, and is killed when
// the process that started it dies (Linux parent-death signal) as well as by
// Stop. Servers are safe for concurrent use by multiple goroutines.
package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// DefaultBinary is the redis-server executable looked up on the PATH.
	DefaultBinary = "redis-server"
	// DefaultReadyTimeout bounds the wait for a started server to answer PING.
	DefaultReadyTimeout = 10 * time.Second
	// stopGrace is how long Stop waits for a clean exit before SIGKILL.
	stopGrace = 5 * time.Second
	// startAttempts is how often Start retries when the free port it picked
	// was taken by another process before redis-server could bind it.
	startAttempts = 3
)

// ErrNotInstalled is returned by Start when the redis-server binary cannot be
// found. Install it with `make deps` or `apt-get install redis-server`.
var ErrNotInstalled = errors.New("redis-server not found on the PATH; install it with `make deps` or `apt-get install redis-server`")

// ErrStopped is returned by the methods that act on a running process when
// the server has been stopped or killed.
var ErrStopped = errors.New("redis-server is not running")

// Options configures Start. The zero value starts redis-server from the PATH
// on a free loopback port and waits up to DefaultReadyTimeout for it.
type Options struct {
	// Binary is the redis-server executable; empty means DefaultBinary.
	Binary string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// Args are extra configuration directives passed on the command line,
	// as in []string{"--maxmemory", "10mb"}.
	Args []string
	// ReadyTimeout bounds the wait for PING to succeed; 0 means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration

	// FakeClock runs the server under libfaketime, its wall clock offset
	// from the host's by ClockOffset and steppable at run time
	// (Server.SetClockOffset). Start fails with ErrNoFaketime when
	// libfaketime is missing.
	FakeClock   bool
	ClockOffset time.Duration

	// cluster enables cluster mode with this cluster bus port.
	clusterBusPort int
	// config, when set, is a configuration file written to the server's
	// directory and given as the first argument (a Sentinel's, which
	// rewrites it).
	config string
	// sentinel runs the server as a Redis Sentinel.
	sentinel bool
}

// Server is one redis-server process on 127.0.0.1. The zero value is not
// usable; call Start.
type Server struct {
	opts   Options
	binary string
	port   int
	dir    string
	logs   *syncBuffer

	mu          sync.Mutex
	cmd         *exec.Cmd
	exited      chan struct{} // closed when cmd has been waited for
	paused      bool
	stopped     bool
	clockOffset time.Duration
}

// Start starts a redis-server as configured by opts and returns once it
// answers PING. Errors: ErrNotInstalled when the binary is missing, a start
// failure with the server's log, or ctx's error.
func Start(ctx context.Context, opts Options) (*Server, error) {
	binary := opts.Binary
	if binary == "" {
		binary = DefaultBinary
	}
	path, err := exec.LookPath(binary)
	if err == nil {
		// The server runs in its own directory: a relative path would be
		// taken from there.
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNotInstalled, err)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err == nil {
		dir, err = filepath.Abs(dir) // $TMPDIR may be relative
	}
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	s := &Server{opts: opts, binary: path, dir: dir, logs: &syncBuffer{}, clockOffset: opts.ClockOffset}
	for attempt := 1; ; attempt++ {
		s.port = opts.Port
		if s.port == 0 {
			if s.port, err = FreePort(); err != nil {
				os.RemoveAll(dir)
				return nil, fmt.Errorf("start redis-server: %w", err)
			}
		}
		err = s.start(ctx)
		if err == nil {
			return s, nil
		}
		// Another process may have taken the port between FreePort and bind.
		if opts.Port != 0 || attempt == startAttempts || ctx.Err() != nil ||
			!strings.Contains(s.logs.String(), "Address already in use") {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// start launches the process on s.port and waits for it to answer PING.
func (s *Server) start(ctx context.Context) error {
	var args []string
	if s.opts.config != "" {
		path := filepath.Join(s.dir, "server.conf")
		if err := os.WriteFile(path, []byte(s.opts.config), 0o644); err != nil {
			return fmt.Errorf("start redis-server: %w", err)
		}
		args = append(args, path)
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--logfile", "",
		"--daemonize", "no",
	)
	if s.opts.sentinel {
		args = append(args, "--sentinel")
	} else {
		args = append(args, "--save", "", "--appendonly", "no")
	}
	if s.opts.clusterBusPort != 0 {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes-"+strconv.Itoa(s.port)+".conf",
			"--cluster-port", strconv.Itoa(s.opts.clusterBusPort),
			"--cluster-node-timeout", "5000",
		)
	}
	args = append(args, s.opts.Args...)
	cmd := exec.Command(s.binary, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	cmd.SysProcAttr = procAttr()
	if s.opts.FakeClock {
		env, err := s.fakeClockEnv()
		if err != nil {
			return err
		}
		cmd.Env = env
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit status of a server we signal carries no news
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited, s.paused, s.stopped = cmd, exited, false, false
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, s.opts.ReadyTimeout)
	defer cancel()
	if err := waitReady(ctx, s.Addr(), exited); err != nil {
		s.kill()
		return fmt.Errorf("start redis-server on port %d: %w; log:\n%s", s.port, err, s.logs.String())
	}
	return nil
}

// waitReady polls addr with PING until it answers PONG, the process exits or
// ctx ends.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ping(ctx, addr) == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("process exited before answering PING")
		case <-ctx.Done():
			return fmt.Errorf("no PONG: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// ping sends one PING over a fresh connection and expects +PONG.
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free when asked.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr is the server's address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's address as a redis:// URL, as redis.ParseURL reads it.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Logs returns everything the server has logged since Start, across restarts.
func (s *Server) Logs() string { return s.logs.String() }

// Running reports whether the process is alive (paused counts as alive).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aliveLocked()
}

func (s *Server) aliveLocked() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Paused reports whether the server is stopped by Pause.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused && s.aliveLocked()
}

// Stop ends the server (SIGTERM, then SIGKILL after 5 s) and removes its
// directory. It is idempotent and safe to call on a killed or paused server.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, exited, first := s.cmd, s.exited, !s.stopped
	s.stopped = true
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Process.Signal(syscall.SIGCONT) // a paused server acts on SIGTERM only once resumed
		select {
		case <-exited:
		case <-time.After(stopGrace):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	if first {
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("stop redis-server: %w", err)
		}
	}
	return nil
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it to
// exit. The data is lost; Restart brings up an empty server on the same port.
// Killing a server that is not running returns nil.
func (s *Server) Kill() error {
	s.kill()
	return nil
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart kills the server if it runs and starts it again, empty, on the same
// port, returning once it answers PING. A cluster node restarts with its
// nodes file (slots and peers) but without data. Errors: ErrStopped after
// Stop, or the start failure.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	s.kill()
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// Pause stops the process with SIGSTOP: connections stay open and commands
// hang until Resume, as on a server stalled by the OS or a long fork.
// Errors: ErrStopped when the process is not running.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP, true) }

// Resume continues a paused server with SIGCONT. Errors: ErrStopped when the
// process is not running.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.aliveLocked() {
		return ErrStopped
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal redis-server: %w", err)
	}
	s.paused = paused
	return nil
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a process's
// stdout and stderr and reads by Logs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
