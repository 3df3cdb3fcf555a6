-- Replace (or remove) one record's entry in a BM25 index, keeping N, total length and df exact.
-- KEYS[1] hash id -> document length   KEYS[2] hash id -> entry   KEYS[3] hash "total" -> sum of lengths
-- KEYS[4] hash term -> "reference size"   KEYS[5..] posting zsets, one per term of ARGV[6..]
-- ARGV[1] record id   ARGV[2] entry JSON [dl, term, tf, term, tf, ..] ("" removes the record)
-- ARGV[3] k1   ARGV[4] b   ARGV[5] drift: relative avgdl change that rebases a list that has doubled
-- ARGV[6..] the term of each posting key; must cover the stored entry's terms and the new ones
-- A posting's score is tf_norm at its list's reference avgdl; a list is re-scored at the current
-- avgdl when it has doubled since its last check and avgdl moved by more than drift.
-- returns 0 unchanged, 1 written, -1 the stored entry has a term without a key (nothing written)
local id, entry = ARGV[1], ARGV[2]
local k1, b, drift = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local stored = redis.call("HGET", KEYS[2], id)
if stored == entry or (not stored and entry == "") then return 0 end

local postings = {}
for i = 6, #ARGV do postings[ARGV[i]] = KEYS[i - 1] end
local old = stored and cjson.decode(stored) or {0}
for i = 2, #old, 2 do
  if not postings[old[i]] then return -1 end
end

local function text(x) return string.format("%.17g", x) end
local function scale(dl, avgdl) return k1 * (1 - b + b * dl / avgdl) end
local function impact(tf, dl, avgdl) return tf * (k1 + 1) / (tf + scale(dl, avgdl)) end
local function frequency(score, dl, avgdl)
  return math.floor(score * scale(dl, avgdl) / (k1 + 1 - score) + 0.5)
end

local function rebase(key, from, to)  -- re-score every posting of the list at reference `to`
  local rows = redis.call("ZRANGE", key, 0, -1, "WITHSCORES")
  for first = 1, #rows, 2000 do
    local ids, args = {}, {}
    for i = first, math.min(first + 1999, #rows), 2 do ids[#ids + 1] = rows[i] end
    local lengths = redis.call("HMGET", KEYS[1], unpack(ids))
    for j, member in ipairs(ids) do
      local dl = tonumber(lengths[j])
      args[#args + 1] = text(impact(frequency(tonumber(rows[first + 2 * j - 1]), dl, from), dl, to))
      args[#args + 1] = member
    end
    redis.call("ZADD", key, unpack(args))
  end
end

-- the reference avgdl of the term's list (stored as "r size", or false) once this record joins it,
-- rebasing the list when it has doubled since the last check and avgdl has drifted
local function reference(term, key, ref, avgdl)
  local df, r, size = redis.call("ZCARD", key) + 1, avgdl, 0
  if ref then
    r, size = string.match(ref, "^(%S+) (%S+)$")
    r, size = tonumber(r), tonumber(size)
    if df < 2 * size then return r end
    if math.abs(avgdl / r - 1) > drift then
      rebase(key, r, avgdl)
      r = avgdl
    end
  end
  redis.call("HSET", KEYS[4], term, text(r) .. " " .. df)
  return r
end

if stored then
  for i = 2, #old, 2 do
    local key = postings[old[i]]
    redis.call("ZREM", key, id)
    if redis.call("EXISTS", key) == 0 then redis.call("HDEL", KEYS[4], old[i]) end
  end
  redis.call("HDEL", KEYS[1], id)
  redis.call("HDEL", KEYS[2], id)
  redis.call("HINCRBY", KEYS[3], "total", 0 - old[1])  -- never "-0"
  if redis.call("EXISTS", KEYS[1]) == 0 then redis.call("DEL", KEYS[3]) end
end
if entry == "" then return 1 end

local new = cjson.decode(entry)
local dl = new[1]
redis.call("HSET", KEYS[1], id, dl)
redis.call("HSET", KEYS[2], id, entry)
local avgdl = redis.call("HINCRBY", KEYS[3], "total", dl) / redis.call("HLEN", KEYS[1])
for first = 2, #new, 2000 do  -- pages of 1000 terms: unpack() has a stack limit
  local terms = {}
  for i = first, math.min(first + 1998, #new), 2 do terms[#terms + 1] = new[i] end
  local refs = redis.call("HMGET", KEYS[4], unpack(terms))
  for j, term in ipairs(terms) do
    local key = postings[term]
    redis.call("ZADD", key, text(impact(new[first + 2 * j - 1], dl, reference(term, key, refs[j], avgdl))), id)
  end
end
return 1
