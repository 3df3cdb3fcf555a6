-- Stage one read of each listed record that exists (a tentative access, confirmed or discarded later).
-- KEYS[2i-1] record hash   KEYS[2i] that record's staged-read list (all of one partition)
-- ARGV[1] now (s)   ARGV[2] staging TTL (s)   ARGV[3] most staged reads kept per record
-- returns how many records had a read staged
local staged = 0
for i = 1, #KEYS, 2 do
  if redis.call("EXISTS", KEYS[i]) == 1 then
    redis.call("RPUSH", KEYS[i + 1], ARGV[1])
    redis.call("LTRIM", KEYS[i + 1], -tonumber(ARGV[3]), -1)
    redis.call("EXPIRE", KEYS[i + 1], ARGV[2])
    staged = staged + 1
  end
end
return staged
