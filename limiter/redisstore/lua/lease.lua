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
-- (HOLD in microseconds); lease_of resolves such names when the dispatcher
-- meets one, so decide.lua runs them as any algorithm. The
-- outcome has two more fields than the others': the units granted (0 for
-- a plain decision) and the shift, now + hold - base, in microseconds.

-- lease_of defines the functions below only when a lease spec is met, so
-- that the evaluations of plain requests do not create them.
lease_of = function(name)
  local alg, want, hold = string.match(name, '^lease:(%a[%w_]*):(%d+):(%d+)$')
  if (alg ~= 'gcra' and alg ~= 'token_bucket') or algorithms[alg] == nil then
    return nil
  end

  -- lease_write stores the state of a granted lease of g units whose TAT is
  -- at offset new_tat from now: the GCRA's, or the token bucket's equivalent.
  local function lease_write(key, t, burst, g, new_tat)
    local value
    if alg == 'gcra' then
      value = string.format('%d %d', now + new_tat, now)
    else
      local tokens = burst - g - idiv(hold + t - 1, t)
      value = string.format('%d %d %d', tokens, now + new_tat - (burst - tokens) * t, now)
    end
    redis.call('SET', key, value, 'PX', ttl(new_tat))
  end

  want, hold = tonumber(want), tonumber(hold)
  local plain = algorithms[alg]
  return function(key, t, burst, n, alone)
    local tau = burst * t
    local tat, back = 0, 0 -- offset of the equivalent TAT from now
    if alg == 'gcra' then
      local stored, seen = state(key, two, '^(%-?%d+)$')
      if stored then
        back = step_back(seen or (stored - tau))
        tat = math.max((stored - back) - now, 0)
      end
    else
      -- tb_state is token_bucket.lua's, which every script deciding a
      -- token bucket holds before this file.
      local tokens, last
      tokens, last, back = tb_state(key, t, burst)
      if tokens < burst then
        tat = math.max((last - now) + (burst - tokens) * t, 0)
      end
    end
    local g = math.min(want, idiv(tau - tat, t))
    if tat > hold or g <= n then
      local o, commit, rebase = plain(key, t, burst, n, alone)
      return {o[1], o[2], o[3], o[4], o[5], 0, 0}, commit, rebase
    end
    local new_tat = hold + g * t
    local shift = hold - tat
    local o = {1, g - n + idiv(shift, t), new_tat, 0, 0, g, shift}
    if alone then
      if n > 0 then
        lease_write(key, t, burst, g, new_tat)
      end
      return o
    end
    return o, function() lease_write(key, t, burst, g, new_tat) end, nil
  end
end
