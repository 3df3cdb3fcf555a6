-- writes (applied once per call: store.scripts guards it with an operation key)
-- Close a pending recall proposal with a status, once: only while it is pending.
-- KEYS[1] proposal hash   KEYS[2] zset of pending proposals' expiry times (member = proposal id)
-- ARGV[1] proposal id   ARGV[2] new status   ARGV[3] resolution time (encoded)
-- ARGV[4] status entry name   ARGV[5] resolved-at entry name   ARGV[6] expiry entry name
-- returns 1 when closed, 0 when it was not pending (or does not exist)
if redis.call("HGET", KEYS[1], ARGV[4]) ~= "pending" then return 0 end
redis.call("HSET", KEYS[1], ARGV[4], ARGV[2], ARGV[5], ARGV[3])
redis.call("HDEL", KEYS[1], ARGV[6])
redis.call("ZREM", KEYS[2], ARGV[1])
return 1
