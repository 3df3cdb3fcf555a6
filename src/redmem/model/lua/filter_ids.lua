-- The ids of the records of one partition that pass a filter, in no order: for a search that
-- ranks in-process (the vector search scores only these records' rows). See
-- include/filter_list.lua for how they are read.
-- KEYS[1] zset of every record id of the partition (a listed id that names no record is left
--   out; the key also routes the call to the partition's slot when the filter has no index key)
-- KEYS[2..] the filter's index keys   ARGV[1] filter plan JSON (include/filter_check.lua)
-- returns {"only", {id, id, ..}}: the records that pass; or {"except", {id, id, ..}}: every
--   record passes but these. The second is sent for a filter of ranges alone (the current
--   records of a lifecycle model: valid_to at its open end) over sorted sets that score every
--   record, when fewer records fail it than pass: a read of the current memories then lists the
--   few superseded ones, not every current one.
--#include filter_check
--#include filter_list

local function flipped(bound)  -- the other side of a ZRANGEBYSCORE bound: "(x" <-> "x"
  if string.sub(bound, 1, 1) == "(" then return string.sub(bound, 2) end
  return "(" .. bound
end

-- filter_failing(f): the ids that fail a plan of ranges alone, or nil when listing those that
-- pass is no dearer (other conditions, a sorted set that scores fewer than every record, or
-- fewer records passing than failing)
local function filter_failing(f)
  local ranges = f.ranges or {}
  if f.ids or #(f.sets or {}) > 0 or #(f.any or {}) > 0 or #ranges == 0 then return nil end
  local total = redis.call("ZCARD", KEYS[1])
  local passing, failing, parts = math.huge, 0, {}
  for _, r in ipairs(ranges) do
    local key = KEYS[r[1]]
    if redis.call("ZCARD", key) ~= total then return nil end
    passing = math.min(passing, redis.call("ZCOUNT", key, r[2], r[3]))
    if r[2] ~= "-inf" then parts[#parts + 1] = {key, "-inf", flipped(r[2])} end
    if r[3] ~= "+inf" and r[3] ~= "inf" then parts[#parts + 1] = {key, flipped(r[3]), "+inf"} end
  end
  for _, p in ipairs(parts) do failing = failing + redis.call("ZCOUNT", p[1], p[2], p[3]) end
  if failing >= passing then return nil end
  local seen, out = {}, {}
  for _, p in ipairs(parts) do
    for _, id in ipairs(redis.call("ZRANGEBYSCORE", p[1], p[2], p[3])) do
      if not seen[id] then seen[id] = true; out[#out + 1] = id end
    end
  end
  return out
end

local f = cjson.decode(ARGV[1])
if not f.ids then
  local failing = filter_failing(f)
  if failing then return {"except", failing} end
  return {"only", filter_list(f)}
end
local out = {}
for _, id in ipairs(filter_list(f)) do
  if redis.call("ZSCORE", KEYS[1], id) then out[#out + 1] = id end
end
return {"only", out}
