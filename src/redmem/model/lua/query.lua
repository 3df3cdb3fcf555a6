-- Filter, order and page the records of one partition.
-- KEYS[1] zset of every record id of the partition (score 0)   KEYS[2..] index keys of the plan
-- ARGV[1] plan, JSON: {ids=[id..]?, sets=[k..], any=[[k..]..], ranges=[[k,min,max]..],
--         order=k|0, desc=bool, offset=n, limit=n|-1, count=bool}
--         k indexes KEYS; min/max use ZRANGEBYSCORE syntax ("(" marks an open end)
-- returns {total} when count, else {total, id, score, id, score, ...} in order (score "" if unordered)
local plan = cjson.decode(ARGV[1])
local sets, any, ranges = plan.sets or {}, plan.any or {}, plan.ranges or {}
local order, limit, offset = plan.order or 0, plan.limit or -1, plan.offset or 0

--#include filter_check

local passes = filter_of(plan)
local function keep(id, skip_set, skip_range)
  if redis.call("ZSCORE", KEYS[1], id) == false then return false end
  return passes(id, skip_set, skip_range)
end

-- Fast paths: paging the partition by id, or one range on the ordering index, read only a page.
local simple = plan.ids == nil and #sets == 0 and #any == 0
if simple and #ranges == 0 and order == 0 then
  local out = {redis.call("ZCARD", KEYS[1])}
  if plan.count then return out end
  local stop = (limit < 0) and -1 or (offset + limit - 1)
  for _, id in ipairs(redis.call("ZRANGE", KEYS[1], offset, stop)) do
    table.insert(out, id)
    table.insert(out, "")
  end
  return out
end
if simple and #ranges == 1 and ranges[1][1] == order and limit >= 0 then
  local key, min, max = KEYS[order], ranges[1][2], ranges[1][3]
  local out = {redis.call("ZCOUNT", key, min, max)}
  if plan.count then return out end
  if not plan.desc then
    local page = redis.call("ZRANGEBYSCORE", key, min, max, "WITHSCORES", "LIMIT", offset, limit)
    for _, item in ipairs(page) do table.insert(out, item) end
    return out
  end
  -- descending: take the page, then every member tied with its last score, so ties sort by id
  local page = redis.call("ZREVRANGEBYSCORE", key, max, min, "WITHSCORES", "LIMIT", 0, offset + limit)
  local rows, seen = {}, {}
  for i = 1, #page, 2 do
    table.insert(rows, {page[i], page[i + 1], tonumber(page[i + 1])})
    seen[page[i]] = true
  end
  if #rows > 0 then
    local tie = rows[#rows][2]
    for _, id in ipairs(redis.call("ZRANGEBYSCORE", key, tie, tie)) do
      if not seen[id] then table.insert(rows, {id, tie, tonumber(tie)}) end
    end
  end
  table.sort(rows, function(a, b)
    if a[3] ~= b[3] then return a[3] > b[3] end
    return a[1] < b[1]
  end)
  for i = offset + 1, math.min(#rows, offset + limit) do
    table.insert(out, rows[i][1])
    table.insert(out, rows[i][2])
  end
  return out
end

-- Pick the smallest source of candidates, then check every other condition per candidate.
local candidates, skip_set, skip_range = nil, 0, 0
if plan.ids then
  candidates = plan.ids
elseif #sets > 0 then
  local best = nil
  for i, k in ipairs(sets) do
    local n = redis.call("SCARD", KEYS[k])
    if best == nil or n < best then best, skip_set = n, i end
  end
  candidates = redis.call("SMEMBERS", KEYS[sets[skip_set]])
elseif #ranges > 0 then
  local best = nil
  for i, r in ipairs(ranges) do
    local n = redis.call("ZCOUNT", KEYS[r[1]], r[2], r[3])
    if best == nil or n < best then best, skip_range = n, i end
  end
  local r = ranges[skip_range]
  candidates = redis.call("ZRANGEBYSCORE", KEYS[r[1]], r[2], r[3])
elseif #any > 0 then
  local group = {}
  for _, k in ipairs(any[1]) do table.insert(group, KEYS[k]) end
  candidates = #group > 0 and redis.call("SUNION", unpack(group)) or {}  -- __any=[]: nothing matches
else
  candidates = redis.call("ZRANGE", KEYS[1], 0, -1)
end

local rows = {}
for _, id in ipairs(candidates) do
  if keep(id, skip_set, skip_range) then
    local text = ""
    if order > 0 then text = redis.call("ZSCORE", KEYS[order], id) or "" end
    table.insert(rows, {id, text, tonumber(text)})
  end
end
if plan.count then return {#rows} end

local desc = plan.desc
table.sort(rows, function(a, b)
  if order > 0 and a[3] ~= b[3] then
    if a[3] == nil then return false end
    if b[3] == nil then return true end
    if desc then return a[3] > b[3] end
    return a[3] < b[3]
  end
  return a[1] < b[1]
end)

local out = {#rows}
local last = (limit < 0) and #rows or math.min(#rows, offset + limit)
for i = offset + 1, last do
  table.insert(out, rows[i][1])
  table.insert(out, rows[i][2])
end
return out
