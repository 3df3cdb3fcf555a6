-- writes (applied once per call: store.scripts guards it with an operation key)
-- KEYS[1] vectors hash (record id -> stored vector, see redmem/embeddings/codec.py)   KEYS[2] version hash {epoch, n, floor, run}
-- KEYS[3] change log zset (record id -> n of its last change)
-- ARGV[1] the log keeps at least this many entries   ARGV[2] ... or 1 per this many vectors, if more
-- ARGV[3..] record id, stored vector ('' removes the record's vector), .. applied in order, each as
--   its own call would be
-- returns the partition's version n after the writes (unchanged by a removal of nothing)
-- A vector set that becomes empty is deleted with its version and log; the next write starts a
-- new epoch (the server time), so a cached matrix of the old life is never taken as current.
-- The version hash keeps the run_id of the server process that wrote it last ('run'): a write on
-- another process (a restart, which may have loaded an older snapshot, or a failover to a replica,
-- which may lag) starts a new epoch, because the changes a reader saw may have been rolled back and
-- n reused for other ones. A user whose ACL refuses INFO skips this check (and keeps the other
-- one: a reader whose version is above n reloads).
-- After each change the oldest log entries past the bound are dropped; floor = the newest n
-- dropped: a reader whose version is below it reloads the whole set.
local keep, fraction = tonumber(ARGV[1]), tonumber(ARGV[2])
local info = redis.pcall('INFO', 'server')  -- an ACL user without INFO: no run check
local run = type(info) == 'string' and string.match(info, 'run_id:(%x+)') or false
local state = redis.call('HMGET', KEYS[2], 'n', 'run')
local n = tonumber(state[1] or '0')
if run and n > 0 and state[2] ~= run then
  local now = redis.call('TIME')
  redis.call('HSET', KEYS[2], 'epoch', now[1] .. '.' .. now[2], 'run', run)
end
local vectors, logged = redis.call('HLEN', KEYS[1]), redis.call('ZCARD', KEYS[3])
for i = 3, #ARGV, 2 do
  local id, value, changed = ARGV[i], ARGV[i + 1], true
  if value == '' then
    if redis.call('HDEL', KEYS[1], id) == 0 then
      changed = false
    else
      vectors = vectors - 1
      if vectors == 0 then
        redis.call('DEL', KEYS[2], KEYS[3])
        n, logged, changed = 0, 0, false
      end
    end
  else
    if n == 0 and redis.call('EXISTS', KEYS[2]) == 0 then
      local now = redis.call('TIME')
      redis.call('HSET', KEYS[2], 'epoch', now[1] .. '.' .. now[2], 'n', 0)
      if run then redis.call('HSET', KEYS[2], 'run', run) end
    end
    vectors = vectors + redis.call('HSET', KEYS[1], id, value)
  end
  if changed then
    n = redis.call('HINCRBY', KEYS[2], 'n', 1)
    logged = logged + redis.call('ZADD', KEYS[3], n, id)
    local excess = logged - math.max(keep, math.floor(vectors / fraction))
    if excess > 0 then
      local dropped = redis.call('ZPOPMIN', KEYS[3], excess)
      redis.call('HSET', KEYS[2], 'floor', dropped[#dropped])
      logged = logged - excess
    end
  end
end
return n
