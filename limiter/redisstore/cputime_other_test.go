//go:build !unix

package redisstore_test

import "time"

// processCPU is 0 where the process's CPU time is not at hand.
func processCPU() time.Duration { return 0 }
