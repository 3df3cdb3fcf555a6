-- writes (applied once per call: store.scripts guards it with an operation key)
-- Touch a block: reinforced now (count + 1, last reinforced = now) and, being active, back in the
-- window index; with revive, an archived block is made active first. A self/... block moves the
-- self version (cached frames built before are stale).
-- KEYS[1] record hash   KEYS[2] window zset   KEYS[3] reinforcement count zset   KEYS[4] self version counter
-- ARGV[1] block id   ARGV[2] now (active hours, text)   ARGV[3] "1": revive
-- returns 1, or nil when the block is not stored
if redis.call("EXISTS", KEYS[1]) == 0 then return nil end
if ARGV[3] == "1" then redis.call("HSET", KEYS[1], "status", "active") end
local count = redis.call("HINCRBY", KEYS[1], "reinforcement_count", 1)
redis.call("ZADD", KEYS[3], count, ARGV[1])
redis.call("HSET", KEYS[1], "last_reinforced", ARGV[2])
if redis.call("HGET", KEYS[1], "status") == "active" then
  redis.call("HSET", KEYS[1], "window", ARGV[2])
  redis.call("ZADD", KEYS[2], ARGV[2], ARGV[1])
end
if string.find(redis.call("HGET", KEYS[1], "tags") or "", '"self/', 1, true) then
  redis.call("INCR", KEYS[4])
end
return 1
