-- prelude.lua: shared by every algorithm. The store concatenates this file,
-- one file per algorithm and decide.lua into one script, so a request under
-- several limits is decided in one atomic evaluation.
--
-- The calling convention is in decide.lua.
--
-- Lua numbers are doubles: the arithmetic below is exact for integers below
-- 2^53 (285 years of microseconds). Times are turned into offsets from now
-- before they are multiplied or added, so waits stay exact even when the
-- absolute times they derive from do not. Numbers written to Redis go through
-- string.format('%d'), never tostring, which would print 1e+15. Lua 5.1's
-- '%d' converts to a C long, 64 bits on the 64-bit platforms Redis runs on:
-- exact for every value the scripts write, and twice as fast as '%.0f'.

-- now is the decision's time in microseconds; ttl_slack is milliseconds
-- added to every TTL. decide.lua sets both.
local now, ttl_slack

-- algorithms maps an algorithm's name to its decide function:
--   decide(key, interval, capacity, n, alone) -> outcome, commit, rebase
-- outcome is {allowed (0/1), remaining, reset_after, retry_after, delay} in
-- units and microseconds; commit, when the request is admitted with n > 0,
-- writes the new state and its TTL; rebase, when the clock stepped back
-- behind the state's last write, writes the state moved back, uncharged, and
-- its TTL (see step_back). With alone false decide never writes. With alone
-- true (the limit is its request's only one) decide may instead make those
-- writes itself, as the dispatcher would at once: the commit when it admits
-- with n > 0, the rebase when it rejects with n > 0; it then returns no
-- function for them, and creates none.
--
-- The script is one function that Redis runs whole on every evaluation,
-- creating every closure and table it defines anew: the files define only
-- what their algorithms use, and the hot paths create no closure.
local algorithms = {}

-- lease_of, when lease.lua is part of the script, returns the decide
-- function of a lease spec's algorithm name, or nil (see lease.lua).
local lease_of

-- The functions below, run for every decision, round with the % operator
-- (x - x % 1 is floor(x), exactly) and compare instead of calling
-- math.floor, math.ceil or math.max: a call from Lua into C costs Redis
-- about as much as a dozen arithmetic instructions.

-- idiv is floor(a / b) for integer-valued a and b > 0, corrected for the
-- rounding of the double quotient.
local function idiv(a, b)
  local q = a / b
  q = q - q % 1
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

-- ttl is the PX argument for state that is fresh again in us microseconds:
-- rounded up to whole milliseconds plus one, so Redis never expires a key
-- before its state would decide like a fresh key's. It is formatted with
-- '%d', a C long: a number passed to redis.call as it is would be written
-- as 1e+08 by some Redis versions, which PX refuses. The last one is
-- remembered: most writes of a key that was fresh hold it for the same
-- span, evaluation after evaluation where the program is a function.
local ttl_us, ttl_us_slack, ttl_px
local function ttl(us)
  if us ~= ttl_us or ttl_slack ~= ttl_us_slack then
    local x = -us / 1000
    ttl_us, ttl_us_slack = us, ttl_slack
    ttl_px = string.format('%d', (x % 1 - x) + 1 + ttl_slack) -- ceil(us / 1000) = -floor(x)
  end
  return ttl_px
end

-- parse returns the integers of v, a state written as space-separated
-- integers, parsed with pattern (fields of them, the last being seen, the
-- time of the write) or, from a store of an earlier version that kept no
-- seen, with older (one field fewer; seen is then nil). It returns nothing
-- when v is false (the key is absent). The patterns are the files' string
-- constants, so no call creates a table.
local function parse(v, key, pattern, older)
  if not v then
    return nil
  end
  local a, b, c, d = string.match(v, pattern)
  if not a then
    a, b, c, d = string.match(v, older)
    if not a then
      error('rlbench: malformed rate-limit state at ' .. key)
    end
  end
  return tonumber(a), b and tonumber(b), c and tonumber(c), d and tonumber(d)
end

-- state reads key's state and parses it (see parse).
local function state(key, pattern, older)
  return parse(redis.call('GET', key), key, pattern, older)
end

-- The patterns of states of two, three and four fields.
local two = '^(%-?%d+) (%-?%d+)$'
local three = '^(%-?%d+) (%-?%d+) (%-?%d+)$'

-- Per-key time never runs backwards (see limiter/algorithms.go): a state
-- written at seen, after which the clock stepped back to now, is decided
-- as at seen by moving its times back by step_back(seen) = seen - now, and
-- the moved state is written even when the request is rejected, so that the
-- key's time runs on from now. Each algorithm returns, besides its outcome
-- and its commit, a rebase function that writes the moved state, or nil
-- when the clock did not step back.
local function step_back(seen)
  local back = seen - now
  if back > 0 then
    return back
  end
  return 0
end
