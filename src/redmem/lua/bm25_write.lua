-- Replace (or remove) the entries of records in a BM25 index, keeping N, total length and df exact.
-- The records are applied in order with the outcome of one call per record (same references, same
-- rebases), but each list and hash is written once, at the end.
-- KEYS[1] hash docno -> "dl id"   KEYS[2] hash id -> entry JSON [docno, dl, term, tf, ..]
-- KEYS[3] hash "total" -> sum of lengths, "next" -> last docno given
-- KEYS[4] hash term -> "reference size df" (size: df at the list's last check)
-- KEYS[5..] posting zsets (member docno, score ceil(tf_norm * unit)), each ARGV[6] .. the escaped
--   term; they must cover the stored entries' terms and the new ones
-- ARGV[1] k1   ARGV[2] b   ARGV[3] drift: relative avgdl change that rebases a list that has doubled
-- ARGV[4] unit: the power of two scaling impacts to integers   ARGV[5] R, the number of records
-- ARGV[6] the posting keys' prefix
-- ARGV[7..6 + 2R] record id, entry JSON [dl, term, tf, term, tf, ..] ("" removes it), ids distinct
-- A posting's impact is tf_norm at its list's reference avgdl; a list is re-scored at the current
-- avgdl when it has doubled since its last check and avgdl moved by more than drift. A record keeps
-- its docno (the short posting member) while it is indexed.
-- returns the number of records changed, -1 when a stored entry has a term without a key (nothing written)
local k1, b, drift, unit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local count, prefix = tonumber(ARGV[5]), ARGV[6]
local postings = {}  -- term -> key (keys escape bytes as %XX and "" as %_, see redmem.store.keys)
local function byte(hex) return string.char(tonumber(hex, 16)) end
for i = 5, #KEYS do
  local term = string.sub(KEYS[i], #prefix + 1)
  if term == "%_" then
    term = ""
  elseif string.find(term, "%", 1, true) then
    term = string.gsub(term, "%%(%x%x)", byte)
  end
  postings[term] = KEYS[i]
end

local function call(command, key, args)  -- one command per 1000 arguments: unpack() has a stack limit
  if #args == 0 then return {} end
  if #args <= 1000 then return redis.call(command, key, unpack(args)) end
  local out = {}
  for first = 1, #args, 1000 do
    local reply = redis.call(command, key, unpack(args, first, math.min(first + 999, #args)))
    if type(reply) == "table" then
      for j = 1, #reply do out[first + j - 1] = reply[j] end
    end
  end
  return out
end

-- the records that change, their stored and new entries decoded, and the lists they touch
local ids = {}
for i = 1, count do ids[i] = ARGV[5 + 2 * i] end
local stored, records, lists, terms = call("HMGET", KEYS[2], ids), {}, {}, {}
local function touch(term)
  if not lists[term] then
    lists[term] = {key = postings[term], df = 0, added = {}}
    terms[#terms + 1] = term
  end
end
for i = 1, count do
  local record, entry = {id = ids[i]}, ARGV[6 + 2 * i]
  if stored[i] then
    record.old = cjson.decode(stored[i])
    record.docno = string.format("%d", record.old[1])
  end
  if not (stored[i] and entry ~= "" and stored[i] == "[" .. record.docno .. "," .. string.sub(entry, 2))
      and (stored[i] or entry ~= "") then
    if record.old then
      for t = 3, #record.old, 2 do
        if not postings[record.old[t]] then return -1 end
        touch(record.old[t])
      end
    end
    if entry ~= "" then
      record.new, record.entry = cjson.decode(entry), entry
      for t = 2, #record.new, 2 do touch(record.new[t]) end
    end
    records[#records + 1] = record
  end
end
if #records == 0 then return 0 end

-- each list's reference r, size and df as stored (r0, size0) and as they evolve; a list without
-- a reference is empty (its last posting took the reference with it)
local refs = call("HMGET", KEYS[4], terms)
for i, term in ipairs(terms) do
  if refs[i] then
    local l, r, size, df = lists[term], string.match(refs[i], "^(%S+) (%S+) (%S+)$")
    l.r, l.size, l.df = tonumber(r), tonumber(size), tonumber(df)
    l.r0, l.size0, l.text = l.r, l.size, r
  end
end

-- a record joins the list at avgdl: a list without a reference takes avgdl; one that has doubled
-- since its last check is rebased when avgdl drifted (its stored postings are re-scored once, at
-- the end, from r0 to the final reference: tf is exact either way)
local function join(l, avgdl)
  l.df = l.df + 1
  if l.r then
    if l.df < 2 * l.size then return end
    if math.abs(avgdl / l.r - 1) > drift then l.r = avgdl end
  else
    l.r = avgdl
  end
  l.size = l.df
end

local n = redis.call("HLEN", KEYS[1])
local sums = redis.call("HMGET", KEYS[3], "total", "next")
local total, last = tonumber(sums[1]) or 0, tonumber(sums[2]) or 0
local lengths, entries, gone, dropped = {}, {}, {}, {}
for _, record in ipairs(records) do
  local old, new, docno = record.old, record.new, record.docno
  if old then
    for t = 3, #old, 2 do
      local l = lists[old[t]]
      l.df = l.df - 1
      l.removed = l.removed or {}
      l.removed[#l.removed + 1] = docno
      if l.df == 0 then l.r, l.size = nil, nil end
    end
    n, total = n - 1, total - old[2]
  end
  if new then
    if not docno then
      last = last + 1
      docno = string.format("%d", last)
    end
    local dl = new[1]
    n, total = n + 1, total + dl
    for t = 2, #new, 2 do
      local l = lists[new[t]]
      join(l, total / n)
      local added, m = l.added, #l.added
      added[m + 1], added[m + 2], added[m + 3] = docno, new[t + 1], dl
    end
    local m = #lengths
    lengths[m + 1], lengths[m + 2] = docno, string.format("%d %s", dl, record.id)
    entries[m + 1], entries[m + 2] = record.id, "[" .. docno .. "," .. string.sub(record.entry, 2)
  else
    gone[#gone + 1], dropped[#dropped + 1] = record.id, docno
  end
end

local k1p1 = k1 + 1
local function scale(dl, avgdl) return k1 * (1 - b + b * dl / avgdl) end
local function score(tf, dl, avgdl)  -- ceil(tf_norm * unit): an integer below 2^52, as text
  return string.format("%d", math.ceil(tf * k1p1 / (tf + scale(dl, avgdl)) * unit))
end
local function frequency(stored, dl, avgdl)
  local impact = stored / unit
  return math.floor(impact * scale(dl, avgdl) / (k1p1 - impact) + 0.5)
end

local function rebase(key, from, to)  -- re-score every posting of the list at reference `to`
  local rows = redis.call("ZRANGE", key, 0, -1, "WITHSCORES")
  for first = 1, #rows, 2000 do
    local members, args = {}, {}
    for i = first, math.min(first + 1999, #rows), 2 do members[#members + 1] = rows[i] end
    local values = redis.call("HMGET", KEYS[1], unpack(members))
    for j, member in ipairs(members) do
      local dl = tonumber(string.match(values[j], "^%d+"))
      args[2 * j - 1], args[2 * j] = score(frequency(tonumber(rows[first + 2 * j - 1]), dl, from), dl, to), member
    end
    redis.call("ZADD", key, unpack(args))
  end
end

local set_refs, dropped_refs = {}, {}
for _, term in ipairs(terms) do
  local l = lists[term]
  if l.removed then call("ZREM", l.key, l.removed) end
  if l.r0 and l.r and l.r ~= l.r0 then rebase(l.key, l.r0, l.r) end
  local added, r = l.added, l.r
  if #added > 0 then
    local args = {}
    for j = 1, #added, 3 do
      local m = (j + 2) / 3 * 2
      args[m - 1], args[m] = score(added[j + 1], added[j + 2], r), added[j]
    end
    call("ZADD", l.key, args)
  end
  if l.df == 0 then
    dropped_refs[#dropped_refs + 1] = term
  else
    local m = #set_refs
    local r = l.r == l.r0 and l.text or string.format("%.17g", l.r)
    set_refs[m + 1], set_refs[m + 2] = term, string.format("%s %d %d", r, l.size, l.df)
  end
end
if #dropped_refs > 0 then call("HDEL", KEYS[4], dropped_refs) end
if #set_refs > 0 then call("HSET", KEYS[4], set_refs) end
if #gone > 0 then
  call("HDEL", KEYS[1], dropped)
  call("HDEL", KEYS[2], gone)
end
if #lengths > 0 then
  call("HSET", KEYS[1], lengths)
  call("HSET", KEYS[2], entries)
end
if n == 0 then
  redis.call("DEL", KEYS[3])
else
  redis.call("HSET", KEYS[3], "total", string.format("%d", total), "next", string.format("%d", last))
end
return #records
