-- sliding_window_log.lua mirrors limiter.slidingWindowLog. State: a list of
-- "at n cum" entries, oldest first: n units admitted at time at, and cum the
-- units admitted up to and including this entry since the list was created.
-- An entry counts while now - at < w. The running total makes a decision
-- cost O(1) amortized instead of a walk over the whole log: the live count
-- is last.cum - first.cum + first.n, expired entries are trimmed from the
-- front once, and only a rejection walks, from the front, as far as the
-- entries holding the excess.

-- swl_entry parses one list element.
local function swl_entry(key, s)
  local at, c, cum = string.match(s, '^(%d+) (%d+) (%d+)$')
  if not at then
    error('rlbench: malformed rate-limit log at ' .. key)
  end
  return {tonumber(at), tonumber(c), tonumber(cum)}
end

-- swl_find returns the 0-based index and value of the first entry from index
-- i on for which stop(entry) holds, reading the list in growing chunks; the
-- list's length and nil when there is none.
local function swl_find(key, i, stop)
  local size = 1
  while true do
    local chunk = redis.call('LRANGE', key, i, i + size - 1)
    for j = 1, #chunk do
      local e = swl_entry(key, chunk[j])
      if stop(e) then
        return i + j - 1, e
      end
    end
    i = i + #chunk
    if #chunk < size then
      return i, nil
    end
    size = math.min(size * 4, 256)
  end
end

algorithms['sliding_window_log'] = function(key, w, limit, n)
  -- Entries are dropped from the front only, as the Go log drops them.
  local expired, first = swl_find(key, 0, function(e) return e[1] > now - w end)
  local last, count = nil, 0
  if first then
    last = swl_entry(key, redis.call('LINDEX', key, -1))
    count = last[3] - first[3] + first[2]
  end
  local reset = 0
  if last then
    reset = (last[1] - now) + w
  end
  local ask = math.max(n, 1)
  if count + ask > limit then
    -- Wait for the oldest entries holding the excess to slide out.
    local wait = 0
    if first then
      local target = first[3] - first[2] + (count + ask - limit)
      local _, e = swl_find(key, expired, function(e) return e[3] >= target end)
      if e then
        wait = (e[1] - now) + w
      end
    end
    return {0, limit - count, reset, wait, 0}
  end
  if n == 0 then
    return {1, limit - count, reset, 0, 0}
  end
  return {1, limit - count - n, w, 0, 0}, function()
    if expired > 0 then
      redis.call('LTRIM', key, expired, -1)
    end
    if last and last[1] == now then
      redis.call('LSET', key, -1, string.format('%d %d %d', now, last[2] + n, last[3] + n))
    else
      local cum = n
      if last then
        cum = last[3] + n
      end
      redis.call('RPUSH', key, string.format('%d %d %d', now, n, cum))
    end
    -- Fresh, as limiter's fresh decides, once the newest entry (now) has slid out.
    redis.call('PEXPIRE', key, ttl(w))
  end
end
