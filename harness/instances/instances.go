//go:build unix

// Package instances starts and controls the sample API processes a scenario
// runs against: each instance is its own OS process running `rlbench serve`
// on a loopback port, so instances share nothing but the Redis they are given,
// exactly as a production gateway's replicas do. The harness kills, restarts
// and stops them; they die with the process that started them.
package instances

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// DefaultStartTimeout bounds the wait for an instance to print its address.
	DefaultStartTimeout = 20 * time.Second
	// DefaultStopGrace is how long Stop waits after SIGTERM before SIGKILL;
	// the sample API drains in-flight requests in that time.
	DefaultStopGrace = 10 * time.Second
	// listenPrefix starts the line `rlbench serve` prints once it is bound.
	listenPrefix = "listening on "
	// maxLogBytes caps the output kept per instance for error messages.
	maxLogBytes = 64 << 10
)

// ErrNotRunning is returned by Kill and Stop on an instance that has exited.
var ErrNotRunning = errors.New("instance is not running")

// Spec describes one instance.
type Spec struct {
	// Name identifies the instance to the harness (Group.Find, messages);
	// it is the instance name its configuration gives, which the instance
	// sends in its X-Instance header.
	Name string
	// Binary is the rlbench executable; empty means this process's own.
	Binary string
	// Config is the instance's configuration file (sampleapi.Config's YAML
	// form), passed as --config: everything the instance runs with. Empty
	// runs the embedded default configuration.
	Config string
	// Args are further `serve` flags, overriding the configuration; the
	// launcher adds --addr, the loopback address kept across restarts.
	Args []string
	// Env is added to the environment.
	Env []string
	// StartTimeout bounds the wait for the listening line; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
}

// Instance is one running sample API process. Its methods are safe for
// concurrent use.
type Instance struct {
	spec Spec
	addr string // host:port, kept across restarts

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the exit status once exited
	logs   *tailBuffer
}

// Start starts an instance on a free loopback port and waits until it
// prints the address it listens on.
func Start(ctx context.Context, spec Spec) (*Instance, error) {
	in := &Instance{spec: spec, addr: "127.0.0.1:0", logs: &tailBuffer{}}
	if err := in.start(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// Name is the instance's name.
func (in *Instance) Name() string { return in.spec.Name }

// Addr is the instance's host:port.
func (in *Instance) Addr() string { return in.addr }

// URL is the instance's base URL, "http://127.0.0.1:PORT".
func (in *Instance) URL() string { return "http://" + in.addr }

// Logs returns the last 64 KiB the instance wrote to stdout and stderr.
func (in *Instance) Logs() string { return in.logs.String() }

func (in *Instance) start(ctx context.Context) error {
	bin := in.spec.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("start instance %s: find own executable: %w", in.spec.Name, err)
		}
		bin = exe
	}
	if abs, err := filepath.Abs(bin); err == nil && strings.ContainsRune(bin, filepath.Separator) {
		bin = abs // a path, not a name to look up on the PATH
	}
	args := []string{"serve", "--addr", in.addr}
	if in.spec.Config != "" {
		args = append(args, "--config", in.spec.Config)
	}
	args = append(args, in.spec.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), in.spec.Env...)
	cmd.SysProcAttr = procAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("start instance %s: %w", in.spec.Name, err)
	}
	cmd.Stderr = in.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start instance %s: %w", in.spec.Name, err)
	}
	exited := make(chan struct{})
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			in.logs.Write([]byte(line + "\n"))
			if addr, ok := strings.CutPrefix(line, listenPrefix); ok {
				select {
				case addrc <- strings.TrimSpace(addr):
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		err := cmd.Wait()
		in.mu.Lock()
		in.err = err
		in.mu.Unlock()
		close(exited)
	}()
	in.mu.Lock()
	in.cmd, in.exited = cmd, exited
	in.mu.Unlock()

	timeout := in.spec.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case addr := <-addrc:
		if _, _, err := net.SplitHostPort(addr); err != nil {
			in.Kill()
			return fmt.Errorf("start instance %s: it printed the address %q: %w", in.spec.Name, addr, err)
		}
		in.addr = addr
		return nil
	case <-exited:
		return fmt.Errorf("start instance %s: exited before listening (%v); its output:\n%s", in.spec.Name, in.exitErr(), in.Logs())
	case <-timer.C:
		in.Kill()
		return fmt.Errorf("start instance %s: no %q line within %v; its output:\n%s", in.spec.Name, listenPrefix+"ADDR", timeout, in.Logs())
	case <-ctx.Done():
		in.Kill()
		return fmt.Errorf("start instance %s: %w", in.spec.Name, ctx.Err())
	}
}

func (in *Instance) exitErr() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

// Running reports whether the process is alive.
func (in *Instance) Running() bool {
	in.mu.Lock()
	exited := in.exited
	in.mu.Unlock()
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (in *Instance) Kill() error {
	return in.signal(syscall.SIGKILL, 0)
}

// Stop asks the process to shut down (SIGTERM), waits up to grace (0 means
// DefaultStopGrace) for it to drain and exit, then kills it.
func (in *Instance) Stop(grace time.Duration) error {
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	return in.signal(syscall.SIGTERM, grace)
}

func (in *Instance) signal(sig syscall.Signal, grace time.Duration) error {
	in.mu.Lock()
	cmd, exited := in.cmd, in.exited
	in.mu.Unlock()
	select {
	case <-exited:
		return ErrNotRunning
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal instance %s: %w", in.spec.Name, err)
	}
	if grace > 0 {
		select {
		case <-exited:
			return nil
		case <-time.After(grace):
			cmd.Process.Kill()
		}
	}
	<-exited
	return nil
}

// Restart starts a stopped or killed instance again on the same address.
func (in *Instance) Restart(ctx context.Context) error {
	if in.Running() {
		return fmt.Errorf("restart instance %s: it is still running", in.spec.Name)
	}
	return in.start(ctx)
}

// Group is the instances of one scenario.
type Group []*Instance

// StartGroup starts one instance per spec, concurrently. On any failure it
// kills the ones that started and returns the first error, with the count
// of instances that failed.
func StartGroup(ctx context.Context, specs []Spec) (Group, error) {
	g := make(Group, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() { g[i], errs[i] = Start(ctx, spec) })
	}
	wg.Wait()
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			first = cmp.Or(first, err)
			failed++
		}
	}
	if first == nil {
		return g, nil
	}
	for _, in := range g {
		if in != nil {
			in.Kill()
		}
	}
	if failed > 1 { // instances share a configuration: one message says it
		return nil, fmt.Errorf("%w\n(%d of %d instances failed to start)", first, failed, len(specs))
	}
	return nil, first
}

// URLs lists the instances' base URLs in order.
func (g Group) URLs() []string {
	urls := make([]string, len(g))
	for i, in := range g {
		urls[i] = in.URL()
	}
	return urls
}

// Stop stops every running instance concurrently with the given grace.
func (g Group) Stop(grace time.Duration) {
	var wg sync.WaitGroup
	for _, in := range g {
		wg.Go(func() { in.Stop(grace) })
	}
	wg.Wait()
}

// Find returns the instance named name, or nil.
func (g Group) Find(name string) *Instance {
	for _, in := range g {
		if in.Name() == name {
			return in
		}
	}
	return nil
}

// tailBuffer keeps the last maxLogBytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - maxLogBytes; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
