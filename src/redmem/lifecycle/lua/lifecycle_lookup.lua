-- The lifecycle index entries a write needs before it decides to merge, supersede or create.
-- KEYS[1] the partition's lifecycle index hash (version, d:<digest> -> id, s:<slot> -> id)
-- ARGV the entries to read
-- returns their values, nil for an absent one (read-only)
return redis.call("HMGET", KEYS[1], unpack(ARGV))
