/* test_arith.c: the hot path's arithmetic (core/algorithm.h, core/gcra.h,
 * sliding_window.c, fixed_window.c) at its edges, against 128-bit references
 * written here: the formulas of each module's header comment, computed the
 * slow way (every time in units of 1/n ns as one __int128, every product in
 * 128 bits, every quotient a 128-bit division).
 *
 * The edges: burst * p up to 2^61 (B*T up to 2^61 ns), rates whose interval
 * is not a whole number of ns and whose fractions are near 1 (frac = n - 1,
 * p % n = n - 1), times at 0 and at SL_TIME_MAX = 2^62 with a tat up to
 * 2^62 + B*T (sums that reach 2^63 if taken naively), clocks that go back,
 * windows of up to 100 years with products of up to 2^122, counts at the
 * limit. Every field of the decision and the state after the call is
 * compared, for the three modes and both flags that change a step. Traces
 * are seeded (splitmix64, the seed and case printed on failure). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/algorithm.h"
#include "core/gcra.h"
#include "core/sliding_window.h"
#include "helpers.h"
#include "sluice/error.h"

typedef __int128 i128;

#define MAX_PERIOD (INT64_C(100) * 366 * 86400 * SL_NS_PER_SEC) /* params.c's bound */
#define MAX_SCALED (INT64_C(1) << 61)
#define CASES      200000

static i128 ceil128(i128 a, i128 b) { /* a >= 0, b > 0 */
    return (a + b - 1) / b;
}

/* One of a few values near the edges of [lo, hi], or any value in it. */
static int64_t edgy(uint64_t *r, int64_t lo, int64_t hi) {
    switch (helper_rand(r) % 8) {
    case 0:
        return lo;
    case 1:
        return hi;
    case 2:
        return hi - helper_pick(r, 0, hi - lo < 3 ? hi - lo : 3);
    case 3:
        return lo + helper_pick(r, 0, hi - lo < 3 ? hi - lo : 3);
    case 4: { /* a small value, if there is one */
        int64_t top = hi - lo < 1000 ? hi : lo + 1000;
        return helper_pick(r, lo, top);
    }
    default:
        return helper_pick(r, lo, hi);
    }
}

static sl__mode pick_mode(uint64_t *r) {
    static const sl__mode modes[] = {SL__APPLY, SL__APPLY, SL__PEEK, SL__CHARGE};
    return modes[helper_rand(r) % 4];
}

/* ---- GCRA and the leaky queue --------------------------------------------- */

/* A bucket's params at the edges: n and p large and coprime-ish, fractions
 * near 1, burst * p up to 2^61. */
static bool bucket_params(uint64_t *r, sl_algorithm a, sl_params *out) {
    sl_params p = {0};
    p.algorithm = a;
    switch (helper_rand(r) % 4) {
    case 0: /* an interval of (n - 1) / n + k ns: fraction near 1 */
        p.rate.limit = edgy(r, 2, MAX_SCALED);
        p.rate.period = p.rate.limit * helper_pick(r, 1, 3) - 1;
        if (p.rate.period > MAX_PERIOD || p.rate.period < 1) p.rate.period = p.rate.limit - 1;
        break;
    case 1: /* huge period, one event: n = 1 */
        p.rate.limit = 1;
        p.rate.period = edgy(r, 1, MAX_PERIOD);
        break;
    default:
        p.rate.limit = edgy(r, 1, MAX_SCALED);
        p.rate.period = edgy(r, 1, MAX_PERIOD);
        break;
    }
    sl__plan tmp;
    p.burst = 1;
    if (sl__plan_init(&tmp, &p) != SL_OK) return false;
    int64_t most = MAX_SCALED / tmp.p; /* burst * p <= 2^61 */
    p.burst = edgy(r, 1, most);
    p.flags = (helper_rand(r) & 1) ? SL_COUNT_REJECTED : 0;
    if (a == SL_LEAKY_QUEUE && p.burst > 1 && (helper_rand(r) & 1))
        p.delay_after = edgy(r, 1, p.burst - 1);
    *out = p;
    return true;
}

