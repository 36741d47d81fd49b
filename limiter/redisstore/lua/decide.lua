-- decide.lua runs last. One evaluation decides one or more requests, in
-- order, each all-or-nothing under its limits; concurrent callers' requests
-- may share an evaluation, and each is atomic since the whole script is.
--
-- ARGV[1] is the milliseconds added to every TTL (0 except in test-clock
-- mode). ARGV[2] is "" when every request is decided at Redis TIME (the
-- production path: every instance shares the Redis clock), or "t" when
-- each request brings its own time (test-clock mode). Then, per request:
-- its time in microseconds (only with "t"), its cost n (0 = peek), its
-- number of limits k and k limit specs "ALGORITHM INTERVAL CAPACITY" (the
-- emission interval or window in microseconds). KEYS holds the requests'
-- keys in the same order, one per limit.
--
-- The reply has one element per request: five integers per limit (allowed,
-- remaining, reset_after, retry_after, delay), or an error reply when that
-- request failed (its writes, if any, were not made).
if redis.replicate_commands then
  redis.replicate_commands() -- Redis < 5: replicate effects, since TIME is read
end
ttl_slack = tonumber(ARGV[1])

-- specs caches parsed limit specs: a batch repeats the same few limits.
local specs = {}
local function spec(s)
  local p = specs[s]
  if p == nil then
    local alg, t, cap = string.match(s, '^(%S+) (%d+) (%d+)$')
    local decide = algorithms[alg]
    if decide == nil then
      error('rlbench: unknown limit spec ' .. tostring(s))
    end
    p = {decide, tonumber(t), tonumber(cap)}
    specs[s] = p
  end
  return p
end

-- decide_request decides the request whose keys follow KEYS[kbase] and whose
-- limit specs start at ARGV[abase]. It writes the new states only when every
-- limit admits; when one rejects, nothing is charged, the states the clock
-- stepped behind are moved (rebase), and the admitting limits are reported
-- as they stand (a peek). A peek (n = 0) writes nothing.
local function decide_request(kbase, abase, k, n)
  if k == 1 then -- the common case, without the bookkeeping below
    local p = spec(ARGV[abase])
    local o, commit, rebase = p[1](KEYS[kbase + 1], p[2], p[3], n)
    if n > 0 then
      if o[1] == 1 then
        commit()
      elseif rebase then
        rebase()
      end
    end
    return o
  end
  local outcomes, commits, rebases, admitted = {}, {}, {}, true
  for i = 1, k do
    local p = spec(ARGV[abase + i - 1])
    outcomes[i], commits[i], rebases[i] = p[1](KEYS[kbase + i], p[2], p[3], n)
    if outcomes[i][1] == 0 then
      admitted = false
    end
  end
  if admitted then
    if n > 0 then
      for i = 1, k do
        commits[i]()
      end
    end
  else
    if n > 0 then
      for i = 1, k do
        if rebases[i] then
          rebases[i]()
        end
      end
    end
    for i = 1, k do
      if outcomes[i][1] == 1 then
        local p = spec(ARGV[abase + i - 1])
        outcomes[i] = p[1](KEYS[kbase + i], p[2], p[3], 0)
      end
    end
  end
  local reply = {}
  for i = 1, k do
    local o = outcomes[i]
    for j = 1, 5 do
      reply[(i - 1) * 5 + j] = o[j]
    end
  end
  return reply
end

local own_time = ARGV[2] == 't'
if not own_time then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local replies = {}
local a, kbase = 3, 0
while a <= #ARGV do
  if own_time then
    now = tonumber(ARGV[a])
    a = a + 1
  end
  local n, k = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local ok, res = pcall(decide_request, kbase, a + 2, k, n)
  if ok then
    replies[#replies + 1] = res
  elseif type(res) == 'table' and res.err then
    replies[#replies + 1] = res -- an error from redis.call, already a reply
  else
    replies[#replies + 1] = redis.error_reply(tostring(res))
  end
  a, kbase = a + 2 + k, kbase + k
end
return replies
