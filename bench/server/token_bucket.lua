-- token_bucket.lua: the seed's token bucket (rate-limiting.txt, section 07,
-- "Token bucket: one Lua script"), byte for byte as the seed gives it. The
-- peer of sluiced's CL.THROTTLE in bench/server/run.sh (loaded with SCRIPT
-- LOAD, run with EVALSHA sha 1 KEY rate burst cost).
local key   = KEYS[1]
local rate  = tonumber(ARGV[1])   -- tokens per second
local burst = tonumber(ARGV[2])   -- bucket size
local cost  = tonumber(ARGV[3])

local t   = redis.call('TIME')                    -- Redis's own clock: {seconds, microseconds}
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6

local state  = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst        -- new key → full bucket
local ts     = tonumber(state[2]) or now

tokens = math.min(burst, tokens + (now - ts) * rate)   -- lazy refill (§04)
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end

redis.call('HSET', key, 'tokens', tokens, 'ts', now)
redis.call('EXPIRE', key, math.ceil(burst / rate) * 2)  -- idle buckets disappear
return { allowed, string.format('%.2f', tokens) }
