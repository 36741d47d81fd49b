//go:build !unix

package reports

// cpuTime is 0 where the process's CPU time is not at hand.
func cpuTime() float64 { return 0 }
