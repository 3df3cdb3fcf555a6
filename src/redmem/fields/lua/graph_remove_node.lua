-- writes (applied once per call: store.scripts guards it with an operation key)
-- Remove a node and every edge from or to it.
-- KEYS[1] hash "<a> <b>" -> weight   KEYS[2] zset (lex) "<a> <rank> <b>"   KEYS[3] zset (lex) "<b> <a>"
-- KEYS[4] hash node -> weighted degree (the node's is removed, each neighbour loses the edge)
-- ARGV[1] node   ARGV[2] symmetric "1" | "0"
-- returns how many edges were removed
local node, SYM = ARGV[1], ARGV[2] == "1"

local function rank(w)  -- weight bytes inverted, hex: lexical order = weight descending
  local hi, lo = struct.unpack(">I4I4", struct.pack(">d", w))
  return string.format("%08x%08x", 4294967295 - hi, 4294967295 - lo)
end

--#include graph_degree

local removed = 0
for _, m in ipairs(redis.call("ZRANGEBYLEX", KEYS[2], "[" .. node .. " ", "(" .. node .. "!")) do
  local r, nb = string.sub(m, #node + 2, #node + 17), string.sub(m, #node + 19)
  local p = node .. " " .. nb
  if SYM and nb < node then p = nb .. " " .. node end
  local w = tonumber(redis.call("HGET", KEYS[1], p))
  redis.call("ZREM", KEYS[2], m)
  if SYM then
    redis.call("ZREM", KEYS[2], nb .. " " .. r .. " " .. node)
  else
    redis.call("ZREM", KEYS[3], nb .. " " .. node)
  end
  redis.call("HDEL", KEYS[1], p)
  degree(nb, -w)
  removed = removed + 1
end
if not SYM then  -- incoming edges
  for _, m in ipairs(redis.call("ZRANGEBYLEX", KEYS[3], "[" .. node .. " ", "(" .. node .. "!")) do
    local source = string.sub(m, #node + 2)
    local w = redis.call("HGET", KEYS[1], source .. " " .. node)
    redis.call("ZREM", KEYS[2], source .. " " .. rank(tonumber(w)) .. " " .. node)
    redis.call("HDEL", KEYS[1], source .. " " .. node)
    redis.call("ZREM", KEYS[3], m)
    degree(source, -tonumber(w))
    removed = removed + 1
  end
end
redis.call("HDEL", KEYS[4], node)
return removed
