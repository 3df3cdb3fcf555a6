-- Exact candidates for the top n records of a partition by a composite score, the weighted sum
-- of signals each mapped into [0, 1] (maps stated in fields/composite.py), by Fagin's threshold
-- algorithm: walk the signals' sorted sets best-first (next, the set whose latest read lowered
-- the threshold most per member read), score each newly seen record from all its values
-- (ZMSCORE), stop once no unseen record can beat the n-th best score (or reach the threshold).
-- Records in no walked set all score the defaults' composite D; when every set is exhausted
-- and D can still rank, the first of them by id are added.
-- KEYS[1] zset of the partition's record ids (the candidates)   KEYS[2..] zsets the plan names by index
-- ARGV[1] plan, JSON: {now, n >= 1, threshold?, eps, defaults=[value|false per key],
--         lists=[[k, descending, complete]..] to walk, ranges=[k..] (sets whose min and max the
--         sorted map needs), signals=[{kind, w, key indexes, parameters}..]}
-- returns {min, max per ranges entry ("" for an empty set), then id, s2, .., sK, id, ..}: a
--         superset of the answer (every record within eps*(1+|x|) of the cut), each id followed
--         by its ZMSCORE string in KEYS[2..] ("" if none)
local plan = cjson.decode(ARGV[1])
local now, n, threshold, eps, defaults = plan.now, plan.n, plan.threshold, plan.eps, plan.defaults
local nkeys = #KEYS

local out, range = {}, {}
for _, k in ipairs(plan.ranges) do
  local low = redis.call("ZRANGE", KEYS[k], 0, 0, "WITHSCORES")[2]
  local high = redis.call("ZRANGE", KEYS[k], -1, -1, "WITHSCORES")[2]
  range[k] = {tonumber(low or "0"), tonumber(high or "0")}
  table.insert(out, low or "")
  table.insert(out, high or "")
end

local function saturate(s) if s == math.huge then return 1 end return s / (1 + s) end
local function logistic(s)
  if s >= 0 then return 1 / (1 + math.exp(-s)) end
  local e = math.exp(s)
  return e / (1 + e)
end
local function power(sig, v)  -- base * d^-rate, d = max((now - t)/86400, 0.01); and d
  local days = math.max((now - v[sig.t]) / 86400, 0.01)
  return (sig.base > 0 and v[sig.base] or 1) * days ^ (-sig.rate), days
end

local mapped = {}
function mapped.power(sig, v)  -- saturate(power * max(d, 1)^(rate - eff))
  if not v[sig.t] then return 0 end
  local s, days = power(sig, v)
  if sig.confidence > 0 then
    local eff = sig.rate * 2 ^ (sig.spread * (sig.center - v[sig.confidence]))
    s = s * math.max(days, 1) ^ (sig.rate - eff)
  end
  return saturate(s)
end
function mapped.exponential(sig, v)  -- saturate(2^(x - now/half_life))
  if not v[sig.x] then return 0 end
  return saturate(2 ^ (v[sig.x] - sig.k))
end
function mapped.cyclic(sig, v)  -- logistic(power + sum(amplitude * weight) + pressure)
  if not v[sig.t] then return 0 end
  local s = power(sig, v)
  for _, term in ipairs(sig.linear) do s = s + term[2] * v[term[1]] end
  if sig.resolved > 0 then s = s + sig.pressure * math.max((now - v[sig.resolved]) / 86400, 0) end
  return logistic(s)
end
function mapped.confidence(sig, v) return v[sig.slot] end
function mapped.sorted(sig, v)  -- (x - min) / (max - min)
  local x, r = v[sig.slot], range[sig.slot]
  if not x then return 0 end
  if r[2] == r[1] then return 1 end
  return (x - r[1]) / (r[2] - r[1])
end
function mapped.priority(sig, v)
  if not v[sig.slot] then return 0 end
  return math.min(math.max(v[sig.slot], 0), 1)
end

local function score(v)
  local s = 0
  for _, sig in ipairs(plan.signals) do s = s + sig.w * mapped[sig.kind](sig, v) end
  return s
end
local function tol(x) return eps * (1 + math.abs(x)) end

-- batches: {ids, columns, scores} per visit; best: the n highest scores so far, descending
local batches, seen, best, found = {}, {}, {}, 0
local function keep_best(x)
  if #best == n and x <= best[n] then return end
  if #best == n then table.remove(best) end
  local i = #best
  while i > 0 and best[i] < x do i = i - 1 end
  table.insert(best, i + 1, x)
