-- How many adjacency entries a graph holds (0: no edge, so spreading activation would find nothing).
-- KEYS[1] the graph's adjacency zset
-- returns its number of entries
return redis.call("ZCARD", KEYS[1])
