-- writes (applied once per call: store.scripts guards it with an operation key)
-- Archive a block: status "archived" and out of the window index (no frame retrieves it again);
-- a block tagged self/... also moves the self version (cached frames built before are stale).
-- KEYS[1] record hash   KEYS[2] window zset   KEYS[3] self version counter
-- ARGV[1] block id
-- returns 1, or nil when the block is not stored
if redis.call("EXISTS", KEYS[1]) == 0 then return nil end
redis.call("HSET", KEYS[1], "status", "archived")
redis.call("HDEL", KEYS[1], "window")
redis.call("ZREM", KEYS[2], ARGV[1])
if string.find(redis.call("HGET", KEYS[1], "tags") or "", '"self/', 1, true) then
  redis.call("INCR", KEYS[3])
end
return 1
