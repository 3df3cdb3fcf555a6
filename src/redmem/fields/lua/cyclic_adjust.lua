-- writes (applied once per call: store.scripts guards it with an operation key)
-- Scale a record's learned cycle amplitudes by a factor, atomically. Each result keeps the
-- declared amplitude's sign and a magnitude within [0, max_ratio * |declared|].
-- KEYS[1] record hash   KEYS[2..] learned-amplitude zset of each declared cycle
-- ARGV[1] record id   ARGV[2] factor (> 0)   ARGV[3] max_ratio   ARGV[4..] declared amplitudes (KEYS[2..] order)
-- returns the new amplitudes as "%.17g" strings (KEYS[2..] order), or {} when the record does not exist
if redis.call("EXISTS", KEYS[1]) == 0 then return {} end
local id, factor, ratio = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 2, #KEYS do
  local declared = tonumber(ARGV[i + 2])
  local learned = tonumber(redis.call("ZSCORE", KEYS[i], id) or declared)
  local amplitude = math.min(math.abs(learned) * factor, ratio * math.abs(declared))
  if declared < 0 then amplitude = -amplitude end
  redis.call("ZADD", KEYS[i], amplitude, id)
  table.insert(out, string.format("%.17g", amplitude))
end
return out
