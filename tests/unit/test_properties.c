/* test_properties.c: property tests of the six algorithms, through the public sl_table API,
 * against slow reference models written here from DESIGN.md section 3, sluice/limit.h and
 * docs/semantics.md (never from src/).
 *
 * Every trace is random but reproducible (splitmix64, seed printed on failure): one table, up to
 * six keys (one empty, one stored out of line), costs 0..max, same-timestamp bursts, requests
 * exactly on window boundaries (k*P, k*P - 1, k*P + 1), on emission/refill instants
 * (k*T for T = P/N, absolute and from the key's last request), exactly at the retry_after,
 * reset_after and delay instants the model predicted (and 1 ns either side), long idle gaps,
 * rates whose interval is not a whole number of ns (3/s, 7/10s, 3/7ns, ...), both flags.
 * Every field of every decision is compared: allowed, limit, remaining, retry_after,
 * reset_after and delay.
 *
 * The models. All arithmetic is exact (__int128); durations are found by searching for the
 * first nanosecond at which the model's own predicate holds, never by a closed formula:
 *   fixed window    count per window index; allowed iff count + c <= N
 *   sliding log     a plain sorted array of times; live = entries with t > now - P
 *   sliding window  count per window index; prev*(P - elapsed) + (curr + c)*P <= N*P
 *   token bucket    tokens as the fraction x/P (tokens * P exact), refilled by (now - last)*N
 *   gcra            tat as the fraction tat/N ns; max(tat, now) + c*T - now <= B*T
 *   leaky queue     gcra, plus delay = max(tat, now) - now rounded up
 * cost 0 is a peek: allowed, nothing recorded. SL_COUNT_REJECTED charges a rejection but never
 * beyond empty (and never credits). SL_START_EMPTY: exhausted at params.origin.
 *
 * A clock that goes backwards never credits anything (docs/semantics.md): the token bucket is
 * judged as of its last update (no refill, no debit; a refusal also brings it up to date);
 * GCRA and the leaky queue at the caller's `now` through max(tat, now); a `now` in a window
 * before the latest recorded one counts in the later window, the sliding counter at elapsed 0;
 * log entries are stamped max(now, latest time seen), so none slides out sooner than with a
 * clock that never went back. Durations are measured from the caller's `now`. The fixed_*
 * tests at the end are the smallest traces for each backward-clock case once found wrong.
 *
 * Besides model-vs-library: GCRA, token bucket and leaky queue with the same rate and burst
 * decide alike on forward traces (with a clock that steps back they may differ, each never
 * crediting); a table swept after every request decides exactly like one never swept, also with
 * a clock stepping back by up to the table's clock_tolerance. Traces without and with backward
 * clock steps are separate tests.
 *
 * Environment: SLUICE_PROP_SEED=0x... reruns one trace (the seed printed on failure) in every
 * test; SLUICE_PROP_TRACES=n changes the number of traces per test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "helpers.h"

typedef __int128 i128;

#define MIN  (60 * SEC)
#define HOUR (3600 * SEC)
#define DAY  (86400 * SEC)

#define MAX_KEYS  6
#define LOG_CAP   128                /* twice the largest sliding-log limit of the traces */
#define T_HIGH    (INT64_C(4) << 60) /* traces stay in [0, T_HIGH], below SL_TIME_MAX */
#define NEVER     INT64_MIN          /* "no time yet" */
#define HISTORY   12                 /* steps shown before a mismatch */
#define BASE_SEED UINT64_C(0x5111ce5eed000001)

/* ---- small exact helpers --------------------------------------------------------------- */

