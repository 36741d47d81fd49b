-- lease.lua mirrors limiter.lease: a request under a gcra or token_bucket
-- limit that declares a lease may be granted up to `want` units at once,
-- charged as if spent at the lease's end, now + hold:
--   base = max(TAT, now); granted only if base <= now + hold and
--   base + g*t - now <= burst*t; new TAT = now + hold + g*t.
-- The token bucket takes the same decision on its equivalent TAT. When no
-- lease of more than the request's cost fits, the request is decided by
-- its algorithm as a plain one. Proof and hold: limiter/lease.go.
--
-- A lease's limit spec names the algorithm "lease:ALGORITHM:WANT:HOLD"
-- (HOLD in microseconds); the algorithms table resolves such names on
-- demand, so decide.lua's dispatcher runs them as any algorithm. The
-- outcome has two more fields than the others': the units granted (0 for
-- a plain decision) and the shift, now + hold - base, in microseconds.

local function lease(alg, want, hold)
  local plain = algorithms[alg]
  return function(key, t, burst, n)
    local tau = burst * t
    local tat, back = 0, 0 -- offset of the equivalent TAT from now
    if alg == 'gcra' then
      local stored, seen = state(key, 2)
      if stored then
        back = step_back(seen or (stored - tau))
        tat = math.max((stored - back) - now, 0)
      end
    else
      local a, b, seen = state(key, 3)
      if a then
        back = step_back(seen or b)
        local tokens, last = a, b - back
        local elapsed = now - last
        if elapsed > 0 then
          if elapsed >= (burst - tokens) * t then
            tokens, last = burst, now
          else
            local refill = idiv(elapsed, t)
            tokens, last = tokens + refill, last + refill * t
          end
        end
        if tokens < burst then
          tat = math.max((last - now) + (burst - tokens) * t, 0)
        end
      end
    end
    local g = math.min(want, idiv(tau - tat, t))
    if tat > hold or g <= n then
      local o, commit, rebase = plain(key, t, burst, n)
      return {o[1], o[2], o[3], o[4], o[5], 0, 0}, commit, rebase
    end
    local new_tat = hold + g * t
    local shift = hold - tat
    local commit
    if alg == 'gcra' then
      commit = function()
        redis.call('SET', key, string.format('%d %d', now + new_tat, now), 'PX', ttl(new_tat))
      end
    else
      local tokens = burst - g - idiv(hold + t - 1, t)
      commit = function()
        redis.call('SET', key, string.format('%d %d %d', tokens, now + new_tat - (burst - tokens) * t, now), 'PX', ttl(new_tat))
      end
    end
    return {1, g - n + idiv(shift, t), new_tat, 0, 0, g, shift}, commit, nil
  end
end

setmetatable(algorithms, {__index = function(_, name)
  local alg, want, hold = string.match(name, '^lease:(%a[%w_]*):(%d+):(%d+)$')
  if alg ~= 'gcra' and alg ~= 'token_bucket' then
    return nil
  end
  if rawget(algorithms, alg) == nil then
    return nil
  end
  return lease(alg, tonumber(want), tonumber(hold))
end})
