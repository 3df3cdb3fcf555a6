-- KEYS[1] Bloom bitmap of one partition
-- ARGV[1] k (bit positions per term)   ARGV[2..] bit positions, k per term, each in [0, m)
-- returns {flag, ...} one per term: 1 all its bits set (may exist), 0 a bit clear (missing)
local k = tonumber(ARGV[1])
local flags = {}
for first = 2, #ARGV, k do
  local present = 1
  for i = first, first + k - 1 do
    if redis.call("GETBIT", KEYS[1], ARGV[i]) == 0 then
      present = 0
      break
    end
  end
  flags[#flags + 1] = present
end
return flags
