-- The fields of many records in one reply: an HMGET of each of the first records, an HGET of
-- one field of the others (what a retrieval shows of its candidates, and the successors of the
-- hits left out as superseded: one command to send and one reply to parse, not one each).
-- KEYS[1..n] the records read by ARGV[3..]   KEYS[n+1..] the records read by ARGV[2]
-- ARGV[1] n   ARGV[2] the one field read of the others   ARGV[3..] the fields read of the first n
-- returns {rows..., values...}: a row per first record (a list, false for a field it lacks),
--   then a value per other record (false when it lacks the field)
local n = tonumber(ARGV[1])
local fields = {}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
local out = {}
for i = 1, #KEYS do
  if i <= n then
    out[i] = redis.call('HMGET', KEYS[i], unpack(fields))
  else
    out[i] = redis.call('HGET', KEYS[i], ARGV[2])
  end
end
return out
