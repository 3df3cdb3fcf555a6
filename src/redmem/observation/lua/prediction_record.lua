-- writes (applied once per call: store.scripts guards it with an operation key)
-- Open a new prediction for a record (replacing an unresolved one), only while the record exists.
-- KEYS[1] record hash   KEYS[2] the record's prediction hash
-- ARGV[1] prediction (JSON object)   ARGV[2] now (s)
-- returns the prediction's sequence number, or 0 (nothing written) when the record does not exist
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
local seq = redis.call("HINCRBY", KEYS[2], "seq", 1)
redis.call("HSET", KEYS[2], "state", "open", "prediction", ARGV[1], "predicted_at", ARGV[2])
redis.call("HDEL", KEYS[2], "actual", "error", "outcome", "resolved_at")
return seq
