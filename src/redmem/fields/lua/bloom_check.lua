-- KEYS[1] Bloom bitmap of one partition
-- ARGV[1] k (bit positions per term)   ARGV[2] m (bits)
-- ARGV[3..] per term h1 and step: its positions are (h1 + i * step) mod m for i = 0..k-1
-- returns {flag, ...} one per term: 1 all its bits set (may exist), 0 a bit clear (missing)
local k, m = tonumber(ARGV[1]), tonumber(ARGV[2])
local flags = {}
for first = 3, #ARGV, 2 do
  local h1, step = tonumber(ARGV[first]), tonumber(ARGV[first + 1])
  local present = 1
  for i = 0, k - 1 do
    if redis.call("GETBIT", KEYS[1], (h1 + i * step) % m) == 0 then
      present = 0
      break
    end
  end
  flags[#flags + 1] = present
end
return flags
