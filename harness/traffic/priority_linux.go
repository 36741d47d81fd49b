//go:build linux

package traffic

import (
	"runtime"
	"syscall"
)

// raisePriority locks the calling goroutine to its thread and lowers the
// thread's nice value by releaseNice (Linux sets it per thread, see
// setpriority(2)), so that the processes a burst wakes, the target's
// among them, do not take the processor from a releaser between two
// writes. It needs CAP_SYS_NICE or an RLIMIT_NICE that allows it; without,
// it changes nothing and reports false. restore, which the same goroutine
// must call, puts the nice value back and unlocks the thread; a thread
// whose value could not be put back is not unlocked, so it ends with the
// goroutine rather than serve others at a raised priority.
func raisePriority() (restore func(), raised bool) {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	// The raw getpriority(2) returns 20 - nice, from 1 (nice 19) to 40
	// (nice -20).
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		runtime.UnlockOSThread()
		return func() {}, false
	}
	nice := 20 - raw
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, max(nice-releaseNice, -20)); err != nil {
		runtime.UnlockOSThread()
		return func() {}, false
	}
	return func() {
		if syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice) == nil {
			runtime.UnlockOSThread()
		}
	}, true
}
