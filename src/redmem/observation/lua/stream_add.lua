-- writes (applied once per call: store.scripts guards it with an operation key)
-- Append one entry to a stream capped near a length (XADD MAXLEN ~), as a script so that it
-- runs guarded by an operation key: a resent call never adds a second entry.
-- KEYS[1] stream; ARGV[1] max length (0: uncapped); ARGV[2..] field, value pairs.
-- Returns the new entry's id.
local maxlen = tonumber(ARGV[1])
local fields = {}
for i = 2, #ARGV do
    fields[#fields + 1] = ARGV[i]
end
if maxlen > 0 then
    return redis.call("XADD", KEYS[1], "MAXLEN", "~", maxlen, "*", unpack(fields))
end
return redis.call("XADD", KEYS[1], "*", unpack(fields))
