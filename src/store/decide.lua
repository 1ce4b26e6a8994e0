--[[ decide.lua: sluice's rate-limit decisions inside Redis, one atomic script
call for every decision a worker has in one loop iteration, for every
algorithm of docs/semantics.md. Embedded in the build (scripts/embed.cmake)
and called by src/store/redis_script.c as

  EVALSHA <sha> <n> <key_1..key_n> <now_us> <m> <7 arguments per parameter
          set x m> <3 arguments per item x n>

now_us: 0 = use Redis TIME (the one clock of the whole fleet), else that
time (tests). Parameter sets (the distinct limits of the call, checked once
per call however many items use them): algorithm (sl_algorithm number),
limit, period_us, burst, flags (1 start empty, 2 count rejected, 4 step
refill, 256 calendar month, 512 any rate, plus 1024 x the leaky queue's
delay_after, or a token bucket's floor), origin_us, tag (the state's tag: a short
hash of algorithm, limit, period_us, burst and calendar month, written by
the C side; "cell" for any rate). Per item: its parameter set (1..m), cost,
group (0 enforced, 1 shadow). Every other argument is a decimal integer.

Several requests in one call: group 2r + g is group g (0 enforced, 1
shadow) of request r (0 to 255). The requests are decided one after the
other, in the order of their first items, each exactly as if it had been a
call of its own at the same time (a later request sees what an earlier one
charged). sluiced sends every decision a worker has to make in one loop
iteration as one call: one Redis call for many decisions.

Reply: one flat array of 6 integers per item, in item order: allowed
(0/1), limit, remaining, retry_after_us (-1: never), reset_after_us,
delay_us (leaky queue). An argument out of range is an error reply
"ERR sluice: ..." and nothing is changed.

Groups (sl__policy_check_all): group 0 is decided all-or-nothing, in order:
each item sees the charges of the items before it (the same key twice adds
up); if all pass, all are charged and group 1 is decided the same way. If an
item refuses, nothing of its group is charged, except that items counting
rejections are then charged as rejections (never beyond empty); the refusing
item reports why, every other item what its limit says at this cost with
nothing charged (an allowed one gets its cost back in remaining, as
copy_decisions in policy.c). A count-rejected item of a refused group reports
the decision of that charge (the state it is really left in). When group 0
refuses, group 1 is only looked at (cost 0). A cost larger than can ever pass
(limit for windows, burst for buckets) refuses its group with nothing charged
at all; that item says retry -1.

A token bucket's floor F (load shedding's reserve, sluice/shed.h; the
fleet's capacity of `shedding: {scope: fleet}`): the item passes only if F
tokens are left after its cost, tokens - cost >= F; its remaining is what
is left above F, its retry_after the time until tokens reach cost + F, and
a cost above B - F can never pass. F is not part of the tag: one bucket
read under every priority's floor.

Arithmetic. Lua numbers are doubles: integers are exact up to 2^53. All
times are integer microseconds below 2^62 ns (< 2^53 us), every count,
state value and parameter is kept below 2^52 (checked), so sums and the
corrected divisions below stay exact.
The rate N/P is reduced to n/p (gcd removed) as in src/core: token bucket
tokens are scaled by p (full bucket B*p <= 2^52), GCRA keeps tat plus frac/n
us. The sliding window's products prev*(P-elapsed) can exceed 2^53: they are
compared exactly with Dekker's error-free product (two_prod), never rounded.
Roundings: as in the C core, but to whole microseconds instead of
nanoseconds: retry_after, reset_after and delay up (never early), remaining
down. With a period and an emission interval P/N that are whole microseconds
and whole-microsecond times, every value equals the C core's exactly.

State per key (its Redis key is KEYS[i], nothing derived from it), one
compact string; every number in lower-case hexadecimal without leading
zeros (string.format %x: exact below 2^53, 13 digits for a time in us):
  fixed window     "<tag>|<window>:<count>" (window: index, or months
                   since 1970-01 for a calendar month)
  sliding window   "<tag>|<window>:<prev>:<curr>"
  token bucket     "<tag>|<tokens*p>:<last_us>" (step refill too)
  gcra, leaky q.   "<tag>|<tat_us>:<frac>"   (tat + frac/n us)
                   or, when n is 1 (the emission interval P/N is a whole
                   us: frac is always 0), "<tat_us><t3>" in decimal, one
                   integer below 2^63 that Redis stores as a number (32
                   bytes less per key): t3 is the tag's value mod 1000 in
                   3 digits (a changed policy reads its old state with odds
                   of 1/1000 then)
  gcra, any rate   "cell|<tat_us>:<frac>:<n>"
  sliding log      list of the times (us, decimal) of the counted requests,
                   oldest first, one element per unit of cost
<tag> is the parameter set's tag argument, a 32-bit FNV-1a hash of
"algorithm,limit,period_us,burst,calendar" in hex (redis_script.c): a state
written under other parameters (a changed policy) is read as a fresh key,
as a reload gives a new table in memory (two parameter sets of one policy
name share a tag with odds of 2^-32). The sliding log has no tag:
its list is the times of past requests, meaningful under any parameters
(after a lowered limit, a request that finds more than N live entries keeps
the newest N). A key holding another type is read as fresh and replaced.
The same key twice in one call must come with the same parameters (else an
error reply).
Any rate (flag 512, gcra only; CL.THROTTLE): redis-cell's model, one tat per
key whatever the parameters, judged with the parameters of each item. The
state has no tag (it is "cell") and records the n its frac is counted in;
an item with another n first moves frac to its own, rounded up (at most
1/n us later: never a credit). Such a key may come several times in one
call with different parameters.
Redis calls per call: TIME (when now_us is 0), one MGET for all string
states; per sliding log LLEN and a LRANGE of up to 32 elements (more only to
find where expiry ends in a long log, by galloping). Then only a decision
that changes a state writes it (SET .. PX, or LTRIM/RPUSH and PEXPIRE): a
refused request that is not charged, or a look (cost 0), writes nothing.
The TTL is the time after which the state equals a fresh key's: the state's
reset_after, and with start empty at least until the origin's exhaustion
has worn off, rounded up to whole milliseconds. So an expired key decides
exactly as the state it replaced would have, and idle keys vanish.

Differences from the memory store (src/store/memory.c), which follows the
same group contract (store.h; checked field by field by
tests/unit/test_differential.c):
- A clock that goes backwards (Redis TIME is one clock; both never credit
  anything): the in-memory algorithms move their state forward (token
  bucket `last`, sliding log `seen`) even on an uncharged refusal; here
  nothing is written then, so a later call with an earlier time is judged
  at its own time (stricter), and the sliding log stamps new entries with
  max(now, its newest entry).
- A sliding window's retry_after is rounded up to the whole us (the C core
  keeps its fraction of a us). ]]

