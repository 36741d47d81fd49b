-- sliding_window_counter.lua mirrors limiter.slidingWindowCounter. State
-- "start prev curr": the current window's start, the previous window's count
-- and the current one's. It decides like a fresh key two windows after start.
algorithms['sliding_window_counter'] = function(key, w, limit, n)
  local start, prev, curr = window_start(w), 0, 0
  local a, b, c = state(key, 3)
  if a == start then
    prev, curr = b, c
  elseif a == start - w then
    prev, curr = c, 0
  elseif a and a > start then -- the clock stepped back: stay in the newer window
    start, prev, curr = a, b, c
  end
  local elapsed = math.max(now - start, 0)
  -- The estimate prev*(w-elapsed)/w + curr, scaled by w to stay in integers.
  local estimate = prev * (w - elapsed) + curr * w
  local capacity = limit * w
  local function reset_after(p, c)
    if c > 0 then
      return (start - now) + 2 * w
    elseif p > 0 then
      return (start - now) + w
    end
    return 0
  end
  local ask = math.max(n, 1)
  if estimate + ask * w > capacity then
    -- slidingCounterWait: within this window once enough of prev has slid
    -- out, else in the next one, where curr becomes the previous count.
    local function fits_at(p, c)
      if p == 0 then
        return 0
      end
      return math.max(w - idiv((limit - c - ask) * w, p), 0)
    end
    local wait
    if curr + ask <= limit then
      wait = fits_at(prev, curr) - elapsed
    else
      wait = w - elapsed + fits_at(curr, 0)
    end
    return {0, idiv(math.max(capacity - estimate, 0), w), reset_after(prev, curr), wait, 0}
  end
  curr = curr + n
  estimate = estimate + n * w
  return {1, idiv(capacity - estimate, w), reset_after(prev, curr), 0, 0}, function()
    redis.call('SET', key, string.format('%d %d %d', start, prev, curr), 'PX', ttl((start - now) + 2 * w))
  end
end
