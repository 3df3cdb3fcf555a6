-- graph_degree (included): the weighted degree of a graph node follows its edges.
-- Needs SYM (the graph is symmetric) and KEYS[2] adjacency zset, KEYS[3] incoming zset (directed
-- graphs), KEYS[4] hash node -> weighted degree (the layout of fields/cooccurrence.py).
local function text(x)  -- shortest of %.15g / %.17g that reads back as exactly x
  local t = string.format("%.15g", x)
  if tonumber(t) ~= x then t = string.format("%.17g", x) end
  return t
end
local function degree(node, delta)  -- add delta to node's degree; a node left without edges has none
  local left = redis.call("ZLEXCOUNT", KEYS[2], "[" .. node .. " ", "(" .. node .. "!")
  if not SYM then left = left + redis.call("ZLEXCOUNT", KEYS[3], "[" .. node .. " ", "(" .. node .. "!") end
  if left == 0 then redis.call("HDEL", KEYS[4], node); return end
  redis.call("HSET", KEYS[4], node, text(tonumber(redis.call("HGET", KEYS[4], node) or "0") + delta))
end
