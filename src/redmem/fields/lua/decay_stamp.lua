-- writes (applied once per call: store.scripts guards it with an operation key)
-- Set one record's score in sorted sets (a touch), only while the record exists.
-- KEYS[1] record hash   KEYS[2..] sorted sets to stamp
-- ARGV[1] record id   ARGV[2] score (e.g. now, in s)
-- returns 1, or 0 (nothing written) when the record hash does not exist
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
for i = 2, #KEYS do redis.call("ZADD", KEYS[i], ARGV[2], ARGV[1]) end
return 1
