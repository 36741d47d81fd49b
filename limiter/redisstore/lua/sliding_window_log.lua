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

-- swl_rebase rewrites the entries from index from on, moved back by back
-- microseconds, and drops those before it; the caller sets the TTL.
local function swl_rebase(key, from, back)
  local entries = redis.call('LRANGE', key, from, -1)
  redis.call('DEL', key)
  for i = 1, #entries, 1000 do -- RPUSH in chunks: unpack has a stack limit
    local chunk = {}
    for j = i, math.min(i + 999, #entries) do
      local e = swl_entry(key, entries[j])
      chunk[#chunk + 1] = string.format('%d %d %d', e[1] - back, e[2], e[3])
    end
    redis.call('RPUSH', key, unpack(chunk))
  end
end

algorithms['sliding_window_log'] = function(key, w, limit, n)
  -- The newest entry was the log's last write. Per-key time never runs
  -- backwards: before it, the log is decided at its time t, and every
  -- entry written back is moved back by t - now (step_back).
  local newest = redis.call('LINDEX', key, -1)
  local last, t = nil, now
  if newest then
    last = swl_entry(key, newest)
    t = now + step_back(last[1])
  end
  local back = t - now
  -- Entries are dropped from the front only, as the Go log drops them.
  local expired, first, count = 0, nil, 0
  if last then
    expired, first = swl_find(key, 0, function(e) return e[1] > t - w end)
  end
  if first then
    count = last[3] - first[3] + first[2]
  end
  local reset = 0
  if first then
    reset = (last[1] - t) + w
  end
  local rebase
  if back > 0 then
    rebase = function()
      swl_rebase(key, expired, back)
      redis.call('PEXPIRE', key, ttl(w)) -- the newest entry, now at now, slides out then
    end
  end
  local ask = math.max(n, 1)
  if count + ask > limit then
    -- Wait for the oldest entries holding the excess to slide out.
    local wait = 0
    if first then
      local target = first[3] - first[2] + (count + ask - limit)
      local _, e = swl_find(key, expired, function(e) return e[3] >= target end)
      if e then
        wait = (e[1] - t) + w
      end
    end
    return {0, limit - count, reset, wait, 0}, nil, rebase
  end
  if n == 0 then
    return {1, limit - count, reset, 0, 0}, nil, rebase
  end
  return {1, limit - count - n, w, 0, 0}, function()
    if back > 0 then
      swl_rebase(key, expired, back)
    elseif expired > 0 then
      redis.call('LTRIM', key, expired, -1)
    end
    if last and last[1] - back == now then
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
  end, rebase
end
