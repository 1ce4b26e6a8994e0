-- lease.lua: the leases of one key of a concurrency limit, in Redis
-- (src/store/lease_redis.c; docs/protection.md). Stripe's concurrent-requests
-- limiter: a sorted set of lease ids scored by their expiry (whole
-- microseconds), one per key and limit. Every call first drops the expired
-- leases (score <= now), so a lease nobody released (a crashed client) is gone
-- at its expiry, then does one operation, atomically:
--   KEYS[1]  the key's sorted set
--   ARGV     op ("a" acquire, "r" release, "n" renew), limit, lease_us, id,
--            now_us ("0": Redis TIME, the one clock of the fleet)
-- Reply: {ok (0/1), in_flight (after the call), ttl_us, retry_after_us}
--   a: ok 1 with the new lease's ttl_us (= lease_us); or ok 0 and
--      retry_after_us = the earliest held expiry - now (> 0);
--   r: ok 1 when the lease was held (and is gone now);
--   n: ok 1 with ttl_us = max(expiry, now + lease) - now, the new expiry.
-- The set's TTL always covers its latest expiry (a set with no lease left is
-- deleted by Redis), so nothing outlives its leases. Scores stay below 2^53
-- (us since 1970 until the year 2255): exact doubles.
local key = KEYS[1]
local op, limit, lease, id = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local now = tonumber(ARGV[5])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local n = redis.call('ZCARD', key)

local function cover(ttl_us)
  local want = math.floor((ttl_us + 999) / 1000) + 1
  if redis.call('PTTL', key) < want then redis.call('PEXPIRE', key, want) end
end

if op == 'a' then
  if n < limit then
    redis.call('ZADD', key, now + lease, id)
    cover(lease)
    return {1, n + 1, lease, 0}
  end
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {0, n, 0, tonumber(first[2]) - now}
elseif op == 'r' then
  local removed = redis.call('ZREM', key, id)
  return {removed, n - removed, 0, 0}
elseif op == 'n' then
  local s = redis.call('ZSCORE', key, id)
  if not s then return {0, n, 0, 0} end
  local exp = math.max(tonumber(s), now + lease)
  redis.call('ZADD', key, 'XX', exp, id)
  cover(exp - now)
  return {1, n, exp - now, 0}
end
return redis.error_reply('ERR sluice lease: unknown op')
