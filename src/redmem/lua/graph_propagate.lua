-- Spreading activation: seeds start at 1.0; a node reached from u gets w(u) * decay * edge, kept
-- (and expanded next hop) when >= threshold; each node keeps its max over walks of <= depth hops.
-- KEYS[1] zset (lex) "<a> <rank> <b>", rank = weight bytes inverted in hex (weight descending)
-- ARGV[1] depth   ARGV[2] decay per hop   ARGV[3] threshold   ARGV[4..] seed node ids
-- returns {node, weight, node, weight, ...} without the seeds, unordered
local depth, decay, threshold = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

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
for i = 4, #ARGV do
  best[ARGV[i]], frontier[ARGV[i]], seeds[ARGV[i]] = 1.0, 1.0, true
end
for _ = 1, depth do
  local reached = {}
  for node, w in pairs(frontier) do
    local carry = w * decay
    if carry >= threshold and carry > 0 then
      -- only edges that can pass: weight >= threshold / carry (a hair lower, then checked exactly)
      local high = "(" .. node .. " " .. rank(threshold / carry * (1 - 1e-12)) .. "!"
      for _, m in ipairs(redis.call("ZRANGEBYLEX", KEYS[1], "[" .. node .. " ", high)) do
        local nb = string.sub(m, #node + 19)
        local value = carry * weight(string.sub(m, #node + 2, #node + 17))
        if value >= threshold and value > (best[nb] or 0) then
          best[nb], reached[nb] = value, value
        end
      end
    end
  end
  frontier = reached
end

local out = {}
for node, w in pairs(best) do
  if not seeds[node] then
    local t = string.format("%.15g", w)
    if tonumber(t) ~= w then t = string.format("%.17g", w) end
    table.insert(out, node)
    table.insert(out, t)
  end
end
return out
