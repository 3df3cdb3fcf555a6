-- KEYS[1] version hash {epoch, n}   KEYS[2] change log zset (record id -> n of its last change)   KEYS[3] vectors hash
-- ARGV[1] the caller's epoch   ARGV[2] the caller's version n   ARGV[3] most changes to return
-- returns {epoch or false, n, upto, id1, vector1 or false, id2, ...}: the changes after the caller's
-- version, oldest first (after version 0 when the epoch differs: then every vector of the set);
-- upto = the version the returned changes bring the caller to (n when none were left out)
local state = redis.call('HMGET', KEYS[1], 'epoch', 'n')
local epoch, n = state[1], tonumber(state[2] or '0')
local since = ARGV[2]
if epoch ~= ARGV[1] then since = '0' end
local limit = tonumber(ARGV[3])
local log = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. since, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
local out = {epoch, n, n}
if #log / 2 == limit then out[3] = tonumber(log[#log]) end
for i = 1, #log, 2 do
  out[#out + 1] = log[i]
  out[#out + 1] = redis.call('HGET', KEYS[3], log[i])
end
return out