/* The reference: GCRA and the queue's delay with every time in 1/n ns. */
static void ref_gcra(const sl__plan *pl, sl__gcra_state *s, int64_t cost, int64_t now,
                     sl__mode mode, bool queue, sl_decision *d) {
    const i128 n = pl->n, p = pl->p, full = (i128)pl->burst * pl->p;
    i128 tat = (i128)s->tat * n + s->frac, t = (i128)now * n;
    i128 wait = tat - t; /* before the call, may be < 0 */
    i128 base = tat > t ? tat : t;
    i128 step = (i128)cost * p;
    bool allowed = base + step - t <= full;
    bool charge = allowed || pl->count_rejected || mode == SL__CHARGE;
    i128 after = base;
    if (charge) after = allowed ? base + step : (t + full > base ? t + full : base);
    if (mode != SL__PEEK) {
        s->tat = (int64_t)(after / n);
        s->frac = (int64_t)(after % n);
    }
    i128 used = after - t;
    d->allowed = allowed;
    d->limit = pl->burst;
    d->remaining = used >= full ? 0 : (int64_t)((full - used) / p);
    d->reset_after = (int64_t)ceil128(used, n);
    i128 need = used + step - full;
    d->retry_after = allowed ? 0 : (need > 0 ? (int64_t)ceil128(need, n) : 0);
    d->delay = 0;
    if (queue) {
        i128 w = wait - (i128)pl->params.delay_after * p;
        int64_t delay = w > 0 ? (int64_t)ceil128(w, n) : 0;
        d->delay = (allowed || cost == 0) ? delay : 0;
    }
}

/* A state a table could hold: tat + frac/n <= SL_TIME_MAX + B*T. */
static sl__gcra_state bucket_state(uint64_t *r, const sl__plan *pl, int64_t now) {
    int64_t top = SL_TIME_MAX + pl->f_whole;
    sl__gcra_state s;
    switch (helper_rand(r) % 6) {
    case 0:
        s.tat = top;
        break;
    case 1:
        s.tat = now + pl->f_whole - helper_pick(r, 0, 2);
        break; /* at the edge of B*T */
    case 2:
        s.tat = now + helper_pick(r, -2, 2);
        break;
    case 3:
        s.tat = now + pl->r_whole + helper_pick(r, -1, 1);
        break; /* (B-1)*T */
    default:
        s.tat = helper_pick(r, 0, top);
        break;
    }
    if (s.tat < 0) s.tat = 0;
    if (s.tat > top) s.tat = top;
    s.frac = edgy(r, 0, pl->n - 1);
    if (s.tat == top && s.frac > pl->f_frac) s.frac = pl->f_frac;
    return s;
}

static void bucket_case(uint64_t seed, sl_algorithm a) {
    uint64_t r = seed;
    sl_params params;
    if (!bucket_params(&r, a, &params)) return;
    sl__plan pl;
    if (sl__plan_init(&pl, &params) != SL_OK) return;
    int64_t now = edgy(&r, 0, SL_TIME_MAX);
    sl__gcra_state s = bucket_state(&r, &pl, now);
    if (helper_rand(&r) % 4 == 0)
        now = edgy(&r, 0, SL_TIME_MAX); /* the clock jumps, or goes back */
    int64_t cost = edgy(&r, 0, pl.burst);
    sl__mode mode = pick_mode(&r);

    sl__gcra_state want_s = s, got_s = s;
    sl_decision want, got;
    memset(&want, 0, sizeof want);
    memset(&got, 0, sizeof got);
    ref_gcra(&pl, &want_s, cost, now, mode, a == SL_LEAKY_QUEUE, &want);
    if (a == SL_GCRA)
        sl__gcra_decide(&pl, &got_s, cost, now, mode, &got);
    else
        sl__leaky_queue_decide(&pl, &got_s, cost, now, mode, &got);
    bool same = got.allowed == want.allowed && got.limit == want.limit &&
                got.remaining == want.remaining && got.retry_after == want.retry_after &&
                got.reset_after == want.reset_after && got.delay == want.delay &&
                got_s.tat == want_s.tat && got_s.frac == want_s.frac;
    if (!same) {
        print_message("seed %llu: %s limit %lld period %lld burst %lld flags %u after %lld "
                      "(n %lld p %lld) tat %lld frac %lld now %lld cost %lld mode %d\n",
                      (unsigned long long)seed, sl_algorithm_name(a), (long long)params.rate.limit,
                      (long long)params.rate.period, (long long)params.burst, params.flags,
                      (long long)params.delay_after, (long long)pl.n, (long long)pl.p,
                      (long long)s.tat, (long long)s.frac, (long long)now, (long long)cost,
                      (int)mode);
        print_message("  got  %d rem %lld retry %lld reset %lld delay %lld tat %lld frac %lld\n",
                      got.allowed, (long long)got.remaining, (long long)got.retry_after,
                      (long long)got.reset_after, (long long)got.delay, (long long)got_s.tat,
                      (long long)got_s.frac);
        print_message("  want %d rem %lld retry %lld reset %lld delay %lld tat %lld frac %lld\n",
                      want.allowed, (long long)want.remaining, (long long)want.retry_after,
                      (long long)want.reset_after, (long long)want.delay, (long long)want_s.tat,
                      (long long)want_s.frac);
        fail();
    }
}

