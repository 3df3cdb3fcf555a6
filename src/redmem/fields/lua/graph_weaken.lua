-- writes (applied once per call: store.scripts guards it with an operation key)
-- Multiply every edge of a node by a factor; edges falling below the floor are removed.
-- KEYS[1] hash "<a> <b>" -> weight   KEYS[2] zset (lex) "<a> <rank> <b>"   KEYS[3] zset (lex) "<b> <a>"
-- KEYS[4] hash node -> weighted degree (the node's and each neighbour's follow their edges)
-- ARGV[1] node   ARGV[2] factor in [0, 1]   ARGV[3] symmetric "1" | "0"   ARGV[4] floor
-- returns how many edges were removed
local node, factor, SYM, floor = ARGV[1], tonumber(ARGV[2]), ARGV[3] == "1", tonumber(ARGV[4])

local function pair(x, y)
  if SYM and y < x then return y .. " " .. x end
  return x .. " " .. y
end
local function rank(w)  -- weight bytes inverted, hex: lexical order = weight descending
  local hi, lo = struct.unpack(">I4I4", struct.pack(">d", w))
  return string.format("%08x%08x", 4294967295 - hi, 4294967295 - lo)
end
--#include graph_degree

local removed = 0
local members = redis.call("ZRANGEBYLEX", KEYS[2], "[" .. node .. " ", "(" .. node .. "!")
for _, m in ipairs(members) do
  local r, nb = string.sub(m, #node + 2, #node + 17), string.sub(m, #node + 19)
  local before = tonumber(redis.call("HGET", KEYS[1], pair(node, nb)))
  local w = before * factor
  redis.call("ZREM", KEYS[2], m)
  if SYM then redis.call("ZREM", KEYS[2], nb .. " " .. r .. " " .. node) end
  if w < floor then
    redis.call("HDEL", KEYS[1], pair(node, nb))
    if not SYM then redis.call("ZREM", KEYS[3], nb .. " " .. node) end
    removed = removed + 1
    degree(nb, -before)
    degree(node, -before)
  else
    local nr = rank(w)
    redis.call("HSET", KEYS[1], pair(node, nb), text(w))
    redis.call("ZADD", KEYS[2], 0, node .. " " .. nr .. " " .. nb)
    if SYM then redis.call("ZADD", KEYS[2], 0, nb .. " " .. nr .. " " .. node) end
    degree(nb, w - before)
    degree(node, w - before)
  end
end
return removed
