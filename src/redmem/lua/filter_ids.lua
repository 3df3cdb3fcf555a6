-- The ids of the records of one partition that pass a filter, in no order: for a search that
-- ranks in-process (the vector search scores only these records' rows).
-- The candidates come from the cheapest source, read by one native command: the listed ids, the
-- intersection of every set (SINTER), the narrowest range (ZRANGEBYSCORE) or the union of the first
-- any group (SUNION); each candidate is then checked against the conditions that source leaves.
-- KEYS the filter's index keys   ARGV[1] filter plan JSON (include/filter_check.lua)
-- returns {id, id, ..}
--#include filter_check
local f = cjson.decode(ARGV[1])
local passes = filter_of(f)
local sets, any, ranges = f.sets or {}, f.any or {}, f.ranges or {}

if f.ids then
  local out = {}
  for _, id in ipairs(f.ids) do
    if passes(id) then out[#out + 1] = id end
  end
  return out
end

local size, source, skip_set, skip_range = math.huge, nil, nil, nil
if #sets > 0 then
  local keys = {}
  for i, k in ipairs(sets) do keys[i] = KEYS[k] end
  local n = math.huge
  for _, key in ipairs(keys) do n = math.min(n, redis.call("SCARD", key)) end
  size, source, skip_set = n, function() return redis.call("SINTER", unpack(keys)) end, true
end
for i, r in ipairs(ranges) do
  local n = redis.call("ZCOUNT", KEYS[r[1]], r[2], r[3])
  if n < size then
    size, skip_set, skip_range = n, nil, i
    source = function() return redis.call("ZRANGEBYSCORE", KEYS[r[1]], r[2], r[3]) end
  end
end
if source == nil then  -- any groups only (a plan with no condition lists nothing)
  if #any == 0 or #any[1] == 0 then return {} end
  local keys = {}
  for i, k in ipairs(any[1]) do keys[i] = KEYS[k] end
  source = function() return redis.call("SUNION", unpack(keys)) end
end

local candidates = source()
if #any == 0 and (skip_set and #ranges == 0 or skip_range and #sets == 0 and #ranges == 1) then
  return candidates  -- the source alone is the filter
end
local out = {}
for _, id in ipairs(candidates) do
  if passes(id, skip_set, skip_range) then out[#out + 1] = id end
end
return out
