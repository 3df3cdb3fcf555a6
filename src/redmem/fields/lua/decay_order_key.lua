-- writes (applied once per call: store.scripts guards it with an operation key)
-- Set a record's last-updated time and/or base score, then its static order key
-- x = log2(base) + t/half_life (the exponential curve's ranking; "-inf" for base 0).
-- KEYS[1] record hash   KEYS[2] zset last-updated t   KEYS[3] zset order key x
-- KEYS[4] zset base score (optional: base 1 without it)
-- ARGV[1] record id   ARGV[2] half_life (s)   ARGV[3] t   ARGV[4] "nx": keep a stored t, "set": replace it
-- ARGV[5] base score to store, or "" to keep the stored one
-- returns 1, or 0 (nothing written) when the record hash does not exist
local id = ARGV[1]
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
if ARGV[4] == "nx" then
  redis.call("ZADD", KEYS[2], "NX", ARGV[3], id)
else
  redis.call("ZADD", KEYS[2], ARGV[3], id)
end
local base = 1
if KEYS[4] then
  if ARGV[5] ~= "" then redis.call("ZADD", KEYS[4], ARGV[5], id) end
  base = tonumber(redis.call("ZSCORE", KEYS[4], id) or "1")
end
local t = tonumber(redis.call("ZSCORE", KEYS[2], id))
if base > 0 then
  redis.call("ZADD", KEYS[3], math.log(base) / math.log(2) + t / tonumber(ARGV[2]), id)
else
  redis.call("ZADD", KEYS[3], "-inf", id)
end
return 1
