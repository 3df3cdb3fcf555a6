-- Exact candidates for a top-n / above-threshold search by a decayed score, by Fagin's
-- threshold algorithm: walk sorted lists best-first, look up each newly seen record in every
-- list, stop once no unseen record can beat the n-th best (or reach the threshold).
-- score = base * d^-rate * m + sum(weight * value) + pressure * max((now - resolved)/86400, 0)
--   d = max((now - t)/86400, 0.01);  m = max(d, 1)^(rate - eff),  eff = rate * 2^(spread*(center - c))
-- KEYS[1] zset last-updated time per record (a record without an entry is no candidate)
-- KEYS[2..] further per-record zsets the plan names by index
-- ARGV[1] plan, JSON: {now, rate, n (-1: no limit), threshold?, eps, base (k|0), confidence (k|0),
--         center, spread, linear=[[k, weight]..], pressure=[k, rate]?,
--         lists=[[k, descending, complete]..] to walk, defaults=[value|false per key],
--         width? (KEYS[1..width] are the columns; the filter's index keys follow), filter? (plan
--         of include/filter_check.lua: a record that fails it is seen but never scored)}
-- returns {id, s1, s2, .., id, ..}: a superset of the answer (every record whose score is within
--         eps*(1+|x|) of the cut), each id followed by its ZMSCORE string in every key ("" if none)
local plan = cjson.decode(ARGV[1])
local now, rate, n, threshold, eps = plan.now, plan.rate, plan.n, plan.threshold, plan.eps
local defaults, nkeys = plan.defaults, plan.width or #KEYS

--#include filter_check
local pass = plan.filter and filter_many(plan.filter)

local function score(v)
  local days = math.max((now - v[1]) / 86400, 0.01)
  local s = (plan.base > 0 and v[plan.base] or 1) * days ^ (-rate)
  if plan.confidence > 0 then
    local eff = rate * 2 ^ (plan.spread * (plan.center - v[plan.confidence]))
    s = s * math.max(days, 1) ^ (rate - eff)
  end
  for _, term in ipairs(plan.linear) do s = s + term[2] * v[term[1]] end
  if plan.pressure then s = s + plan.pressure[2] * math.max((now - v[plan.pressure[1]]) / 86400, 0) end
  return s
end

local function tol(x) return eps * (1 + math.abs(x)) end

-- batches: {ids, columns, scores} per visit; best: the n highest scores so far, descending
local batches, seen, best = {}, {}, {}
local function keep_best(x)
  if n <= 0 or (#best == n and x <= best[n]) then return end
  if #best == n then table.remove(best) end
  local i = #best
  while i > 0 and best[i] < x do i = i - 1 end
  table.insert(best, i + 1, x)
end

local v = {}
local function visit(ids)
  local cols, scores = {}, {}
  for k = 1, nkeys do cols[k] = redis.call("ZMSCORE", KEYS[k], unpack(ids)) end
  local passed = pass and pass(ids)
  for i = 1, #ids do
    if cols[1][i] and (not passed or passed[i]) then
      for k = 1, nkeys do v[k] = cols[k][i] and tonumber(cols[k][i]) or defaults[k] end
      scores[i] = score(v)
      keep_best(scores[i])
    end
  end
  table.insert(batches, {ids, cols, scores})
end

local lists = {}
for _, l in ipairs(plan.lists) do table.insert(lists, {slot = l[1], desc = l[2], complete = l[3]}) end

-- An unseen record's value in a list is no better than the list's last value (or the default).
local function bound(list)
  local default = defaults[list.slot]
  if list.done then return default end
  if list.complete or default == false then return list.last end
  if list.desc then return math.max(list.last, default) end
  return math.min(list.last, default)
end

local chunk, pos = n > 0 and math.max(n, 16) or 64, 0
while true do
  local exhausted = false
  for _, list in ipairs(lists) do
    if not list.done then
      local cmd = list.desc and "ZREVRANGE" or "ZRANGE"
      local page = redis.call(cmd, KEYS[list.slot], pos, pos + chunk - 1, "WITHSCORES")
      local fresh = {}
      for i = 1, #page, 2 do
        if not seen[page[i]] then seen[page[i]] = true table.insert(fresh, page[i]) end
      end
      if #page > 0 then list.last = tonumber(page[#page]) end
      if #page < 2 * chunk then
        list.done = true
        exhausted = exhausted or list.complete
      end
      if #fresh > 0 then visit(fresh) end
    end
  end
  if exhausted then break end
  local v = {}
  for k = 1, nkeys do v[k] = 0 end
  for _, list in ipairs(lists) do v[list.slot] = bound(list) end
  local tau = score(v)
  if threshold and tau + tol(tau) < threshold then break end
  if #best == n and best[n] > tau + tol(tau) then break end
  pos = pos + chunk
  chunk = math.min(chunk * 2, 1024)
end

local cut = -math.huge
if threshold then cut = threshold - tol(threshold) end
if n > 0 and #best == n then cut = math.max(cut, best[n] - tol(best[n])) end
local out = {}
for _, batch in ipairs(batches) do
  local ids, cols, scores = batch[1], batch[2], batch[3]
  for i = 1, #ids do
    if scores[i] and scores[i] >= cut then
      table.insert(out, ids[i])
      for k = 1, nkeys do table.insert(out, cols[k][i] or "") end
    end
  end
end
return out
