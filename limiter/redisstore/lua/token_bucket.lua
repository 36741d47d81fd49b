-- token_bucket.lua mirrors limiter.tokenBucket. State "tokens last seen":
-- the tokens left, the time of the last whole refill and the time of the
-- write. A backward step of the clock moves last back with it (step_back).

-- tb_write stores tokens below the burst, whose TTL is the time to refill.
-- As gcra_write does, it reuses the state and TTL it wrote last when they
-- are the same, as they are for the keys of one evaluation that were fresh.
-- With fresh set, it writes only if the key holds no state, and returns
-- the state the key holds, or false (SET NX GET, as gcra_write).
local written_tokens, written_last, written_now, written_us, written_slack, written_state, written_ttl
local function tb_write(key, t, burst, tokens, last, fresh)
  local us = (last - now) + (burst - tokens) * t
  if tokens ~= written_tokens or last ~= written_last or now ~= written_now or us ~= written_us or ttl_slack ~= written_slack then
    written_tokens, written_last, written_now, written_us, written_slack = tokens, last, now, us, ttl_slack
    written_state, written_ttl = string.format('%d %d %d', tokens, last, now), ttl(us)
  end
  if fresh then
    return redis.call('SET', key, written_state, 'PX', written_ttl, 'NX', 'GET')
  end
  redis.call('SET', key, written_state, 'PX', written_ttl)
end

-- tb_state reads key's bucket refilled to now: its tokens, the time of the
-- last whole refill and the clock's backward step (lease.lua reads it too).
-- v is the key's state when the caller has read it already.
local function tb_state(key, t, burst, v)
  local tokens, last, back = burst, now, 0 -- a fresh key: a full bucket
  local a, b, seen = parse(v or redis.call('GET', key), key, three, two)
  if a then
    back = step_back(seen or b)
    tokens, last = a, b - back
  end
  local elapsed = now - last
  if elapsed > 0 then
    local refill = idiv(elapsed, t)
    if tokens + refill >= burst then
      tokens, last = burst, now
    else
      tokens, last = tokens + refill, last + refill * t -- keep the partial interval
    end
  end
  return tokens, last, back
end

algorithms['token_bucket'] = function(key, t, burst, n, alone)
  local ask = n > 1 and n or 1 -- max(n, 1)
  local v
  if alone and n > 0 and ask <= burst and redis.REDIS_VERSION_NUM then
    -- A fresh key's full bucket admits this request: write what it leaves
    -- unless the key holds a state, as gcra does.
    v = tb_write(key, t, burst, burst - n, now, true)
    if not v then
      return {1, burst - n, n * t, 0, 0}
    end
  end
  local tokens, last, back = tb_state(key, t, burst, v)
  if tokens < ask then -- then tokens < burst: the reset is the refill
    local o = {0, tokens, (last - now) + (burst - tokens) * t, (last - now) + (ask - tokens) * t, 0}
    if back == 0 then
      return o
    elseif alone then
      if n > 0 then
        tb_write(key, t, burst, tokens, last)
      end
      return o
    end
    return o, nil, function() tb_write(key, t, burst, tokens, last) end
  end
  local left = tokens - n
  local reset = 0
  if left < burst then
    reset = (last - now) + (burst - left) * t
  end
  local o = {1, left, reset, 0, 0}
  if alone then
    if n > 0 then
      tb_write(key, t, burst, left, last)
    end
    return o
  end
  local rebase
  if back > 0 then
    rebase = function() tb_write(key, t, burst, tokens, last) end
  end
  return o, function() tb_write(key, t, burst, left, last) end, rebase
end
