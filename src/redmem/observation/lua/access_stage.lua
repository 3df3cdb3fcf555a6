-- writes (applied once per call: store.scripts guards it with an operation key)
-- Stage one read of each listed record that exists (a tentative access, confirmed or discarded later).
-- KEYS[3i-2] record hash   KEYS[3i-1] its staged-read list   KEYS[3i] its staged-read count
-- (all of one partition)
-- ARGV[1] now (s)   ARGV[2] staging TTL (s)   ARGV[3] most staged read times kept per record
-- The list keeps the newest times only; the count counts every read, so a confirmation counts them all.
-- returns how many records had a read staged
local staged = 0
for i = 1, #KEYS, 3 do
  if redis.call("EXISTS", KEYS[i]) == 1 then
    local kept = redis.call("RPUSH", KEYS[i + 1], ARGV[1])
    redis.call("LTRIM", KEYS[i + 1], -tonumber(ARGV[3]), -1)
    redis.call("EXPIRE", KEYS[i + 1], ARGV[2])
    -- reads staged before the count existed are in the list only: start the count from them
    if redis.call("EXISTS", KEYS[i + 2]) == 0 then
      redis.call("SET", KEYS[i + 2], kept - 1)
    end
    redis.call("INCR", KEYS[i + 2])
    redis.call("EXPIRE", KEYS[i + 2], ARGV[2])
    staged = staged + 1
  end
end
return staged
