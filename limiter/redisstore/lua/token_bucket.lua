-- token_bucket.lua mirrors limiter.tokenBucket. State "tokens last": the
-- tokens left and the time of the last refill.
algorithms['token_bucket'] = function(key, t, burst, n)
  local tokens, last = burst, now -- a fresh key: a full bucket
  local a, b = state(key, 2)
  if a then
    tokens, last = a, b
  end
  local elapsed = now - last
  if elapsed > 0 then -- a clock that steps back refills nothing
    local refill = idiv(elapsed, t)
    if tokens + refill >= burst then
      tokens, last = burst, now
    else
      tokens, last = tokens + refill, last + refill * t -- keep the partial interval
    end
  end
  local ask = math.max(n, 1)
  if tokens < ask then -- then tokens < burst: the reset is the refill
    return {0, tokens, (last - now) + (burst - tokens) * t, (last - now) + (ask - tokens) * t, 0}
  end
  tokens = tokens - n
  local reset = 0
  if tokens < burst then
    reset = (last - now) + (burst - tokens) * t
  end
  return {1, tokens, reset, 0, 0}, function()
    redis.call('SET', key, string.format('%d %d', tokens, last), 'PX', ttl(reset))
  end
end
