-- A shard arrives at a barrier, atomically: it registers, and the arrival
-- that completes the count fixes the start on Redis's clock.
--
-- KEYS[1]  the barrier's hash
-- ARGV[1]  the shard's index, from 0
-- ARGV[2]  the run's count of shards
-- ARGV[3]  the lead, in µs: the start is the last arrival's TIME plus it
-- ARGV[4]  the hash's TTL, in ms, set in this same step
--
-- The hash's fields: count (the run's count of shards), arrived (how many
-- distinct shards registered), s<index> (shard index registered), start
-- (µs since the Unix epoch on Redis's clock, once every shard arrived) and
-- abandoned (why the barrier was given up before all arrived).
--
-- Returns {arrived, start or false, abandoned or false}, or an error reply
-- when the barrier belongs to a run with another count of shards.

-- TIME before a write: effects replication (the default from Redis 7).
if redis.replicate_commands then
  redis.replicate_commands()
end

local key = KEYS[1]
local count = tonumber(ARGV[2])
local have = redis.call('HGET', key, 'count')
if have and tonumber(have) ~= count then
  return redis.error_reply('ERR barrier ' .. key .. ' is for ' .. have .. ' shards, not ' .. ARGV[2])
end

local abandoned = redis.call('HGET', key, 'abandoned')
local start = redis.call('HGET', key, 'start')
if not abandoned then
  redis.call('HSET', key, 'count', count)
  if redis.call('HSETNX', key, 's' .. ARGV[1], 1) == 1 then
    redis.call('HINCRBY', key, 'arrived', 1)
  end
end
local arrived = tonumber(redis.call('HGET', key, 'arrived') or '0')
if not start and not abandoned and arrived >= count then
  local t = redis.call('TIME')
  start = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]) + tonumber(ARGV[3]))
  redis.call('HSET', key, 'start', start)
end
redis.call('PEXPIRE', key, ARGV[4])
return {arrived, start or false, abandoned or false}
