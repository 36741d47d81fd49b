//go:build unix && !linux

package redistest

import "syscall"

// procAttr has no parent-death signal to offer outside Linux; Stop and the
// test helpers' cleanups are then the only guard against stray servers.
func procAttr() *syscall.SysProcAttr { return nil }
