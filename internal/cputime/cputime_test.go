package cputime

import (
	"runtime"
	"testing"
)

// Process grows with work the process does, and never goes back.
func TestProcessGrows(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no process CPU time here")
	}
	before := Process()
	x := uint64(1)
	for Process() < before+20e6 { // 20 ms of CPU
		for range 1_000_000 {
			x = x*6364136223846793005 + 1
		}
	}
	if after := Process(); after <= before {
		t.Fatalf("Process went from %v to %v after work (%d)", before, after, x)
	}
}
