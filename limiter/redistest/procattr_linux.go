//go:build linux

package redistest

import "syscall"

// procAttr asks the kernel to kill redis-server when the process that
// started it dies, so that no server outlives a crashed test binary. Linux
// sends the signal when the thread that forked exits; the Go runtime keeps
// its threads for the life of the process except those of goroutines that
// exit while locked to their thread, which this package never does.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
