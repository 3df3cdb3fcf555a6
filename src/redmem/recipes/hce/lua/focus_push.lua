-- writes (applied once per call: store.scripts guards it with an operation key)
-- Append entries to a capped list (the focus buffer): the oldest drop off beyond max_size.
-- KEYS[1] list, oldest first
-- ARGV[1] max_size   ARGV[2..] entries, oldest first
-- returns the list's length after the push
redis.call("RPUSH", KEYS[1], unpack(ARGV, 2))
redis.call("LTRIM", KEYS[1], -tonumber(ARGV[1]), -1)
return redis.call("LLEN", KEYS[1])