end

local function visit(ids)
  local cols, scores, v = {}, {}, {}
  for k = 1, nkeys do cols[k] = redis.call("ZMSCORE", KEYS[k], unpack(ids)) end
  for i = 1, #ids do
    if cols[1][i] then
      found = found + 1
      for k = 2, nkeys do v[k] = cols[k][i] and tonumber(cols[k][i]) or defaults[k] end
      scores[i] = score(v)
      keep_best(scores[i])
    end
  end
  table.insert(batches, {ids, cols, scores})
end

-- lists: pos = next offset, chunk = next read size (doubling to 1024), last / before = the
-- last value read after / before the latest read, step = members the latest read returned
local lists = {}
for _, l in ipairs(plan.lists) do
  table.insert(lists, {slot = l[1], desc = l[2], complete = l[3], pos = 0, chunk = math.max(n, 16)})
end

-- An unseen record's value in a list is no better than the list's last value (or the default).
local function bound(list, last)
  local default = defaults[list.slot]
  if list.done then return default end
  if list.complete or default == false then return last end
  if list.desc then return math.max(last, default) end
  return math.min(last, default)
end
-- The threshold: the score of a record at every bound; ``undo`` takes back one list's latest read.
local function threshold_score(undo)
  local v = {}
  for k = 2, nkeys do v[k] = defaults[k] end
  for _, list in ipairs(lists) do v[list.slot] = bound(list, list == undo and list.before or list.last) end
  return score(v)
end

local function advance(list)
  local cmd = list.desc and "ZREVRANGE" or "ZRANGE"
  local page = redis.call(cmd, KEYS[list.slot], list.pos, list.pos + list.chunk - 1, "WITHSCORES")
  local fresh = {}
  for i = 1, #page, 2 do
    if not seen[page[i]] then seen[page[i]] = true table.insert(fresh, page[i]) end
  end
  list.before = list.last or tonumber(page[2])
  if #page > 0 then list.last = tonumber(page[#page]) end
  list.done, list.step = #page < 2 * list.chunk, #page / 2
  list.pos, list.chunk = list.pos + list.chunk, math.min(list.chunk * 2, 1024)
  if #fresh > 0 then visit(fresh) end
end

-- Read every list once, then the list whose latest read lowered the threshold most per member
-- (Quick-Combine's choice; the least-read list on ties), until the threshold is beaten.
for _, list in ipairs(lists) do advance(list) end
local tau, walking = 0, true
while walking do
  tau = threshold_score()
  if threshold and tau + tol(tau) < threshold then break end
  if #best == n and best[n] > tau + tol(tau) then break end
  local pick, gain = nil, -math.huge
  for _, list in ipairs(lists) do
    if not list.done then
      local g = (threshold_score(list) - tau) / list.step
      if not pick or g > gain or (g == gain and list.pos < pick.pos) then pick, gain = list, g end
    end
  end
  walking = pick ~= nil
  if walking then advance(pick) end
end

-- Every list exhausted: the records not seen hold only defaults and all score tau (= D).
local reachable = not threshold or tau + tol(tau) >= threshold
if not walking and reachable and (#best < n or best[n] <= tau + tol(tau)) then
  local total, start, wanted = redis.call("ZCARD", KEYS[1]), 0, n
  while found < total and wanted > 0 do
    local page = redis.call("ZRANGE", KEYS[1], start, start + 1023)
    if #page == 0 then break end
    local fresh = {}
    for _, id in ipairs(page) do
      if not seen[id] and #fresh < wanted then seen[id] = true table.insert(fresh, id) end
    end
    if #fresh > 0 then visit(fresh) wanted = wanted - #fresh end
    start = start + 1024
  end
end

local cut = -math.huge
if threshold then cut = threshold - tol(threshold) end
if #best == n then cut = math.max(cut, best[n] - tol(best[n])) end
for _, batch in ipairs(batches) do
  local ids, cols, scores = batch[1], batch[2], batch[3]
  for i = 1, #ids do
    if scores[i] and scores[i] >= cut then
      table.insert(out, ids[i])
      for k = 2, nkeys do table.insert(out, cols[k][i] or "") end
    end
  end
end
return out
