-- The entries of a membership log (a list that only grows) that a reader has not read yet.
-- KEYS[1] the log
-- ARGV[1] how many entries the reader has read   ARGV[2] the last of them ('' when none)
-- returns {mode, entries...}: mode 'log': the entries after the reader's; 'reload' (the log is
--   shorter, or its entry at the reader's position is not the reader's last: it was cleared or
--   replaced): every entry
local read = tonumber(ARGV[1])
if read > 0 and redis.call('LINDEX', KEYS[1], read - 1) ~= ARGV[2] then
  local out = redis.call('LRANGE', KEYS[1], 0, -1)
  table.insert(out, 1, 'reload')
  return out
end
local out = redis.call('LRANGE', KEYS[1], read, -1)
table.insert(out, 1, 'log')
return out
