-- KEYS[1] vectors hash (record id -> stored vector, see redmem/embeddings/codec.py)   KEYS[2] version hash {epoch, n, floor}
-- KEYS[3] change log zset (record id -> n of its last change)
-- ARGV[1] record id   ARGV[2] stored vector ('' removes the record's vector)
-- ARGV[3] the log keeps at least this many entries   ARGV[4] ... or 1 per this many vectors, if more
-- returns the partition's version n after the write (unchanged when there was nothing to remove)
-- A vector set that becomes empty is deleted with its version and log; the next write starts a
-- new epoch (the server time), so a cached matrix of the old life is never taken as current.
-- The oldest log entries past the bound are dropped; floor = the newest n dropped: a reader
-- whose version is below it reloads the whole set.
if ARGV[2] == '' then
  if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then
    return tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
  end
  if redis.call('HLEN', KEYS[1]) == 0 then
    redis.call('DEL', KEYS[2], KEYS[3])
    return 0
  end
else
  if redis.call('EXISTS', KEYS[2]) == 0 then
    local now = redis.call('TIME')
    redis.call('HSET', KEYS[2], 'epoch', now[1] .. '.' .. now[2], 'n', 0)
  end
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
local n = redis.call('HINCRBY', KEYS[2], 'n', 1)
redis.call('ZADD', KEYS[3], n, ARGV[1])
local bound = math.max(tonumber(ARGV[3]), math.floor(redis.call('HLEN', KEYS[1]) / tonumber(ARGV[4])))
local excess = redis.call('ZCARD', KEYS[3]) - bound
if excess > 0 then
  local dropped = redis.call('ZPOPMIN', KEYS[3], excess)
  redis.call('HSET', KEYS[2], 'floor', dropped[#dropped])
end
return n