static i128 floor_div(i128 a, i128 b) {
    i128 q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static i128 ceil_div(i128 a, i128 b) {
    return -floor_div(-a, b);
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

static i128 max128(i128 a, i128 b) {
    return a > b ? a : b;
}

static i128 min128(i128 a, i128 b) {
    return a < b ? a : b;
}

/* ---- PRNG: splitmix64 ------------------------------------------------------------------- */

static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (hi >= lo). */
static int64_t rnd(uint64_t *s, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    uint64_t x = next_u64(s);
    return (int64_t)((uint64_t)lo + (span ? x % span : x));
}

static bool chance(uint64_t *s, int percent) {
    return rnd(s, 0, 99) < percent;
}

/* ---- reference models --------------------------------------------------------------------- */

typedef struct wcount {
    int64_t window;
    int64_t count;
} wcount;

typedef struct mkey {
    bool exists;
    int64_t hi; /* latest `now` of a recorded (non-peek) request, or origin; NEVER if none */
    /* fixed window and sliding window counter: count per window index (the last few) */
    int nwin;
    wcount win[4];
    /* sliding log: times of counted requests, oldest first */
    int64_t nlog;
    int64_t log[LOG_CAP];
    /* token bucket: tokens * P as of tb_last (NEVER: full since forever) */
    i128 tb_x;
    int64_t tb_last;
    /* gcra and leaky queue: tat * N */
    i128 tat;
} mkey;

typedef struct model {
    sl_algorithm algo;
    int64_t N, P, B, maxc, origin;
    bool count_rejected, start_empty;
    mkey key[MAX_KEYS];
} model;

static bool is_bucket(sl_algorithm a) {
    return a == SL_TOKEN_BUCKET || a == SL_GCRA || a == SL_LEAKY_QUEUE;
}

static int64_t wcount_get(const mkey *k, int64_t w) {
    for (int i = 0; i < k->nwin; i++)
        if (k->win[i].window == w) return k->win[i].count;
    return 0;
}

static void wcount_set(mkey *k, int64_t w, int64_t count) {
    for (int i = 0; i < k->nwin; i++) {
        if (k->win[i].window == w) {
            k->win[i].count = count;
            return;
        }
    }
    if (k->nwin == 4) fail_msg("model: window table full");
    k->win[k->nwin++] = (wcount){w, count};
}

/* Windows before `w - 1` can never be looked at again once `w` is the latest window. */
static void wcount_prune(mkey *k, int64_t w) {
    int j = 0;
    for (int i = 0; i < k->nwin; i++)
        if (k->win[i].window >= w - 1) k->win[j++] = k->win[i];
    k->nwin = j;
}

static void model_init(model *m, const sl_params *p) {
    memset(m, 0, sizeof *m);
    m->algo = p->algorithm;
    m->N = p->rate.limit;
    m->P = p->rate.period;
    m->B = p->burst;
    m->maxc = is_bucket(p->algorithm) ? p->burst : p->rate.limit;
    m->origin = p->origin;
    m->count_rejected = (p->flags & SL_COUNT_REJECTED) != 0;
    m->start_empty = (p->flags & SL_START_EMPTY) != 0;
    if (m->algo == SL_SLIDING_LOG && 2 * m->N > LOG_CAP) fail_msg("model: sliding log too long");
}

/* A key's state when first seen: fresh, or exhausted at origin with SL_START_EMPTY. */
static void mkey_start(const model *m, mkey *k) {
    memset(k, 0, sizeof *k);
    k->exists = true;
    k->hi = NEVER;
    k->tb_x = (i128)m->B * m->P;
    k->tb_last = NEVER;
    k->tat = (i128)NEVER * m->N;
    if (!m->start_empty) return;
    const int64_t O = m->origin;
    k->hi = O;
    wcount_set(k, (int64_t)floor_div(O, m->P), m->N);
    if (m->algo == SL_SLIDING_LOG)
        for (int64_t i = 0; i < m->N; i++) k->log[k->nlog++] = O;
    k->tb_x = 0;
    k->tb_last = O;
    k->tat = (i128)O * m->N + (i128)m->B * m->P;
}

/* Fixed and sliding windows: the window a request at `now` counts in, and how far into it. */
static int64_t window_of(const model *m, const mkey *k, int64_t now, int64_t *elapsed) {
    int64_t w = (int64_t)floor_div(now, m->P);
    int64_t el = now - w * m->P;
    if (k->hi != NEVER) {
        int64_t wh = (int64_t)floor_div(k->hi, m->P);
        if (wh > w) { /* clock went back into an earlier window: the later one, at its start */
            w = wh;
            el = 0;
        }
    }
    *elapsed = el;
    return w;
}

static int64_t log_live(const model *m, const mkey *k, int64_t now) {
    int64_t live = 0;
    for (int64_t i = 0; i < k->nlog; i++)
        if (k->log[i] > now - m->P) live++;
    return live;
}

/* Token bucket: tokens * P at t, by the DESIGN formula min(B, x + (t - last) * r); a t
 * before last is judged as of last (no refill, no debit: the documented rule). */
static i128 tb_tokens(const model *m, const mkey *k, int64_t t) {
    i128 full = (i128)m->B * m->P;
    if (k->tb_last == NEVER) return full;
    int64_t at = t > k->tb_last ? t : k->tb_last;
    return min128(full, k->tb_x + ((i128)at - k->tb_last) * m->N);
}

/* Would a request of cost c at `now` pass (judged only, nothing recorded)? */
static bool model_allows(const model *m, const mkey *k, int64_t now, int64_t c) {
    const i128 N = m->N, P = m->P, B = m->B;
    int64_t el, w;
    switch (m->algo) {
    case SL_FIXED_WINDOW:
        w = window_of(m, k, now, &el);
        return wcount_get(k, w) + c <= N;
    case SL_SLIDING_LOG:
        return log_live(m, k, now) + c <= N;
    case SL_SLIDING_WINDOW:
        w = window_of(m, k, now, &el);
        return wcount_get(k, w - 1) * (P - el) + (wcount_get(k, w) + c) * P <= N * P;
    case SL_TOKEN_BUCKET:
        return tb_tokens(m, k, now) >= c * P;
    case SL_GCRA:
    case SL_LEAKY_QUEUE:
        return max128(k->tat, now * N) + c * P - now * N <= B * P;
    }
    return false;
}

/* Is the state fresh at t (full bucket, empty window, nothing in the log)? */
static bool model_fresh(const model *m, const mkey *k, int64_t t) {
    int64_t el, w;
    switch (m->algo) {
    case SL_FIXED_WINDOW:
        return wcount_get(k, window_of(m, k, t, &el)) == 0;
    case SL_SLIDING_LOG:
        return log_live(m, k, t) == 0;
    case SL_SLIDING_WINDOW:
        w = window_of(m, k, t, &el);
        return wcount_get(k, w - 1) == 0 && wcount_get(k, w) == 0;
    case SL_TOKEN_BUCKET:
        return tb_tokens(m, k, t) >= (i128)m->B * m->P;
    case SL_GCRA:
    case SL_LEAKY_QUEUE:
        return k->tat <= (i128)t * m->N;
    }
    return false;
}

/* Records a non-peek request that was judged `allowed`. */
static void model_record(const model *m, mkey *k, int64_t now, int64_t c, bool allowed) {
    const bool charge = allowed || m->count_rejected;
    const i128 N = m->N, P = m->P, B = m->B;
    int64_t el, w;
    switch (m->algo) {
    case SL_FIXED_WINDOW:
    case SL_SLIDING_WINDOW:
        w = window_of(m, k, now, &el);
        if (charge) { /* never beyond the limit */
            int64_t v = wcount_get(k, w) + c;
            wcount_set(k, w, v < m->N ? v : m->N);
        }
        k->hi = max64(k->hi, now);
        wcount_prune(k, (int64_t)floor_div(k->hi, m->P));
        return;
    case SL_SLIDING_LOG: {
        int64_t j = 0;
        for (int64_t i = 0; i < k->nlog; i++)
            if (k->log[i] > now - m->P) k->log[j++] = k->log[i];
        k->nlog = j;
        k->hi = max64(k->hi, now);
        if (!charge) return;
        for (int64_t i = 0; i < c; i++) k->log[k->nlog++] = k->hi; /* room: LOG_CAP >= 2N */
        if (k->nlog > m->N) { /* a counted rejection keeps the newest N */
            int64_t drop = k->nlog - m->N;
            memmove(k->log, k->log + drop, (size_t)m->N * sizeof k->log[0]);
            k->nlog = m->N;
        }
        return;
    }
    case SL_TOKEN_BUCKET: {
        i128 tok = tb_tokens(m, k, now);
        if (allowed) {
            k->tb_x = tok - c * P;
            k->tb_last = max64(k->tb_last, now);
        } else if (charge) { /* a counted rejection empties, never into debt */
            k->tb_x = max128(tok - c * P, 0);
            k->tb_last = max64(k->tb_last, now);
        } else if (k->tb_last != NEVER) { /* a refusal still brings the bucket up to date */
            k->tb_x = tok;
            k->tb_last = max64(k->tb_last, now);
        }
        k->hi = max64(k->hi, now);
        return;
    }
    case SL_GCRA:
    case SL_LEAKY_QUEUE: {
        i128 base = max128(k->tat, now * N);
        if (allowed)
            k->tat = base + c * P;
        else if (charge)
            k->tat = max128(k->tat, now * N + B * P);
        k->hi = max64(k->hi, now);
        return;
    }
    }
}

/* The first caller time t >= now at which the predicate holds on the current state (a request
 * of cost c passes, or the state is fresh). INT64_MAX if not within 2^61 ns. */
static int64_t model_first(const model *m, const mkey *k, int64_t now, int64_t c, bool fresh) {
#define PRED(t) (fresh ? model_fresh(m, k, (t)) : model_allows(m, k, (t), c))
    if (PRED(now)) return now;
    int64_t lo = now, hi, step = 1;
    for (;;) {
        hi = now + step;
        if (PRED(hi)) break;
        lo = hi;
        if (step >= (INT64_C(1) << 61)) return INT64_MAX;
        step *= 2;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (PRED(mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
#undef PRED
}

/* The model's answer to sl_table_check(key, c, now). */
static void model_decide(model *m, int ki, int64_t c, int64_t now, sl_decision *d) {
    mkey *k = &m->key[ki];
    if (!k->exists) mkey_start(m, k);
    i128 base = max128(k->tat, (i128)now * m->N); /* leaky queue: release at max(tat, now) */
    bool allowed = true;
    if (c > 0) {
        allowed = model_allows(m, k, now, c);
        model_record(m, k, now, c, allowed);
    }
    memset(d, 0, sizeof *d);
    d->allowed = allowed;
    d->limit = is_bucket(m->algo) ? m->B : m->N;
    /* remaining: the most cost-1 requests that would pass now, one after the other, which is
     * the largest cost that passes now */
    int64_t lo = 0, hi = m->maxc;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (model_allows(m, k, now, mid))
            lo = mid;
        else
            hi = mid - 1;
    }
    d->remaining = lo;
    if (!allowed) {
        int64_t t = model_first(m, k, now, c, false);
        d->retry_after = t == INT64_MAX ? INT64_MAX : t - now;
    }
    int64_t t = model_first(m, k, now, 0, true);
    d->reset_after = t == INT64_MAX ? INT64_MAX : t - now;
    if (m->algo == SL_LEAKY_QUEUE && allowed) d->delay = (int64_t)(ceil_div(base, m->N) - now);
}

/* ---- traces --------------------------------------------------------------------------------- */

static const char *const key_names[MAX_KEYS] = {
    "k0", "k1", "k2", "", "a key well beyond the 24 bytes kept inline #4", "k5",
};

typedef struct step {
    int key;
    int64_t cost;
    int64_t t;
    bool back; /* the clock went back for this step */
} step;

typedef struct gen {
    uint64_t rng;
    sl_params prm;
    int64_t N, P, maxc;
    int nkeys, nsteps, warm;
    bool backward;
    int64_t t, t0;
    bool seen[MAX_KEYS];
    int64_t key_t[MAX_KEYS], key_retry[MAX_KEYS], key_reset[MAX_KEYS], key_delay[MAX_KEYS];
} gen;

static const sl_rate rate_menu[] = {
    {1, SEC},        {2, SEC},      {3, SEC},  {5, SEC},     {10, SEC},  {7, 10 * SEC},
    {100, 10 * SEC}, {3, 500 * MS}, {10, MIN}, {1000, HOUR}, {10, DAY},  {1, 1},
    {3, 7},          {7, 3},        {10, 3},   {5, 1000},    {13, 1001}, {2, 999999999},
    {999, 1000},     {4, 6},        {6, 4},    {1, 2},       {60, MIN},  {17, 100 * MS},
};

/* Random parameters for `algo`: the rate, burst, flags and origin of one trace. */
static void gen_init(gen *g, sl_algorithm algo, bool backward, uint64_t seed) {
    memset(g, 0, sizeof *g);
    g->rng = seed;
    uint64_t *r = &g->rng;
    sl_rate rate = rate_menu[rnd(r, 0, (int64_t)(sizeof rate_menu / sizeof rate_menu[0]) - 1)];
    if (chance(r, 35)) {
        rate.limit = rnd(r, 1, 12);
        switch (rnd(r, 0, 2)) {
        case 0:
            rate.period = rnd(r, 1, 50);
            break;
        case 1:
            rate.period = rnd(r, 51, 1000000);
            break;
        default:
            rate.period = rnd(r, 1000000, 3 * SEC);
            break;
        }
    }
    if (algo == SL_SLIDING_LOG && rate.limit > 64) rate.limit = 1 + rate.limit % 64;
    if (algo == SL_SLIDING_WINDOW && chance(r, 10)) {
        /* both state layouts (core/sliding_window.h): 32-bit counts up to 2^32 - 1 */
        rate.limit = (INT64_C(1) << 32) - 2 + rnd(r, 0, 4);
        rate.period = rnd(r, 1, SEC);
    }
    int64_t burst = 0;
    if (is_bucket(algo)) {
        static const int64_t menu[] = {1, 1, 2, 3, 5, 10, 100};
        burst = chance(r, 25) ? rnd(r, 1, 20) : menu[rnd(r, 0, 6)];
        if (chance(r, 15) && rate.limit <= 100) burst = rate.limit;
    }
    g->prm = (sl_params){.algorithm = algo, .rate = rate, .burst = burst};
    g->prm.flags = (unsigned)rnd(r, 0, 3); /* SL_START_EMPTY | SL_COUNT_REJECTED */
    g->N = rate.limit;
    g->P = rate.period;
    g->maxc = is_bucket(algo) ? burst : rate.limit;
    g->backward = backward;
    g->nkeys = (int)rnd(r, 1, MAX_KEYS);
    g->nsteps = (int)rnd(r, 120, 320);

    const int64_t P = g->P;
    switch (rnd(r, 0, 4)) {
    case 0:
        g->t0 = 0;
        break;
    case 1:
        g->t0 = rnd(r, 1, INT64_C(1000000000000));
        break;
    case 2:
        g->t0 = INT64_C(1700000000) * SEC + rnd(r, 0, INT64_C(1000000000000));
        break;
    case 3: /* on a window boundary, or just before one */
        g->t0 = rnd(r, 1, 1000) * P;
        break;
    default:
        g->t0 = rnd(r, 1, 1000) * P - 1;
        break;
    }
    int64_t back = 0; /* the origin is at or before t0 (after it too, with a backward clock) */
    switch (rnd(r, 0, 4)) {
    case 0:
        back = 0;
        break;
    case 1:
        back = rnd(r, 0, P);
        break;
    case 2:
        back = rnd(r, 0, 3 * P);
        break;
    case 3:
        back = 1000 * P;
        break;
    default:
        back = backward ? -rnd(r, 1, 2 * P) : rnd(r, 0, P / 2);
        break;
    }
    g->prm.origin = g->t0 - back < 0 ? 0 : g->t0 - back;
    g->t = g->t0;
}

static bool in_range(int64_t t) {
    return t >= 0 && t <= T_HIGH;
}

/* The next request of the trace. */
static void gen_next(gen *g, step *s) {
    uint64_t *r = &g->rng;
    const int64_t P = g->P, N = g->N;
    const int64_t T = (P + N - 1) / N; /* emission interval, rounded up */
    memset(s, 0, sizeof *s);

    /* With a backward clock, every key is first seen by a real request: the models do not
     * know when a peek created a state, and a table drops no state before a clock step
     * back (only inserts sweep, and there are none after this). */
    if (g->backward && g->warm < g->nkeys) {
        s->key = g->warm++;
        s->cost = 1;
        s->t = g->t;
        return;
    }

    s->key = chance(r, 40) ? 0 : (int)rnd(r, 0, g->nkeys - 1);
    int x = (int)rnd(r, 0, 99);
    if (x < 10)
        s->cost = 0;
    else if (x < 68 || g->maxc == 1)
        s->cost = 1;
    else if (x < 93)
        s->cost = rnd(r, 2, g->maxc);
    else
        s->cost = g->maxc;

    int64_t t = g->t, nt = t;
    int move = (int)rnd(r, 0, 99);
    if (g->backward && move < 9) {
        switch (rnd(r, 0, 4)) {
        case 0:
            nt = t - rnd(r, 1, T);
            break;
        case 1:
            nt = t - 1;
            break;
        case 2: /* into the window before */
            nt = (int64_t)floor_div(t, P) * P - rnd(r, 1, 2);
            break;
        case 3:
            nt = t - rnd(r, 1, 3 * P);
            break;
        default:
            nt = g->prm.origin - rnd(r, 0, P);
            break;
        }
        s->back = nt < t;
    } else if (move < 30) {
        nt = t; /* same-timestamp burst */
    } else if (move < 46) {
        nt = t + rnd(r, 1, 2 * T);
    } else if (move < 57) { /* a window boundary: k*P, k*P - 1, k*P + 1 */
        nt = ((int64_t)floor_div(t, P) + rnd(r, 1, 2)) * P + rnd(r, -1, 1);
    } else if (move < 67) { /* an emission instant k*T, from 0, t0, origin or the key's last */
        int64_t a = 0;
        switch (rnd(r, 0, 3)) {
        case 0:
            a = 0;
            break;
        case 1:
            a = g->t0;
            break;
        case 2:
            a = g->prm.origin;
            break;
        default:
            a = g->seen[s->key] ? g->key_t[s->key] : t;
            break;
        }
        i128 k = floor_div((i128)(t - a) * N, P) + 1 + rnd(r, 0, 1);
        nt = a + (int64_t)ceil_div(k * P, N) - rnd(r, 0, 1);
    } else if (move < 82) { /* exactly when the model said: retry, reset or release */
        int64_t v = 0;
        if (g->seen[s->key]) {
            switch (rnd(r, 0, 2)) {
            case 0:
                v = g->key_retry[s->key];
                break;
            case 1:
                v = g->key_reset[s->key];
                break;
            default:
                v = g->key_delay[s->key];
                break;
            }
        }
        nt = v > 0 && v < T_HIGH ? g->key_t[s->key] + v + rnd(r, -1, 1) : t + rnd(r, 0, T);
    } else if (move < 89) { /* a long idle gap */
        nt = t + P * (chance(r, 20) ? rnd(r, 100, 1000) : rnd(r, 2, 20)) + rnd(r, 0, P - 1);
    } else {
        nt = t + rnd(r, 0, 2 * P);
    }
    if (!in_range(nt) || (!g->backward && nt < t)) nt = t;
    s->back = nt < t;
    s->t = g->t = nt;
}

/* Remembers what a decision said, for the jumps to exact instants. */
static void gen_feedback(gen *g, const step *s, const sl_decision *d) {
    g->seen[s->key] = true;
    g->key_t[s->key] = s->t;
    g->key_retry[s->key] = d->allowed ? 0 : d->retry_after;
    g->key_reset[s->key] = d->reset_after;
    g->key_delay[s->key] = d->delay;
}

/* ---- reporting ------------------------------------------------------------------------------ */

typedef struct history {
    int n;
    step s[HISTORY];
    sl_decision d[HISTORY];
} history;

static void history_push(history *h, const step *s, const sl_decision *d) {
    h->s[h->n % HISTORY] = *s;
    h->d[h->n % HISTORY] = *d;
    h->n++;
}

static const char *flags_text(unsigned f) {
    static const char *const text[] = {"0", "START_EMPTY", "COUNT_REJECTED",
                                       "START_EMPTY|COUNT_REJECTED"};
    return text[f & 3];
}

static void print_params(const sl_params *p) {
    fprintf(stderr,
            "    params: %s rate=%" PRId64 "/%" PRId64 "ns burst=%" PRId64
            " flags=%s origin=%" PRId64 "\n",
            sl_algorithm_name(p->algorithm), p->rate.limit, p->rate.period, p->burst,
            flags_text(p->flags), p->origin);
}

static void print_history(const history *h) {
    int from = h->n > HISTORY ? h->n - HISTORY : 0;
    if (from < h->n) fprintf(stderr, "    previous steps (expected decisions):\n");
    for (int i = from; i < h->n; i++) {
        const step *s = &h->s[i % HISTORY];
        const sl_decision *d = &h->d[i % HISTORY];
        fprintf(stderr,
                "      #%d key=\"%s\" t=%" PRId64 "%s cost=%" PRId64 " -> %s rem=%" PRId64
                " retry=%" PRId64 " reset=%" PRId64 " delay=%" PRId64 "\n",
                i, key_names[s->key], s->t, s->back ? " (back)" : "", s->cost,
                d->allowed ? "allowed" : "refused", d->remaining, d->retry_after, d->reset_after,
                d->delay);
    }
}

static const char *decision_diff(const sl_decision *a, const sl_decision *b, bool delay) {
    if (a->allowed != b->allowed) return "allowed";
    if (a->limit != b->limit) return "limit";
    if (a->remaining != b->remaining) return "remaining";
    if (a->retry_after != b->retry_after) return "retry_after";
    if (a->reset_after != b->reset_after) return "reset_after";
    if (delay && a->delay != b->delay) return "delay";
    return NULL;
}

static void print_decision(const char *label, const sl_decision *d) {
    fprintf(stderr,
            "    %-10s allowed=%d limit=%" PRId64 " remaining=%" PRId64 " retry_after=%" PRId64
            " reset_after=%" PRId64 " delay=%" PRId64 "\n",
            label, d->allowed, d->limit, d->remaining, d->retry_after, d->reset_after, d->delay);
}

static void print_mismatch(const char *what, uint64_t seed, const sl_params *p, const history *h,
                           int i, const step *s, const char *field, const char *la,
                           const sl_decision *a, const char *lb, const sl_decision *b) {
    fprintf(stderr, "\n  %s: mismatch in %s, trace seed 0x%016" PRIx64 ", step #%d\n", what, field,
            seed, i);
    print_params(p);
    print_history(h);
    fprintf(stderr, "    failing step: key=\"%s\" t=%" PRId64 "%s cost=%" PRId64 "\n",
            key_names[s->key], s->t, s->back ? " (clock went back)" : "", s->cost);
    print_decision(la, a);
    print_decision(lb, b);
}

/* ---- running traces ------------------------------------------------------------------------- */

typedef struct stats {
    long traces, requests, allowed, refused, peeks, back, dropped;
    long failed; /* traces that disagreed; only the first one is printed */
} stats;

static sl_table *table_for_tol(const sl_params *p, unsigned shards, int64_t tolerance) {
    sl_table_options o = {.params = *p,
                          .shards = shards,
                          .seed = UINT64_C(0x5eed5eed12345678),
                          .clock_tolerance = tolerance};
    sl_table *t = NULL;
    int rc = sl_table_create(&o, &t);
    if (rc) {
        print_params(p);
        fprintf(stderr, "    sl_table_create: %s\n", sl_strerror(rc));
        return NULL;
    }
    return t;
}

static sl_table *table_for(const sl_params *p, unsigned shards) {
    return table_for_tol(p, shards, 0);
}

static int check(sl_table *t, const step *s, sl_decision *d) {
    const char *k = key_names[s->key];
    return sl_table_check(t, k, strlen(k), s->cost, s->t, d);
}

static void count(stats *st, const step *s, const sl_decision *d) {
    st->requests++;
    st->peeks += s->cost == 0;
    st->back += s->back;
    if (d->allowed)
        st->allowed++;
    else
        st->refused++;
}

/* The library against the model on one trace. */
static bool trace_vs_model(sl_algorithm algo, bool backward, uint64_t seed, stats *st) {
    gen g;
    gen_init(&g, algo, backward, seed);
    static const unsigned shard_menu[] = {0, 1, 2, 8};
    sl_table *t = table_for(&g.prm, shard_menu[rnd(&g.rng, 0, 3)]);
    if (!t) return false;
    model *m = malloc(sizeof *m);
    if (!m) fail_msg("out of memory");
    model_init(m, &g.prm);
    history h = {0};
    bool ok = true;
    for (int i = 0; i < g.nsteps && ok; i++) {
        step s;
        gen_next(&g, &s);
        sl_decision got, want;
        int rc = check(t, &s, &got);
        model_decide(m, s.key, s.cost, s.t, &want);
        const char *field = rc ? sl_strerror(rc) : decision_diff(&want, &got, true);
        if (field) {
            if (!st->failed)
                print_mismatch(sl_algorithm_name(algo), seed, &g.prm, &h, i, &s, field, "model",
                               &want, "library", &got);
            ok = false;
        }
        history_push(&h, &s, &want);
        count(st, &s, &want);
        gen_feedback(&g, &s, &want);
    }
    free(m);
    sl_table_destroy(t);
    return ok;
}

/* Token bucket, GCRA and leaky queue with the same rate and burst on one trace. */
static bool trace_buckets_agree(sl_algorithm algo, bool backward, uint64_t seed, stats *st) {
    (void)algo;
    gen g;
    gen_init(&g, SL_TOKEN_BUCKET, backward, seed);
    sl_params p = g.prm;
    unsigned shards = (unsigned)rnd(&g.rng, 0, 1) * 4; /* 64 or 4 */
    sl_table *tb = table_for(&p, shards);
    p.algorithm = SL_GCRA;
    sl_table *gc = table_for(&p, shards);
    p.algorithm = SL_LEAKY_QUEUE;
    sl_table *lq = table_for(&p, shards);
    bool ok = tb && gc && lq;
    history h = {0};
    for (int i = 0; i < g.nsteps && ok; i++) {
        step s;
        gen_next(&g, &s);
        sl_decision dt, dg, dl;
        int rc = check(tb, &s, &dt) | check(gc, &s, &dg) | check(lq, &s, &dl);
        const char *field = rc ? "return code" : decision_diff(&dt, &dg, false);
        if (field) {
            if (!st->failed)
                print_mismatch("token_bucket vs gcra", seed, &g.prm, &h, i, &s, field, "tb", &dt,
                               "gcra", &dg);
            ok = false;
            break;
        }
        field = decision_diff(&dl, &dg, false);
        if (field) {
            if (!st->failed)
                print_mismatch("leaky_queue vs gcra", seed, &g.prm, &h, i, &s, field, "lq", &dl,
                               "gcra", &dg);
            ok = false;
        }
        history_push(&h, &s, &dg);
        count(st, &s, &dg);
        gen_feedback(&g, &s, &dl);
    }
    sl_table_destroy(tb);
    sl_table_destroy(gc);
    sl_table_destroy(lq);
    return ok;
}

/* A table swept after every request against one never swept, on one trace. Eviction is
 * lossless for callers whose clock steps back by at most the table's clock_tolerance: with a
 * backward clock the tolerance is set to one period and steps further back are left out. */
static bool trace_sweep_lossless(sl_algorithm algo, bool backward, uint64_t seed, stats *st) {
    gen g;
    gen_init(&g, algo, backward, seed);
    int64_t tol = backward ? g.prm.rate.period : 0;
    sl_table *swept = table_for_tol(&g.prm, 4, tol);
    sl_table *kept = table_for_tol(&g.prm, 4, tol);
    bool ok = swept && kept;
    history h = {0};
    int64_t latest = INT64_MIN;
    for (int i = 0; i < g.nsteps && ok; i++) {
        step s;
        gen_next(&g, &s);
        if (backward && latest != INT64_MIN && s.t < latest - tol)
            continue; /* beyond the promise */
        latest = latest > s.t ? latest : s.t;
        sl_decision a, b;
        int rc = check(swept, &s, &a) | check(kept, &s, &b);
        st->dropped += (long)sl_table_sweep(swept, s.t, 64);
        const char *field = rc ? "return code" : decision_diff(&b, &a, true);
        if (field) {
            if (!st->failed)
                print_mismatch(sl_algorithm_name(algo), seed, &g.prm, &h, i, &s, field,
                               "never swept", &b, "swept", &a);
            ok = false;
        }
        history_push(&h, &s, &b);
        count(st, &s, &b);
        gen_feedback(&g, &s, &b);
    }
    sl_table_destroy(swept);
    sl_table_destroy(kept);
    return ok;
}

typedef bool (*trace_fn)(sl_algorithm, bool, uint64_t, stats *);

typedef struct prop {
    const char *name;
    trace_fn run;
    sl_algorithm algo;
    bool backward;
    int traces;
} prop;

static bool env_u64(const char *name, uint64_t *out) {
    const char *v = getenv(name);
    if (!v || !*v) return false;
    char *end;
    *out = strtoull(v, &end, 0);
    return *end == '\0';
}

static uint64_t trace_seed(const prop *p, int i) {
    uint64_t s =
        BASE_SEED ^ ((uint64_t)p->algo << 40) ^ ((uint64_t)p->backward << 48) ^ (uint64_t)i;
    for (const char *c = p->name; *c; c++) s = s * 131 + (unsigned char)*c;
    return next_u64(&s);
}

static void run_property(void **state) {
    const prop *p = *state;
    uint64_t forced = 0, n = (uint64_t)p->traces, first = 0;
    bool one = env_u64("SLUICE_PROP_SEED", &forced);
    env_u64("SLUICE_PROP_TRACES", &n);
    if (one) n = 1;
    stats st = {0};
    for (uint64_t i = 0; i < n; i++) {
        uint64_t seed = one ? forced : trace_seed(p, (int)i);
        st.traces++;
        if (!p->run(p->algo, p->backward, seed, &st) && st.failed++ == 0) first = seed;
    }
    print_message("%s: %ld traces, %ld requests (%ld allowed, %ld refused, %ld peeks, %ld clock "
                  "steps back, %ld states swept)\n",
                  p->name, st.traces, st.requests, st.allowed, st.refused, st.peeks, st.back,
                  st.dropped);
    if (st.failed)
        fail_msg("%s: %ld of %ld traces disagree; the first is printed above, rerun it alone with "
                 "SLUICE_PROP_SEED=0x%016" PRIx64,
                 p->name, st.failed, st.traces, first);
    if (p->run == trace_sweep_lossless && !one && st.dropped == 0)
        fail_msg("%s: the sweep never dropped a state, the property was not exercised", p->name);
}

/* ---- fixed traces: the smallest known disagreements, kept as regression tests --------------- */

typedef struct fixed_step {
    int key;
    int64_t t;
    int64_t cost;
} fixed_step;

static void run_fixed_vs_model(const sl_params *p, const fixed_step *steps, int n) {
    sl_table *t = table_for(p, 1);
    assert_non_null(t);
    model *m = malloc(sizeof *m);
    assert_non_null(m);
    model_init(m, p);
    history h = {0};
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        step s = {.key = steps[i].key, .cost = steps[i].cost, .t = steps[i].t};
        s.back = i > 0 && s.t < steps[i - 1].t;
        sl_decision got, want;
        int rc = check(t, &s, &got);
        model_decide(m, s.key, s.cost, s.t, &want);
        const char *field = rc ? sl_strerror(rc) : decision_diff(&want, &got, true);
        if (field) {
            print_mismatch(sl_algorithm_name(p->algorithm), 0, p, &h, i, &s, field, "model", &want,
                           "library", &got);
            ok = false;
        }
        history_push(&h, &s, &want);
    }
    free(m);
    sl_table_destroy(t);
    if (!ok) fail_msg("the library disagrees with the model on a fixed trace");
}

/* Token bucket 1/s, burst 2, the clock 1 s back: the bucket is judged as of its last update
 * (10 s, 1 token left: no refill, no debit), so the request passes. GCRA, judged at the
 * caller's 9 s, refuses it (tat 11 s, 11 + 1 - 9 > 2): with a clock that steps back the two
 * may differ, each never crediting anything (docs/semantics.md). */
static void fixed_token_bucket_clock_back(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_TOKEN_BUCKET, .rate = {1, SEC}, .burst = 2};
    const fixed_step steps[] = {{0, 10 * SEC, 1}, {0, 9 * SEC, 1}};
    run_fixed_vs_model(&p, steps, 2);
}

/* Token bucket 1/s, burst 1: refused at 9 s after a take at 10 s; it passes at 11 s at the
 * earliest, so retry_after is 2 s (and reset_after 2 s), not 1 s. */
static void fixed_token_bucket_retry_after_clock_back(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_TOKEN_BUCKET, .rate = {1, SEC}, .burst = 1};
    const fixed_step steps[] = {{0, 10 * SEC, 1}, {0, 9 * SEC, 1}, {0, 10 * SEC + SEC / 2, 1}};
    run_fixed_vs_model(&p, steps, 3);
}

/* Sliding log 2 per 10 s: a request refused at 5 s, then one allowed with the clock back at 3 s.
 * The key had already seen 5 s, so the entry must live until 15 s; stamped 3 s it slides out
 * at 13 s and lets a third request through at 14 s: 3 requests within 10 s of each other. */
static void fixed_sliding_log_clock_back(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_SLIDING_LOG, .rate = {2, 10 * SEC}};
    const fixed_step steps[] = {
        {0, 0, 1},
        {0, 5 * SEC, 2},
        {0, 3 * SEC, 1},
        {0, 14 * SEC, 2},
    };
    run_fixed_vs_model(&p, steps, 4);
}

