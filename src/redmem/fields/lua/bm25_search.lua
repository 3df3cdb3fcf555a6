-- Top-k BM25 of one partition: the threshold algorithm over impact-ordered postings, each newly
-- seen record scored only when its upper bound can still reach the top (MaxScore over the random
-- accesses); once the top is full, the list whose next page lowers its bound most per posting is
-- read, and a list is closed at the least impact that can still bring an unseen record into the
-- top (MaxScore's cut inside the list); or (when asked, or when a list has no reference) every
-- posting of the query terms. tf comes from the
-- stored impact, the document length and the list's reference, or from the record's entry.
-- score(d) = sum qtf * ln((N - df + 0.5)/(df + 0.5) + 1) * tf*(k1+1)/(tf + k1*(1 - b + b*dl/avgdl))
-- KEYS[1] hash docno -> "dl id"   KEYS[2] hash id -> entry JSON [docno, dl, term, tf, ..]
-- KEYS[3] hash "total" -> sum of lengths   KEYS[4] hash term -> "reference size"
-- KEYS[5..] posting zsets (member docno, score ceil(tf_norm at the list's reference * unit)),
--   one per query term; then the filter's index keys
-- ARGV[1] k1   ARGV[2] b   ARGV[3] limit   ARGV[4] first page size (0: score every posting)
-- ARGV[5] relative slack of the stopping test   ARGV[6] unit: the power of two scaling the impacts
-- ARGV[7] filter plan JSON ("": none; see include/filter_check.lua): only records passing it
--   are scored and ranked, so the reply is the top-k of the matching records. A selective filter
--   (at most half the records pass) is checked where a candidate is first met, before its bound
--   is looked up; a broad one on the scored candidates that can still enter the top (a score
--   below the k-th one's cannot, whatever the filter says), so it costs the entrants, not the
--   survivors. A filter no record can pass (its smallest index is empty) reads no posting; one
--   that at most a quarter as many records pass as the query terms have postings (a lifecycle
--   tenant's few superseded records) lists the records that pass and scores each from its entry
--   instead ("listed").
-- ARGV[8] postings budget (0: none): the bounded walk reads at most this many postings of each
--   list, best impact first; a list whose budget is spent yields no new candidate (records met
--   in other lists still get its exact share), so the reply is the exact top-k of the records
--   in the lists' read prefixes, the exact top-k when every list is read to its end
-- ARGV[9..] term, qtf, term, qtf, .. (order of KEYS[5..])
-- returns {mode ("bounded"|"exhaustive"|"listed"), postings read, records scored exactly, id, score, id, score, ..}
--   best first, ties by record id (byte order)
local k1, b, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local page, slack, unit = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local budget = tonumber(ARGV[8])
local n = redis.call("HLEN", KEYS[1])
if n == 0 then return {"bounded", 0, 0} end
local avgdl = tonumber(redis.call("HGET", KEYS[3], "total")) / n

--#include filter_check
--#include filter_list
local filter = ARGV[7] ~= "" and cjson.decode(ARGV[7]) or nil
local pass = filter and filter_many(filter)
local most = filter and filter_most(filter) or n
if most == 0 then return {"bounded", 0, 0} end  -- no record can pass (a lifecycle tenant's superseded ones: none)
local early = filter ~= nil and most <= n / 2

local exhaustive, lists = page == 0, {}
for i = 9, #ARGV, 2 do
  local key = KEYS[(i - 9) / 2 + 5]
  local df = redis.call("ZCARD", key)
  if df > 0 then
    local ref = redis.call("HGET", KEYS[4], ARGV[i])
    local r = ref and tonumber(string.match(ref, "^(%S+) "))
    if not r then exhaustive = true end
    table.insert(lists, {term = ARGV[i], key = key, df = df, ref = r, read = 0,
      size = budget > 0 and math.min(page, budget) or page,
      weight = tonumber(ARGV[i + 1]) * math.log((n - df + 0.5) / (df + 0.5) + 1)})
  end
end

local function scale(dl, a) return k1 * (1 - b + b * dl / a) end
local function tf_norm(tf, dl) return tf * (k1 + 1) / (tf + scale(dl, avgdl)) end
local function frequency(stored, dl, ref)  -- the integer tf whose tf_norm at avgdl `ref` is stored / unit
  local impact = stored / unit
  return math.floor(impact * scale(dl, ref) / (k1 + 1 - impact) + 0.5)
end
local function lengths(docnos)  -- the length and record id of each docno
  local dls, ids = {}, {}
  local values = redis.call("HMGET", KEYS[1], unpack(docnos))
  for j, value in ipairs(values) do
    local dl, id = string.match(value, "^(%d+) (.*)$")
    dls[j], ids[j] = tonumber(dl), id
  end
  return dls, ids
end
local function before(left, right)  -- byte order of two ids (Lua's < would use the locale)
  for i = 1, math.min(#left, #right) do
    local x, y = string.byte(left, i), string.byte(right, i)
    if x ~= y then return x < y end
  end
  return #left < #right
end

local top = {}
local function offer(id, s)
  local pos = #top + 1
  while pos > 1 and (s > top[pos - 1][2] or (s == top[pos - 1][2] and before(id, top[pos - 1][1]))) do
    top[pos] = top[pos - 1]
    pos = pos - 1
  end
  if pos <= limit then top[pos] = {id, s} end
  if #top > limit then top[#top] = nil end
end

local function reply(mode, read, scored)
  local out = {mode, read, scored}
  for _, row in ipairs(top) do
    out[#out + 1] = row[1]
    out[#out + 1] = string.format("%.17g", row[2])
  end
  return out
end

-- tf of the postings `rows` (docno, stored impact, ..) of a list: from the impacts and the lengths,
-- or from the records' entries when the list has no reference; returns ids, tfs, lengths
local function frequencies(list, rows)
  local docnos, tfs = {}, {}
  for i = 1, #rows, 2 do docnos[#docnos + 1] = rows[i] end
  local dls, ids = lengths(docnos)
  local entries = not list.ref and redis.call("HMGET", KEYS[2], unpack(ids))
  for j = 1, #docnos do
    if list.ref then
      tfs[j] = frequency(tonumber(rows[2 * j]), dls[j], list.ref)
    else
      local entry = cjson.decode(entries[j])
      for e = 3, #entry, 2 do
        if entry[e] == list.term then tfs[j] = entry[e + 1] end
      end
    end
  end
  return ids, tfs, dls
end

local postings = 0
for _, list in ipairs(lists) do postings = postings + list.df end
if filter and most * 4 <= postings then  -- few records pass: each scored from its entry, in term order
  local ids, scored = filter_list(filter), 0
  for first = 1, #ids, 1000 do
    local last = math.min(first + 999, #ids)
    local entries = redis.call("HMGET", KEYS[2], unpack(ids, first, last))
    for j = first, last do
      local entry = entries[j - first + 1] and cjson.decode(entries[j - first + 1])
      if entry then
        local tfs = {}
        for e = 3, #entry, 2 do tfs[entry[e]] = entry[e + 1] end
        local sum, found = 0, false
        for _, list in ipairs(lists) do
          local tf = tfs[list.term]
          if tf then sum, found = sum + list.weight * tf_norm(tf, entry[2]), true end
        end
        if found then
          scored = scored + 1
          offer(ids[j], sum)
        end
      end
    end
  end
  return reply("listed", 0, scored)
end

if exhaustive then  -- every posting, list by list, so each record's sum runs in term order
  local sums, read = {}, 0
  for _, list in ipairs(lists) do
    for first = 0, list.df - 1, 1000 do
      local ids, tfs, dls = frequencies(list, redis.call("ZRANGE", list.key, first, first + 999, "WITHSCORES"))
      for j, id in ipairs(ids) do sums[id] = (sums[id] or 0) + list.weight * tf_norm(tfs[j], dls[j]) end
      read = read + #ids
    end
  end
  local ids, scored = {}, 0
  for id in pairs(sums) do ids[#ids + 1] = id end
  local passed = pass and pass(ids)
  for j, id in ipairs(ids) do
    if not passed or passed[j] then
      scored = scored + 1
      offer(id, sums[id])
    end
  end
  return reply("exhaustive", read, scored)
end

local function bound(impact, ref)  -- max tf_norm now of a posting whose stored impact <= impact
  return (k1 + 1) / (1 + math.min(1, ref / avgdl) * ((k1 + 1) / impact - 1))
end

local function matching(docnos, known)  -- the filter, where candidates are first met: those that pass
  local kept, impacts = {}, {}
  local _, ids = lengths(docnos)
  local passed = pass(ids)
  for j = 1, #ids do
    if passed[j] then kept[#kept + 1], impacts[#impacts + 1] = docnos[j], known[j] end
  end
  return kept, impacts
end

-- the records `docnos` (first seen in list `from`, with impacts `known`) that can still enter the top:
-- an upper bound per record, the impact bound of each list looked up so far plus the current bound
-- of the lists not yet looked up (its unread postings), lists best bound first, a record dropped
-- once its bound falls below the k-th score; the survivors are scored exactly, in term order;
-- returns how many were scored exactly. The per-posting work runs inline on flat arrays (the
-- alive records kept in place): the same arithmetic as bound, frequency and tf_norm, term by term
local function score_page(docnos, from, known)
  if early then
    docnos, known = matching(docnos, known)
    if #docnos == 0 then return 0 end
  end
  local floor, order, rest = #top == limit and top[limit][2], {}, 0
  for _, list in ipairs(lists) do
    if list ~= from then
      order[#order + 1] = list
      rest = rest + list.bound
    end
  end
  table.sort(order, function(x, y) return x.bound > y.bound end)
  local k1p, keep_scale = k1 + 1, 1 + slack
  local alive, upper, count = {}, {}, #docnos
  local weight, c = from.weight, math.min(1, from.ref / avgdl)
  local column = {}
  for i = 1, count do
    local impact = tonumber(known[i])
    alive[i], column[i] = i, impact
    upper[i] = weight * (k1p / (1 + c * (k1p / (impact / unit) - 1)))
  end
  local impacts = {[from] = column}
  local function keep(unread)  -- drop (in place) the alive records whose bound is below the k-th score
    if not floor then return end
    local kept = 0
    for k = 1, count do
      local i = alive[k]
      if (upper[i] + unread) * keep_scale >= floor then
        kept = kept + 1
        alive[kept] = i
      end
    end
    for k = kept + 1, count do alive[k] = nil end
    count = kept
  end
  for _, list in ipairs(order) do
    keep(rest)
    if count == 0 then return 0 end
    local members = {}
    for k = 1, count do members[k] = docnos[alive[k]] end
    local found = redis.call("ZMSCORE", list.key, unpack(members))
    local lw, lc, values = list.weight, math.min(1, list.ref / avgdl), {}
    for k = 1, count do
      local stored = found[k]
      if stored then
        local i, impact = alive[k], tonumber(stored)
        values[i] = impact
        upper[i] = upper[i] + lw * (k1p / (1 + lc * (k1p / (impact / unit) - 1)))
      end
    end
    impacts[list], rest = values, rest - list.bound
  end
  keep(0)
  if count == 0 then return 0 end
  local members = {}
  for k = 1, count do members[k] = docnos[alive[k]] end
  local dls, ids = lengths(members)
  local cut, entering = #top == limit and top[limit][2], {}
  local sums, names = {}, {}
  for k = 1, count do
    local i, dl, sum = alive[k], dls[k], 0
    local norm = k1 * (1 - b + b * dl / avgdl)
    for _, list in ipairs(lists) do
      local impact = impacts[list][i]
      if impact then
        local ratio = impact / unit
        local tf = math.floor(ratio * (k1 * (1 - b + b * dl / list.ref)) / (k1p - ratio) + 0.5)
        sum = sum + list.weight * (tf * k1p / (tf + norm))
      end
    end
    if not cut or sum >= cut then  -- below the k-th score: never offered
      entering[#entering + 1] = k
      names[#names + 1], sums[#names + 1] = ids[k], sum
    end
  end
  -- a broad filter: checked only on the scored records that can enter the top
  local passed = not early and pass and pass(names)
  for m = 1, #names do
    if not passed or passed[m] then offer(names[m], sums[m]) end
  end
  return count
end

-- the smallest stored impact of a posting of `list` that can still bring an unseen record into the
-- top: weight * bound(impact / unit) + `rest` (the other open lists' bounds) must reach the k-th
-- score `floor` (less the slack); nil when every posting can
local function least_impact(list, rest, floor)
  local need = (floor / (1 + slack) - rest) / list.weight
  if need <= 0 then return nil end
  if need >= k1 + 1 then return math.huge end
  local c = math.min(1, list.ref / avgdl)  -- bound(impact) = (k1+1) / (1 + c*((k1+1)/impact - 1)), inverted
  return math.max(0, math.floor((k1 + 1) / (((k1 + 1) / need - 1) / c + 1) * unit * (1 - 1e-9)) - 1)
end

-- once the top is full, the walk only has to bring the lists' bounds below the k-th score, and the
-- order it reads them in changes nothing in the answer: the open list whose next page lowers its
-- bound most per posting is read (its page's last impact looked up first; a list read to its end
-- drops to 0), so the few high-impact postings of a common word go before a long list's flat tail
local function steepest()
  local best, gain = nil, -1
  for _, list in ipairs(lists) do
    if list.size > 0 and list.bound > 0 then
      local last, after = list.read + list.size - 1, 0
      if last + 1 < list.df then
        local row = redis.call("ZREVRANGE", list.key, last, last, "WITHSCORES")
        after = list.weight * bound(tonumber(row[2]) / unit, list.ref)
      end
      local drop = math.max((list.bound - after) / list.size, list.bound / (list.df - list.read))
      if drop > gain then best, gain = list, drop end
    end
  end
  return best
end

for _, list in ipairs(lists) do list.bound = list.weight * (k1 + 1) end
local seen, read, scored = {}, 0, 0
while true do
  local threshold, pick = 0, nil
  for _, list in ipairs(lists) do
    if list.size > 0 then
      threshold = threshold + list.bound
      if list.bound > 0 and (pick == nil or list.bound > pick.bound) then pick = list end
    end
  end
  if pick == nil or (#top == limit and top[limit][2] > threshold * (1 + slack)) then break end
  if #top == limit then pick = steepest() end
  -- MaxScore's cut inside the list: once the top is full, the postings below the least impact
  -- that can still matter are never read; when the page reaches them the list is closed (no
  -- longer walked nor counted in the stopping test: an unseen record in its unread part scores
  -- below the k-th, one not in it gets nothing from it). Its bound stays for the lookups' pruning.
  local least = #top == limit and least_impact(pick, threshold - pick.bound, top[limit][2])
  local size, closing = pick.size, false
  if least then
    local useful = least == math.huge and 0 or redis.call("ZCOUNT", pick.key, least, "+inf") - pick.read
    if useful <= size then size, closing = math.max(useful, 0), true end
  end
  if size == 0 then
    pick.size = 0
  else
    local rows, fresh, known = redis.call("ZREVRANGE", pick.key, pick.read, pick.read + size - 1, "WITHSCORES"), {}, {}
    for i = 1, #rows, 2 do
      if not seen[rows[i]] then
        seen[rows[i]] = true
        local k = #fresh + 1
        fresh[k], known[k] = rows[i], rows[i + 1]
      end
    end
    if #fresh > 0 then scored = scored + score_page(fresh, pick, known) end
    read = read + #rows / 2
    pick.read, pick.size = pick.read + #rows / 2, math.min(pick.size * 2, 1024)
    if budget > 0 then pick.size = math.min(pick.size, budget - pick.read) end  -- 0: budget spent
    if closing then pick.size = 0 end
    pick.bound = pick.read >= pick.df and 0 or pick.weight * bound(tonumber(rows[#rows]) / unit, pick.ref)
  end
end
return reply("bounded", read, scored)
