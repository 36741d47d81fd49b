-- gcra.lua mirrors limiter.gcra, the virtual-scheduling GCRA (ATM Forum TM
-- 4.0, 4.4.2). State "tat seen": the theoretical arrival time and the time
-- of the write. A backward step of the clock moves the TAT back with it
-- (step_back), so the comparison is the one at max(now, seen). With delay
-- set it is the leaky bucket as a queue, whose admitted requests wait for
-- their slot.

-- gcra_write stores the TAT at offset tat from now.
local function gcra_write(key, tat)
  redis.call('SET', key, string.format('%d %d', now + tat, now), 'PX', ttl(tat))
end

local function gcra(key, t, burst, n, delay)
  local capacity = burst * t
  local tat, back = 0, 0 -- offset of the theoretical arrival time from now
  local stored, seen = state(key, 2)
  if stored then
    -- A state of an earlier version kept no seen: its write was at least
    -- at the TAT minus the burst's span.
    back = step_back(seen or (stored - capacity))
    tat = math.max((stored - back) - now, 0)
  end
  local rebase
  if back > 0 then
    rebase = function() gcra_write(key, tat) end
  end
  local new_tat = tat + math.max(n, 1) * t
  if new_tat > capacity then
    return {0, quo(capacity - tat, t), tat, new_tat - capacity, 0}, nil, rebase
  end
  if n == 0 then
    return {1, quo(capacity - tat, t), tat, 0, 0}, nil, rebase
  end
  local wait = 0
  if delay then
    wait = tat
  end
  return {1, quo(capacity - new_tat, t), new_tat, 0, wait}, function() gcra_write(key, new_tat) end, rebase
end

algorithms['gcra'] = function(key, t, burst, n)
  return gcra(key, t, burst, n, false)
end
