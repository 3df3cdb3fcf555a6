-- How many records a partition holds, how many have a validity window, how many are superseded.
-- KEYS[1] the partition's record set (sorted set)   KEYS[2] its valid_to index (sorted set)
-- ARGV[1] the open end's score, exclusive, as ZCOUNT's max ("(<OPEN_END>")
-- returns {records, windows, superseded} (read-only)
return {redis.call("ZCARD", KEYS[1]), redis.call("ZCARD", KEYS[2]), redis.call("ZCOUNT", KEYS[2], "-inf", ARGV[1])}
