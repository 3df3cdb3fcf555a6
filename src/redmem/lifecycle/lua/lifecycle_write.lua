-- writes (applied once per call: run composed and guarded by redmem.store.composed)
-- A lifecycle write in one call: the index lookup, the rules, then the writes of the outcome.
-- KEYS[1] the partition's lifecycle index   KEYS[2] the new record's hash   KEYS[3] the valid_to sorted set
-- KEYS[4..6] (a model with an embedding) the vectors' version hash, change log and vectors hash
-- ARGV[1] d:<digest>   ARGV[2] s:<slot> ('' none)   ARGV[3] the new record id
-- ARGV[4] the new statement's analysis, JSON [anchors, content words, value words] (sorted)
-- ARGV[5] merge ('1'/'0')   ARGV[6] supersede ('1'/'0')
-- ARGV[7] the new valid_from as its field stores it   ARGV[8] ... as a score
-- ARGV[9] the record hash prefix (prefix .. id is a record's hash)
-- ARGV[10] the near records ranked by the client, JSON [id, ...] (cosine >= the merge threshold,
--   best first), or '' when it did not rank
-- ARGV[11] last_seen as its field stores it   ARGV[12] sources to add, JSON list
-- ARGV[13..15] the client's vector matrix: epoch, version, most changes to return
-- ARGV[16] the version the changes read back after the write start from (the client's matrix
--   version and the changes it kept since)
-- ARGV[17..] the new record's queued writes (redmem.store.composed), applied unless merged
-- returns {action, other id, other's hash (HGETALL), changes}: action 'created', 'merged',
--   'superseded' or 'closed' (a backdated write, stored superseded by the holder; other's hash
--   is then the holder's valid_from as stored); changes: the vector changes after the client's
--   matrix version once written (vector_changes.lua, the write's own among them), when the
--   client's matrix is of the server's epoch;
--   or {'redo', reason, changes}: nothing written. 'stale': the client ranked a matrix behind
--   the server (changes bring it up); 'rank': the index holds neither text nor slot and the
--   client did not rank; 'legacy': a card without its analysis
local index, prefix = KEYS[1], ARGV[9]
local vectors = #KEYS >= 6

local function changes(from)
  if not vectors then return false end
  return helpers.vector_changes({KEYS[4], KEYS[5], KEYS[6]}, {ARGV[13], from, ARGV[15], ''})
end

local function card(id)
  local raw = id and redis.call('HGET', index, 'c:' .. id)
  return raw and cjson.decode(raw) or false
end

local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

local function within(a, b)
  local have = {}
  for _, v in ipairs(b) do have[v] = true end
  for _, v in ipairs(a) do if not have[v] then return false end end
  return true
end

local function either(a, b)
  return #a > 0 and #b > 0 and (within(a, b) or within(b, a))
end

local new = cjson.decode(ARGV[4])
-- _detect.restates: the same names and numbers, the content words of one all in the other
local function restates(c) return same(new[1], c[4]) and either(new[2], c[5]) end
-- _detect.same_value: the same names and numbers, and a value name or number, or the value words of one in the other
local function same_value(c) return same(new[1], c[4]) and (c[6] or either(new[3], c[7])) end

-- current: the client's matrix is at the server's version (or both hold no vector)
local epoch, n = false, 0
if vectors then
  local state = redis.call('HMGET', KEYS[4], 'epoch', 'n')
  epoch, n = state[1], tonumber(state[2] or '0')
end
local same_epoch = vectors and epoch and epoch == ARGV[13]
local current = vectors and (same_epoch and n == tonumber(ARGV[14])
  or not epoch and n == 0 and ARGV[13] == '' and tonumber(ARGV[14]) == 0)
local entries = redis.call('HMGET', index, ARGV[1], ARGV[2] ~= '' and ARGV[2] or ARGV[1])
local digest_id, slot_id = entries[1], ARGV[2] ~= '' and entries[2] or false
local digest_card, slot_card = card(digest_id), card(slot_id)
for _, c in ipairs({digest_card, slot_card}) do
  if c and #c < 7 then return {'redo', 'legacy', false} end
end
local merge, supersede = ARGV[5] == '1', ARGV[6] == '1'

local function after()
  return same_epoch and changes(ARGV[16]) or false
end

local function merged(id)
  local hash = helpers.lifecycle_reinforce({prefix .. id}, {ARGV[11], ARGV[12]})
  redis.call('HINCRBY', index, 'version', 1)
  return {'merged', id, hash, after()}
end

local function indexed()
  redis.call('HSET', index, ARGV[1], ARGV[3])
  if ARGV[2] ~= '' then redis.call('HSET', index, ARGV[2], ARGV[3]) end
end

if merge and digest_card then return merged(digest_id) end
if not digest_card and not slot_card and merge and vectors then
  if ARGV[10] == '' then return {'redo', 'rank', changes(ARGV[14])} end
  if not current then return {'redo', 'stale', changes(ARGV[14])} end
  for _, id in ipairs(cjson.decode(ARGV[10])) do
    local c = card(id)
    if c and #c < 7 then return {'redo', 'legacy', false} end
    if c and restates(c) then return merged(id) end
  end
end
if supersede and slot_card then
  if merge and same_value(slot_card) then return merged(slot_id) end
  if slot_card[1] > tonumber(ARGV[8]) then
    run_queued(17)
    local stored = redis.call('HGET', prefix .. slot_id, 'valid_from')
    redis.call('HSET', KEYS[2], 'valid_to', stored, 'superseded_by', slot_id)
    redis.call('ZADD', KEYS[3], slot_card[1], ARGV[3])
    redis.call('HDEL', index, 'c:' .. ARGV[3])
    return {'closed', slot_id, stored, after()}
  end
  local older = prefix .. slot_id
  redis.call('HSET', older, 'valid_to', ARGV[7], 'superseded_by', ARGV[3])
  redis.call('ZADD', KEYS[3], ARGV[8], slot_id)
  redis.call('HDEL', index, 'c:' .. slot_id)
  run_queued(17)
  redis.call('HSET', KEYS[2], 'supersedes', slot_id)
  indexed()
  return {'superseded', slot_id, redis.call('HGETALL', older), after()}
end
run_queued(17)
indexed()
return {'created', false, false, after()}
