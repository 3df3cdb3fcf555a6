-- filter_check (included): does a record pass a filter on declared, indexed fields?
-- filter_of(f) returns passes(id, skip_set, skip_range) for f = {ids=[id..]?, sets=[k..],
--   any=[[k..]..], ranges=[[k, min, max]..]} (nil: every record passes), the plan that
--   redmem/model/filters.py builds. k indexes KEYS (index keys of the record's own partition);
--   min/max use ZRANGEBYSCORE syntax ("(" marks an open end). A record passes when its id is one
--   of ids (when given), it is in every set of sets (SISMEMBER), in at least one set of each any
--   group, and its score in each range's sorted set (ZSCORE) lies in the range (no score: fails).
--   skip_set / skip_range name one entry of sets / ranges the caller knows holds (0 or nil: none;
--   skip_set true: every set holds).
-- filter_many(f) returns pass(ids): the same test over many ids at once, a table true at each
--   position that passes; one SMISMEMBER per set (and per set of each any group) and one ZMSCORE
--   per range, each over the ids still in (a call per condition, not per id and condition).
-- An any group of more than FILTER_UNION_AT sets is read once whole (filter_union) by both, so
--   its cost is the size of its sets, not the number of sets times the candidates.
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

local function filter_inside(s, r)  -- score s within the parsed range r = {k, lo, lo_open, hi, hi_open}
  return not (s < r[2] or (r[3] and s == r[2]) or s > r[4] or (r[5] and s == r[4]))
end

local function filter_parsed(f)  -- the id set (or nil) and each range's parsed bounds
  local ids, bounds = nil, {}
  if f.ids then
    ids = {}
    for _, id in ipairs(f.ids) do ids[id] = true end
  end
  for i, r in ipairs(f.ranges or {}) do
    local lo, lo_open = filter_bound(r[2])
    local hi, hi_open = filter_bound(r[3])
    bounds[i] = {r[1], lo, lo_open, hi, hi_open}
  end
  return ids, bounds
end

-- filter_union(group): the members of every set of a large any group, as a table id -> true, read
-- once (SMEMBERS per set) so a candidate's check is one lookup, not one SISMEMBER per set.
local FILTER_UNION_AT = 8  -- groups of more sets than this are read whole
local function filter_union(group)
  local union = {}
  for _, k in ipairs(group) do
    for _, id in ipairs(redis.call("SMEMBERS", KEYS[k])) do union[id] = true end
  end
  return union
end

local function filter_many(f)
  local idset, bounds = filter_parsed(f)
  local unions = {}
  local function chunk(ids, first, last, pass)  -- ids[first..last]: at most 1000 (unpack's limit is 8000)
    local alive = {}
    for j = first, last do
      if not idset or idset[ids[j]] then alive[#alive + 1] = j end
    end
    local function names()
      local out = {}
      for m, j in ipairs(alive) do out[m] = ids[j] end
      return out
    end
    local function sieve(keep)  -- keep the alive positions whose m-th place holds
      local kept = {}
      for m, j in ipairs(alive) do
        if keep(m) then kept[#kept + 1] = j end
      end
      alive = kept
    end
    for _, k in ipairs(f.sets or {}) do
      if #alive == 0 then break end
      local found = redis.call("SMISMEMBER", KEYS[k], unpack(names()))
      sieve(function(m) return found[m] == 1 end)
    end
    for g, group in ipairs(f.any or {}) do
      if #alive == 0 then break end
      local hit, list = {}, names()
      if #group > FILTER_UNION_AT then
        unions[g] = unions[g] or filter_union(group)
        for m = 1, #list do hit[m] = unions[g][list[m]] end
      else
        for _, k in ipairs(group) do
          local found = redis.call("SMISMEMBER", KEYS[k], unpack(list))
          for m = 1, #list do
            if found[m] == 1 then hit[m] = true end
          end
        end
      end
      sieve(function(m) return hit[m] end)
    end
    for _, r in ipairs(bounds) do
      if #alive == 0 then break end
      local found = redis.call("ZMSCORE", KEYS[r[1]], unpack(names()))
      sieve(function(m) return found[m] and filter_inside(tonumber(found[m]), r) end)
    end
    for _, j in ipairs(alive) do pass[j] = true end
  end
  return function(ids)
    local pass = {}
    for first = 1, #ids, 1000 do chunk(ids, first, math.min(first + 999, #ids), pass) end
    return pass
  end
end

local function filter_of(f)
  if f == nil then return function() return true end end
  local sets, any = f.sets or {}, f.any or {}
  local ids, bounds = filter_parsed(f)
  local unions = {}
  return function(id, skip_set, skip_range)
    if ids and not ids[id] then return false end
    for i, k in ipairs(sets) do
      if skip_set ~= true and i ~= skip_set and redis.call("SISMEMBER", KEYS[k], id) == 0 then return false end
    end
    for g, group in ipairs(any) do
      local hit = false
      if #group > FILTER_UNION_AT then
        unions[g] = unions[g] or filter_union(group)
        hit = unions[g][id] == true
      else
        for _, k in ipairs(group) do
          if redis.call("SISMEMBER", KEYS[k], id) == 1 then hit = true break end
        end
      end
      if not hit then return false end
    end
    for i, r in ipairs(bounds) do
      if i ~= skip_range then
        local s = redis.call("ZSCORE", KEYS[r[1]], id)
        if s == false or not filter_inside(tonumber(s), r) then return false end
      end
    end
    return true
  end
end
