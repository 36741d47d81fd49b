//go:build unix && !linux

package instances

import "syscall"

// procAttr: without a parent-death signal, instances are stopped by the
// harness's cleanup alone.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
