// Package cputime reads the CPU time the running process has used, for
// benchmarks on a shared machine: a figure other processes do not inflate,
// where wall time is.
package cputime

import "time"

// Process is the CPU time, user and system, the process has used so far
// (child processes, such as a redis-server a test started, excluded); 0
// where the system does not tell it. Safe for concurrent use.
func Process() time.Duration { return process() }
