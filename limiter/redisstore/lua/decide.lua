-- decide.lua runs last. One evaluation decides one or more requests, in
-- order, each all-or-nothing under its limits; concurrent callers' requests
-- may share an evaluation, and each is atomic since the whole script is.
--
-- ARGV[1] is the milliseconds added to every TTL (0 except in test-clock
-- mode). ARGV[2] is "" when every request is decided at Redis TIME (the
-- production path: every instance shares the Redis clock), or "t" when
-- each request brings its own time (test-clock mode). Then the requests,
-- in runs of consecutive requests that share their cost and limits: per
-- run, its number of requests c, their c times in microseconds (only with
-- "t"), their cost n (0 = peek), their number of limits k and k limit
-- specs "ALGORITHM INTERVAL CAPACITY" (the emission interval or window in
-- microseconds). KEYS holds the requests' keys in the same order, one per
-- limit. A batch of one route's requests is one run, so Redis parses a
-- request's cost and limits once per batch instead of once per request.
--
-- The reply is one flat array, the requests' parts one after the other: per
-- request five integers per limit (allowed, remaining, reset_after,
-- retry_after, delay; a lease's outcome has two more, see lease.lua), or
-- a single error reply when that request failed
-- (its writes, if any, were not made). A flat array costs Redis and the
-- client one array per evaluation instead of one per request.

-- The evaluation's KEYS and ARGV, and where it stands: whether requests
-- bring their own times, the number of ARGV, the flat reply and its
-- length, and the next request (its run's first ARGV, its index in the
-- run, 0-based, and its keys' offset). evaluate sets them.
local keys, argv, own_time, nargs, reply, r, a, i, kbase

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

-- decide_request decides a request under k > 1 limits, whose keys follow
-- keys[kb] and whose limit specs start at argv[abase]. It writes the new
-- states only when every limit admits; when one rejects, nothing is
-- charged, the states the clock stepped behind are moved (rebase), and the
-- admitting limits are reported as they stand (a peek). A peek (n = 0)
-- writes nothing. (run decides a request under one limit itself.)
local function decide_request(kb, abase, k, n)
  local outcomes, commits, rebases, admitted = {}, {}, {}, true
  for i = 1, k do
    local decide, t, cap = spec(argv[abase + i - 1])
    outcomes[i], commits[i], rebases[i] = decide(keys[kb + i], t, cap, n, false)
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
        local decide, t, cap = spec(argv[abase + i - 1])
        outcomes[i] = decide(keys[kb + i], t, cap, 0, false)
      end
    end
  end
  return outcomes
end

-- run decides the requests from the next one on, appending each one's
-- outcomes to reply, and returns when every request is decided; a request
-- that raises an error leaves a, i and kbase at it. One pcall around run,
-- instead of one per request, isolates the requests: on an error the loop
-- below answers the failed request with it and runs again from the next
-- one.
local function run()
  while a <= nargs do
    local c = int(argv[a])
    local at = a + 1 + (own_time and c or 0) -- the run's cost
    local n, k = int(argv[at]), int(argv[at + 1])
    if k == 1 then
      -- One limit, the common case: its spec is read once for the run, and
      -- the algorithm decides alone (it makes its own writes, or returns
      -- the functions that make them).
      local decide, t, cap = spec(argv[at + 2])
      while i < c do
        if own_time then
          now = tonumber(argv[a + 1 + i])
        end
        local o, commit, rebase = decide(keys[kbase + 1], t, cap, n, true)
        if n > 0 then
          if o[1] == 1 then
            if commit then
              commit()
            end
          elseif rebase then
            rebase()
          end
        end
        if r == 0 and c == 1 and at + 3 > nargs then
          reply, r = o, #o -- the only request: its outcome is the reply, built once
        elseif #o == 5 then
          reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4], reply[r + 5] = o[1], o[2], o[3], o[4], o[5]
          r = r + 5
        else -- a lease's outcome, with its grant (lease.lua)
          for j = 1, #o do
            reply[r + j] = o[j]
          end
          r = r + #o
        end
        i, kbase = i + 1, kbase + 1
      end
    end
    while i < c do
      if own_time then
        now = tonumber(argv[a + 1 + i])
      end
      local o = decide_request(kbase, at + 2, k, n)
      for l = 1, k do
        local ol = o[l]
        for j = 1, 5 do
          reply[r + j] = ol[j]
        end
        r = r + 5
      end
      i, kbase = i + 1, kbase + k
    end
    a, i = at + 2 + k, 0
  end
end

-- evaluate is one evaluation: it decides the requests of KEYS and ARGV
-- (the calling convention above) and returns the flat reply. The script
-- ends by calling it on its KEYS and ARGV; a function library (Redis 7 and
-- later) registers it instead, so that Redis creates the functions of
-- these files once, when it loads the library, rather than on every call.
local function evaluate(KEYS, ARGV)
  if redis.replicate_commands and not redis.REDIS_VERSION_NUM then
    redis.replicate_commands() -- Redis < 5: replicate effects, since TIME is read
  end
  keys, argv, nargs = KEYS, ARGV, #ARGV
  ttl_slack = ARGV[1] == '0' and 0 or tonumber(ARGV[1]) -- "0", the usual one, compared as int does
  own_time = ARGV[2] == 't'
  if not own_time then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  reply, r, a, i, kbase = {}, 0, 3, 0, 0
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
    local c = tonumber(argv[a])
    local k = c and tonumber(argv[a + 2 + (own_time and c or 0)])
    if k == nil then
      reply = res -- not a request this store sent: nothing to resume from
      break
    end
    i, kbase = i + 1, kbase + k
  end
  local out = reply
  reply, keys, argv = nil, nil, nil -- a library's upvalues outlive the call
  return out
end
