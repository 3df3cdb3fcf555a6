-- The weighted degree (sum of the weights of all its edges, in and out) of each node.
-- KEYS[1] hash node -> weighted degree
-- ARGV[1..] node ids
-- returns one degree per node (text; "0" for a node without edges)
local out = {}
for i, node in ipairs(ARGV) do out[i] = redis.call("HGET", KEYS[1], node) or "0" end
return out
