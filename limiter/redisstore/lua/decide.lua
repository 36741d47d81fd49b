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
-- The reply is one flat array, the requests' parts one after the other: per
-- request five integers per limit (allowed, remaining, reset_after,
-- retry_after, delay; a lease's outcome has two more, see lease.lua), or
-- a single error reply when that request failed
-- (its writes, if any, were not made). A flat array costs Redis and the
-- client one array per evaluation instead of one per request.
if redis.replicate_commands then
  redis.replicate_commands() -- Redis < 5: replicate effects, since TIME is read
end
ttl_slack = tonumber(ARGV[1])

-- int is tonumber(s) for an ARGV integer; "1", the usual cost and number
-- of limits, is compared (strings are interned: one pointer comparison)
-- instead of converted, which costs as much as a Redis GET.
local function int(s)
  if s == '1' then
    return 1
  end
  return tonumber(s)
end

-- spec parses a limit spec into its algorithm's decide function, interval
-- and capacity, remembering the last one: a batch repeats the same few
-- limits, and one remembered spec costs no table.
local last_spec, last_decide, last_t, last_cap
local function spec(s)
  if s ~= last_spec then
    local alg, t, cap = string.match(s, '^(%S+) (%d+) (%d+)$')
    local decide = algorithms[alg]
    if decide == nil and lease_of and alg then
      decide = lease_of(alg)
    end
    if decide == nil then
      error('rlbench: unknown limit spec ' .. tostring(s))
    end
    last_spec, last_decide, last_t, last_cap = s, decide, tonumber(t), tonumber(cap)
  end
  return last_decide, last_t, last_cap
end

-- decide_request decides the request whose keys follow KEYS[kbase] and whose
-- limit specs start at ARGV[abase]. It writes the new states only when every
-- limit admits; when one rejects, nothing is charged, the states the clock
-- stepped behind are moved (rebase), and the admitting limits are reported
-- as they stand (a peek). A peek (n = 0) writes nothing.
local function decide_request(kbase, abase, k, n)
  if k == 1 then -- the common case, without the bookkeeping below
    local decide, t, cap = spec(ARGV[abase])
    local o, commit, rebase = decide(KEYS[kbase + 1], t, cap, n, true)
    if n > 0 then -- an algorithm that made its own writes returned neither
      if o[1] == 1 then
        if commit then
          commit()
        end
      elseif rebase then
        rebase()
      end
    end
    return o
  end
  local outcomes, commits, rebases, admitted = {}, {}, {}, true
  for i = 1, k do
    local decide, t, cap = spec(ARGV[abase + i - 1])
    outcomes[i], commits[i], rebases[i] = decide(KEYS[kbase + i], t, cap, n, false)
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
        local decide, t, cap = spec(ARGV[abase + i - 1])
        outcomes[i] = decide(KEYS[kbase + i], t, cap, 0, false)
      end
    end
  end
  return outcomes
end

local own_time = ARGV[2] == 't'
if not own_time then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local nargs = #ARGV
local reply, r = {}, 0 -- the flat reply and its length
local a, kbase = 3, 0 -- the next request's first ARGV and its keys' offset

-- run decides the requests from a on, appending each one's outcomes to
-- reply, and returns when every request is decided; a request that raises
-- an error leaves a and kbase at its start. One pcall around run, instead
-- of one per request, isolates the requests: on an error the loop below
-- answers the failed request with it and runs again from the next one.
local function run()
  while a <= nargs do
    if own_time then
      now = tonumber(ARGV[a])
    end
    local at = a + (own_time and 1 or 0)
    local n, k = int(ARGV[at]), int(ARGV[at + 1])
    local o = decide_request(kbase, at + 2, k, n)
    if k == 1 and r == 0 and at + 3 > nargs then
      reply, r = o, #o -- the only request: its outcome is the reply, built once
    elseif k == 1 and #o == 5 then
      reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4], reply[r + 5] = o[1], o[2], o[3], o[4], o[5]
      r = r + 5
    elseif k == 1 then -- a lease's outcome, with its grant (lease.lua)
      for j = 1, #o do
        reply[r + j] = o[j]
      end
      r = r + #o
    else
      for i = 1, k do
        local oi = o[i]
        for j = 1, 5 do
          reply[r + j] = oi[j]
        end
        r = r + 5
      end
    end
    a, kbase = at + 2 + k, kbase + k
  end
end

while true do
  local ok, res = pcall(run)
  if ok then
    break
  end
  if type(res) ~= 'table' or not res.err then
    res = redis.error_reply(tostring(res)) -- a Lua error, not one from redis.call
  end
  r = r + 1
  reply[r] = res
  local at = a + (own_time and 1 or 0)
  local k = tonumber(ARGV[at + 1])
  if k == nil then
    return res -- not a request this store sent: nothing to resume from
  end
  a, kbase = at + 2 + k, kbase + k
end
return reply
