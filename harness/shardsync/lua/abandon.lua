-- A shard that waited in vain gives a barrier up, atomically: unless every
-- shard arrived in the meantime, the barrier is marked abandoned, so that
-- a shard arriving later is told so instead of starting alone.
--
-- KEYS[1]  the barrier's hash (see arrive.lua)
-- ARGV[1]  why, as the later arrivals are told
--
-- Returns the start (µs on Redis's clock) when every shard arrived after
-- all, else false. The hash keeps the TTL arrive.lua gave it; a hash that
-- expired is not made again.

local key = KEYS[1]
local start = redis.call('HGET', key, 'start')
if start then
  return start
end
if redis.call('EXISTS', key) == 1 then
  redis.call('HSETNX', key, 'abandoned', ARGV[1])
end
return false