/* Fixed window 1 per 10 s: key a is counted in window 0 at 5 s; a new key b at 10.4 s makes
 * the table sweep a little on insert. a is fresh at 10.4 s but not at 10.4 - 1 s (the default
 * clock tolerance), so it is kept, and with the clock 0.5 s back at 9.9 s it is refused. */
static void fixed_insert_then_clock_back(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_FIXED_WINDOW, .rate = {1, 10 * SEC}};
    const fixed_step steps[] = {
        {1, 5 * SEC, 1}, {2, 10 * SEC + 400 * MS, 1}, {1, 9 * SEC + 900 * MS, 1}};
    run_fixed_vs_model(&p, steps, 3);
}

/* The same with sl_table_sweep(): both keys exist from 5 s on, only one table is swept at
 * 10.4 s, and the two tables still agree at 9.9 s. */
static void fixed_sweep_then_clock_back(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_FIXED_WINDOW, .rate = {1, 10 * SEC}};
    sl_table *swept = table_for(&p, 1), *kept = table_for(&p, 1);
    assert_non_null(swept);
    assert_non_null(kept);
    const fixed_step steps[] = {
        {1, 5 * SEC, 1}, {2, 5 * SEC, 1}, {2, 10 * SEC + 400 * MS, 1}, {1, 9 * SEC + 900 * MS, 1}};
    sl_decision a, b;
    size_t dropped = 0;
    for (int i = 0; i < 4; i++) {
        step s = {.key = steps[i].key, .cost = steps[i].cost, .t = steps[i].t};
        assert_int_equal(check(swept, &s, &a), 0);
        assert_int_equal(check(kept, &s, &b), 0);
        dropped += sl_table_sweep(swept, s.t, 64);
    }
    sl_table_destroy(swept);
    sl_table_destroy(kept);
    if (a.allowed != b.allowed)
        fail_msg("after a sweep that dropped %zu state(s), the request at 9 s is %s by the swept "
                 "table and %s by the one never swept",
                 dropped, a.allowed ? "allowed" : "refused", b.allowed ? "allowed" : "refused");
}

