-- writes (applied once per call: store.scripts guards it with an operation key)
-- Confirm a record's staged reads: move their times into its access log (newest first, capped),
-- add how many reads were staged to its access count and stamp its last access.
-- Nothing staged: nothing is counted, logged or stamped.
-- KEYS[1] record hash   KEYS[2] staged-read list   KEYS[3] access log   KEYS[4] staged-read count
-- ARGV[1] now (s)   ARGV[2] log size   ARGV[3] count entry name   ARGV[4] last-accessed entry name
-- returns the number of accesses recorded, 0 (staged reads dropped) when the record does not exist
if redis.call("EXISTS", KEYS[1]) == 0 then
  redis.call("DEL", KEYS[2], KEYS[4])
  return 0
end
local reads = redis.call("LRANGE", KEYS[2], 0, -1)
local count = math.max(tonumber(redis.call("GET", KEYS[4]) or 0), #reads)
redis.call("DEL", KEYS[2], KEYS[4])
if count == 0 then return 0 end
for _, at in ipairs(reads) do redis.call("LPUSH", KEYS[3], at) end
redis.call("LTRIM", KEYS[3], 0, tonumber(ARGV[2]) - 1)
redis.call("HINCRBY", KEYS[1], ARGV[3], count)
redis.call("HSET", KEYS[1], ARGV[4], ARGV[1])
return count