static void gcra_edges(void **state) {
    (void)state;
    for (uint64_t i = 0; i < CASES; i++) bucket_case(0x6c7261ULL * 1000003 + i, SL_GCRA);
}

static void leaky_queue_edges(void **state) {
    (void)state;
    for (uint64_t i = 0; i < CASES; i++) bucket_case(0x71756575ULL * 1000003 + i, SL_LEAKY_QUEUE);
}

/* The case that overflowed before the pairs: n = 1, burst * p = 2^61, a tat
 * of 2^62 + 2^61 and a request of the whole burst (tat + c*T = 2^63). */
static void gcra_at_two_to_the_63(void **state) {
    (void)state;
    sl_params params = {.algorithm = SL_GCRA, .rate = {1, INT64_C(1) << 61}, .burst = 1};
    sl__plan pl;
    assert_int_equal(sl__plan_init(&pl, &params), SL_OK);
    sl__gcra_state s = {SL_TIME_MAX, 0};
    sl_decision d;
    sl__gcra_decide(&pl, &s, 1, SL_TIME_MAX, SL__APPLY, &d);
    assert_true(d.allowed);
    assert_i64(s.tat, SL_TIME_MAX + (INT64_C(1) << 61));
    sl__gcra_decide(&pl, &s, 1, SL_TIME_MAX, SL__APPLY, &d); /* base + T = 2^63 */
    assert_false(d.allowed);
    assert_i64(d.retry_after, INT64_C(1) << 61);
    assert_i64(d.reset_after, INT64_C(1) << 61);
    sl__gcra_decide(&pl, &s, 1, 0, SL__APPLY, &d); /* the clock back at 0 */
    assert_false(d.allowed);
    assert_i64(d.retry_after, INT64_C(3) << 61);
}

/* ---- windows --------------------------------------------------------------- */

static int64_t ref_floor_div(int64_t a, int64_t b) {
    i128 q = (i128)a / b;
    if ((i128)q * b > a) q--;
    return (int64_t)q;
}

static int64_t clamp_time(i128 t) {
    return t < 0 ? 0 : t > SL_TIME_MAX ? SL_TIME_MAX : (int64_t)t;
}

/* sl__window_at against floor division, around window edges. */
static void window_index(void **state) {
    (void)state;
    uint64_t r = 0x77696e64ULL;
    for (int i = 0; i < CASES; i++) {
        int64_t P = edgy(&r, 1, MAX_PERIOD);
        int64_t seen = edgy(&r, 0, SL_TIME_MAX);
        int64_t w0 = seen / P; /* a window the state has seen */
        i128 at;
        switch (helper_rand(&r) % 4) {
        case 0:
            at = (i128)w0 * P + helper_pick(&r, -2, 2);
            break;
        case 1:
            at = (i128)(w0 + 1) * P + helper_pick(&r, -2, 2);
            break;
        case 2:
            at = (i128)(w0 + 2) * P + helper_pick(&r, -2, 2);
            break;
        default:
            at = edgy(&r, 0, SL_TIME_MAX);
            break;
        }
        int64_t now = clamp_time(at);
        int64_t want = ref_floor_div(now, P), want_e = now - want * P;
        if (want < w0) {
            want = w0;
            want_e = 0;
        }
        int64_t e = -1, got = sl__window_at(w0, P, now, &e);
        if (got != want || e != want_e) {
            print_message("P %lld w0 %lld now %lld: got %lld +%lld, want %lld +%lld\n",
                          (long long)P, (long long)w0, (long long)now, (long long)got, (long long)e,
                          (long long)want, (long long)want_e);
            fail();
        }
    }
}

/* sl__div_by and sl__ceil_div_by (a multiplication by the reciprocal)
 * against the division, for divisors and dividends at their edges: 1,
 * powers of two and their neighbours, the plans' periods, up to INT64_MAX;
 * dividends at multiples of the divisor and one either side. */
