-- writes (applied once per call: store.scripts guards it with an operation key)
-- A restatement merged into a stored record: its count, last sighting and sources.
-- KEYS[1] the record's hash
-- ARGV[1] last_seen (as the field stores it)   ARGV[2] sources to add, a JSON list ("[]": none)
-- returns the record's hash after, as HGETALL does
local seen = tonumber(redis.call("HGET", KEYS[1], "seen_count") or "1")
redis.call("HSET", KEYS[1], "seen_count", tostring(seen + 1), "last_seen", ARGV[1])
local adding = cjson.decode(ARGV[2])
if #adding > 0 then
  local stored = redis.call("HGET", KEYS[1], "sources")
  local sources = stored and cjson.decode(stored) or {}
  local have = {}
  for _, source in ipairs(sources) do have[source] = true end
  for _, source in ipairs(adding) do
    if not have[source] then
      sources[#sources + 1] = source
      have[source] = true
    end
  end
  redis.call("HSET", KEYS[1], "sources", cjson.encode(sources))
end
return redis.call("HGETALL", KEYS[1])