/* Leaky queue 1/s, burst 1: a request at 10 s books the slot 10..11 s; at 9 s (clock back) the
 * queue is more than full. A peek is accepted, and an accepted request is released at
 * max(tat, now): the delay is 2 s, as for any other peek, not 0. */
static void fixed_leaky_queue_peek_delay_clock_back(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_LEAKY_QUEUE, .rate = {1, SEC}, .burst = 1};
    const fixed_step steps[] = {{0, 10 * SEC, 1}, {0, 10 * SEC, 0}, {0, 9 * SEC, 0}};
    run_fixed_vs_model(&p, steps, 3);
}

/* ---- the tests --------------------------------------------------------------------------------
 */

#define VS_MODEL(a, name, back, n)                                                                 \
    { "model/" name, trace_vs_model, a, back, n }
#define SWEEP(a, name, back, n)                                                                    \
    { "sweep_lossless/" name, trace_sweep_lossless, a, back, n }

static prop props[] = {
    VS_MODEL(SL_FIXED_WINDOW, "fixed_window/forward", false, 300),
    VS_MODEL(SL_SLIDING_LOG, "sliding_log/forward", false, 300),
    VS_MODEL(SL_SLIDING_WINDOW, "sliding_window/forward", false, 300),
    VS_MODEL(SL_TOKEN_BUCKET, "token_bucket/forward", false, 300),
    VS_MODEL(SL_GCRA, "gcra/forward", false, 300),
    VS_MODEL(SL_LEAKY_QUEUE, "leaky_queue/forward", false, 300),
    VS_MODEL(SL_FIXED_WINDOW, "fixed_window/backward", true, 300),
    VS_MODEL(SL_SLIDING_LOG, "sliding_log/backward", true, 300),
    VS_MODEL(SL_SLIDING_WINDOW, "sliding_window/backward", true, 300),
    VS_MODEL(SL_TOKEN_BUCKET, "token_bucket/backward", true, 300),
    VS_MODEL(SL_GCRA, "gcra/backward", true, 300),
    VS_MODEL(SL_LEAKY_QUEUE, "leaky_queue/backward", true, 300),
    {"buckets_agree/forward", trace_buckets_agree, SL_TOKEN_BUCKET, false, 300},
    /* no buckets_agree/backward: with a clock that steps back the token bucket judges as of its
     * last update and GCRA as of the caller's now; both never credit, but may differ. */
    SWEEP(SL_FIXED_WINDOW, "fixed_window/forward", false, 80),
    SWEEP(SL_SLIDING_LOG, "sliding_log/forward", false, 80),
    SWEEP(SL_SLIDING_WINDOW, "sliding_window/forward", false, 80),
    SWEEP(SL_TOKEN_BUCKET, "token_bucket/forward", false, 80),
    SWEEP(SL_GCRA, "gcra/forward", false, 80),
    SWEEP(SL_LEAKY_QUEUE, "leaky_queue/forward", false, 80),
    SWEEP(SL_FIXED_WINDOW, "fixed_window/backward", true, 80),
    SWEEP(SL_SLIDING_LOG, "sliding_log/backward", true, 80),
    SWEEP(SL_SLIDING_WINDOW, "sliding_window/backward", true, 80),
    SWEEP(SL_TOKEN_BUCKET, "token_bucket/backward", true, 80),
    SWEEP(SL_GCRA, "gcra/backward", true, 80),
    SWEEP(SL_LEAKY_QUEUE, "leaky_queue/backward", true, 80),
};

#define N_PROPS (sizeof props / sizeof props[0])

int main(void) {
    struct CMUnitTest tests[N_PROPS + 6];
    for (size_t i = 0; i < N_PROPS; i++)
        tests[i] = (struct CMUnitTest){props[i].name, run_property, NULL, NULL, &props[i]};
    tests[N_PROPS + 0] = (struct CMUnitTest)cmocka_unit_test(fixed_token_bucket_clock_back);
    tests[N_PROPS + 1] =
        (struct CMUnitTest)cmocka_unit_test(fixed_token_bucket_retry_after_clock_back);
    tests[N_PROPS + 2] = (struct CMUnitTest)cmocka_unit_test(fixed_sliding_log_clock_back);
    tests[N_PROPS + 3] = (struct CMUnitTest)cmocka_unit_test(fixed_insert_then_clock_back);
    tests[N_PROPS + 4] = (struct CMUnitTest)cmocka_unit_test(fixed_sweep_then_clock_back);
    tests[N_PROPS + 5] =
        (struct CMUnitTest)cmocka_unit_test(fixed_leaky_queue_peek_delay_clock_back);
    return _cmocka_run_group_tests("test_properties", tests, N_PROPS + 6, NULL, NULL);
}
