-- writes (applied once per call: store.scripts guards it with an operation key)
-- The new contexts of a session's earlier blocks (learn() appended one after them): the context
-- entry alone, so what frame(), touch() or archive() wrote meanwhile (counts, times, status) stays;
-- a block deleted meanwhile is not brought back.
-- KEYS[1..n] the blocks' record hashes   ARGV[1..n] their new contexts, in KEYS order
-- returns how many were written
local done = 0
for i = 1, #KEYS do
  if redis.call("EXISTS", KEYS[i]) == 1 then
    redis.call("HSET", KEYS[i], "context", ARGV[i])
    done = done + 1
  end
end
return done
