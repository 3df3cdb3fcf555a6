-- The top n records of a partition by a composite score, the weighted sum of signals each mapped
-- into [0, 1] (maps stated in fields/composite.py), best first and ties by record id (byte
-- order), by Fagin's threshold algorithm: walk the signals' sorted sets best-first (next, the set
-- whose latest read lowered the threshold most per member read), score each newly seen record
-- from all its values (ZMSCORE), stop once no unseen record can beat the n-th best (or reach the
-- threshold). When the n-th best ties the threshold (many equal scores), the record ids are
-- walked too, in ascending order: an unseen record then has an id past the last one read, so it
-- loses the tie. Records in no walked set all score the defaults' composite and come by id.
-- KEYS[1] zset of the partition's record ids, all scored 0 (the candidates, in id order)
-- KEYS[2..] zsets the plan names by index
-- ARGV[1] plan, JSON: {now, n >= 1, threshold?, eps, defaults=[value|false per key],
--         lists=[[k, descending, complete]..] to walk, ranges=[k..] (sets whose min and max the
--         sorted map needs), signals=[{kind, w, key indexes, parameters}..],
--         width? (KEYS[1..width] are the columns; the filter's index keys follow), filter? (plan
--         of include/filter_check.lua: a record that fails it is seen but never scored, so the
--         answer is the top n of the records that pass)}
-- returns {min, max per ranges entry ("" for an empty set), then id, s2, .., sK, id, ..}: the n
--         best, plus every record scoring within eps*(1+|x|) below the n-th without equalling it
--         (for the caller's own floats to order), each id followed by its ZMSCORE string in
--         KEYS[2..] ("" if none)
local plan = cjson.decode(ARGV[1])
local now, n, threshold, eps, defaults = plan.now, plan.n, plan.threshold, plan.eps, plan.defaults
local nkeys = plan.width or #KEYS

--#include filter_check
local pass = plan.filter and filter_many(plan.filter)

local out, range = {}, {}
for _, k in ipairs(plan.ranges) do
  local low = redis.call("ZRANGE", KEYS[k], 0, 0, "WITHSCORES")[2]
  local high = redis.call("ZRANGE", KEYS[k], -1, -1, "WITHSCORES")[2]
  range[k] = {tonumber(low or "0"), tonumber(high or "0")}
  table.insert(out, low or "")
  table.insert(out, high or "")
end

-- The maps, each written as fields/composite.py computes it (same operations, same order), so
-- both sides get the same floats.
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
  local s, cycles = power(sig, v), 0
  for _, term in ipairs(sig.linear) do cycles = cycles + v[term[1]] * term[2] end
  s = s + cycles
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
local function before(left, right)  -- byte order of two ids (Lua's < would use the locale)
  for i = 1, math.min(#left, #right) do
    local x, y = string.byte(left, i), string.byte(right, i)
    if x ~= y then return x < y end
  end
  return #left < #right
end
local function better(s, id, other)  -- (s, id) ranks before other = {score, id}
  return s > other[1] or (s == other[1] and before(id, other[2]))
end

-- batches: {ids, columns, scores} per visit; best: the n best {score, id} so far, in rank order
local batches, seen, best = {}, {}, {}
local function keep_best(x, id)  -- binary search for the place, then insert
  if #best == n and not better(x, id, best[n]) then return end
  if #best == n then table.remove(best) end
  local lo, hi = 1, #best + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if better(x, id, best[mid]) then hi = mid else lo = mid + 1 end
  end
  table.insert(best, lo, {x, id})
end

local function visit(ids)
  local cols, scores, v = {}, {}, {}
  for k = 1, nkeys do cols[k] = redis.call("ZMSCORE", KEYS[k], unpack(ids)) end
  local passed = pass and pass(ids)
  for i = 1, #ids do
    if cols[1][i] and (not passed or passed[i]) then
      for k = 2, nkeys do v[k] = cols[k][i] and tonumber(cols[k][i]) or defaults[k] end
      scores[i] = score(v)
      keep_best(scores[i], ids[i])
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

local function fresh_of(page, stride)
  local fresh = {}
  for i = 1, #page, stride do
    if not seen[page[i]] then seen[page[i]] = true table.insert(fresh, page[i]) end
  end
  if #fresh > 0 then visit(fresh) end
end

local function advance(list)
  local cmd = list.desc and "ZREVRANGE" or "ZRANGE"
  local page = redis.call(cmd, KEYS[list.slot], list.pos, list.pos + list.chunk - 1, "WITHSCORES")
  list.before = list.last or tonumber(page[2])
  if #page > 0 then list.last = tonumber(page[#page]) end
  list.done, list.step = #page < 2 * list.chunk, #page / 2
  list.pos, list.chunk = list.pos + list.chunk, math.min(list.chunk * 2, 1024)
  fresh_of(page, 2)
end

-- The id walk: every record id in ascending order; ``last`` = the greatest id read so far.
local ids = {pos = 0, chunk = math.max(n, 16)}
local function advance_ids()
  local page = redis.call("ZRANGE", KEYS[1], ids.pos, ids.pos + ids.chunk - 1)
  if #page > 0 then ids.last = page[#page] end
  ids.done = #page < ids.chunk
  ids.pos, ids.chunk = ids.pos + ids.chunk, math.min(ids.chunk * 2, 1024)
  fresh_of(page, 1)
end

-- Read every list once, then the list whose latest read lowered the threshold most per member
-- (Quick-Combine's choice; the least-read list on ties), until the threshold is beaten. While the
-- n-th best ties the threshold (within eps), reads alternate with the id walk, which ends the
-- search as soon as it passes the n-th best's id; once every list is read, only ids are read.
for _, list in ipairs(lists) do advance(list) end
local ids_next = true
while not ids.done do
  local tau = threshold_score()
  if threshold and tau + tol(tau) < threshold then break end
  local cut = best[n]
  if cut and cut[1] > tau + tol(tau) then break end
  if cut and cut[1] >= tau and ids.last and not before(ids.last, cut[2]) then break end
  local pick, gain = nil, -math.huge
  for _, list in ipairs(lists) do
    if not list.done then
      local g = (threshold_score(list) - tau) / list.step
      if not pick or g > gain or (g == gain and list.pos < pick.pos) then pick, gain = list, g end
    end
  end
  local stuck = cut and cut[1] + tol(tau) >= tau
  if not pick or (stuck and ids_next) then advance_ids() else advance(pick) end
  if stuck then ids_next = not ids_next end
end

-- The answer: the n best, and the near ties below the n-th (within eps, not equal to it);
-- above ``threshold`` (within eps) when there is one.
local low, cut = -math.huge, best[n]
if threshold then low = threshold - tol(threshold) end
if cut then low = math.max(low, cut[1] - tol(cut[1])) end
for _, batch in ipairs(batches) do
  local batch_ids, cols, scores = batch[1], batch[2], batch[3]
  for i = 1, #batch_ids do
    local s = scores[i]
    if s and s >= low and not (cut and s == cut[1] and before(cut[2], batch_ids[i])) then
      table.insert(out, batch_ids[i])
      for k = 2, nkeys do table.insert(out, cols[k][i] or "") end
    end
  end
end
return out
