package redisstore

import (
	_ "embed" // the Lua sources below

	"github.com/redis/go-redis/v9"
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
)

// decideScript is the one script every decision runs: the files above joined
// into one chunk, the prelude first (it declares what the algorithms use) and
// the dispatcher last, so a request under limits of different algorithms is
// still one atomic evaluation with one cached SHA-1. Script.Run sends EVALSHA
// and falls back to EVAL on NOSCRIPT (a restarted or flushed Redis).
var decideScript = redis.NewScript(preludeLua + "\n" +
	tokenBucketLua + "\n" +
	gcraLua + "\n" +
	leakyBucketLua + "\n" +
	fixedWindowLua + "\n" +
	slidingWindowLogLua + "\n" +
	slidingWindowCounterLua + "\n" +
	decideLua)
