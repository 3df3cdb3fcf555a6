-- Confirm a record's staged reads: move them into its access log (newest first, capped) and
-- count them (at least one: the confirmation itself is an access) in the record hash.
-- KEYS[1] record hash   KEYS[2] staged-read list   KEYS[3] access log
-- ARGV[1] now (s)   ARGV[2] log size   ARGV[3] count entry name   ARGV[4] last-accessed entry name
-- returns the number of accesses recorded, 0 (staged reads dropped) when the record does not exist
if redis.call("EXISTS", KEYS[1]) == 0 then
  redis.call("DEL", KEYS[2])
  return 0
end
local reads = redis.call("LRANGE", KEYS[2], 0, -1)
if #reads == 0 then reads = {ARGV[1]} end
for _, at in ipairs(reads) do redis.call("LPUSH", KEYS[3], at) end
redis.call("LTRIM", KEYS[3], 0, tonumber(ARGV[2]) - 1)
redis.call("DEL", KEYS[2])
redis.call("HINCRBY", KEYS[1], ARGV[3], #reads)
redis.call("HSET", KEYS[1], ARGV[4], ARGV[1])
return #reads
