-- Give a saved record its confidence entries if it has none, and index its confidence.
-- KEYS[1] record hash   KEYS[2] zset of confidence by record id
-- ARGV[1] record id   ARGV[2..5] values to set when absent: confidence, evidence_count,
--         corroborations, contradictions   ARGV[6..9] the four record-hash entry names
-- returns the record's confidence (text)
for i = 1, 4 do
  redis.call("HSETNX", KEYS[1], ARGV[5 + i], ARGV[1 + i])
end
local confidence = redis.call("HGET", KEYS[1], ARGV[6])
redis.call("ZADD", KEYS[2], confidence, ARGV[1])
return confidence
