-- The ids of the records of one partition that pass a filter, in no order: for a search that
-- ranks in-process (the vector search scores only these records' rows). See
-- include/filter_list.lua for how they are read.
-- KEYS[1] zset of every record id of the partition (a listed id that names no record is left
--   out; the key also routes the call to the partition's slot when the filter has no index key)
-- KEYS[2..] the filter's index keys   ARGV[1] filter plan JSON (include/filter_check.lua)
-- returns {id, id, ..}
--#include filter_check
--#include filter_list
local f = cjson.decode(ARGV[1])
if not f.ids then return filter_list(f) end
local out = {}
for _, id in ipairs(filter_list(f)) do
  if redis.call("ZSCORE", KEYS[1], id) then out[#out + 1] = id end
end
return out
