-- writes (applied once per call: store.scripts guards it with an operation key)
-- Reinforce the blocks a frame returned: count + 1 and last reinforced = now (active hours); an
-- active block also moves in the window index. Blocks deleted meanwhile are skipped.
-- KEYS[1] window zset   KEYS[2] reinforcement count zset   KEYS[3..] the blocks' record hashes
-- ARGV[1] now (active hours, text)   ARGV[2..] the blocks' ids, in KEYS order
-- returns how many blocks were reinforced
local done = 0
for i = 3, #KEYS do
  local id = ARGV[i - 1]
  if redis.call("EXISTS", KEYS[i]) == 1 then
    local count = redis.call("HINCRBY", KEYS[i], "reinforcement_count", 1)
    redis.call("ZADD", KEYS[2], count, id)
    redis.call("HSET", KEYS[i], "last_reinforced", ARGV[1])
    if redis.call("HGET", KEYS[i], "status") == "active" then
      redis.call("HSET", KEYS[i], "window", ARGV[1])
      redis.call("ZADD", KEYS[1], ARGV[1], id)
    end
    done = done + 1
  end
end
return done
