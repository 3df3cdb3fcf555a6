-- Exact candidates for the top n by exponential decay: the static order key
-- x = log2(base) + t/half_life ranks records as their score does at any time.
-- KEYS[1] zset order key x   KEYS[2..] zsets each row carries (last-updated t, then base)
-- ARGV[1] n   ARGV[2] eps (relative slack for float rounding)   ARGV[3] now / half_life
-- returns {id, s2, s3, .., id, ..}: the n best by x and every record within eps*(1+|x|) of the
--         n-th (every record when the n-th score 2^(x - now/half_life) is 0 or subnormal: all
--         such scores may tie), each id followed by its ZMSCORE string in KEYS[2..] ("" if none)
local n, eps, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local nth = redis.call("ZREVRANGE", KEYS[1], n - 1, n - 1, "WITHSCORES")
local ids
if #nth == 0 then
  ids = redis.call("ZRANGE", KEYS[1], 0, -1)
else
  local x = tonumber(nth[2])
  local low = "-inf"
  if 2 ^ (x - now) >= 1e-300 then low = x - eps * (1 + math.abs(x)) end
  ids = redis.call("ZREVRANGEBYSCORE", KEYS[1], "+inf", low)
end

local out = {}
for start = 1, #ids, 1000 do
  local batch = {unpack(ids, start, math.min(start + 999, #ids))}
  local cols = {}
  for k = 2, #KEYS do cols[k] = redis.call("ZMSCORE", KEYS[k], unpack(batch)) end
  for i, id in ipairs(batch) do
    table.insert(out, id)
    for k = 2, #KEYS do table.insert(out, cols[k][i] or "") end
  end
end
return out
