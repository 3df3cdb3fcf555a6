-- learn()'s read: an agent's clock and the last blocks of its open session (what a new block's
-- context and the earlier blocks' new contexts are built from), in one call.
-- KEYS[1] clock hash {hours, started, session}
-- ARGV[1] the session blocks' key without the session id (the id is the clock's "session", "0" when unset)
-- ARGV[2] how many of the session's last blocks (0: none read)   ARGV[3] the record key prefix (a block's
-- hash is prefix .. id: the partition's hash tag, so KEYS[1]'s slot, as the session key's)
-- returns {hours or nil, started or nil, session or nil, {id, position, content, context, ...} of the
--          open session's last stored blocks, oldest first}
local clock = redis.call("HMGET", KEYS[1], "hours", "started", "session")
local reach, tail = tonumber(ARGV[2]), {}
if clock[2] and reach > 0 then
  local blocks = redis.call("ZRANGE", ARGV[1] .. (clock[3] or "0"), -reach, -1, "WITHSCORES")
  for i = 1, #blocks, 2 do
    local texts = redis.call("HMGET", ARGV[3] .. blocks[i], "content", "context")
    if texts[1] then
      for _, value in ipairs({blocks[i], blocks[i + 1], texts[1], texts[2] or ""}) do table.insert(tail, value) end
    end
  end
end
return {clock[1], clock[2], clock[3], tail}
