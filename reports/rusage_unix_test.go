//go:build unix

package reports

import "syscall"

// cpuTime is the CPU time, user and system, the process has used, in
// seconds: on a shared machine, a figure other processes do not inflate.
func cpuTime() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
