-- writes (applied once per call: store.scripts guards it with an operation key)
-- KEYS[1] Bloom bitmap of one partition
-- ARGV[1] k (bit positions per term)   ARGV[2] m (bits)
-- ARGV[3..] per term h1 and step: its positions are (h1 + i * step) mod m for i = 0..k-1
-- returns how many of the terms set at least one bit that was clear (terms surely new)
local k, m = tonumber(ARGV[1]), tonumber(ARGV[2])
local fresh = 0
for first = 3, #ARGV, 2 do
  local h1, step = tonumber(ARGV[first]), tonumber(ARGV[first + 1])
  local cleared = 0
  for i = 0, k - 1 do
    cleared = cleared + 1 - redis.call("SETBIT", KEYS[1], (h1 + i * step) % m, 1)
  end
  if cleared > 0 then fresh = fresh + 1 end
end
return fresh
