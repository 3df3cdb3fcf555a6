-- writes (applied once per call: store.scripts guards it with an operation key)
-- Link or strengthen the edge a -> b (and b -> a when symmetric); then each end keeps at most
-- max_edges edges, dropping its weakest (ties: the larger neighbour id). Both ends' weighted
-- degrees (the sum of the weights of all their edges, in and out) follow every change.
-- KEYS[1] hash "<a> <b>" -> weight   KEYS[2] zset (lex) "<a> <rank> <b>"   KEYS[3] zset (lex) "<b> <a>"
-- KEYS[4] hash node -> weighted degree   KEYS[5..] hashes of the record nodes, which must exist
-- ARGV[1] a   ARGV[2] b   ARGV[3] "link" (keep an existing weight) | "strengthen" (add, cap 1)
--   | "reinforce" (add, cap 1, only to an existing edge: never creates one)
-- ARGV[4] initial weight | delta   ARGV[5] symmetric "1" | "0"   ARGV[6] max_edges
-- returns the edge weight after the call (text; "0" if pruned at once or, reinforcing, absent),
-- nil if a record is missing
for i = 5, #KEYS do
  if redis.call("EXISTS", KEYS[i]) == 0 then return nil end
end
local a, b, amount, max_edges = ARGV[1], ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[6])
local SYM = ARGV[5] == "1"

local function pair(x, y)
  if SYM and y < x then return y .. " " .. x end
  return x .. " " .. y
end
local function rank(w)  -- weight bytes inverted, hex: lexical order = weight descending
  local hi, lo = struct.unpack(">I4I4", struct.pack(">d", w))
  return string.format("%08x%08x", 4294967295 - hi, 4294967295 - lo)
end
--#include graph_degree
local function drop(x, y, r)
  local w = tonumber(redis.call("HGET", KEYS[1], pair(x, y)))
  redis.call("HDEL", KEYS[1], pair(x, y))
  redis.call("ZREM", KEYS[2], x .. " " .. r .. " " .. y)
  if SYM then redis.call("ZREM", KEYS[2], y .. " " .. r .. " " .. x)
  else redis.call("ZREM", KEYS[3], y .. " " .. x) end
  degree(x, -w)
  degree(y, -w)
end
local function put(x, y, w)
  local r = rank(w)
  redis.call("HSET", KEYS[1], pair(x, y), text(w))
  redis.call("ZADD", KEYS[2], 0, x .. " " .. r .. " " .. y)
  if SYM then redis.call("ZADD", KEYS[2], 0, y .. " " .. r .. " " .. x)
  else redis.call("ZADD", KEYS[3], 0, y .. " " .. x) end
  degree(x, w)
  degree(y, w)
end
local function prune(node)
  local low, high = "[" .. node .. " ", "(" .. node .. "!"
  local excess = redis.call("ZLEXCOUNT", KEYS[2], low, high) - max_edges
  if excess <= 0 then return end
  for _, m in ipairs(redis.call("ZREVRANGEBYLEX", KEYS[2], high, low, "LIMIT", 0, excess)) do
    drop(node, string.sub(m, #node + 19), string.sub(m, #node + 2, #node + 17))
  end
end

local old = tonumber(redis.call("HGET", KEYS[1], pair(a, b)) or "")
if ARGV[3] == "reinforce" and not old then return "0" end
local w = old or amount
if ARGV[3] ~= "link" then w = math.min(1, (old or 0) + amount) end
if w ~= old then
  if old then drop(a, b, rank(old)) end
  put(a, b, w)
end
prune(a)
if SYM then prune(b) end
return redis.call("HGET", KEYS[1], pair(a, b)) or "0"
