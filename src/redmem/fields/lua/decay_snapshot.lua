-- writes (applied once per call: store.scripts guards it with an operation key)
-- One slice of a partition's exact decay order at one time: the power-curve score of each record
-- of a range of the last-updated list, written to the order being built.
-- score = base * d^-rate * max(d, 1)^(rate - eff)
--   d = max((now - t)/86400, 0.01);  eff = rate * 2^(spread * (center - c))  (with a confidence)
-- KEYS[1] zset last-updated time per record   KEYS[2] zset base score   KEYS[3] zset confidence
-- KEYS[4] zset the order being built (record id -> score at now)
-- ARGV[1] now   ARGV[2] rate   ARGV[3] start   ARGV[4] stop (ranks of KEYS[1], inclusive)
-- ARGV[5] 1: read base scores (default 1)   ARGV[6] 1: modulate by confidence
-- ARGV[7] center (the initial confidence, also a missing confidence's value)   ARGV[8] spread
-- ARGV[9] seconds KEYS[4] lives (a build that stops halfway leaves nothing behind for long)
-- returns how many records of the slice were scored
local now, rate = tonumber(ARGV[1]), tonumber(ARGV[2])
local with_base, with_confidence = ARGV[5] == "1", ARGV[6] == "1"
local center, spread = tonumber(ARGV[7]), tonumber(ARGV[8])
local rows = redis.call("ZRANGE", KEYS[1], ARGV[3], ARGV[4], "WITHSCORES")
if #rows == 0 then return 0 end
local ids = {}
for i = 1, #rows, 2 do ids[#ids + 1] = rows[i] end
local bases = with_base and redis.call("ZMSCORE", KEYS[2], unpack(ids)) or {}
local confidences = with_confidence and redis.call("ZMSCORE", KEYS[3], unpack(ids)) or {}
local pairs_ = {}
for i, id in ipairs(ids) do
  local days = math.max((now - tonumber(rows[2 * i])) / 86400, 0.01)
  local s = (bases[i] and tonumber(bases[i]) or 1) * days ^ (-rate)
  if with_confidence then
    local c = confidences[i] and tonumber(confidences[i]) or center
    local eff = rate * 2 ^ (spread * (center - c))
    s = s * math.max(days, 1) ^ (rate - eff)
  end
  pairs_[#pairs_ + 1] = s
  pairs_[#pairs_ + 1] = id
end
for i = 1, #pairs_, 2000 do  -- unpack() is bounded by Lua's C stack (8000 values)
  redis.call("ZADD", KEYS[4], unpack(pairs_, i, math.min(i + 1999, #pairs_)))
end
redis.call("EXPIRE", KEYS[4], ARGV[9])
return #ids
