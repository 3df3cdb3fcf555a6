-- KEYS[1] version hash {epoch, n, floor, run}   KEYS[2] change log zset (record id -> n of its last change)   KEYS[3] vectors hash
-- ARGV[1] the caller's epoch   ARGV[2] the caller's version n   ARGV[3] most vectors to return
-- ARGV[4] the cursor of the caller's reload in progress ('' when none)
-- returns {epoch or false, n, mode, position, id1, vector1 or false, id2, ...}:
--   mode 'log': the changes after the caller's version, oldest first; position = the version
--     they bring the caller to (n when none were left out);
--   mode 'reload' (the caller's epoch is not the set's, its version is below the log's floor, or
--     above n: the server rolled back to an older state, e.g. restarted from an older snapshot)
--     or 'more' (the next page of the caller's reload): one HSCAN page of the vectors;
--     position = the next cursor ('0' at the end). A reload is exact once the changes logged
--     after the n of its first page are applied.
local state = redis.call('HMGET', KEYS[1], 'epoch', 'n', 'floor')
local epoch, n, floor = state[1], tonumber(state[2] or '0'), tonumber(state[3] or '0')
local limit = tonumber(ARGV[3])
local function scan(mode, cursor)
  local page = redis.call('HSCAN', KEYS[3], cursor, 'COUNT', limit)
  local out = {epoch, n, mode, page[1]}
  for _, item in ipairs(page[2]) do out[#out + 1] = item end
  return out
end
if ARGV[4] ~= '' and epoch == ARGV[1] then return scan('more', ARGV[4]) end
local known = tonumber(ARGV[2])
if epoch ~= ARGV[1] or known < floor or known > n then return scan('reload', '0') end
local log = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[2], '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
local out = {epoch, n, 'log', n}
if #log / 2 == limit then out[4] = tonumber(log[#log]) end
for i = 1, #log, 2 do
  out[#out + 1] = log[i]
  out[#out + 1] = redis.call('HGET', KEYS[3], log[i])
end
return out