static void division_by_reciprocal(void **state) {
    (void)state;
    uint64_t r = 0x72656369ULL;
    for (int i = 0; i < CASES * 5; i++) {
        int64_t d;
        switch (helper_rand(&r) % 4) {
        case 0:
            d = edgy(&r, 1, 64);
            break;
        case 1: {
            int64_t two = INT64_C(1) << (helper_rand(&r) % 63);
            d = two + helper_pick(&r, two > 1 ? -1 : 0, 1);
            break;
        }
        case 2:
            d = edgy(&r, 1, MAX_PERIOD);
            break;
        default:
            d = edgy(&r, 1, INT64_MAX - 1); /* helper_pick needs hi - lo + 1 to fit */
            break;
        }
        int64_t x;
        switch (helper_rand(&r) % 3) {
        case 0: {
            int64_t k = edgy(&r, 0, (INT64_MAX - 1) / d);
            x = k * d;
            int64_t off = helper_pick(&r, -1, 1);
            if ((off < 0 && x > 0) || (off > 0 && x < INT64_MAX)) x += off;
            break;
        }
        case 1:
            x = edgy(&r, 0, d < INT64_MAX / 4 ? 4 * d : INT64_MAX - 1);
            break;
        default:
            x = edgy(&r, 0, INT64_MAX - 1);
            break;
        }
        uint64_t inv = sl__recip(d);
        int64_t q = sl__div_by(x, d, inv), c = sl__ceil_div_by(x, d, inv);
        int64_t want = x / d, want_c = want + (x % d != 0);
        if (q != want || c != want_c) {
            print_message("%lld / %lld: got %lld (ceil %lld), want %lld (ceil %lld)\n",
                          (long long)x, (long long)d, (long long)q, (long long)c, (long long)want,
                          (long long)want_c);
            fail();
        }
    }
}

typedef struct sw_state { /* sliding_window.c's state */
    int64_t window, prev, curr;
} sw_state;

typedef struct fw_state { /* fixed_window.c's state */
    int64_t window, count;
} fw_state;

/* The sliding window counter, every product in 128 bits. */
static void ref_sliding(const sl__plan *pl, sw_state *s, int64_t cost, int64_t now, sl__mode mode,
                        sl_decision *d) {
    const i128 N = pl->limit, P = pl->period;
    int64_t w = ref_floor_div(now, pl->period), e = now - w * pl->period;
    if (w < s->window) {
        w = s->window;
        e = 0;
    }
    i128 prev = w == s->window ? s->prev : (w == s->window + 1 ? s->curr : 0);
    i128 curr = w == s->window ? s->curr : 0;
    i128 weighted = prev * (P - e);
    bool allowed = weighted + (curr + cost) * P <= N * P;
    bool charge = allowed || pl->count_rejected || mode == SL__CHARGE;
    i128 after = charge ? (curr + cost < N ? curr + cost : N) : curr;
    if (mode != SL__PEEK) {
        s->window = w;
        s->prev = (int64_t)prev;
        s->curr = (int64_t)after;
    }
    i128 to_end = (i128)(w + 1) * P - now;
    i128 room = N * P - weighted - after * P;
    d->allowed = allowed;
    d->limit = pl->limit;
    d->remaining = room > 0 ? (int64_t)(room / P) : 0;
    d->delay = 0;
    i128 to_next = to_end + P > INT64_MAX ? INT64_MAX : to_end + P;
    d->reset_after = (int64_t)(after > 0 ? to_next : (prev > 0 ? to_end : 0));
    if (allowed) {
        d->retry_after = 0;
    } else if (after + cost <= N) {
        i128 x = P - (N - after - cost) * P / prev;
        d->retry_after = (int64_t)((x < P ? (i128)w * P + x : (i128)(w + 1) * P) - now);
    } else {
        i128 x = P - (N - cost) * P / after;
        if (x < 0) x = 0;
        d->retry_after = (int64_t)(to_end + x > INT64_MAX ? INT64_MAX : to_end + x);
    }
}

static void ref_fixed(const sl__plan *pl, fw_state *s, int64_t cost, int64_t now, sl__mode mode,
                      sl_decision *d) {
    const int64_t N = pl->limit, P = pl->period;
    int64_t w = ref_floor_div(now, P);
    if (w < s->window) w = s->window;
    int64_t count = w == s->window ? s->count : 0;
    bool allowed = count + cost <= N;
    bool charge = allowed || pl->count_rejected || mode == SL__CHARGE;
    int64_t after = charge ? (count + cost < N ? count + cost : N) : count;
    if (charge && mode != SL__PEEK) {
        s->window = w;
        s->count = after;
    }
    d->allowed = allowed;
    d->limit = N;
    d->remaining = N - after;
    d->retry_after = allowed ? 0 : (w + 1) * P - now;
    d->reset_after = after > 0 ? (w + 1) * P - now : 0;
    d->delay = 0;
}

