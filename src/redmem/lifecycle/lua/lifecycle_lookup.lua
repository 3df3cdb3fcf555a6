-- The lifecycle index entries a write needs before it decides to merge, supersede or create.
-- KEYS[1] the partition's lifecycle index hash (version, d:<digest> -> id, s:<slot> -> id, c:<id> -> card)
-- ARGV[1] the version entry   ARGV[2..] the entries naming a record (d:<digest>, s:<slot>)
-- returns {version, id, card, id, card, ...}: per named entry its record id and that record's
--   card (nil when the entry or the card is absent: no current record) (read-only)
local values = redis.call("HMGET", KEYS[1], unpack(ARGV))
local out = {values[1] or false}
for i = 2, #ARGV do
  local id = values[i]
  out[#out + 1] = id or false
  out[#out + 1] = id and redis.call("HGET", KEYS[1], "c:" .. id) or false
end
return out
