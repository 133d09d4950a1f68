/**
 * The Lua scripts of the Redis moves. Each runs atomically on the server: a batch is wholly moved
 * or not at all, so a client killed at any point never loses or doubles a job (unlike the classic
 * ZRANGEBYSCORE / ZREM / LPUSH loop, which loses a job when it dies between two calls and pushes it
 * twice when two movers run). Members are moved verbatim; pushes go in chunks of 100 as Laravel's
 * own scripts do (Lua's unpack has a stack limit).
 *
 * Each script takes one more key last, the batch's intent marker (`MARKER`, see intents.ts): a
 * script finding it already set does nothing (a later run fenced the batch off when it settled its
 * intent as not landed); otherwise it lists the moved members there, so a run killed before it
 * settled the intent leaves behind exactly what the batch moved.
 */

/** Fails the script when the batch was fenced off, and records moved members for the intent. */
const MARKER = `
local marker = KEYS[#KEYS]
local function fenced()
  return redis.call('exists', marker) == 1
end
local function mark(members, ttl)
  for i = 1, #members, 100 do
    redis.call('rpush', marker, unpack(members, i, math.min(i + 99, #members)))
  end
  if #members > 0 then redis.call('expire', marker, tonumber(ttl)) end
end
`;

/**
 * What a script answers for the members it moved, four values each: the job's id when the payload
 * opens with a plain `{"uuid":"…"` (Laravel's payloads, whose first key it is), its SHA-1, its size
 * in bytes, and the payload itself only when no id was read there ('' otherwise). The audit needs
 * the id and digest of every job, not its text: a batch's reply stays small.
 */
const DIGESTS = `
local function digests(members)
  local out, n = {}, 0
  local match, sha1hex = string.match, redis.sha1hex
  for i = 1, #members do
    local m = members[i]
    local id = match(m, '^{"uuid":"([%w%-]+)"[,}]')
    if id and #id > 64 then id = nil end
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = id or '', sha1hex(m), #m, id and '' or m
    n = n + 4
  end
  return out
end
`;

/** What a fenced script answers (the client raises it as a lost race). */
export const FENCED = 'TASKRECON_FENCED';

/**
 * Ready list → ready list, keeping the order workers take jobs in.
 * KEYS[1] source list, KEYS[2] target list, KEYS[3] source notify, KEYS[4] target notify (laravel
 * only), then the marker. ARGV[1] how many, ARGV[2] the end workers take from ('left' | 'right'),
 * ARGV[3] '1' when notify keys are given, ARGV[4] the marker's time to live (seconds).
 * Returns the moved members as DIGESTS gives them, next-to-run first.
 */
export const MOVE_READY = `${MARKER}${DIGESTS}
if fenced() then return redis.error_reply('${FENCED}') end
local n = tonumber(ARGV[1])
local vals
if ARGV[2] == 'left' then
  vals = redis.call('lrange', KEYS[1], 0, n - 1)
  if #vals > 0 then redis.call('ltrim', KEYS[1], #vals, -1) end
else
  local tail = redis.call('lrange', KEYS[1], -n, -1)
  if #tail > 0 then redis.call('ltrim', KEYS[1], 0, -#tail - 1) end
  vals = {}
  for i = #tail, 1, -1 do vals[#vals + 1] = tail[i] end
end
local push = ARGV[2] == 'left' and 'rpush' or 'lpush'
for i = 1, #vals, 100 do
  redis.call(push, KEYS[2], unpack(vals, i, math.min(i + 99, #vals)))
end
if ARGV[3] == '1' and #vals > 0 then
  redis.call('ltrim', KEYS[3], #vals, -1)
  for i = 1, #vals, 100 do
    local ones = {}
    for j = i, math.min(i + 99, #vals) do ones[#ones + 1] = 1 end
    redis.call('rpush', KEYS[4], unpack(ones))
  end
end
mark(vals, ARGV[4])
return digests(vals)
`;

/**
 * Sorted set → sorted set with the same scores (a delayed job keeps its time, a reservation its
 * expiry). A member the target already holds is left where it is (ZADD would merge two jobs into
 * one): it is skipped, and the next batch starts after it.
 * KEYS[1] source zset, KEYS[2] target zset, KEYS[3] the marker. ARGV[1] how many, ARGV[2] how many
 * were skipped before, ARGV[3] the marker's time to live. Returns { member1, score1, … , skippedNow }.
 */
export const MOVE_ZSET = `${MARKER}
if fenced() then return redis.error_reply('${FENCED}') end
local n = tonumber(ARGV[1])
local offset = tonumber(ARGV[2])
local vals = redis.call('zrange', KEYS[1], offset, offset + n - 1, 'WITHSCORES')
local out = {}
local moved = {}
local skipped = 0
for i = 1, #vals, 2 do
  if redis.call('zscore', KEYS[2], vals[i]) then
    skipped = skipped + 1
  else
    redis.call('zadd', KEYS[2], vals[i + 1], vals[i])
    redis.call('zrem', KEYS[1], vals[i])
    out[#out + 1] = vals[i]
    out[#out + 1] = vals[i + 1]
    moved[#moved + 1] = vals[i]
  end
end
mark(moved, ARGV[3])
out[#out + 1] = tostring(skipped)
return out
`;

/**
 * The framework's migrate: jobs of a zset whose score is due (delayed jobs whose time came,
 * reservations that expired) onto the ready list, verbatim — Laravel's `migrateExpiredJobs` (one
 * notify element per job) and think-queue's `migrateExpiredJobs`, bounded to one batch.
 * KEYS[1] the zset, KEYS[2] the ready list, KEYS[3] the notify list (laravel only), then the marker.
 * ARGV[1] now (unix seconds), ARGV[2] how many, ARGV[3] the end producers push to ('left' | 'right'),
 * ARGV[4] '1' when a notify key is given, ARGV[5] the marker's time to live. Returns the moved
 * members, lowest score first.
 */
export const MIGRATE_DUE = `${MARKER}
if fenced() then return redis.error_reply('${FENCED}') end
local val = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #val > 0 then
  redis.call('zremrangebyrank', KEYS[1], 0, #val - 1)
  local push = ARGV[3] == 'left' and 'lpush' or 'rpush'
  for i = 1, #val, 100 do
    redis.call(push, KEYS[2], unpack(val, i, math.min(i + 99, #val)))
    if ARGV[4] == '1' then
      for j = i, math.min(i + 99, #val) do redis.call('rpush', KEYS[3], 1) end
    end
  end
end
mark(val, ARGV[5])
return val
`;

/**
 * Looks at a batch's marker to settle its intent: the members it moved when it landed; when it did
 * not, the marker is set (fenced) so the batch never can, and nothing is returned.
 * KEYS[1] the marker. ARGV[1] the fence's time to live. Returns the members, or nil.
 */
export const LOOK_MARKER = `
local t = redis.call('type', KEYS[1]).ok
if t == 'list' then return redis.call('lrange', KEYS[1], 0, -1) end
if t == 'none' then redis.call('set', KEYS[1], 'fenced', 'EX', tonumber(ARGV[1])) end
return false
`;
