-- writes (applied once per call: store.scripts guards it with an operation key)
-- Record that two blocks contradict each other (both directions); when either is tagged self/...
-- the self version moves (cached frames built before are stale).
-- KEYS[1] record hash of a   KEYS[2] record hash of b   KEYS[3] contradictions zset (lex) "<a> <b>"
-- KEYS[4] self version counter
-- ARGV[1] a   ARGV[2] b
-- returns 1 if the pair is new, 0 if it was recorded already, nil when a block is not stored
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("EXISTS", KEYS[2]) == 0 then return nil end
local added = redis.call("ZADD", KEYS[3], 0, ARGV[1] .. " " .. ARGV[2], 0, ARGV[2] .. " " .. ARGV[1])
for i = 1, 2 do
  if string.find(redis.call("HGET", KEYS[i], "tags") or "", '"self/', 1, true) then
    redis.call("INCR", KEYS[4])
    break
  end
end
return added > 0 and 1 or 0
