-- gcra.lua mirrors limiter.gcra, the virtual-scheduling GCRA (ATM Forum TM
-- 4.0, 4.4.2). State "tat seen": the theoretical arrival time and the time
-- of the write. A backward step of the clock moves the TAT back with it
-- (step_back), so the comparison is the one at max(now, seen). With delay
-- set it is the leaky bucket as a queue, whose admitted requests wait for
-- their slot.

-- quo is Go's integer division a / b (truncated toward zero), b > 0.
local function quo(a, b)
  if a < 0 then
    return -idiv(-a, b)
  end
  return idiv(a, b)
end

-- gcra_write stores the TAT at offset tat from now. The requests of one
-- evaluation are decided at one now, so all those of keys that were fresh
-- (most identities of an API, far below their limits) write the same state
-- and TTL: the last ones written are reused, which spares Redis the two
-- string.format calls, about an eighth of such a decision's cost.
-- With fresh set, it writes only if the key holds no state, and returns
-- the state the key holds, or false (SET NX GET, Redis 7 and later).
local written_now, written_tat, written_slack, written_state, written_ttl
local function gcra_write(key, tat, fresh)
  if tat ~= written_tat or now ~= written_now or ttl_slack ~= written_slack then
    written_now, written_tat, written_slack = now, tat, ttl_slack
    written_state, written_ttl = string.format('%d %d', now + tat, now), ttl(tat)
  end
  if fresh then
    return redis.call('SET', key, written_state, 'PX', written_ttl, 'NX', 'GET')
  end
  redis.call('SET', key, written_state, 'PX', written_ttl)
end

local function gcra(key, t, burst, n, alone, delay)
  local capacity = burst * t
  local tat, back = 0, 0 -- offset of the theoretical arrival time from now
  local v
  local fresh_tat = (n > 1 and n or 1) * t -- max(n, 1) * t
  if alone and n > 0 and fresh_tat <= capacity and redis.REDIS_VERSION_NUM then
    -- A key without state admits this request: write its new state
    -- unless the key holds one, which SET NX GET then returns. A fresh key,
    -- the usual one for an identity far below its limit, costs Redis one
    -- command instead of a GET and a SET.
    v = gcra_write(key, fresh_tat, true)
    if not v then
      return {1, idiv(capacity - fresh_tat, t), fresh_tat, 0, 0}
    end
  else
    v = redis.call('GET', key)
  end
  local stored, seen = parse(v, key, two, '^(%-?%d+)$')
  if stored then
    -- A state of an earlier version kept no seen: its write was at least
    -- at the TAT minus the burst's span.
    back = step_back(seen or (stored - capacity))
    tat = (stored - back) - now -- max(…, 0), without a call into C
    if tat < 0 then
      tat = 0
    end
  end
  local new_tat = tat + fresh_tat
  if new_tat > capacity or n == 0 then
    local o
    if new_tat > capacity then
      o = {0, quo(capacity - tat, t), tat, new_tat - capacity, 0}
    else -- a peek that fits
      o = {1, quo(capacity - tat, t), tat, 0, 0}
    end
    if back == 0 then
      return o
    elseif alone then
      if n > 0 then
        gcra_write(key, tat)
      end
      return o
    end
    return o, nil, function() gcra_write(key, tat) end
  end
  local wait = 0
  if delay then
    wait = tat
  end
  local o = {1, idiv(capacity - new_tat, t), new_tat, 0, wait} -- admitted: capacity >= new_tat
  if alone then
    gcra_write(key, new_tat)
    return o
  end
  local rebase
  if back > 0 then
    rebase = function() gcra_write(key, tat) end
  end
  return o, function() gcra_write(key, new_tat) end, rebase
end

-- The GCRA's decide function is gcra itself, delay nil.
algorithms['gcra'] = gcra
