package redisstore

import (
	_ "embed" // the Lua sources below

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
)

// The Lua sources: a shared prelude, one file per algorithm, mirroring
// limiter/algorithms.go function by function, and the dispatcher.
var (
	//go:embed lua/prelude.lua
	preludeLua string
	//go:embed lua/token_bucket.lua
	tokenBucketLua string
	//go:embed lua/gcra.lua
	gcraLua string
	//go:embed lua/leaky_bucket.lua
	leakyBucketLua string
	//go:embed lua/fixed_window.lua
	fixedWindowLua string
	//go:embed lua/sliding_window_log.lua
	slidingWindowLogLua string
	//go:embed lua/sliding_window_counter.lua
	slidingWindowCounterLua string
	//go:embed lua/decide.lua
	decideLua string
	//go:embed lua/lease.lua
	leaseLua string
)

// decideProgram is the program of a request or batch under limits of
// several algorithms: the files above joined into one chunk, the prelude
// first (it declares what the algorithms use) and the dispatcher last, so a
// request under limits of different algorithms is still one atomic
// evaluation.
var decideProgram = newProgram(tokenBucketLua, gcraLua, leakyBucketLua, fixedWindowLua, slidingWindowLogLua, slidingWindowCounterLua, leaseLua)

// algorithmPrograms holds, per algorithm, the program of requests under
// limits of that algorithm alone: the same prelude and dispatcher around
// that algorithm's file only (the leaky bucket's with gcra.lua, whose GCRA
// it is; the token bucket's and the GCRA's with lease.lua, which decides
// their requests under a lease, so that leases and plain requests of one
// algorithm share a program and a batch). Redis runs a script's whole chunk
// on every evaluation, defining each of its functions anew, so as a script
// (EVALSHA) a program that defines one algorithm instead of six costs Redis
// about 2 µs less per evaluation; its decisions are the same, since the
// files are.
var algorithmPrograms = map[limiter.Algorithm]*program{
	limiter.TokenBucket:          newProgram(tokenBucketLua, leaseLua),
	limiter.GCRA:                 newProgram(gcraLua, leaseLua),
	limiter.LeakyBucket:          newProgram(gcraLua, leakyBucketLua),
	limiter.FixedWindow:          newProgram(fixedWindowLua),
	limiter.SlidingWindowLog:     newProgram(slidingWindowLogLua),
	limiter.SlidingWindowCounter: newProgram(slidingWindowCounterLua),
}

// programs lists every program, each at its index.
var programs []*program

// program is one chunk of the prelude, algorithm files and dispatcher, in
// the two forms Redis runs: a script (EVALSHA, and EVAL on NOSCRIPT) and a
// function library (FUNCTION LOAD once, then FCALL; Redis 7 and later).
// Redis runs a script's whole chunk on every evaluation, creating each of
// its functions anew, but a library's chunk once, when it loads it; the
// function it registers is dispatcher's evaluate alone, which makes a
// one-request call about a third cheaper for Redis (see
// BenchmarkRedisInstructions). Both decide alike, since the chunk is one.
type program struct {
	index   int           // in programs
	script  *redis.Script // the chunk, then `return evaluate(KEYS, ARGV)`
	name    string        // the library's and its function's: FunctionPrefix + the script's SHA-1
	library string        // "#!lua name=NAME", the chunk, then evaluate registered as NAME
}

// FunctionPrefix starts the name of every function library the store loads
// into Redis, and of its one function: "rlbench_" and the SHA-1 of the
// script it is the library of, so stores of different versions sharing a
// Redis load different libraries and never replace each other's. Libraries
// persist in Redis (and replicate) like its data; FUNCTION DELETE NAME
// removes one, and WithoutFunctions keeps the store from loading any.
const FunctionPrefix = "rlbench_"

// newProgram is the program of the prelude, the algorithm files and the
// dispatcher, in that order, one chunk.
func newProgram(algorithms ...string) *program {
	chunk := preludeLua + "\n"
	for _, a := range algorithms {
		chunk += a + "\n"
	}
	chunk += decideLua + "\n"
	script := redis.NewScript(chunk + "return evaluate(KEYS, ARGV)\n")
	name := FunctionPrefix + script.Hash()
	p := &program{
		index:   len(programs),
		script:  script,
		name:    name,
		library: "#!lua name=" + name + "\n" + chunk + "redis.register_function('" + name + "', evaluate)\n",
	}
	programs = append(programs, p)
	return p
}

// programOf is the program of an algorithm's requests: its own, or
// decideProgram for an algorithm without one.
func programOf(a limiter.Algorithm) *program {
	if p, ok := algorithmPrograms[a]; ok {
		return p
	}
	return decideProgram
}
