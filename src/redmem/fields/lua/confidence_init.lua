-- writes (applied once per call: store.scripts guards it with an operation key)
-- Index a saved record's confidence: its hash entry, else the initial confidence. Entries carried
-- over a key change are set first where the record has none.
-- KEYS[1] record hash   KEYS[2] zset of confidence by record id
-- ARGV[1] record id   ARGV[2] initial confidence   ARGV[3] the confidence entry's name
-- ARGV[4..] entry name, value pairs to set when absent (carried evidence)
-- returns the record's confidence (text)
for i = 4, #ARGV, 2 do
  redis.call("HSETNX", KEYS[1], ARGV[i], ARGV[i + 1])
end
local confidence = redis.call("HGET", KEYS[1], ARGV[3]) or ARGV[2]
redis.call("ZADD", KEYS[2], confidence, ARGV[1])
return confidence
