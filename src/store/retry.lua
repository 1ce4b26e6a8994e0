-- retry.lua: one key's retry budget in Redis (src/store/retry_redis.c;
-- sluice/retry.h has the maths, docs/protection.md "Retry budget"). The
-- window is 10 slots of slot_us; a hash per key holds the latest slot seen
-- (b) and each slot's first attempts (f0..f9) and admitted retries (r0..r9),
-- the slot s at index s mod 10. One call, atomically:
--   KEYS[1]  the key's hash
--   ARGV     retry ("0": a first attempt, counted; "1": a retry, decided),
--            ratio_ppm, min_retries, slot_us, now_us ("0": Redis TIME, the one
--            clock of the fleet)
-- A retry passes iff R + 1 <= min_retries + floor(F x ratio_ppm / 10^6), tested
-- without a division: R + 1 - min <= 0 or (R + 1 - min) x 10^6 <= F x ratio_ppm
-- (exact doubles while F x ratio_ppm < 2^53: below 9 x 10^9 first attempts a
-- window). A clock before the latest slot counts in that slot.
-- Reply: {allowed (0/1), F, R (after the call), retry_after_us (refused: until
-- old slots leaving let it pass; -1: only new first attempts can)}
-- The hash lives one window after its latest slot (PEXPIRE).
local key = KEYS[1]
local retry, ppm, min, width = ARGV[1] == '1', tonumber(ARGV[2]), tonumber(ARGV[3]),
  tonumber(ARGV[4])
local now = tonumber(ARGV[5])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local slot = math.floor(now / width)
local h = redis.call('HGETALL', key)
local v = {}
for i = 1, #h, 2 do v[h[i]] = tonumber(h[i + 1]) end
local old = v.b
local base = old or slot
local f, r = {}, {}
for i = 0, 9 do
  f[i] = v['f' .. i] or 0
  r[i] = v['r' .. i] or 0
end
local reset = {}
if slot > base then
  local from = base + 1
  if slot - base >= 10 then from = slot - 9 end
  for k = from, slot do
    local i = k % 10
    if f[i] ~= 0 or r[i] ~= 0 then
      f[i], r[i] = 0, 0
      reset[#reset + 1] = i
    end
  end
  base = slot
end
local F, R = 0, 0
for i = 0, 9 do F, R = F + f[i], R + r[i] end

local function passes(ff, rr)
  local need = rr + 1 - min
  return need <= 0 or need * 1000000 <= ff * ppm
end

local cur = base % 10
local set = {'b', base}
for _, i in ipairs(reset) do
  set[#set + 1] = 'f' .. i; set[#set + 1] = 0
  set[#set + 1] = 'r' .. i; set[#set + 1] = 0
end
local allowed, after = 1, 0
if not retry then
  F = F + 1
  set[#set + 1] = 'f' .. cur; set[#set + 1] = f[cur] + 1
elseif passes(F, R) then
  R = R + 1
  set[#set + 1] = 'r' .. cur; set[#set + 1] = r[cur] + 1
else
  allowed, after = 0, -1
  local ff, rr = F, R
  for j = 1, 10 do
    local gone = base - 10 + j
    if gone >= 0 then
      ff, rr = ff - f[gone % 10], rr - r[gone % 10]
    end
    if passes(ff, rr) then
      local at = (base + j) * width
      after = at > now and at - now or 1
      break
    end
  end
end
if allowed == 1 or old ~= base then
  redis.call('HSET', key, unpack(set))
  redis.call('PEXPIRE', key, math.floor((width * 11 + 999) / 1000))
end
return {allowed, F, R, after}
