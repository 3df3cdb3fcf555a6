-- The newest entries of a capped list (the focus buffer), oldest first.
-- KEYS[1] list, oldest first
-- ARGV[1] how many (0: all)
-- returns the entries
local n = tonumber(ARGV[1])
if n == 0 then return redis.call("LRANGE", KEYS[1], 0, -1) end
return redis.call("LRANGE", KEYS[1], -n, -1)
