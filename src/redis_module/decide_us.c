/* decide_us.c: SLUICE.DECIDE's algorithms in whole microseconds, each a
 * transcription of its function in src/store/decide.lua (see decide_us.h
 * for the maths); the exact integer helpers are src/core's. */
#include "redis_module/decide_us.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/algorithm.h"
#include "util/units.h"

#define DAY_US INT64_C(86400000000)

void *(*sl__mod_realloc)(void *p, size_t bytes) = realloc;
void (*sl__mod_free)(void *p) = free;

/* floor(a * b / c) and ceil(a * b / c) for a, b >= 0, c > 0, exactly. */
static int64_t muldiv(int64_t a, int64_t b, int64_t c) {
    return sl__div128((sl__i128)a * b, c);
}
static int64_t muldiv_up(int64_t a, int64_t b, int64_t c) {
    return sl__ceil_div128((sl__i128)a * b, c);
}
static int64_t ceil_div(int64_t a, int64_t b) { /* a >= 0, b > 0 */
    return a / b + (a % b != 0);
}
static int64_t ceil_signed(int64_t y, int64_t b) { /* ceil(y / b), b > 0 */
    return -sl__floor_div(-y, b);
}

/* ---- calendar months (UTC, proleptic Gregorian; H. Hinnant's algorithms) ---- */

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    if (m <= 2) y -= 1;
    int64_t era = sl__floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t mp = m > 2 ? m - 3 : m + 9;
    int64_t doy = (153 * mp + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Months since January 1970 of the month holding t (us, t >= 0). */
static int64_t month_index(int64_t t) {
    int64_t z = t / DAY_US + 719468;
    int64_t era = z / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
    return (y - 1970) * 12 + m - 1;
}

/* The first microsecond of month index i (i >= 0). */
static int64_t month_start(int64_t i) {
    int64_t y = i / 12;
    return days_from_civil(1970 + y, i - y * 12 + 1, 1) * DAY_US;
}

/* ---- parameter sets ---- */

/* The script's tonumber(tag, 16) % 1000 as three digits, 0 for a tag that
 * is no hex number (16 hex digits at most: exact in 64 bits). */
static void set_tag3(sl__mod_set *ps, const char *tag, size_t taglen) {
    uint64_t h;
    if (!sl__hex_u64(tag, taglen, &h)) h = 0;
    ps->t3on = true;
    unsigned t3 = (unsigned)(h % 1000);
    ps->t3[0] = (char)('0' + t3 / 100);
    ps->t3[1] = (char)('0' + t3 / 10 % 10);
    ps->t3[2] = (char)('0' + t3 % 10);
    ps->t3[3] = '\0';
}

const char *sl__mod_set_check(sl__mod_set *ps, int j, const int64_t v[6], const char *tag,
                              size_t taglen, char *err, size_t errlen) {
    memset(ps, 0, sizeof *ps);
    int64_t flags = v[4];
    ps->alg = (int)v[0];
    ps->N = v[1];
    ps->P = v[2];
    ps->B = v[3];
    ps->origin = v[5];
    int64_t low = flags % 256, hi = flags / 256 % 4;
    ps->cal = hi % 2 == 1;
    ps->any = hi >= 2;
    ps->empty = low % 2 == 1;
    ps->cr = low % 4 >= 2;
    ps->steps = low >= 4;
    ps->da = flags / 1024;
    ps->maxcost = ps->N;
    ps->limit = ps->N;
    if (low > 7 || taglen < 1 || taglen > SL__MOD_TAGMAX) {
        snprintf(err, errlen, "parameter set %d: bad flags or tag", j);
        return err;
    }
    memcpy(ps->fp, tag, taglen);
    ps->fp[taglen] = '\0';
    ps->fplen = taglen;
    int64_t g = sl__gcd64(ps->N, ps->P);
    ps->n = ps->N / g;
    ps->p = ps->P / g;
    if (ps->alg >= SL__MOD_TB) {
        /* module.c bounds limit and period to >= 1 */
        // NOLINTNEXTLINE(clang-analyzer-core.DivideZero)
        if (ps->B < 1 || ps->B > SL__MOD_MAXV / ps->p) {
            snprintf(err, errlen,
                     "parameter set %d: burst must be 1..2^52/(period/gcd(limit, period))", j);
            return err;
        }
        ps->full = ps->B * ps->p;
        ps->maxcost = ps->B;
        ps->limit = ps->B;
    } else if (ps->alg == SL__MOD_SLOG && ps->N > SL__MOD_LOGMAX) {
        snprintf(err, errlen, "parameter set %d: sliding log limit > %d", j, SL__MOD_LOGMAX);
        return err;
    }
    if (ps->cal && ps->alg != SL__MOD_FW) {
        snprintf(err, errlen, "parameter set %d: a calendar month needs a fixed window", j);
        return err;
    }
    if (ps->steps && ps->alg != SL__MOD_TB) {
        snprintf(err, errlen, "parameter set %d: step refill needs a token bucket", j);
        return err;
    }
    if (ps->da > 0 && (ps->alg != SL__MOD_LQ || ps->da >= ps->B)) {
        snprintf(err, errlen,
                 "parameter set %d: delay_after needs a leaky queue and must be below its burst",
                 j);
        return err;
    }
    if (ps->any) {
        if (ps->alg != SL__MOD_GCRA || low != 0) {
            snprintf(err, errlen, "parameter set %d: any rate needs a gcra without flags", j);
            return err;
        }
        memcpy(ps->fp, "cell", 5);
        ps->fplen = 4;
    } else if (ps->alg >= SL__MOD_GCRA && ps->n == 1) {
        set_tag3(ps, tag, taglen);
    }
    return NULL;
}

/* ---- the algorithms (decide.lua's functions of the same names) ---- */

static int64_t fw_window(const sl__mod_set *ps, int64_t t) {
    return ps->cal ? month_index(t) : t / ps->P;
}

static int64_t fw_end(const sl__mod_set *ps, int64_t w) {
    return ps->cal ? month_start(w + 1) : (w + 1) * ps->P;
}

static void put6(int64_t out[6], bool a, int64_t l, int64_t r, int64_t re, int64_t rs, int64_t de) {
    out[0] = a;
    out[1] = l;
    out[2] = r;
    out[3] = re;
    out[4] = rs;
    out[5] = de;
}

static void fixed_window(const sl__mod_set *ps, sl__mod_state *st, int64_t cost, sl__mod_mode mode,
                         bool cr, int64_t now, int64_t out[6]) {
    int64_t *s = st->v, N = ps->N;
    int64_t w = fw_window(ps, now);
    if (w < s[0]) w = s[0]; /* clock went back: stay in the later window */
    int64_t count = w == s[0] ? s[1] : 0;
    bool allowed = count + cost <= N;
    int64_t after = count;
    if (allowed || cr || mode == SL__MOD_CHARGE) after = sl__min64(count + cost, N);
    if (mode != SL__MOD_PEEK && after != count) {
        s[0] = w;
        s[1] = after;
        st->dirty = true;
    }
    int64_t left = fw_end(ps, w) - now;
    put6(out, allowed, N, N - after, allowed ? 0 : left, after > 0 ? left : 0, 0);
}

static void sliding_window(const sl__mod_set *ps, sl__mod_state *st, int64_t cost,
                           sl__mod_mode mode, bool cr, int64_t now, int64_t out[6]) {
    int64_t *s = st->v, N = ps->N, P = ps->P;
    int64_t w = now / P;
    int64_t elapsed = now - w * P;
    if (w < s[0]) {
        w = s[0];
        elapsed = 0;
    }
    int64_t prev = 0, curr = 0;
    if (w == s[0]) {
        prev = s[1];
        curr = s[2];
    } else if (w == s[0] + 1) {
        prev = s[2];
    }
    /* prev * (P - elapsed) + (curr + cost) * P <= N * P, exactly */
    int64_t room = N - curr - cost;
    bool allowed = room >= 0 && (prev == 0 || (sl__i128)prev * (P - elapsed) <= (sl__i128)room * P);
    int64_t after = curr;
    if (allowed || cr || mode == SL__MOD_CHARGE) after = sl__min64(curr + cost, N);
    if (mode != SL__MOD_PEEK && after != curr) {
        s[0] = w;
        s[1] = prev;
        s[2] = after;
        st->dirty = true;
    }
    int64_t to_end = (w + 1) * P - now;
    int64_t remaining = N - after;
    if (prev > 0) remaining -= muldiv_up(prev, P - elapsed, P);
    if (remaining < 0) remaining = 0;
    int64_t reset = after > 0 ? to_end + P : prev > 0 ? to_end : 0;
    int64_t retry = 0;
    if (!allowed) {
        if (after + cost <= N) {
            int64_t e = P - muldiv(N - after - cost, P, prev);
            retry = (e < P ? w * P + e : (w + 1) * P) - now;
        } else if (N - cost >= after) {
            retry = to_end;
        } else {
            retry = to_end + P - muldiv(N - cost, P, after);
        }
    }
    put6(out, allowed, N, remaining, retry, reset, 0);
}

/* The last step at or before t (t >= 0): step refill credits whole periods. */
static int64_t step_of(const sl__mod_set *ps, int64_t t) {
    return t - t % ps->P;
}

/* The time from t until `units` (> 0) more scaled units have arrived: at n
 * per us, or in steps of P*n units at every multiple of P. */
static int64_t tb_wait(const sl__mod_set *ps, int64_t units, int64_t t) {
    if (!ps->steps) return ceil_div(units, ps->n);
    sl__i128 per = (sl__i128)ps->P * ps->n;
    int64_t k = per >= units ? 1 : ceil_div(units, (int64_t)per);
    return k * ps->P - (t - step_of(ps, t));
}

static void token_bucket(const sl__mod_set *ps, sl__mod_state *st, int64_t cost, sl__mod_mode mode,
                         bool cr, int64_t now, int64_t out[6]) {
    int64_t *s = st->v, full = ps->full, n = ps->n, p = ps->p;
    int64_t tokens = s[0], last = s[1];
    if (now > last && tokens < full) {
        int64_t elapsed = ps->steps ? step_of(ps, now) - step_of(ps, last) : now - last;
        if (elapsed >= ceil_div(full - tokens, n))
            tokens = full;
        else
            tokens += elapsed * n;
    }
    int64_t need = cost * p;
    bool allowed = tokens >= need;
    int64_t after = tokens;
    if (allowed || cr || mode == SL__MOD_CHARGE) after = tokens > need ? tokens - need : 0;
    if (mode != SL__MOD_PEEK && after != tokens) {
        s[0] = after;
        s[1] = last > now ? last : now;
        st->dirty = true;
    }
    /* with the clock behind `last` the bucket is judged as of `last` */
    int64_t behind = last > now ? last - now : 0;
    int64_t at = now + behind;
    int64_t retry = 0, reset = 0;
    if (!allowed) retry = behind + tb_wait(ps, need - after, at);
    if (after < full) reset = behind + tb_wait(ps, full - after, at);
    put6(out, allowed, ps->B, after / p, retry, reset, 0);
}

/* (t - now) * n + f <= x, for x >= 0 and 0 <= f < n. */
static bool ahead_le(const sl__mod_set *ps, int64_t t, int64_t f, int64_t x, int64_t now) {
    if (t < now) return true;
    return x >= f && t - now <= (x - f) / ps->n;
}

static void gcra(const sl__mod_set *ps, sl__mod_state *st, int64_t cost, sl__mod_mode mode, bool cr,
                 int64_t now, int64_t out[6]) {
    int64_t *s = st->v, n = ps->n, p = ps->p, full = ps->full;
    if (ps->any && s[2] != n) {
        /* the state in this item's n: ceil(frac * n / n_old) <= n as frac < n_old */
        int64_t f = s[1] > 0 ? muldiv_up(s[1], n, s[2]) : 0;
        if (f >= n) {
            s[0] += 1;
            f -= n;
        }
        s[1] = f;
        s[2] = n;
    }
    int64_t bt = s[0], bf = s[1]; /* base = max(tat, now) */
    if (bt < now || (bt == now && bf == 0)) {
        bt = now;
        bf = 0;
    }
    int64_t delay = bt - now + (bf > 0);
    if (ps->da > 0) /* delay_after D: the first D waiting go at once, D*p/n us less */
        delay = sl__max64(0, bt - now + ceil_signed(bf - ps->da * p, n));
    int64_t step = cost * p;
    int64_t q = step / n;
    int64_t nt = bt + q, nf = bf + (step - q * n);
    if (nf >= n) {
        nt += 1;
        nf -= n;
    }
    bool allowed = ahead_le(ps, nt, nf, full, now);
    int64_t at = bt, af = bf;
    if (allowed) {
        at = nt;
        af = nf;
    } else if (cr || mode == SL__MOD_CHARGE) {
        /* a counted rejection empties the bucket, no debt: tat = now + B*T */
        int64_t fq = full / n;
        at = now + fq;
        af = full - fq * n;
        if (at < bt || (at == bt && af < bf)) { /* never a credit */
            at = bt;
            af = bf;
        }
    }
    if (mode != SL__MOD_PEEK && (at != bt || af != bf)) {
        s[0] = at;
        s[1] = af;
        st->dirty = true;
    }
    int64_t d = at - now;
    int64_t remaining = 0;
    if (ahead_le(ps, at, af, full, now)) remaining = (full - (d * n + af)) / p;
    int64_t retry = 0;
    if (!allowed) retry = sl__max64(0, d + ceil_signed(af + step - full, n));
    if (ps->alg != SL__MOD_LQ || !(allowed || cost == 0)) delay = 0;
    put6(out, allowed, ps->B, remaining, retry, d + (af > 0), delay);
}

/* ---- the sliding log ---- */

static int64_t log_base(const sl__mod_log *l, int64_t j) {
    if (l->has_vt) return l->vt;
    return l->at(l->list, j);
}

int64_t sl__mod_log_len(const sl__mod_log *l) {
    return l->blen - l->drop + l->radd;
}

/* The i-th (0-based) live entry. */
static int64_t log_at(const sl__mod_log *l, int64_t i) {
    int64_t j = l->drop + i;
    if (j < l->blen) return log_base(l, j);
    j -= l->blen;
    for (size_t r = l->rhead; r < l->rlen; r++) {
        if (j < l->runs[r].c) return l->runs[r].t;
        j -= l->runs[r].c;
    }
    return 0;
}

/* How many entries from the head have t <= lim (the log is sorted). */
static int64_t log_gone(const sl__mod_log *l, int64_t lim) {
    int64_t k = 0;
    int64_t live_base = l->blen - l->drop;
    if (live_base > 0) {
        if (log_base(l, l->drop) > lim) return 0;
        if (l->has_vt) {
            k = live_base;
        } else {
            /* galloping, then bisection: base(lo) <= lim; hi == blen or base(hi) > lim */
            int64_t lo = l->drop, hi = l->blen, step = 1;
            for (;;) {
                int64_t j = lo + step;
                if (j >= l->blen) break;
                if (log_base(l, j) > lim) {
                    hi = j;
                    break;
                }
                lo = j;
                step *= 2;
            }
            while (hi - lo > 1) {
                int64_t mid = lo + (hi - lo) / 2;
                if (log_base(l, mid) <= lim)
                    lo = mid;
                else
                    hi = mid;
            }
            k = lo + 1 - l->drop;
            if (k < live_base) return k;
        }
    }
    for (size_t r = l->rhead; r < l->rlen; r++) {
        if (l->runs[r].t > lim) break;
        k += l->runs[r].c;
    }
    return k;
}

static void log_drop(sl__mod_log *l, int64_t m) {
    int64_t fromb = sl__min64(m, l->blen - l->drop);
    l->drop += fromb;
    m -= fromb;
    while (m > 0 && l->rhead < l->rlen) {
        sl__mod_run *r = &l->runs[l->rhead];
        if (r->c <= m) {
            m -= r->c;
            l->radd -= r->c;
            l->rhead++;
        } else {
            r->c -= m;
            l->radd -= m;
            m = 0;
        }
    }
}

static int64_t log_newest(const sl__mod_log *l) {
    if (l->radd > 0) return l->runs[l->rlen - 1].t;
    if (l->blen > 0) return log_base(l, l->blen - 1);
    return 0;
}

static bool sliding_log(const sl__mod_set *ps, sl__mod_state *st, int64_t cost, sl__mod_mode mode,
                        bool cr, int64_t now, int64_t out[6]) {
    sl__mod_log *l = &st->log;
    int64_t N = ps->N, P = ps->P;
    int64_t gone = log_gone(l, now - P);
    int64_t live = sl__mod_log_len(l) - gone;
    bool allowed = live + cost <= N;
    int64_t add = 0;
    if (allowed || cr || mode == SL__MOD_CHARGE) add = cost;
    /* the log after this call: the live entries minus the `dropped` oldest,
       then `fresh` new entries at `stamp`; at most N in all */
    int64_t after = sl__min64(live + add, N);
    int64_t dropped = sl__min64(live, live + add - after);
    int64_t fresh = after - (live - dropped);
    int64_t first = gone + dropped;
    int64_t kept = live - dropped;
    int64_t stamp = 0;
    if (fresh > 0 || (!allowed && after + cost - N - 1 >= kept))
        stamp = sl__max64(now, log_newest(l));
    int64_t reset = 0, retry = 0;
    if (after > 0) {
        int64_t last = fresh > 0 ? stamp : log_at(l, first + kept - 1);
        reset = sl__max64(0, last + P - now);
    }
    if (!allowed) {
        /* the (after + cost - N)-th oldest entry must slide out first */
        int64_t i = after + cost - N - 1;
        int64_t t = i < kept ? log_at(l, first + i) : stamp;
        retry = sl__max64(0, t + P - now);
    }
    if (mode != SL__MOD_PEEK && (fresh > 0 || dropped > 0)) {
        if (fresh > 0 && l->rlen == l->rcap) { /* room for a run (the drop may empty them) */
            size_t cap = l->rcap ? 2 * l->rcap : 4;
            sl__mod_run *r = sl__mod_realloc(l->runs, cap * sizeof *r);
            if (!r) return false;
            l->runs = r;
            l->rcap = cap;
        }
        log_drop(l, first);
        if (fresh > 0) {
            if (l->rlen > l->rhead && l->runs[l->rlen - 1].t == stamp) {
                l->runs[l->rlen - 1].c += fresh;
            } else {
                l->runs[l->rlen++] = (sl__mod_run){.t = stamp, .c = fresh};
            }
            l->radd += fresh;
        }
        st->dirty = true;
    }
    put6(out, allowed, N, N - after, retry, reset, 0);
    return true;
}

bool sl__mod_decide(const sl__mod_set *ps, sl__mod_state *s, int64_t cost, sl__mod_mode mode,
                    bool cr, int64_t now, int64_t out[6]) {
    bool peek = cost == 0;
    if (peek) mode = SL__MOD_PEEK;
    switch (ps->alg) {
    case SL__MOD_FW:
        fixed_window(ps, s, cost, mode, cr, now, out);
        break;
    case SL__MOD_SLOG:
        if (!sliding_log(ps, s, cost, mode, cr, now, out)) return false;
        break;
    case SL__MOD_SW:
        sliding_window(ps, s, cost, mode, cr, now, out);
        break;
    case SL__MOD_TB:
        token_bucket(ps, s, cost, mode, cr, now, out);
        break;
    default:
        gcra(ps, s, cost, mode, cr, now, out);
        break;
    }
    if (peek) {
        out[0] = 1;
        out[3] = 0;
    }
    return true;
}

/* ---- states ---- */

void sl__mod_init(const sl__mod_set *ps, sl__mod_state *s, int64_t now) {
    int64_t t = ps->empty ? ps->origin : now;
    s->dirty = false;
    s->is_log = ps->alg == SL__MOD_SLOG;
    s->v[0] = s->v[1] = s->v[2] = 0;
    switch (ps->alg) {
    case SL__MOD_FW:
        s->v[0] = fw_window(ps, t);
        s->v[1] = ps->empty ? ps->N : 0;
        break;
    case SL__MOD_SLOG:
        if (ps->empty) {
            s->log.has_vt = true;
            s->log.vt = ps->origin;
            s->log.blen = ps->N;
        }
        break;
    case SL__MOD_SW:
        s->v[0] = t / ps->P;
        s->v[2] = ps->empty ? ps->N : 0;
        break;
    case SL__MOD_TB:
        s->v[0] = ps->empty ? 0 : ps->full;
        s->v[1] = t;
        break;
    default:
        if (ps->empty) { /* gcra, leaky queue: tat = origin + B*T */
            int64_t q = ps->full / ps->n;
            s->v[0] = t + q;
            s->v[1] = ps->full - q * ps->n;
        } else {
            s->v[0] = t;
            if (ps->any) s->v[2] = ps->n;
        }
        break;
    }
}

/* A number in base 10 or 16 of at most `max` digits from *p (at least one);
 * false when there is none or it is too long. */
static bool number(const char **p, const char *end, int base, size_t max, int64_t *out) {
    uint64_t v = 0;
    size_t k = 0;
    const char *s = *p;
    for (; s < end; s++, k++) {
        char c = *s;
        int d = c >= '0' && c <= '9' ? c - '0' : -1;
        if (base == 16 && d < 0) {
            d = c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        }
        if (d < 0) break;
        if (k == max) return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (k == 0) return false;
    *p = s;
    *out = (int64_t)v;
    return true;
}

static bool is_alnum(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool sl__mod_parse(const sl__mod_set *ps, const char *v, size_t len, sl__mod_state *s) {
    const char *end = v + len;
    s->dirty = false;
    s->is_log = false;
    s->v[0] = s->v[1] = s->v[2] = 0;
    if (ps->t3on) { /* ^(%d+)(%d%d%d)$ */
        if (len < 4 || len > 21) return false;
        for (size_t k = 0; k < len; k++)
            if (v[k] < '0' || v[k] > '9') return false;
        if (memcmp(v + len - 3, ps->t3, 3) != 0) return false;
        const char *p = v;
        return number(&p, end - 3, 10, 18, &s->v[0]) && p == end - 3;
    }
    /* ^(%w+)|(%x+):(%x+):?(%x*)$ */
    const char *p = v;
    while (p < end && is_alnum(*p)) p++;
    if (p == v || p == end || *p != '|') return false;
    if ((size_t)(p - v) != ps->fplen || memcmp(v, ps->fp, ps->fplen) != 0) return false;
    p++;
    int64_t a, b, c = 0;
    if (!number(&p, end, 16, 15, &a) || p == end || *p != ':') return false;
    p++;
    if (!number(&p, end, 16, 15, &b)) return false;
    bool has_c = false;
    if (p < end && *p == ':') {
        p++;
        if (p < end) {
            if (!number(&p, end, 16, 15, &c)) return false;
            has_c = true;
        }
    }
    if (p != end) return false;
    s->v[0] = a;
    s->v[1] = b;
    if (ps->alg == SL__MOD_SW || ps->any) {
        if (!has_c) return false;
        s->v[2] = c;
        if (ps->any && (c < 1 || c > SL__MOD_MAXV || b >= c)) return false;
        return true;
    }
    return !has_c;
}

size_t sl__mod_put_hex(char *p, uint64_t v) {
    char tmp[16];
    size_t k = 0;
    do {
        tmp[k++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    for (size_t x = 0; x < k; x++) p[x] = tmp[k - 1 - x];
    return k;
}

size_t sl__mod_format(const sl__mod_set *ps, const sl__mod_state *s, char *out) {
    char *p = out;
    if (ps->t3on) {
        p += sl__decimal_i64(p, s->v[0]);
        memcpy(p, ps->t3, 3);
        return (size_t)(p + 3 - out);
    }
    memcpy(p, ps->fp, ps->fplen);
    p += ps->fplen;
    *p++ = '|';
    p += sl__mod_put_hex(p, (uint64_t)s->v[0]);
    *p++ = ':';
    p += sl__mod_put_hex(p, (uint64_t)s->v[1]);
    if (ps->alg == SL__MOD_SW || ps->any) {
        *p++ = ':';
        p += sl__mod_put_hex(p, (uint64_t)s->v[2]);
    }
    return (size_t)(p - out);
}

int64_t sl__mod_ttl(const sl__mod_set *ps, sl__mod_state *s, int64_t now) {
    int64_t ttl, out[6];
    if (ps->alg == SL__MOD_SLOG) log_drop(&s->log, log_gone(&s->log, now - ps->P));
    if (ps->alg == SL__MOD_GCRA || ps->alg == SL__MOD_LQ) {
        /* fresh once tat + frac/n <= now (any rate: whatever n) */
        ttl = s->v[0] - now + (s->v[1] > 0);
    } else if (ps->alg == SL__MOD_TB) { /* v[1] >= now here */
        ttl = s->v[1] - now;
        if (s->v[0] < ps->full) ttl += tb_wait(ps, ps->full - s->v[0], s->v[1]);
    } else {
        sl__mod_decide(ps, s, 0, SL__MOD_PEEK, false, now, out);
        ttl = out[4];
    }
    if (ps->empty) { /* until then a fresh key is still exhausted at the origin */
        sl__mod_state e;
        memset(&e, 0, sizeof e);
        sl__mod_init(ps, &e, ps->origin);
        sl__mod_decide(ps, &e, 0, SL__MOD_PEEK, false, ps->origin, out);
        ttl = sl__max64(ttl, ps->origin + out[4] - now);
    }
    return ttl;
}

bool sl__mod_state_copy(sl__mod_state *dst, const sl__mod_state *src) {
    sl__mod_state c = *src;
    if (src->is_log && src->log.rlen > src->log.rhead) {
        size_t nr = src->log.rlen - src->log.rhead;
        c.log.runs = sl__mod_realloc(NULL, nr * sizeof *c.log.runs);
        if (!c.log.runs) return false;
        memcpy(c.log.runs, src->log.runs + src->log.rhead, nr * sizeof *c.log.runs);
        c.log.rhead = 0;
        c.log.rlen = c.log.rcap = nr;
    } else {
        c.log.runs = NULL;
        c.log.rhead = c.log.rlen = c.log.rcap = 0;
    }
    *dst = c;
    return true;
}

void sl__mod_state_free(sl__mod_state *s) {
    if (s->is_log && s->log.runs) sl__mod_free(s->log.runs);
    s->log.runs = NULL;
    s->log.rhead = s->log.rlen = s->log.rcap = 0;
}
