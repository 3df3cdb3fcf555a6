-- filter_check (included): does a record pass a filter on declared, indexed fields?
-- filter_of(f) returns passes(id, skip_set, skip_range) for f = {ids=[id..]?, sets=[k..],
--   any=[[k..]..], ranges=[[k, min, max]..]} (nil: every record passes), the plan that
--   redmem/model/filters.py builds. k indexes KEYS (index keys of the record's own partition);
--   min/max use ZRANGEBYSCORE syntax ("(" marks an open end). A record passes when its id is one
--   of ids (when given), it is in every set of sets (SISMEMBER), in at least one set of each any
--   group, and its score in each range's sorted set (ZSCORE) lies in the range (no score: fails).
--   skip_set / skip_range name one entry of sets / ranges the caller knows holds (0 or nil: none;
--   skip_set true: every set holds).
local function filter_bound(text)
  local open = string.sub(text, 1, 1) == "("
  local body = open and string.sub(text, 2) or text
  if body == "-inf" then return -math.huge, open end
  if body == "+inf" or body == "inf" then return math.huge, open end
  return tonumber(body), open
end

-- filter_most(f): at most how many records pass (the smallest set, range or any group; nil f: huge)
local function filter_most(f)
  if f == nil then return math.huge end
  local most = f.ids and #f.ids or math.huge
  for _, k in ipairs(f.sets or {}) do most = math.min(most, redis.call("SCARD", KEYS[k])) end
  for _, r in ipairs(f.ranges or {}) do most = math.min(most, redis.call("ZCOUNT", KEYS[r[1]], r[2], r[3])) end
  for _, group in ipairs(f.any or {}) do
    local n = 0
    for _, k in ipairs(group) do n = n + redis.call("SCARD", KEYS[k]) end
    most = math.min(most, n)
  end
  return most
end

local function filter_of(f)
  if f == nil then return function() return true end end
  local ids, sets, any, bounds = nil, f.sets or {}, f.any or {}, {}
  if f.ids then
    ids = {}
    for _, id in ipairs(f.ids) do ids[id] = true end
  end
  for i, r in ipairs(f.ranges or {}) do
    local lo, lo_open = filter_bound(r[2])
    local hi, hi_open = filter_bound(r[3])
    bounds[i] = {r[1], lo, lo_open, hi, hi_open}
  end
  return function(id, skip_set, skip_range)
    if ids and not ids[id] then return false end
    for i, k in ipairs(sets) do
      if skip_set ~= true and i ~= skip_set and redis.call("SISMEMBER", KEYS[k], id) == 0 then return false end
    end
    for _, group in ipairs(any) do
      local hit = false
      for _, k in ipairs(group) do
        if redis.call("SISMEMBER", KEYS[k], id) == 1 then hit = true break end
      end
      if not hit then return false end
    end
    for i, r in ipairs(bounds) do
      if i ~= skip_range then
        local s = redis.call("ZSCORE", KEYS[r[1]], id)
        if s == false then return false end
        s = tonumber(s)
        if s < r[2] or (r[3] and s == r[2]) or s > r[4] or (r[5] and s == r[4]) then return false end
      end
    end
    return true
  end
end

-- filter_list(f): the ids of every record that passes (f not nil), in no order. The candidates come
-- from the cheapest source, read by one native command: the listed ids, the intersection of every
-- set (SINTER), the narrowest range (ZRANGEBYSCORE) or the union of the first any group (SUNION);
-- each is then checked against the conditions that source leaves.
local function filter_list(f)
  local passes = filter_of(f)
  local sets, any, ranges = f.sets or {}, f.any or {}, f.ranges or {}
  local out = {}
  if f.ids then
    for _, id in ipairs(f.ids) do
      if passes(id) then out[#out + 1] = id end
    end
    return out
  end
  local size, source, skip_set, skip_range = math.huge, nil, nil, nil
  if #sets > 0 then
    local keys = {}
    for i, k in ipairs(sets) do keys[i] = KEYS[k] end
    local n = math.huge
    for _, key in ipairs(keys) do n = math.min(n, redis.call("SCARD", key)) end
    size, source, skip_set = n, function() return redis.call("SINTER", unpack(keys)) end, true
  end
  for i, r in ipairs(ranges) do
    local n = redis.call("ZCOUNT", KEYS[r[1]], r[2], r[3])
    if n < size then
      size, skip_set, skip_range = n, nil, i
      source = function() return redis.call("ZRANGEBYSCORE", KEYS[r[1]], r[2], r[3]) end
    end
  end
  if source == nil then  -- any groups only (a plan with no condition lists nothing)
    if #any == 0 or #any[1] == 0 then return out end
    local keys = {}
    for i, k in ipairs(any[1]) do keys[i] = KEYS[k] end
    source = function() return redis.call("SUNION", unpack(keys)) end
  end
  local candidates = source()
  if #any == 0 and (skip_set and #ranges == 0 or skip_range and #sets == 0 and #ranges == 1) then
    return candidates  -- the source alone is the filter
  end
  for _, id in ipairs(candidates) do
    if passes(id, skip_set, skip_range) then out[#out + 1] = id end
  end
  return out
end