local KEYS, ARGV = KEYS, ARGV
local floor, fmt, tonumber, call = math.floor, string.format, tonumber, redis.call
local insert, match = table.insert, string.match

local MAXV = 4503599627370496 -- 2^52: every count, size and scaled value
local TMAX = 4611686018427387 -- SL_TIME_MAX (2^62 ns) in us
local PMAX = 3162240000000000 -- 100 years of 366 days in us (the C core's bound)
local CMAX = 9223372036854775807 -- costs: anything; above the limit is "never"
local FMAX = MAXV - 1 -- flags: delay_after below 2^42
local LOGMAX = 100000 -- SL_SLIDING_LOG_MAX
local DAY = 86400000000
local FW, SLOG, SW, TB, GCRA, LQ = 1, 2, 3, 4, 5, 6
local APPLY, PEEK, CHARGE = 0, 1, 2

local function fail(msg)
  error({err = 'ERR sluice: ' .. msg})
end

-- ---- exact integer helpers (operands >= 0, below 2^53, a + b < 2^53) ----

-- floor(a / b): the double quotient is off by at most one, corrected.
local function idiv(a, b)
  local q = floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
  elseif r >= b then
    q = q + 1
  end
  return q
end

local function ceil_div(a, b)
  local q = idiv(a, b)
  if q * b ~= a then q = q + 1 end
  return q
end

-- ceil(y / b) for a y of either sign.
local function ceil_signed(y, b)
  if y >= 0 then return ceil_div(y, b) end
  return -idiv(-y, b)
end

local function min(a, b)
  if a < b then return a end
  return b
end
local function max(a, b)
  if a > b then return a end
  return b
end

local function gcd(a, b)
  while b > 0 do
    a, b = b, a - idiv(a, b) * b
  end
  return a
end

-- a * b as p + e exactly (p the rounded product, e the error; Dekker's
-- TwoProduct with Veltkamp's split, for integers below 2^53).
local SPLIT = 134217729 -- 2^27 + 1
local function two_prod(a, b)
  local p = a * b
  local t = SPLIT * a
  local ah = t - (t - a)
  local al = a - ah
  t = SPLIT * b
  local bh = t - (t - b)
  local bl = b - bh
  return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl
end

-- The sign of a*b - c*d, exactly. Rounding is monotonic, so different
-- rounded products already order the exact ones; equal ones differ by
-- their errors.
local function cmp_prod(a, b, c, d)
  local p1, e1 = two_prod(a, b)
  local p2, e2 = two_prod(c, d)
  if p1 ~= p2 then return p1 < p2 and -1 or 1 end
  if e1 ~= e2 then return e1 < e2 and -1 or 1 end
  return 0
end

-- floor(a * b / c), exactly, for a result known to be below 2^52.
local function muldiv(a, b, c)
  local q = floor(a * b / c)
  while q > 0 and cmp_prod(q, c, a, b) > 0 do q = q - 1 end
  while cmp_prod(q + 1, c, a, b) <= 0 do q = q + 1 end
  return q
end

-- ceil(a * b / c), same conditions.
local function muldiv_up(a, b, c)
  local q = muldiv(a, b, c)
  if cmp_prod(q, c, a, b) ~= 0 then q = q + 1 end
  return q
end

-- ---- calendar months (UTC, proleptic Gregorian; H. Hinnant's algorithms) ----

local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = m > 2 and m - 3 or m + 9
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- Months since January 1970 of the month holding t (us, t >= 0).
local function month_index(t)
  local z = idiv(t, DAY) + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  return (y - 1970) * 12 + m - 1
end

-- The first microsecond of month index i.
local function month_start(i)
  local y = floor(i / 12)
  return days_from_civil(1970 + y, i - y * 12 + 1, 1) * DAY
end

-- ---- arguments ----

local nkeys = #KEYS
local nsets = tonumber(ARGV[2])
if not nsets or nsets ~= floor(nsets) or nsets < 0 or nsets > nkeys or
    #ARGV ~= 2 + 7 * nsets + 3 * nkeys then
  fail(fmt('expected 2 + 7 x m + 3 x %d arguments after the keys, got %d', nkeys, #ARGV))
end

local function int(i, lo, hi, what, whose)
  local v = tonumber(ARGV[i])
  if not v or v ~= floor(v) or v < lo or v > hi then
    fail(fmt('%s: bad %s %q', whose, what, tostring(ARGV[i])))
  end
  return v
end

local now = int(1, 0, TMAX, 'now_us', 'call')
if now == 0 then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- the parameter sets, checked once per call (a message is built only for
-- a bad one)
local sets = {}
for j = 1, nsets do
  local b = 2 + (j - 1) * 7
  local alg, N, P = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])
  local B, flags, origin = tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5]), tonumber(ARGV[b + 6])
  if not (alg and N and P and B and flags and origin) or alg ~= floor(alg) or alg < FW or
      alg > LQ or N ~= floor(N) or N < 1 or N > MAXV or P ~= floor(P) or P < 1 or P > PMAX or
      B ~= floor(B) or B < 0 or B > MAXV or flags ~= floor(flags) or flags < 0 or
      flags > FMAX or origin ~= floor(origin) or origin < 0 or origin > TMAX then
    local who = 'parameter set ' .. j
    int(b + 1, FW, LQ, 'algorithm', who)
    int(b + 2, 1, MAXV, 'limit', who)
    int(b + 3, 1, PMAX, 'period', who)
    int(b + 4, 0, MAXV, 'burst', who)
    int(b + 5, 0, FMAX, 'flags', who)
    int(b + 6, 0, TMAX, 'origin', who)
  end
  local low, hi = flags % 256, floor(flags / 256) % 4
  -- one constructor: the table is sized once
  local ps = {
    alg = alg, N = N, P = P, B = B, origin = origin,
    fp = ARGV[b + 7],
    cal = hi % 2 == 1,
    any = hi >= 2,
    empty = low % 2 == 1,
    cr = low % 4 >= 2,
    steps = low >= 4, -- token bucket: refills in whole periods (SL_STEP_REFILL)
    da = floor(flags / 1024), -- leaky queue: delay_after; token bucket: its floor
    n = 0, p = 0, full = 0, maxcost = N, limit = N, fl = 0,
  }
  -- the tag only has to tell parameter sets apart: one that is no word
  -- never matches a state (every key reads as fresh)
  if low > 7 or #ps.fp < 1 or #ps.fp > 16 then
    fail(fmt('parameter set %d: bad flags or tag', j))
  end
  local g = gcd(N, P)
  ps.n, ps.p = N / g, P / g
  if alg >= TB then
    if B < 1 or B * ps.p > MAXV then
      fail(fmt('parameter set %d: burst must be 1..2^52/(period/gcd(limit, period))', j))
    end
    ps.full, ps.maxcost, ps.limit = B * ps.p, B, B
    if alg == TB and ps.da > 0 then -- a floor: the tokens a decision must leave
      if ps.da >= B then fail(fmt('parameter set %d: a floor must be below the burst', j)) end
      ps.fl, ps.maxcost, ps.da = ps.da * ps.p, B - ps.da, 0
    end
  elseif alg == SLOG and N > LOGMAX then
    fail(fmt('parameter set %d: sliding log limit > %d', j, LOGMAX))
  end
  if ps.cal and alg ~= FW then fail(fmt('parameter set %d: a calendar month needs a fixed window', j)) end
  if ps.steps and alg ~= TB then fail(fmt('parameter set %d: step refill needs a token bucket', j)) end
  if ps.da > 0 and (alg ~= LQ or ps.da >= B) then
    fail(fmt('parameter set %d: delay_after needs a leaky queue and must be below its burst', j))
  end
  if ps.any then
    if alg ~= GCRA or low ~= 0 then fail(fmt('parameter set %d: any rate needs a gcra without flags', j)) end
    ps.fp = 'cell'
  elseif alg >= GCRA and ps.n == 1 then
    -- frac is always 0: the state is one integer, tat and a 3-digit tag
    -- (Redis keeps it as a number, 32 bytes less than a string)
    local h = tonumber(ps.fp, 16)
    ps.t3 = fmt('%03d', h and h % 1000 or 0)
  end
  sets[j] = ps
end

-- the items: 3 arguments each, checked without building a message unless
-- one is bad
-- (item i is KEYS[i], IPS[i], ICOST[i], IGROUP[i]: arrays, not a table per
-- item; x % 1 ~= 0 tests for a fraction without a call). A parameter set
-- and a cost are mostly the same few strings: each is converted once
-- (tonumber goes through strtod, a third of an item's decoding).
local IPS, ICOST, IGROUP, NUM = {}, {}, {}, {}
local ab = 2 + 7 * nsets
for i = 1, nkeys do
  local sj, sc = ARGV[ab + 1], ARGV[ab + 2]
  local j, cost, group = NUM[sj], NUM[sc], tonumber(ARGV[ab + 3])
  if j == nil then
    j = tonumber(sj)
    NUM[sj] = j
  end
  if cost == nil then
    cost = tonumber(sc)
    NUM[sc] = cost
  end
  local ps = sets[j]
  if not ps or j % 1 ~= 0 then int(ab + 1, 1, nsets, 'parameter set', 'item ' .. i) end
  if not cost or cost % 1 ~= 0 or cost < 0 or cost > CMAX then
    int(ab + 2, 0, CMAX, 'cost', 'item ' .. i)
  end
  if not group or group % 1 ~= 0 or group < 0 or group > 511 then
    int(ab + 3, 0, 511, 'group', 'item ' .. i)
  end
  IPS[i], ICOST[i], IGROUP[i] = ps, cost, group
  ab = ab + 3
end

-- ---- the algorithms: decide(ps, s, cost, mode, cr) -> the 6 reply
-- integers as 6 return values (no table per decision; ps: the parameter
-- set) ----
-- Mirrors src/core/*.c; s is the key's state (changed only when the decision
-- changes ps, then marked dirty).

local function fw_window(ps, t)
  if ps.cal then return month_index(t) end
  return idiv(t, ps.P)
end

local function fw_end(ps, w)
  if ps.cal then return month_start(w + 1) end
  return (w + 1) * ps.P
end

local function fixed_window(ps, s, cost, mode, cr)
  local N = ps.N
  local w = fw_window(ps, now)
  if w < s[1] then w = s[1] end -- clock went back: stay in the later window
  local count = w == s[1] and s[2] or 0
  local allowed = count + cost <= N
  local after = count
  if allowed or cr or mode == CHARGE then after = min(count + cost, N) end
  if mode ~= PEEK and after ~= count then
    s[1], s[2], s.dirty = w, after, true
  end
  local left = fw_end(ps, w) - now
  return allowed and 1 or 0, N, N - after, allowed and 0 or left, after > 0 and left or 0, 0
end

local function sliding_window(ps, s, cost, mode, cr)
  local N, P = ps.N, ps.P
  local w = idiv(now, P)
  local elapsed = now - w * P
  if w < s[1] then w, elapsed = s[1], 0 end
  local prev, curr = 0, 0
  if w == s[1] then
    prev, curr = s[2], s[3]
  elseif w == s[1] + 1 then
    prev = s[3]
  end
  -- prev * (P - elapsed) + (curr + cost) * P <= N * P, exactly
  local room = N - curr - cost
  -- (no previous window, the common case: nothing to weigh)
  local allowed = room >= 0 and (prev == 0 or cmp_prod(prev, P - elapsed, room, P) <= 0)
  local after = curr
  if allowed or cr or mode == CHARGE then after = min(curr + cost, N) end
  if mode ~= PEEK and after ~= curr then
    s[1], s[2], s[3], s.dirty = w, prev, after, true
  end
  local to_end = (w + 1) * P - now
  -- floor((N*P - prev*(P-elapsed) - after*P) / P), at least 0
  local remaining = N - after
  if prev > 0 then remaining = remaining - muldiv_up(prev, P - elapsed, P) end
  if remaining < 0 then remaining = 0 end
  local reset = 0
  if after > 0 then
    reset = to_end + P
  elseif prev > 0 then
    reset = to_end
  end
  local retry = 0
  if not allowed then
    if after + cost <= N then
      -- passes once prev * (P - e) <= (N - after - cost) * P in this window
      local e = P - muldiv(N - after - cost, P, prev)
      retry = (e < P and w * P + e or (w + 1) * P) - now
    elseif N - cost >= after then
      retry = to_end
    else
      retry = to_end + P - muldiv(N - cost, P, after)
    end
  end
  return allowed and 1 or 0, N, remaining, retry, reset, 0
end

-- The last step at or before t (t >= 0): step refill credits whole periods.
local function step_of(ps, t)
  return idiv(t, ps.P) * ps.P
end

-- The time from t until `units` (> 0) more scaled units have arrived: at
-- n per us, or in steps of P*n units at every multiple of P.
local function tb_wait(ps, units, t)
  if not ps.steps then return ceil_div(units, ps.n) end
  local per, k = ps.P * ps.n, 1 -- per may round above 2^53: then it is > units
  if per < units then k = ceil_div(units, per) end
  return k * ps.P - (t - step_of(ps, t)) -- k * P <= B * T + P < 2^53
end

local function token_bucket(ps, s, cost, mode, cr)
  local full, n, p = ps.full, ps.n, ps.p
  local tokens, last = s[1], s[2]
  if now > last and tokens < full then
    local elapsed = now - last
    if ps.steps then elapsed = step_of(ps, now) - step_of(ps, last) end
    if elapsed >= ceil_div(full - tokens, n) then
      tokens = full
    else
      tokens = tokens + elapsed * n
    end
  end
  local need, fl = cost * p, ps.fl
  local allowed = tokens - need >= fl
  local after = tokens
  if allowed or cr or mode == CHARGE then after = tokens > need and tokens - need or 0 end
  if mode ~= PEEK and after ~= tokens then
    s[1], s[2], s.dirty = after, last > now and last or now, true
  end
  -- with the clock behind `last` the bucket is judged as of `last`
  local behind = last > now and last - now or 0
  local at = now + behind
  local retry, reset = 0, 0
  if not allowed then retry = behind + tb_wait(ps, need + fl - after, at) end
  if after < full then reset = behind + tb_wait(ps, full - after, at) end
  return allowed and 1 or 0, ps.B, after > fl and idiv(after - fl, p) or 0, retry, reset, 0
end

-- (t - now) * n + f <= x, for x >= 0 and 0 <= f < n.
local function ahead_le(ps, t, f, x)
  if t < now then return true end
  return x >= f and t - now <= idiv(x - f, ps.n)
end

local function gcra(ps, s, cost, mode, cr)
  local n, p, full = ps.n, ps.p, ps.full
  if ps.any and s[3] ~= n then
    -- the state in this item's n: ceil(frac * n / n_old) <= n as frac < n_old
    local f = s[2] > 0 and muldiv_up(s[2], n, s[3]) or 0
    if f >= n then s[1], f = s[1] + 1, f - n end
    s[2], s[3] = f, n
  end
  local bt, bf = s[1], s[2] -- base = max(tat, now)
  if bt < now or (bt == now and bf == 0) then bt, bf = now, 0 end
  local delay = bt - now + (bf > 0 and 1 or 0)
  if ps.da > 0 then
    -- delay_after D: the first D waiting go at once, D emission intervals
    -- (D*p/n us) less: ceil(bt - now + (bf - D*p)/n), at least 0
    delay = max(0, bt - now + ceil_signed(bf - ps.da * p, n))
  end
  local step = cost * p
  local q = idiv(step, n)
  local nt, nf = bt + q, bf + (step - q * n)
  if nf >= n then nt, nf = nt + 1, nf - n end
  local allowed = ahead_le(ps, nt, nf, full)
  local at, af = bt, bf
  if allowed then
    at, af = nt, nf
  elseif cr or mode == CHARGE then
    -- a counted rejection empties the bucket, no debt: tat = now + B*T
    local fq = idiv(full, n)
    at, af = now + fq, full - fq * n
    if at < bt or (at == bt and af < bf) then at, af = bt, bf end -- never a credit
  end
  if mode ~= PEEK and (at ~= bt or af ~= bf) then
    s[1], s[2], s.dirty = at, af, true
  end
  local d = at - now
  local remaining = 0
  if ahead_le(ps, at, af, full) then remaining = idiv(full - (d * n + af), p) end
  local retry = 0
  if not allowed then retry = max(0, d + ceil_signed(af + step - full, n)) end
  if ps.alg ~= LQ or not (allowed or cost == 0) then delay = 0 end
  return allowed and 1 or 0, ps.B, remaining, retry, d + (af > 0 and 1 or 0), delay
end

-- The sliding log's state is its Redis list, read lazily (a few elements
-- per call), plus this call's changes: `drop` elements gone from the head,
-- `runs` of new entries {t, c} at the tail. A start-empty key that does not
-- exist is a virtual list of N entries at the origin (s.vt).
local function slog_base(s, j)
  if s.vt then return s.vt end
  local v = s.cache[j]
  if v then return v end
  local got = call('LRANGE', s.key, j, min(j + 31, s.blen - 1))
  for m = 1, #got do s.cache[j + m - 1] = tonumber(got[m]) end
  return s.cache[j]
end

local function slog_len(s)
  return s.blen - s.drop + s.radd
end

-- The i-th (0-based) entry of the log as ps is now.
local function slog_at(s, i)
  local j = s.drop + i
  if j < s.blen then return slog_base(s, j) end
  j = j - s.blen
  for _, r in ipairs(s.runs) do
    if j < r.c then return r.t end
    j = j - r.c
  end
  return nil
end

-- How many entries from the head have t <= lim (the log is sorted).
local function slog_gone(s, lim)
  local k = 0
  local live_base = s.blen - s.drop
  if live_base > 0 then
    if slog_base(s, s.drop) > lim then return 0 end
    if s.vt then
      k = live_base
    else
      local lo, hi, step = s.drop, s.blen, 1 -- base(lo) <= lim; hi == blen or base(hi) > lim
      while true do
        local j = lo + step
        if j >= s.blen then break end
        if slog_base(s, j) > lim then
          hi = j
          break
        end
        lo, step = j, step * 2
      end
      while hi - lo > 1 do
        local mid = floor((lo + hi) / 2)
        if slog_base(s, mid) <= lim then
          lo = mid
        else
          hi = mid
        end
      end
      k = lo + 1 - s.drop
      if k < live_base then return k end
    end
  end
  for _, r in ipairs(s.runs) do
    if r.t > lim then break end
    k = k + r.c
  end
  return k
end

local function slog_drop(s, m)
  local fromb = min(m, s.blen - s.drop)
  s.drop = s.drop + fromb
  m = m - fromb
  while m > 0 do
    local r = s.runs[1]
    if r.c <= m then
      m = m - r.c
      s.radd = s.radd - r.c
      table.remove(s.runs, 1)
    else
      r.c = r.c - m
      s.radd = s.radd - m
      m = 0
    end
  end
end

local function slog_newest(s)
  if s.radd > 0 then return s.runs[#s.runs].t end
  if s.blen > 0 then return slog_base(s, s.blen - 1) end
  return 0
end

local function sliding_log(ps, s, cost, mode, cr)
  local N, P = ps.N, ps.P
  local gone = slog_gone(s, now - P)
  local live = slog_len(s) - gone
  local allowed = live + cost <= N
  local add = 0
  if allowed or cr or mode == CHARGE then add = cost end
  -- the log after this call: the live entries minus the `dropped` oldest,
  -- then `fresh` new entries at `stamp`; at most N in all
  local after = min(live + add, N)
  local dropped = min(live, live + add - after)
  local fresh = after - (live - dropped)
  local first = gone + dropped
  local kept = live - dropped
  local stamp
  if fresh > 0 or (not allowed and after + cost - N - 1 >= kept) then
    stamp = max(now, slog_newest(s))
  end
  local reset, retry = 0, 0
  if after > 0 then
    local last = fresh > 0 and stamp or slog_at(s, first + kept - 1)
    reset = max(0, last + P - now)
  end
  if not allowed then
    -- the (after + cost - N)-th oldest entry must slide out first
    local i = after + cost - N - 1
    local t = i < kept and slog_at(s, first + i) or stamp
    retry = max(0, t + P - now)
  end
  if mode ~= PEEK and (fresh > 0 or dropped > 0) then
    slog_drop(s, first)
    if fresh > 0 then
      local r = s.runs[#s.runs]
      if r and r.t == stamp then
        r.c = r.c + fresh
      else
        insert(s.runs, {t = stamp, c = fresh})
      end
      s.radd = s.radd + fresh
    end
    s.dirty = true
  end
  return allowed and 1 or 0, N, N - after, retry, reset, 0
end

local algorithms = {fixed_window, sliding_log, sliding_window, token_bucket, gcra, gcra}

local function decide(ps, s, cost, mode, cr)
  if cost == 0 then
    local _, l, r, _, re, de = algorithms[ps.alg](ps, s, 0, PEEK, cr)
    return 1, l, r, 0, re, de
  end
  return algorithms[ps.alg](ps, s, cost, mode, cr)
end

-- the reply (one flat array of 6 integers per item), written in place
local out = {}
local function put(i, a, l, r, re, rs, de)
  local o = i * 6 - 6
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6] = a, l, r, re, rs, de
end

-- ---- states ----

-- A brand-new key's state at now: fresh, or exhausted at the origin. (Every
-- state table is made with its dirty field: one allocation, no rehash when
-- a decision sets it.)
local function init(ps)
  local alg, t = ps.alg, ps.empty and ps.origin or now
  if alg == FW then return {fw_window(ps, t), ps.empty and ps.N or 0, dirty = false} end
  if alg == SW then return {idiv(t, ps.P), 0, ps.empty and ps.N or 0, dirty = false} end
  if alg == TB then return {ps.empty and 0 or ps.full, t, dirty = false} end
  if ps.empty then -- gcra, leaky queue: tat = origin + B*T
    local q = idiv(ps.full, ps.n)
    return {t + q, ps.full - q * ps.n, dirty = false}
  end
  if ps.any then return {t, 0, ps.n, dirty = false} end
  return {t, 0, dirty = false}
end

local states, order, first_item, raw = {}, {}, {}, {}
local skeys = {}
local norder, nskeys = 0, 0
for i = 1, nkeys do
  local k = KEYS[i]
  local f = first_item[k]
  if f then
    if IPS[f].fp ~= IPS[i].fp then fail('key ' .. k .. ' given with two different limits') end
  else
    first_item[k] = i
    norder = norder + 1
    order[norder] = k
    if IPS[i].alg ~= SLOG then
      nskeys = nskeys + 1
      skeys[nskeys] = k
    end
  end
end
if nskeys > 0 then
  local vals = call('MGET', unpack(skeys))
  for j = 1, nskeys do raw[skeys[j]] = vals[j] end
end

-- "<tag>|<a>:<b>[:<c>]" (hex) written under ps's tag (or "<tat><t3>",
-- decimal, for a gcra whose n is 1), or nil.
local function parse_state(ps, v)
  if type(v) ~= 'string' then return nil end
  if ps.t3 then
    local a, t = match(v, '^(%d+)(%d%d%d)$')
    if t ~= ps.t3 then return nil end
    return {tonumber(a), 0, dirty = false}
  end
  local t, a, b, c = match(v, '^(%w+)|(%x+):(%x+):?(%x*)$')
  if t ~= ps.fp then return nil end
  if ps.alg == SW or ps.any then
    if c == '' then return nil end
    local s = {tonumber(a, 16), tonumber(b, 16), tonumber(c, 16), dirty = false}
    if ps.any and (s[3] < 1 or s[3] > MAXV or s[2] >= s[3]) then return nil end
    return s
  end
  if c ~= '' then return nil end
  return {tonumber(a, 16), tonumber(b, 16), dirty = false}
end

-- item i's state (read once per key)
local function state(i)
  local k = KEYS[i]
  local s = states[k]
  if s then return s end
  local ps = IPS[i]
  if ps.alg == SLOG then
    s = {key = k, blen = 0, drop = 0, radd = 0, runs = {}, cache = {}, exists = false}
    local r = redis.pcall('LLEN', k)
    if type(r) == 'table' then
      s.exists, s.wrong = true, true -- another type: a fresh log replaces it
    else
      s.blen, s.exists = r, r > 0
    end
    if s.blen == 0 and ps.empty then s.vt, s.blen = ps.origin, ps.N end
  else
    s = parse_state(ps, raw[k]) or init(ps)
  end
  states[k] = s
  return s
end

local function copy(s)
  local c = {}
  for k, v in pairs(s) do c[k] = v end
  if s.runs then
    local r = {}
    for m, x in ipairs(s.runs) do r[m] = {t = x.t, c = x.c} end
    c.runs = r
  end
  return c
end

-- ---- groups ----

local function deny(i)
  put(i, 0, IPS[i].limit, 0, -1, 0, 0)
end

-- What item i's limit says at its cost with nothing charged.
local function look(i)
  local ps, cost = IPS[i], ICOST[i]
  local a, l, r, re, rs, de = decide(ps, state(i), cost, PEEK, ps.cr)
  if a == 1 then r = r + cost end
  put(i, a, l, r, re, rs, de)
end

-- Decides item i alone: its own decision (it changes nothing when it
-- refuses); true if it passed.
local function run_one(i)
  local ps, cost = IPS[i], ICOST[i]
  if cost > ps.maxcost then
    deny(i)
    return false
  end
  local a, l, r, re, rs, de = decide(ps, state(i), cost, APPLY, false)
  if a == 1 then
    put(i, a, l, r, re, rs, de)
    return true
  end
  if ps.cr then
    put(i, decide(ps, state(i), cost, CHARGE, true))
  else
    put(i, a, l, r, re, rs, de)
  end
  return false
end

-- Decides the items list[] (or the one item list, a number) as one
-- all-or-nothing group; true if it passed (and was charged).
local function run_group(list)
  if type(list) == 'number' then return run_one(list) end
  local nl = #list
  if nl == 0 then return true end
  if nl == 1 then return run_one(list[1]) end
  local impossible = false
  for m = 1, nl do
    local i = list[m]
    if ICOST[i] > IPS[i].maxcost then impossible = true end
  end
  if impossible then
    for m = 1, nl do
      local i = list[m]
      if ICOST[i] > IPS[i].maxcost then
        deny(i)
      else
        look(i)
      end
    end
    return false
  end
  -- the states as they were, to undo a refused group
  local saved = {}
  for m = 1, nl do
    local i = list[m]
    local k = KEYS[i]
    if not saved[k] then saved[k] = copy(state(i)) end
  end
  local refused
  for m = 1, nl do
    local i = list[m]
    local a, l, r, re, rs, de = decide(IPS[i], state(i), ICOST[i], APPLY, false)
    put(i, a, l, r, re, rs, de)
    if a == 0 then
      refused = i
      break
    end
  end
  if not refused then return true end
  for k, st in pairs(saved) do states[k] = st end
  for m = 1, nl do
    local i = list[m]
    if i ~= refused then look(i) end
  end
  for m = 1, nl do
    local i = list[m]
    local ps = IPS[i]
    if ps.cr then put(i, decide(ps, state(i), ICOST[i], CHARGE, true)) end
  end
  return false
end

-- the requests, in the order of their first items; each is its enforced
-- group (one item: its number; more: a list) and its shadow group (made
-- only when it has one)
local reqs, req_of, shadow_of, nreqs = {}, {}, {}, 0
for i = 1, nkeys do
  local g = IGROUP[i]
  local sh = g % 2
  local r = (g - sh) / 2
  local q = req_of[r]
  if sh == 0 then
    if q == nil then
      req_of[r] = i
      nreqs = nreqs + 1
      reqs[nreqs] = r
    elseif type(q) == 'number' then
      req_of[r] = {q, i}
    else
      q[#q + 1] = i
    end
  else
    if q == nil then
      req_of[r] = {}
      nreqs = nreqs + 1
      reqs[nreqs] = r
    end
    local q1 = shadow_of[r]
    if q1 then
      q1[#q1 + 1] = i
    else
      shadow_of[r] = {i}
    end
  end
end
for m = 1, nreqs do
  local r = reqs[m]
  local g1 = shadow_of[r]
  if run_group(req_of[r]) then
    if g1 then run_group(g1) end
  elseif g1 then
    for x = 1, #g1 do
      local i = g1[x]
      put(i, decide(IPS[i], state(i), 0, PEEK, false))
    end
  end
end

-- ---- write back what changed, with its TTL ----

-- the TTLs' strings, each formatted once per call (many states of a call
-- share their TTL in ms)
local PX = {}

local function rpush(key, t, c)
  local ts = fmt('%d', t)
  while c > 0 do
    local m = min(c, 1000)
    local args = {}
    for j = 1, m do args[j] = ts end
    call('RPUSH', key, unpack(args))
    c = c - m
  end
end

for m = 1, norder do
  local k = order[m]
  local s, ps = states[k], IPS[first_item[k]]
  if s and s.dirty then
    if ps.alg == SLOG then slog_drop(s, slog_gone(s, now - ps.P)) end
    -- the state's reset_after (what decide(ps, s, 0, PEEK) says), directly
    -- for the common algorithms
    local ttl
    local alg = ps.alg
    if alg == GCRA or alg == LQ then -- fresh once tat + frac/n <= now (any rate: whatever n)
      ttl = s[1] - now + (s[2] > 0 and 1 or 0)
    elseif alg == TB then -- s[2] >= now here: full after tb_wait
      ttl = s[2] - now
      if s[1] < ps.full then ttl = ttl + tb_wait(ps, ps.full - s[1], s[2]) end
    else
      local _
      _, _, _, _, ttl = decide(ps, s, 0, PEEK, false)
    end
    if ps.empty then -- until then a fresh key is still exhausted at the origin
      local e
      if ps.alg == SLOG then
        e = {key = k, blen = ps.N, drop = 0, radd = 0, runs = {}, vt = ps.origin}
      else
        e = init(ps)
      end
      local was = now
      now = ps.origin
      local _, _, _, _, rs = decide(ps, e, 0, PEEK, false)
      local until_ = ps.origin + rs
      now = was
      ttl = max(ttl, until_ - now)
    end
    -- integers are written with %d (string.format's integer path): a Lua
    -- number given to redis.call, or %.0f, goes through the C library's
    -- floating-point printing, a few % of Redis's time in a profile
    local ms = floor((ttl + 999) / 1000)
    if ps.alg ~= SLOG then
      if ttl <= 0 then
        call('DEL', k)
      else
        local v
        if ps.t3 then
          v = fmt('%d%s', s[1], ps.t3)
        elseif s[3] then
          v = fmt('%s|%x:%x:%x', ps.fp, s[1], s[2], s[3])
        else
          v = fmt('%s|%x:%x', ps.fp, s[1], s[2])
        end
        local px = PX[ms]
        if not px then
          px = fmt('%d', ms)
          PX[ms] = px
        end
        call('SET', k, v, 'PX', px)
      end
    elseif ttl <= 0 or slog_len(s) == 0 then
      if s.exists then call('DEL', k) end
    else
      if s.vt or s.wrong then
        if s.exists then call('DEL', k) end
        if s.vt and s.blen > s.drop then rpush(k, s.vt, s.blen - s.drop) end
      elseif s.drop > 0 then
        call('LTRIM', k, s.drop, -1)
      end
      for _, r in ipairs(s.runs) do rpush(k, r.t, r.c) end
      call('PEXPIRE', k, fmt('%d', ms))
    end
  end
end

-- one flat array (out, filled by put): Redis converts it much faster than
-- one array per item
return out
