-- KEYS[1] vectors hash (record id -> little-endian float32 bytes)   KEYS[2] source digests hash (record id -> digest)
-- KEYS[3] version hash {epoch, n}   KEYS[4] change log zset (record id -> n of its last change)
-- ARGV[1] record id   ARGV[2] vector bytes ('' removes the record's vector)   ARGV[3] digest of what was embedded ('' for none)
-- returns the partition's version n after the write (unchanged when there was nothing to remove)
-- A vector set that becomes empty is deleted with its version and log; the next write starts a
-- new epoch (the server time), so a cached matrix of the old life is never taken as current.
if ARGV[2] == '' then
  if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then
    return tonumber(redis.call('HGET', KEYS[3], 'n') or '0')
  end
  redis.call('HDEL', KEYS[2], ARGV[1])
  if redis.call('HLEN', KEYS[1]) == 0 then
    redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
    return 0
  end
else
  if redis.call('EXISTS', KEYS[3]) == 0 then
    local now = redis.call('TIME')
    redis.call('HSET', KEYS[3], 'epoch', now[1] .. '.' .. now[2], 'n', 0)
  end
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  if ARGV[3] == '' then
    redis.call('HDEL', KEYS[2], ARGV[1])
  else
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
  end
end
local n = redis.call('HINCRBY', KEYS[3], 'n', 1)
redis.call('ZADD', KEYS[4], n, ARGV[1])
return n
