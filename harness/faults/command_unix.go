//go:build unix

package faults

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes cmd the leader of a new process group, and its
// cancellation kill that group by its ID (the leader's PID): the shell and
// whatever it started, and nothing else.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
