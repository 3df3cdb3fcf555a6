-- writes (applied once per call: store.scripts guards it with an operation key)
-- Remove the edge a -> b (and b -> a when symmetric).
-- KEYS[1] hash "<a> <b>" -> weight   KEYS[2] zset (lex) "<a> <rank> <b>"   KEYS[3] zset (lex) "<b> <a>"
-- KEYS[4] hash node -> weighted degree (both ends lose the edge's weight)
-- ARGV[1] a   ARGV[2] b   ARGV[3] symmetric "1" | "0"
-- returns 1 if the edge existed, else 0
local a, b, SYM = ARGV[1], ARGV[2], ARGV[3] == "1"

local function rank(w)  -- weight bytes inverted, hex: lexical order = weight descending
  local hi, lo = struct.unpack(">I4I4", struct.pack(">d", w))
  return string.format("%08x%08x", 4294967295 - hi, 4294967295 - lo)
end

--#include graph_degree

local p = a .. " " .. b
if SYM and b < a then p = b .. " " .. a end
local w = redis.call("HGET", KEYS[1], p)
if not w then return 0 end
local r = rank(tonumber(w))
redis.call("HDEL", KEYS[1], p)
redis.call("ZREM", KEYS[2], a .. " " .. r .. " " .. b)
if SYM then redis.call("ZREM", KEYS[2], b .. " " .. r .. " " .. a)
else redis.call("ZREM", KEYS[3], b .. " " .. a) end
degree(a, -tonumber(w))
degree(b, -tonumber(w))
return 1
