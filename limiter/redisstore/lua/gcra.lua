-- gcra.lua mirrors limiter.gcra, the virtual-scheduling GCRA (ATM Forum TM
-- 4.0, 4.4.2). State "tat": the theoretical arrival time. With delay set it
-- is the leaky bucket as a queue, whose admitted requests wait for their slot.
local function gcra(key, t, burst, n, delay)
  local tat = 0 -- offset of the theoretical arrival time from now
  local stored = state(key, 1)
  if stored then
    tat = math.max(stored - now, 0)
  end
  local capacity = burst * t
  local new_tat = tat + math.max(n, 1) * t
  if new_tat > capacity then
    return {0, quo(capacity - tat, t), tat, new_tat - capacity, 0}
  end
  if n == 0 then
    return {1, quo(capacity - tat, t), tat, 0, 0}
  end
  local wait = 0
  if delay then
    wait = tat
  end
  return {1, quo(capacity - new_tat, t), new_tat, 0, wait}, function()
    redis.call('SET', key, fmt(now + new_tat), 'PX', ttl(new_tat))
  end
end

algorithms['gcra'] = function(key, t, burst, n)
  return gcra(key, t, burst, n, false)
end
