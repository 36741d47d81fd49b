//go:build !linux

package traffic

// raisePriority changes nothing outside Linux, where a thread's priority
// is not its own, and reports false.
func raisePriority() (restore func(), raised bool) { return func() {}, false }
