-- Read a frame's cached result with the self version it must match.
-- KEYS[1] self version counter   KEYS[2] the cached result
-- returns {version, cached result or false}
return {redis.call("GET", KEYS[1]) or "0", redis.call("GET", KEYS[2])}
