-- KEYS[1] Bloom bitmap of one partition
-- ARGV[1] k (bit positions per term)   ARGV[2..] bit positions, k per term, each in [0, m)
-- returns how many of the terms set at least one bit that was clear (terms surely new)
local k = tonumber(ARGV[1])
local fresh = 0
for first = 2, #ARGV, k do
  local cleared = 0
  for i = first, first + k - 1 do
    cleared = cleared + 1 - redis.call("SETBIT", KEYS[1], ARGV[i], 1)
  end
  if cleared > 0 then fresh = fresh + 1 end
end
return fresh
