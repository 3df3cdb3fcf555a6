-- writes (applied once per call: store.scripts guards it with an operation key)
-- Resolve a record's open prediction exactly once: compare-and-set on its state (and sequence
-- number), then file it in the partition's ledger (trimmed to the newest ARGV[8] resolutions)
-- and, with KEYS[5], write a prediction_resolved event (the record key as both pk and key).
-- KEYS[1] the record's prediction hash   KEYS[2] zset error by entry id
-- KEYS[3] zset resolution time by entry id   KEYS[4] hash entry id -> JSON details   KEYS[5] event stream (optional)
-- ARGV[1] expected sequence number ("" = whichever is open)   ARGV[2] error (JSON number)   ARGV[3] now (s)
-- ARGV[4] actual (JSON, "null" if none)   ARGV[5] outcome ("" if none)   ARGV[6] record id   ARGV[7] record key
-- ARGV[8] ledger size   ARGV[9] model name   ARGV[10] stream MAXLEN (~)
-- returns 1 when this call resolved the prediction, 0 when none was open (or another call won)
local state, seq, prediction, predicted_at = unpack(redis.call("HMGET", KEYS[1], "state", "seq", "prediction", "predicted_at"))
if state ~= "open" or (ARGV[1] ~= "" and seq ~= ARGV[1]) then return 0 end
local outcome = ARGV[5] ~= "" and cjson.encode(ARGV[5]) or "null"
redis.call("HSET", KEYS[1], "state", "resolved", "error", ARGV[2], "actual", ARGV[4], "resolved_at", ARGV[3])
if ARGV[5] ~= "" then redis.call("HSET", KEYS[1], "outcome", ARGV[5]) end

local entry = ARGV[6] .. "#" .. seq
local details = '{"id":' .. cjson.encode(entry) .. ',"key":' .. cjson.encode(ARGV[7]) .. ',"error":' .. ARGV[2]
  .. ',"prediction":' .. prediction .. ',"actual":' .. ARGV[4] .. ',"outcome":' .. outcome
  .. ',"predicted_at":' .. predicted_at .. ',"resolved_at":' .. ARGV[3] .. '}'
redis.call("ZADD", KEYS[2], ARGV[2], entry)
redis.call("ZADD", KEYS[3], ARGV[3], entry)
redis.call("HSET", KEYS[4], entry, details)
local excess = redis.call("ZCARD", KEYS[3]) - tonumber(ARGV[8])
if excess > 0 then
  local oldest = redis.call("ZRANGE", KEYS[3], 0, excess - 1)
  redis.call("ZREM", KEYS[2], unpack(oldest))
  redis.call("ZREM", KEYS[3], unpack(oldest))
  redis.call("HDEL", KEYS[4], unpack(oldest))
end
if KEYS[5] then
  redis.call("XADD", KEYS[5], "MAXLEN", "~", ARGV[10], "*", "model", ARGV[9], "pk", ARGV[7], "key", ARGV[7],
    "op", "prediction_resolved", "ts", ARGV[3], "changed_fields", "[]",
    "data", '{"error":' .. ARGV[2] .. ',"outcome":' .. outcome .. '}')
end
return 1
