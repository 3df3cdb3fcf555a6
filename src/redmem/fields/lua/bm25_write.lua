-- writes (applied once per call: store.scripts guards it with an operation key)
-- Replace (or remove) the entries of records in a BM25 index, keeping N, total length and df exact.
-- The outcome is that of one call per record, in order (same references, same rebases): records are
-- applied first (docnos, lengths, the average length after each), then each list replays its own
-- removals and additions in record order, and each list and hash is written once.
-- KEYS[1] hash docno -> "dl id"   KEYS[2] hash id -> entry JSON [docno, dl, term, tf, ..]
-- KEYS[3] hash "total" -> sum of lengths, "next" -> last docno given
-- KEYS[4] hash term -> "reference size df" (size: df at the list's last check)
-- KEYS[5] version hash {epoch, n, floor, run}   KEYS[6] change log zset ("docno [old terms]", scored
--   by the version n of the change)
-- KEYS[7..] posting zsets (member docno, score ceil(tf_norm * unit)), one per term of ARGV[8], in
--   its order; they must cover the stored entries' terms and the new ones
-- ARGV[1] k1   ARGV[2] b   ARGV[3] drift: relative avgdl change that rebases a list that has doubled
-- ARGV[4] unit: the power of two scaling impacts to integers
-- ARGV[5] the log keeps at least this many entries   ARGV[6] ... or 1 per this many records, if more
-- ARGV[7] R, the number of records
-- ARGV[8] JSON [term, [record, tf, record, tf, ..], term, ..]: each list's term and the new entries
--   that join it (record: 1-based position among the R records, ascending)
-- ARGV[9..8 + 2R] record id, entry JSON [dl, term, tf, term, tf, ..] ("" removes it), ids distinct
-- A posting's impact is tf_norm at its list's reference avgdl; a list is re-scored at the current
-- avgdl when it has doubled since its last check and avgdl moved by more than drift. A record keeps
-- its docno (the short posting member) while it is indexed.
-- Each changed record adds one entry to the change log, "<docno>[ <JSON list of its previous terms>]",
-- scored by the index's version n (one more per change), so an in-process copy of the postings
-- (redmem/fields/bm25_postings.py) catches up by reading the entries above its version: the lists
-- a record left, and (read then) its current entry. The epoch, run and floor rules are those of
-- vector_write.lua: an index that becomes empty is deleted with its version and log (the next
-- write starts a new epoch), a write on another server process starts a new epoch, the oldest log
-- entries past the bound are dropped and floor = the newest version dropped.
-- returns the number of records changed, -1 when a stored entry has a term without a key (nothing written)
local k1, b, drift, unit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local keep, fraction = tonumber(ARGV[5]), tonumber(ARGV[6])
local count, plan = tonumber(ARGV[7]), cjson.decode(ARGV[8])
local lists = #plan / 2
local terms, position = {}, {}
for p = 1, lists do
  terms[p] = plan[2 * p - 1]
  position[terms[p]] = p
end

local function call(command, key, args, count)  -- args[1..count] (all of them by default), one command
  count = count or #args                         -- per 1000 arguments: unpack() has a stack limit
  if count == 0 then return {} end
  if count <= 1000 then return redis.call(command, key, unpack(args, 1, count)) end
  local out = {}
  for first = 1, count, 1000 do
    local reply = redis.call(command, key, unpack(args, first, math.min(first + 999, count)))
    if type(reply) == "table" then
      for j = 1, #reply do out[first + j - 1] = reply[j] end
    end
  end
  return out
end

-- records in order: which change, their docnos and lengths, avgdl once each has joined, and the
-- lists their stored entries leave (removals[p]: record positions, ascending)
local ids = {}
for i = 1, count do ids[i] = ARGV[7 + 2 * i] end
local stored = call("HMGET", KEYS[2], ids)
local n = redis.call("HLEN", KEYS[1])
local sums = redis.call("HMGET", KEYS[3], "total", "next")
local total, last = tonumber(sums[1]) or 0, tonumber(sums[2]) or 0
local docnos, lengths, averages, removals = {}, {}, {}, {}
local rows, entries, gone, dropped, logged = {}, {}, {}, {}, {}
local changed = 0
for i = 1, count do
  local old, entry = stored[i], ARGV[8 + 2 * i]
  local docno = old and string.match(old, "^%[(%d+),")
  if (old or entry ~= "") and not (old and entry ~= "" and old == "[" .. docno .. "," .. string.sub(entry, 2)) then
    changed = changed + 1
    local left = {}
    if old then
      local decoded = cjson.decode(old)
      for t = 3, #decoded, 2 do
        local p = position[decoded[t]]
        if not p then return -1 end
        local r = removals[p]
        if r then r[#r + 1] = i else removals[p] = {i} end
        left[#left + 1] = decoded[t]
      end
      n, total = n - 1, total - decoded[2]
    end
    if entry ~= "" then
      if not docno then
        last = last + 1
        docno = string.format("%d", last)
      end
      local dl = tonumber(string.match(entry, "^%[(%d+)"))
      n, total = n + 1, total + dl
      lengths[i], averages[i] = dl, total / n
      local m = #rows
      rows[m + 1], rows[m + 2] = docno, string.format("%d %s", dl, ids[i])
      entries[m + 1], entries[m + 2] = ids[i], "[" .. docno .. "," .. string.sub(entry, 2)
    else
      gone[#gone + 1], dropped[#dropped + 1] = ids[i], docno
    end
    docnos[i] = docno
    logged[#logged + 1] = #left == 0 and docno or docno .. " " .. cjson.encode(left)
  end
end
if changed == 0 then return 0 end

local k1p1 = k1 + 1
local function scale(dl, avgdl) return k1 * (1 - b + b * dl / avgdl) end
local function frequency(impact, dl, avgdl)  -- the tf behind a stored impact
  local norm = impact / unit
  return math.floor(norm * scale(dl, avgdl) / (k1p1 - norm) + 0.5)
end

local function rebase(key, from, to)  -- re-score every posting of the list at reference `to`
  local stored_rows = redis.call("ZRANGE", key, 0, -1, "WITHSCORES")
  for first = 1, #stored_rows, 2000 do
    local members, args = {}, {}
    for i = first, math.min(first + 1999, #stored_rows), 2 do members[#members + 1] = stored_rows[i] end
    local values = redis.call("HMGET", KEYS[1], unpack(members))
    for j, member in ipairs(members) do
      local dl = tonumber(string.match(values[j], "^%d+"))
      local tf = frequency(tonumber(stored_rows[first + 2 * j - 1]), dl, from)
      args[2 * j - 1], args[2 * j] = math.ceil(tf * k1p1 / (tf + scale(dl, to)) * unit), member
    end
    redis.call("ZADD", key, unpack(args))
  end
end

-- each list replays its events in record order, a record's removal before its addition: df moves,
-- an emptied list loses its reference, a joining record sets it on an empty list and rebases a list
-- that has doubled since its last check when avgdl drifted; new postings are scored at the final
-- reference (tf is exact either way)
local references = call("HMGET", KEYS[4], terms)
local set_refs, dropped_refs, kept = {}, {}, 0
local none, args = {}, {}  -- no removals; one argument buffer for every list (filled to m)
for p = 1, lists do
  local additions, leaving = plan[2 * p], removals[p] or none
  local r, size, df, text = nil, nil, 0, nil
  if references[p] then
    text, size, df = string.match(references[p], "^(%S+) (%S+) (%S+)$")
    r, size, df = tonumber(text), tonumber(size), tonumber(df)
  end
  local r0, a, e, events, removed = r, 1, 1, 0, nil
  while true do
    while additions[a] and not averages[additions[a]] do a = a + 2 end  -- unchanged or removed record
    local joining, leaving_at = additions[a], leaving[e]
    if not joining and not leaving_at then break end
    events = events + 1
    if leaving_at and (not joining or leaving_at <= joining) then
      df = df - 1
      removed = removed or {}
      removed[e] = docnos[leaving_at]
      if df == 0 then r, size = nil, nil end
      e = e + 1
    else
      df = df + 1
      local avgdl = averages[joining]
      if not r then
        r, size = avgdl, df
      elseif df >= 2 * size then
        if math.abs(avgdl / r - 1) > drift then r = avgdl end
        size = df
      end
      a = a + 2
    end
  end
  if events > 0 then
    local key = KEYS[6 + p]
    if removed then call("ZREM", key, removed) end
    if r0 and r and r ~= r0 then rebase(key, r0, r) end
    local m = 0
    for j = 1, #additions, 2 do
      local i = additions[j]
      if averages[i] then
        local tf = additions[j + 1]
        args[m + 1], args[m + 2] = math.ceil(tf * k1p1 / (tf + k1 * (1 - b + b * lengths[i] / r)) * unit), docnos[i]
        m = m + 2
      end
    end
    if m > 0 then call("ZADD", key, args, m) end
    if df == 0 then
      dropped_refs[#dropped_refs + 1] = terms[p]
    else
      set_refs[kept + 1] = terms[p]
      set_refs[kept + 2] = (r == r0 and text or string.format("%.17g", r)) .. " " .. size .. " " .. df
      kept = kept + 2
    end
  end
end
if #dropped_refs > 0 then call("HDEL", KEYS[4], dropped_refs) end
if kept > 0 then call("HSET", KEYS[4], set_refs) end
if #gone > 0 then
  call("HDEL", KEYS[1], dropped)
  call("HDEL", KEYS[2], gone)
end
if #rows > 0 then
  call("HSET", KEYS[1], rows)
  call("HSET", KEYS[2], entries)
end
if n == 0 then
  redis.call("DEL", KEYS[3], KEYS[5], KEYS[6])
  return changed
end
redis.call("HSET", KEYS[3], "total", string.format("%d", total), "next", string.format("%d", last))

local info = redis.pcall("INFO", "server")  -- an ACL user without INFO: no run check
local run = type(info) == "string" and string.match(info, "run_id:(%x+)") or false
local state = redis.call("HMGET", KEYS[5], "n", "run")
local version = tonumber(state[1])
if not version or (run and state[2] ~= run) then
  local now = redis.call("TIME")
  redis.call("HSET", KEYS[5], "epoch", now[1] .. "." .. now[2])
  if run then redis.call("HSET", KEYS[5], "run", run) end
end
version = version or 0
local log = {}
for j, member in ipairs(logged) do
  log[2 * j - 1], log[2 * j] = version + j, member
end
call("ZADD", KEYS[6], log)
redis.call("HSET", KEYS[5], "n", version + #logged)
local excess = redis.call("ZCARD", KEYS[6]) - math.max(keep, math.floor(n / fraction))
if excess > 0 then
  local popped = redis.call("ZPOPMIN", KEYS[6], excess)
  redis.call("HSET", KEYS[5], "floor", popped[#popped])
end
return changed