static bool same_decision(const sl_decision *a, const sl_decision *b) {
    return a->allowed == b->allowed && a->limit == b->limit && a->remaining == b->remaining &&
           a->retry_after == b->retry_after && a->reset_after == b->reset_after &&
           a->delay == b->delay;
}

static void print_decision(const char *what, const sl_decision *d) {
    print_message("  %s %d rem %lld retry %lld reset %lld\n", what, d->allowed,
                  (long long)d->remaining, (long long)d->retry_after, (long long)d->reset_after);
}

static void window_case(uint64_t seed, sl_algorithm a) {
    uint64_t r = seed;
    sl_params params = {.algorithm = a};
    /* half the limits below 2^32 (the sliding window's 16-byte state) */
    params.rate.limit = edgy(&r, 1, (helper_rand(&r) & 1) ? MAX_SCALED : UINT32_MAX);
    params.rate.period = edgy(&r, 1, MAX_PERIOD);
    params.flags = (helper_rand(&r) & 1) ? SL_COUNT_REJECTED : 0;
    sl__plan pl;
    if (sl__plan_init(&pl, &params) != SL_OK) return;
    const int64_t N = pl.limit, P = pl.period;
    int64_t w0 = edgy(&r, 0, SL_TIME_MAX) / P;
    i128 at;
    switch (helper_rand(&r) % 4) {
    case 0:
        at = (i128)w0 * P + edgy(&r, -2, P + 2);
        break;
    case 1:
        at = (i128)(w0 + 1) * P + edgy(&r, -2, P + 2);
        break;
    case 2:
        at = (i128)w0 * P - edgy(&r, 1, SL_TIME_MAX);
        break; /* the clock went back */
    default:
        at = edgy(&r, 0, SL_TIME_MAX);
        break;
    }
    int64_t now = clamp_time(at);
    int64_t cost = edgy(&r, 0, N);
    sl__mode mode = pick_mode(&r);
    sl_decision want, got;
    memset(&want, 0, sizeof want);
    memset(&got, 0, sizeof got);
    bool same;
    if (a == SL_SLIDING_WINDOW) {
        sw_state s = {w0, edgy(&r, 0, N), edgy(&r, 0, N)}, ws = s;
        /* the state as the plan lays it out (16 bytes below 2^32, else 24) */
        sl__sw_state gv = {s.window, s.prev, s.curr};
        int64_t buf[3] = {-1, -1, -1};
        sl__sw_save(&pl, buf, &gv);
        ref_sliding(&pl, &ws, cost, now, mode, &want);
        sl__sliding_window_decide(&pl, buf, cost, now, mode, &got);
        sl__sw_load(&pl, buf, &gv);
        same = same_decision(&got, &want) && gv.window == ws.window && gv.prev == ws.prev &&
               gv.curr == ws.curr && (pl.state_size == 24 || buf[2] == -1);
        if (!same)
            print_message("seed %llu: sliding N %lld P %lld flags %u window %lld prev %lld curr "
                          "%lld now %lld cost %lld mode %d\n",
                          (unsigned long long)seed, (long long)N, (long long)P, params.flags,
                          (long long)s.window, (long long)s.prev, (long long)s.curr, (long long)now,
                          (long long)cost, (int)mode);
    } else {
        fw_state s = {w0, edgy(&r, 0, N)}, ws = s, gs = s;
        ref_fixed(&pl, &ws, cost, now, mode, &want);
        sl__fixed_window_decide(&pl, &gs, cost, now, mode, &got);
        same = same_decision(&got, &want) && memcmp(&ws, &gs, sizeof ws) == 0;
        if (!same)
            print_message("seed %llu: fixed N %lld P %lld window %lld count %lld now %lld\n",
                          (unsigned long long)seed, (long long)N, (long long)P, (long long)s.window,
                          (long long)s.count, (long long)now);
    }
    if (!same) {
        print_decision("got ", &got);
        print_decision("want", &want);
        fail();
    }
}

static void sliding_window_edges(void **state) {
    (void)state;
    for (uint64_t i = 0; i < CASES; i++)
        window_case(0x736c6964ULL * 1000003 + i, SL_SLIDING_WINDOW);
}

static void fixed_window_edges(void **state) {
    (void)state;
    for (uint64_t i = 0; i < CASES; i++) window_case(0x66697864ULL * 1000003 + i, SL_FIXED_WINDOW);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gcra_edges),
        cmocka_unit_test(leaky_queue_edges),
        cmocka_unit_test(gcra_at_two_to_the_63),
        cmocka_unit_test(window_index),
        cmocka_unit_test(division_by_reciprocal),
        cmocka_unit_test(sliding_window_edges),
        cmocka_unit_test(fixed_window_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
