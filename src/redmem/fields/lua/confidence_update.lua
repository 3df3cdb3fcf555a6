-- writes (applied once per call: store.scripts guards it with an operation key)
-- Apply one evidence signal s to a record's confidence c (evidence-capped running mean):
--   n = min(evidence_count + 1, cap),  c' = clamp01(c + (s - c) / (n + 1))
-- KEYS[1] record hash   KEYS[2] zset of confidence by record id
-- ARGV[1] record id   ARGV[2] signal s in [0, 1]   ARGV[3] initial confidence   ARGV[4] evidence cap
-- ARGV[5..8] record-hash entry names: confidence, evidence_count, corroborations, contradictions
-- returns {confidence, evidence_count, corroborations, contradictions} as text; nil if no record
if redis.call("EXISTS", KEYS[1]) == 0 then return nil end
local names = {ARGV[5], ARGV[6], ARGV[7], ARGV[8]}
local stored = redis.call("HMGET", KEYS[1], unpack(names))
local s, cap = tonumber(ARGV[2]), tonumber(ARGV[4])
local c = tonumber(stored[1]) or tonumber(ARGV[3])
local count = (tonumber(stored[2]) or 0) + 1
local corroborations = tonumber(stored[3]) or 0
local contradictions = tonumber(stored[4]) or 0
local n = math.min(count, cap)
c = math.min(1, math.max(0, c + (s - c) / (n + 1)))
if s >= 0.5 then corroborations = corroborations + 1 else contradictions = contradictions + 1 end

-- the shortest of %.15g / %.17g that reads back as exactly c
local text = string.format("%.15g", c)
if tonumber(text) ~= c then text = string.format("%.17g", c) end
local out = {text, tostring(count), tostring(corroborations), tostring(contradictions)}
redis.call("HSET", KEYS[1], names[1], out[1], names[2], out[2], names[3], out[3], names[4], out[4])
redis.call("ZADD", KEYS[2], text, ARGV[1])
return out
