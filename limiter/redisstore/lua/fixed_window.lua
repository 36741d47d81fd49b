-- fixed_window.lua mirrors limiter.fixedWindow. State "start count": the
-- window's start and its count. The TTL ends with the window, so a steady
-- client never pushes it forward (field cases C3, C6, C7).
algorithms['fixed_window'] = function(key, w, limit, n)
  local start, count = window_start(w), 0
  local a, b = state(key, 2)
  if a == start then
    count = b
  elseif a and a > start then -- the clock stepped back: keep counting the newer window
    start, count = a, b
  end -- else a fresh key or a later window: a fresh count, whatever the old key's TTL said
  local left = (start - now) + w
  if count + math.max(n, 1) > limit then
    return {0, limit - count, left, left, 0}
  end
  count = count + n
  local reset = left
  if count == 0 then
    reset = 0
  end
  return {1, limit - count, reset, 0, 0}, function()
    redis.call('SET', key, string.format('%d %d', start, count), 'PX', ttl(left))
  end
end
