-- sliding_window_counter.lua mirrors limiter.slidingWindowCounter. State
-- "start prev curr seen": the current window's start, the previous window's
-- count, the current one's and the time of the write. It decides like a
-- fresh key two windows after start. A backward step of the clock moves the
-- windows back with it (step_back); they keep that phase until the key is
-- fresh again.

-- swc_write stores the counts of the window starting at start.
local function swc_write(key, w, start, prev, curr)
  redis.call('SET', key, string.format('%d %d %d %d', start, prev, curr, now), 'PX', ttl((start - now) + 2 * w))
end

algorithms['sliding_window_counter'] = function(key, w, limit, n)
  local start, prev, curr, back = idiv(now, w) * w, 0, 0, 0
  local a, b, c, seen = state(key, '^(%-?%d+) (%-?%d+) (%-?%d+) (%-?%d+)$', three)
  if a then
    back = step_back(seen or a) -- an earlier version's state: written at or after its start
    a = a - back
    if now - a < w then -- the stored window still runs
      start, prev, curr = a, b, c
    elseif now - a < 2 * w then -- the next one: the current count becomes the previous
      start, prev = a + w, c
    end -- else nothing weighs any more: a fresh, aligned window
  end
  local rebase
  if back > 0 then
    rebase = function() swc_write(key, w, start, prev, curr) end
  end
  local elapsed = now - start
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
    return {0, idiv(math.max(capacity - estimate, 0), w), reset_after(prev, curr), wait, 0}, nil, rebase
  end
  local charged = curr + n
  estimate = estimate + n * w
  return {1, idiv(capacity - estimate, w), reset_after(prev, charged), 0, 0}, function()
    swc_write(key, w, start, prev, charged)
  end, rebase
end
