-- writes (applied once per call: store.scripts guards it with an operation key)
-- An agent's active-hours clock: hours accumulated over ended sessions, plus the open session's start
-- and the number of sessions begun (the open session's id).
-- KEYS[1] clock hash {hours, started, session}
-- ARGV[1] "begin" | "end"   ARGV[2] now (wall seconds)
-- returns the active hours at now (text)
local now = tonumber(ARGV[2])
local clock = redis.call("HMGET", KEYS[1], "hours", "started")
local hours = tonumber(clock[1] or "0")
if clock[2] then hours = hours + math.max(now - tonumber(clock[2]), 0) / 3600 end
local function text(x)
  local t = string.format("%.15g", x)
  if tonumber(t) ~= x then t = string.format("%.17g", x) end
  return t
end
if ARGV[1] == "begin" then
  if not clock[2] then
    redis.call("HSET", KEYS[1], "started", ARGV[2])
    redis.call("HINCRBY", KEYS[1], "session", 1)
  end
elseif clock[2] then
  redis.call("HSET", KEYS[1], "hours", text(hours))
  redis.call("HDEL", KEYS[1], "started")
end
return text(hours)
