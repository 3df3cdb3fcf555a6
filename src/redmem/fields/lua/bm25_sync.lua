-- What an in-process copy of a BM25 index (redmem/fields/bm25_postings.py) needs to rank one query
-- exactly: the changes since the copy's version and the posting lists of the query terms it lacks.
-- KEYS[1] hash docno -> "dl id"   KEYS[2] hash id -> entry JSON [docno, dl, term, tf, ..]
-- KEYS[3] hash "total" -> sum of lengths   KEYS[4] hash term -> "reference size df"
-- KEYS[5] version hash {epoch, n, floor}   KEYS[6] change log zset ("docno [old terms]", scored by n)
-- KEYS[7..] posting zsets of the query terms (member docno, score ceil(tf_norm at the reference * unit))
-- ARGV[1] the caller's epoch ("-" when it holds nothing)   ARGV[2] the caller's version
-- ARGV[3] most log entries to read (more: reload)   ARGV[4..] per query term, in the order of
--   KEYS[7..]: the term, "1" when the caller holds its list, else "0"
-- returns {epoch ("" for an index written before the log existed), n, mode, N, total,
--   {df of each query term},
--   {changes, oldest first: log entry, "dl id" or false (removed), entry JSON or false, ..},
--   {per query term: false (the caller holds it), or {reference, docno, stored, "dl id", ..}}}
--   mode "log": the changes after the caller's version; "reload" (another epoch, a version below
--   the log's floor or above n, or too many changes): no changes, every query term's list.
--   stored is the impact, or with reference false (a damaged list) the tf read from the entries.
local state = redis.call("HMGET", KEYS[5], "epoch", "n", "floor")
local epoch, n, floor = state[1] or "", tonumber(state[2] or "0"), tonumber(state[3] or "0")
local known, most = tonumber(ARGV[2]), tonumber(ARGV[3])
local mode, changes = "log", {}
local log = {}
if epoch ~= ARGV[1] or known < floor or known > n then
  mode = "reload"
else
  log = redis.call("ZRANGEBYSCORE", KEYS[6], "(" .. ARGV[2], "+inf", "LIMIT", 0, most + 1)
  if #log > most then mode, log = "reload", {} end
end
for _, member in ipairs(log) do
  local value = redis.call("HGET", KEYS[1], string.match(member, "^%d+"))
  local entry = value and redis.call("HGET", KEYS[2], string.match(value, "^%d+ (.*)$"))
  local m = #changes
  changes[m + 1], changes[m + 2], changes[m + 3] = member, value, entry
end

local function list(key, term)  -- {reference, docno, stored, "dl id", ..} of one posting list
  local ref = redis.call("HGET", KEYS[4], term)
  ref = ref and string.match(ref, "^(%S+) ")
  local rows = redis.call("ZRANGE", key, 0, -1, "WITHSCORES")
  local out = {ref or false}
  for first = 1, #rows, 2000 do
    local docnos = {}
    for i = first, math.min(first + 1999, #rows), 2 do docnos[#docnos + 1] = rows[i] end
    local values = redis.call("HMGET", KEYS[1], unpack(docnos))
    for j, docno in ipairs(docnos) do
      local stored = rows[first + 2 * j - 1]
      if not ref then  -- the tf of the term in the record's entry
        local decoded = cjson.decode(redis.call("HGET", KEYS[2], string.match(values[j], "^%d+ (.*)$")))
        for e = 3, #decoded, 2 do
          if decoded[e] == term then stored = decoded[e + 1] end
        end
      end
      local m = #out
      out[m + 1], out[m + 2], out[m + 3] = docno, stored, values[j]
    end
  end
  return out
end

local dfs, lists = {}, {}
for i = 4, #ARGV, 2 do
  local key = KEYS[(i - 4) / 2 + 7]
  dfs[#dfs + 1] = redis.call("ZCARD", key)
  lists[#lists + 1] = (mode == "reload" or ARGV[i + 1] == "0") and list(key, ARGV[i]) or false
end
local total = redis.call("HGET", KEYS[3], "total")
return {epoch, n, mode, redis.call("HLEN", KEYS[1]), total or "0", dfs, changes, lists}
