-- fixed_window.lua mirrors limiter.fixedWindow. State "start count seen":
-- the window's start, its count and the time of the write. The TTL ends
-- with the window, so a steady client never pushes it forward (field cases
-- C3, C6, C7). A backward step of the clock moves the window back with it
-- (step_back), so it ends when it would have had the clock not stepped.

-- fw_write stores count in the window that ends left microseconds from now.
local function fw_write(key, start, count, left)
  redis.call('SET', key, string.format('%d %d %d', start, count, now), 'PX', ttl(left))
end

algorithms['fixed_window'] = function(key, w, limit, n)
  local start, count, back = idiv(now, w) * w, 0, 0
  local a, b, seen = state(key, three, two)
  if a then
    back = step_back(seen or a) -- an earlier version's state: written at or after its start
    if now < (a - back) + w then -- the stored window still runs
      start, count = a - back, b
    end -- else a fresh count, whatever the old key's TTL said
  end
  local left = (start - now) + w
  local rebase
  if back > 0 then
    rebase = function() fw_write(key, start, count, left) end
  end
  if count + math.max(n, 1) > limit then
    return {0, limit - count, left, left, 0}, nil, rebase
  end
  local charged = count + n
  local reset = left
  if charged == 0 then
    reset = 0
  end
  return {1, limit - charged, reset, 0, 0}, function() fw_write(key, start, charged, left) end, rebase
end
