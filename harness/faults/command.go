package faults

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
)

// commandWaitDelay is how long a finished command's output is still read
// when a process it left running holds the output open.
const commandWaitDelay = time.Second

// maxErrOutput is the most bytes of each stream an error quotes; the whole
// output (up to runrecord.MaxCommandOutput) is in the CommandRun.
const maxErrOutput = 400

// runCommand runs command with `sh -c` in dir (empty: the current
// directory), bounded by timeout and by ctx, and returns how it ran, with
// StartNs counted from start. The shell leads a process group of its own,
// and when the timeout or ctx ends first that group — and nothing else — is
// killed. It never returns nil.
func runCommand(ctx context.Context, command, dir string, timeout time.Duration, start time.Time) *runrecord.CommandRun {
	began := time.Now()
	run := &runrecord.CommandRun{Command: command, Dir: dir, StartNs: began.Sub(start).Nanoseconds(), ExitCode: -1}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "-c", command)
	cmd.Dir = dir
	stdout, stderr := &capBuffer{}, &capBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = commandWaitDelay
	ownProcessGroup(cmd)
	err := cmd.Run()
	run.Duration = time.Since(began)
	run.Stdout, run.Stderr = stdout.String(), stderr.String()
	run.Truncated = stdout.truncated() || stderr.truncated()
	if cmd.ProcessState != nil {
		run.ExitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case cmd.ProcessState == nil:
		run.Err = fmt.Sprintf("could not start: %v", err)
	case run.ExitCode == -1 && ctx.Err() != nil:
		run.Err = "cancelled as the run ended; its process group was killed"
	case run.ExitCode == -1 && cctx.Err() != nil:
		run.TimedOut = true
		run.Err = fmt.Sprintf("timed out after %v; its process group was killed", timeout)
	case run.ExitCode == -1:
		run.Err = fmt.Sprintf("ended by a signal: %v", cmd.ProcessState)
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited; a process it left running held its output open.
	}
	return run
}

// commandError describes a failed run of a fault's step ("inject" or
// "heal") with what it printed, or returns nil when it succeeded.
func commandError(step string, run *runrecord.CommandRun) error {
	if !run.Failed() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s command %q", step, run.Command)
	if run.Err != "" {
		fmt.Fprintf(&b, " %s", run.Err)
	} else {
		fmt.Fprintf(&b, " exited %d after %v", run.ExitCode, run.Duration.Round(time.Millisecond))
	}
	for _, o := range []struct{ name, text string }{{"stderr", run.Stderr}, {"stdout", run.Stdout}} {
		if t := strings.TrimSpace(o.text); t != "" {
			if len(t) > maxErrOutput {
				t = "…" + t[len(t)-maxErrOutput:]
			}
			fmt.Fprintf(&b, "; %s: %s", o.name, t)
		}
	}
	return errors.New(b.String())
}

// capBuffer keeps the first runrecord.MaxCommandOutput bytes written to it
// and counts the rest. It is safe for concurrent use.
type capBuffer struct {
	mu      sync.Mutex
	b       []byte
	dropped int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := min(len(p), runrecord.MaxCommandOutput-len(c.b))
	c.b = append(c.b, p[:keep]...)
	c.dropped += len(p) - keep
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}

func (c *capBuffer) truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped > 0
}
