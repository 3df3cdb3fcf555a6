-- The ids of the records of one partition that pass a filter, in no order: for a search that
-- ranks in-process (the vector search scores only these records' rows). See filter_list in
-- include/filter_check.lua for how they are read.
-- KEYS the filter's index keys   ARGV[1] filter plan JSON (include/filter_check.lua)
-- returns {id, id, ..}
--#include filter_check
return filter_list(cjson.decode(ARGV[1]))
