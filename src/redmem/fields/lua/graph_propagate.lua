-- Spreading activation: seeds start at 1.0; a node reached from u gets w(u) * decay * edge, kept
-- (and expanded next hop) when >= threshold; each node keeps its max over walks of <= depth hops.
-- With fanout > 0 a node passes energy along its fanout strongest edges only (ties: neighbour id).
-- With limit > 0 only the limit heaviest nodes whose id starts with ARGV[6] are returned (ties:
-- node id), and the walk stops once no further hop can change them. With hub > 0 a seed of degree d
-- starts at min(1, hub / d) instead of 1.0 (a common entity points nowhere in particular).
-- With a filter, a record node ("r:<id>") is returned only when the record passes it; energy
-- still flows through every node (the filter says what is returned, not how the graph connects).
-- KEYS[1] zset (lex) "<a> <rank> <b>", rank = weight bytes inverted in hex (weight descending)
-- KEYS[2..] the filter's index keys
-- ARGV[1] depth   ARGV[2] decay per hop   ARGV[3] threshold   ARGV[4] limit (0: every node)
-- ARGV[5] fanout (0: every edge)   ARGV[6] id prefix of the nodes returned ("": any)
-- ARGV[7] hub degree (0: every seed starts at 1.0)
-- ARGV[8] filter plan JSON ("": none; see include/filter_check.lua)   ARGV[9..] seed node ids
-- returns {node, weight, node, weight, ...} without the seeds (unordered without a limit)
local depth, decay, threshold = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local limit, fanout, prefix, hub = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])

--#include filter_check
local filter = ARGV[8] ~= "" and cjson.decode(ARGV[8]) or nil
local passes, shown = filter_of(filter), {}
local function returned(node)  -- an entity, or a record that passes the filter (checked once)
  if filter == nil or string.sub(node, 1, 2) ~= "r:" then return true end
  if shown[node] == nil then shown[node] = passes(string.sub(node, 3)) end
  return shown[node]
end

local function rank(w)  -- weight bytes inverted, hex: lexical order = weight descending
  local hi, lo = struct.unpack(">I4I4", struct.pack(">d", w))
  return string.format("%08x%08x", 4294967295 - hi, 4294967295 - lo)
end
local function weight(r)  -- inverse of rank
  local hi = 4294967295 - tonumber(string.sub(r, 1, 8), 16)
  local lo = 4294967295 - tonumber(string.sub(r, 9, 16), 16)
  return (struct.unpack(">d", struct.pack(">I4I4", hi, lo)))
end

local best, frontier, seeds = {}, {}, {}
for i = 9, #ARGV do
  local energy = 1.0
  if hub > 0 then
    local degree = redis.call("ZLEXCOUNT", KEYS[1], "[" .. ARGV[i] .. " ", "(" .. ARGV[i] .. "!")
    if degree > hub then energy = hub / degree end
  end
  best[ARGV[i]], frontier[ARGV[i]], seeds[ARGV[i]] = energy, energy, true
end
local function kept()  -- the nodes to return, heaviest first (ties: node id)
  local out = {}
  for node, w in pairs(best) do
    if not seeds[node] and string.sub(node, 1, #prefix) == prefix and returned(node) then
      table.insert(out, {node, w})
    end
  end
  if limit > 0 then
    table.sort(out, function(x, y) return x[2] > y[2] or (x[2] == y[2] and x[1] < y[1]) end)
  end
  return out
end

for _ = 1, depth do
  local reached, strongest = {}, 0
  for node, w in pairs(frontier) do
    local carry = w * decay
    if carry >= threshold and carry > 0 then
      -- only edges that can pass: weight >= threshold / carry (a hair lower, then checked exactly)
      local high = "(" .. node .. " " .. rank(threshold / carry * (1 - 1e-12)) .. "!"
      local edges
      if fanout > 0 then
        edges = redis.call("ZRANGEBYLEX", KEYS[1], "[" .. node .. " ", high, "LIMIT", 0, fanout)
      else
        edges = redis.call("ZRANGEBYLEX", KEYS[1], "[" .. node .. " ", high)
      end
      for _, m in ipairs(edges) do
        local nb = string.sub(m, #node + 19)
        local value = carry * weight(string.sub(m, #node + 2, #node + 17))
        if value >= threshold and value > (best[nb] or 0) then
          best[nb], reached[nb] = value, value
          if value > strongest then strongest = value end
        end
      end
    end
  end
  frontier = reached
  if limit > 0 then  -- a later hop gives at most strongest * decay: stop when that cannot enter the top
    local top = kept()
    if #top >= limit and top[limit][2] > strongest * decay then break end
  end
end

local out = {}
for i, pair in ipairs(kept()) do
  if limit > 0 and i > limit then break end
  local t = string.format("%.15g", pair[2])
  if tonumber(t) ~= pair[2] then t = string.format("%.17g", pair[2]) end
  table.insert(out, pair[1])
  table.insert(out, t)
end
return out
