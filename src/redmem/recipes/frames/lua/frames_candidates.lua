-- A frame's candidates: pre-filter, vector seeds, 1-hop expansion, guarantees and the scoring inputs.
-- Eligible: in the window zset (active blocks only) with last_reinforced > now_hours - window (strict),
-- and, when filters are given, matching one tag range and one category range. A guaranteed block
-- (matching a guarantee range) is eligible however long ago it was last reinforced: the window never
-- drops it, only archiving does.
-- KEYS[1] clock hash {hours, started}   KEYS[2] zset window (last reinforced of active blocks)
-- KEYS[3] zset (lex) "<tag> <id>"   KEYS[4] zset (lex) "<category> <id>"   KEYS[5] graph adjacency zset (lex)
-- KEYS[6] graph degree hash   KEYS[7] confidence zset   KEYS[8] contradictions zset (lex) "<a> <b>"
-- KEYS[9] valid_to zset (the fact lifecycle's; 253402300799: still valid; no entry: valid)
-- KEYS[10] valid_from zset   KEYS[11] reinforcement count zset   KEYS[12] decay lambda zset
-- (a candidate's reinforcement count and decay lambda come from their indexes, read in batches: the
-- recipe's scripts write the hash entry and its index together)
-- ARGV[1] now (wall seconds)   ARGV[2] window hours   ARGV[3] seeds wanted (0: queryless, every eligible block)
-- ARGV[4] initial confidence   ARGV[5] the record key prefix (a block's hash is prefix .. id: the
-- partition's hash tag, so the slot of every KEYS entry)   ARGV[6] as_of: "" current blocks only (none
-- superseded), "all" every block, else epoch seconds (blocks valid then)   ARGV[7..10] the score bound
-- (_bound.py): top_k (0: none), w_similarity, w_confidence, the most feedback adds (margin included)
-- ARGV[11] n, then n stored field names returned for each candidate   then three groups, each a count n
-- followed by n (low, high) lex bounds: tag ranges, category ranges, guarantee ranges; then a count n
-- and n fused scores (the similarity of the ranked ids, in order); then the ranking's ids, best first
-- returns {now_hours, seeds, expanded, guaranteed, {fields...} of each candidate: the seeds, the expanded
--          blocks, then the guaranteed blocks neither (the fields false for an expanded block that
--          cannot be chosen: top_k seeds that contradict nothing score above the most it can score),
--          {a, b, ...} contradicting pairs among the candidates, ranked ids examined,
--          {id, superseded_by, rank, ...} the ranked blocks left out as superseded (their window closed
--          by as_of) that would otherwise have been seeds: eligible but for it, met before the seeds
--          and they together filled the seeds wanted; rank: the place in the ranking, 1-based},
--          {a, b, ...} pairs of candidates joined by an edge, a a seed (a seed's edges: read by the
--          expansion; the edges between two other candidates are not looked up), the guaranteed blocks
--          neither seed nor expanded, "last confidence count lambda degree ..." of each candidate in the
--          same order: one string of the stored numbers as Redis wrote them, space-separated (one reply
--          element instead of six per candidate; the client reads them as it read them one by one)}
local clock = redis.call("HMGET", KEYS[1], "hours", "started")
local now = tonumber(ARGV[1])
local hours = tonumber(clock[1] or "0")
if clock[2] then hours = hours + math.max(now - tonumber(clock[2]), 0) / 3600 end
local cutoff = hours - tonumber(ARGV[2])
local wanted, initial, prefix = tonumber(ARGV[3]), ARGV[4], ARGV[5]
local bound_k, w_similarity, w_confidence, feedback_most =
  tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local stored = {}
for i = 1, tonumber(ARGV[11]) do stored[i] = ARGV[11 + i] end
local as_of, OPEN_END = ARGV[6], 253402300799
local CHUNK = 1000  -- ids per batched read (ZMSCORE, HMGET)

local function batched(command, key, ids, prefix)  -- id -> reply of `command key prefix..id ...`, CHUNK ids a call
  local out = {}
  for first = 1, #ids, CHUNK do
    local names = {}
    for j = first, math.min(first + CHUNK - 1, #ids) do names[#names + 1] = (prefix or "") .. ids[j] end
    local values = redis.call(command, key, unpack(names))
    for j = 1, #names do out[ids[first + j - 1]] = values[j] end
  end
  return out
end

-- Each id's window score and validity bounds, read in batches before the ids are checked (the
-- same entries the checks would read one ZSCORE at a time; false: no entry).
local fetched, window_of, valid_to_of, valid_from_of = {}, {}, {}, {}
local function prefetch(ids)
  local todo = {}
  for _, id in ipairs(ids) do
    if not fetched[id] then fetched[id] = true; todo[#todo + 1] = id end
  end
  if #todo == 0 then return end
  for id, score in pairs(batched("ZMSCORE", KEYS[2], todo)) do window_of[id] = score end
  if as_of ~= "all" then
    for id, score in pairs(batched("ZMSCORE", KEYS[9], todo)) do valid_to_of[id] = score end
  end
  if as_of ~= "" and as_of ~= "all" then
    for id, score in pairs(batched("ZMSCORE", KEYS[10], todo)) do valid_from_of[id] = score end
  end
end
local function window_score(id)
  prefetch({id})
  return window_of[id] or false
end

local function valid(id)  -- the fact lifecycle's validity at as_of
  if as_of == "all" then return true end
  prefetch({id})
  local to = tonumber(valid_to_of[id] or OPEN_END)
  if as_of == "" then return to >= OPEN_END end
  local at = tonumber(as_of)
  return tonumber(valid_from_of[id] or -math.huge) <= at and at < to
end

local pos = 12 + #stored
local function ranges()
  local n, out = tonumber(ARGV[pos]), {}
  for i = 1, n do out[i] = {ARGV[pos + 2 * i - 1], ARGV[pos + 2 * i]} end
  pos = pos + 2 * n + 1
  return out
end
local tag_ranges, category_ranges, guarantee_ranges = ranges(), ranges(), ranges()
local similarity_of = {}  -- a ranked id's fused score
local scored = tonumber(ARGV[pos])
for i = 1, scored do similarity_of[ARGV[pos + scored + i]] = tonumber(ARGV[pos + i]) end
pos = pos + scored + 1

local function ids_in(key, bounds)  -- record ids of the index entries within any of the bounds
  local found, list = {}, {}
  for _, b in ipairs(bounds) do
    for _, m in ipairs(redis.call("ZRANGEBYLEX", key, b[1], b[2])) do
      local id = string.sub(m, string.find(m, " [^ ]*$") + 1)
      if not found[id] then found[id] = true; table.insert(list, id) end
    end
  end
  return found, list
end
local tagged = #tag_ranges > 0 and ids_in(KEYS[3], tag_ranges) or nil
local categorised = #category_ranges > 0 and ids_in(KEYS[4], category_ranges) or nil
local last = {}
local function eligible(id)
  if last[id] ~= nil then return last[id] ~= false end
  local ok = (not tagged or tagged[id]) and (not categorised or categorised[id]) and valid(id)
  local score = ok and window_score(id)
  if score and tonumber(score) > cutoff then last[id] = score; return true end
  last[id] = false
  return false
end

local function closed(id)  -- superseded at as_of: its window closed by then (an open one is OPEN_END)
  if as_of == "all" then return false end
  prefetch({id})
  local to = tonumber(valid_to_of[id] or OPEN_END)
  if as_of == "" then return to < OPEN_END end
  return to <= tonumber(as_of)
end
local function superseded_seed(id)  -- eligible but for its closed window
  if not ((not tagged or tagged[id]) and (not categorised or categorised[id]) and closed(id)) then return false end
  local score = window_score(id)
  return score ~= false and tonumber(score) > cutoff
end

local seeds, expanded, guaranteed, chosen, examined, superseded, dropped = {}, {}, {}, {}, 0, {}, 0
local function add(list, id)
  if not chosen[id] then chosen[id] = true; table.insert(list, id) end
end
local adjacent = {}
local function neighbours(id)  -- the block's 1-hop graph neighbours (block ids), read once
  if adjacent[id] then return adjacent[id] end
  local node, found = "r:" .. id, {}
  for _, m in ipairs(redis.call("ZRANGEBYLEX", KEYS[5], "[" .. node .. " ", "(" .. node .. "!")) do
    local nb = string.sub(m, #node + 19)
    if string.sub(nb, 1, 2) == "r:" then table.insert(found, string.sub(nb, 3)) end
  end
  adjacent[id] = found
  return found
end
if wanted == 0 then
  local pool = tagged and select(2, ids_in(KEYS[3], tag_ranges))
    or redis.call("ZRANGEBYSCORE", KEYS[2], "(" .. cutoff, "+inf")
  prefetch(pool)
  for _, id in ipairs(pool) do if eligible(id) then add(seeds, id) end end
else
  -- The ranked ids are read as the walk reaches them, as many at a time as seeds are still
  -- missing (each id gives at most one): the walk stops once the seeds are full, and the ids
  -- after it are not read.
  local read_to = pos - 1
  for i = pos, #ARGV do
    if #seeds >= wanted then break end
    if i > read_to then
      local ranked = {}
      read_to = math.min(i + wanted - #seeds - 1, #ARGV)
      for j = i, read_to do ranked[#ranked + 1] = ARGV[j] end
      prefetch(ranked)
    end
    examined = examined + 1
    if eligible(ARGV[i]) then
      add(seeds, ARGV[i])
    elseif #seeds + dropped < wanted and superseded_seed(ARGV[i]) then
      dropped = dropped + 1
      local by = redis.call("HGET", prefix .. ARGV[i], "superseded_by") or ""
      for _, v in ipairs({ARGV[i], by, i - pos + 1}) do superseded[#superseded + 1] = v end
    end
  end
  local reached = {}
  for _, id in ipairs(seeds) do
    for _, nid in ipairs(neighbours(id)) do reached[#reached + 1] = nid end
  end
  prefetch(reached)
  for _, id in ipairs(seeds) do
    for _, nid in ipairs(neighbours(id)) do
      if not chosen[nid] and eligible(nid) then add(expanded, nid) end
    end
  end
end
local function pinned_eligible(id)  -- eligible but for the window
  if eligible(id) then return true end
  local ok = (not tagged or tagged[id]) and (not categorised or categorised[id]) and valid(id)
  local score = ok and window_score(id)
  if score then last[id] = score; return true end
  return false
end
local extra = {}  -- guaranteed blocks neither seed nor neighbour
local _, pinned = ids_in(KEYS[3], guarantee_ranges)
prefetch(pinned)
for _, id in ipairs(pinned) do
  if pinned_eligible(id) then
    table.insert(guaranteed, id)
    add(extra, id)
  end
end

local data, pairs_out, linked, numbers = {}, {}, {}, {}
local everyone = {}
for _, list in ipairs({seeds, expanded, extra}) do
  for _, id in ipairs(list) do everyone[#everyone + 1] = id end
end
local confidence_of = batched("ZMSCORE", KEYS[7], everyone)
local degree_of = batched("HMGET", KEYS[6], everyone, "r:")
local count_of = batched("ZMSCORE", KEYS[11], everyone)
local lambda_of = batched("ZMSCORE", KEYS[12], everyone)
-- Each candidate's contradiction entries "<id> <other>": the whole zset read once when it is no
-- bigger than a few entries per candidate (every member split at each space, as a range of
-- the prefix "<id> " would find it), else one range per candidate.
local contradicted = nil
if redis.call("ZCARD", KEYS[8]) <= 4 * #everyone then
  contradicted = {}
  for _, m in ipairs(redis.call("ZRANGE", KEYS[8], 0, -1)) do
    local at = string.find(m, " ", 1, true)
    while at do
      local id = string.sub(m, 1, at - 1)
      if chosen[id] then
        contradicted[id] = contradicted[id] or {}
        table.insert(contradicted[id], string.sub(m, at + 1))
      end
      at = string.find(m, " ", at + 1, true)
    end
  end
end
local ranged = {}  -- an id's contradiction entries read by range, read once
local function contradicting(id)
  if contradicted then return contradicted[id] or {} end
  if ranged[id] then return ranged[id] end
  local found = {}
  for _, m in ipairs(redis.call("ZRANGEBYLEX", KEYS[8], "[" .. id .. " ", "(" .. id .. "!")) do
    table.insert(found, string.sub(m, #id + 2))
  end
  ranged[id] = found
  return found
end
-- The score bound: the top_k-th highest lower bound (w_sim * similarity + w_conf * confidence) of the
-- seeds that contradict nothing (suppression cannot remove them); an expanded block whose upper bound
-- (w_conf * confidence + feedback_most: its similarity is 0) is below it cannot be chosen.
local threshold = -math.huge
if bound_k > 0 then
  local lows = {}
  for _, id in ipairs(seeds) do
    if #contradicting(id) == 0 then
      lows[#lows + 1] = w_similarity * similarity_of[id] + w_confidence * tonumber(confidence_of[id] or initial)
    end
  end
  table.sort(lows, function(a, b) return a > b end)
  if #lows >= bound_k then threshold = lows[bound_k] end
end
local pinned_set = {}
for _, id in ipairs(guaranteed) do pinned_set[id] = true end
local function hopeless(id)
  return not pinned_set[id] and w_confidence * tonumber(confidence_of[id] or initial) + feedback_most < threshold
end
local function collect(list, bounded)
  for _, id in ipairs(list) do
    numbers[#numbers + 1] = last[id]
    numbers[#numbers + 1] = confidence_of[id] or initial
    numbers[#numbers + 1] = count_of[id] or "0"
    numbers[#numbers + 1] = lambda_of[id] or "0.01"
    numbers[#numbers + 1] = degree_of[id] or "0"
    if bounded and hopeless(id) then
      for _ = 1, #stored do table.insert(data, false) end
    elseif #stored > 0 then
      local values = redis.call("HMGET", prefix .. id, unpack(stored))
      for i = 1, #stored do table.insert(data, values[i]) end
    end
    for _, other in ipairs(contradicting(id)) do
      if chosen[other] and id < other then
        table.insert(pairs_out, id)
        table.insert(pairs_out, other)
      end
    end
    for _, other in ipairs(adjacent[id] or {}) do  -- a seed's neighbours, read by the expansion
      if chosen[other] then
        table.insert(linked, id)
        table.insert(linked, other)
      end
    end
  end
end
collect(seeds)
collect(expanded, true)
collect(extra)
local h = string.format("%.17g", hours)
return {h, seeds, expanded, guaranteed, data, pairs_out, examined, superseded, linked, extra, table.concat(numbers, " ")}
