package redisstore

// FloorLibrary is a function library (Redis 7 and later) whose one function,
// rlbench_floor, does only what every decision of a one-request FCALL on
// the shared clock does for a fresh key, as the store's GCRA program does
// for one: it reads Redis TIME, writes the key's state ("tat seen", in
// microseconds) with one SET … PX … NX GET and replies five integers. It
// decides nothing. The benchmarks call it, FCALL rlbench_floor 1 KEY, to
// measure the floor of one call per decision: what no program called once
// per decision goes below on this server and client, whatever it computes.
const FloorLibrary = `#!lua name=rlbench_floor
redis.register_function('rlbench_floor', function(keys, args)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('SET', keys[1], string.format('%d %d', now + 1000, now), 'PX', '2', 'NX', 'GET')
  return {1, 999, 1000, 0, 0}
end)
`

// FloorFunction is the name FloorLibrary registers.
const FloorFunction = "rlbench_floor"
