//go:build linux

package instances

import "syscall"

// procAttr has the kernel kill an instance when the process that started it
// dies, so no instance outlives a crashed or interrupted run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
