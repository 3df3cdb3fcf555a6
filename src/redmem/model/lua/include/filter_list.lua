-- filter_list (included after filter_check, whose functions it uses)
-- filter_list(f): the ids of every record that passes (f not nil), in no order. The candidates come
-- from the cheapest source, read by one native command: the listed ids, the intersection of every
-- set (SINTER), the narrowest range (ZRANGEBYSCORE) or the union of the first any group (SUNION);
-- the candidates are then checked against the conditions that source leaves (filter_many).
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
  local rest = {any = any, sets = {}, ranges = {}}  -- the conditions the source leaves
  for i, k in ipairs(sets) do
    if skip_set ~= true and i ~= skip_set then rest.sets[#rest.sets + 1] = k end
  end
  for i, r in ipairs(ranges) do
    if i ~= skip_range then rest.ranges[#rest.ranges + 1] = r end
  end
  if #rest.any == 0 and #rest.sets == 0 and #rest.ranges == 0 then return candidates end
  local pass = filter_many(rest)(candidates)
  for j, id in ipairs(candidates) do
    if pass[j] then out[#out + 1] = id end
  end
  return out
end
