-- Proves the server runs redmem's Lua: touches nothing.
-- KEYS[1] a key naming the slot to run in (never read or written)
-- returns "pong"
return "pong"
