-- The details of a partition's resolved predictions with the highest errors.
-- KEYS[1] zset error by entry id   KEYS[2] hash entry id -> JSON details
-- ARGV[1] how many (n >= 1)
-- returns the JSON details, highest error first
local ids = redis.call("ZRANGE", KEYS[1], 0, tonumber(ARGV[1]) - 1, "REV")
if #ids == 0 then return {} end
return redis.call("HMGET", KEYS[2], unpack(ids))
