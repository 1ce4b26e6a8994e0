/* test_ramp.c: ramp-up after recovery (sluice/ramp.h), on a fake clock:
 * - the factor's formula at its edges (before the start, the start, half
 *   way, one ns before the end, the end, long after);
 * - a ramped table (sl_ramp_params, sl_ramp_cost, sl_ramp_decision): a fresh
 *   key admits the scaled burst, refills at the scaled rate, a full key
 *   takes no more than the scaled burst, windows admit the scaled limit,
 *   the leaky queue's delays stretch to the scaled rate, a lone request
 *   passes at the lowest factor;
 * - properties over random parameters: the factor never decreases and is
 *   whole after the duration, the charge is never below the unramped one,
 *   the ramped limit never above it (and equal at a factor of 1), a unit
 *   table at factor 1 decides as the plain table, and a ramped token bucket
 *   never admits more than burst + rate x time;
 * - bad ramps and parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "helpers.h"
#include "sluice/sluice.h"

#define ONE  SL_RAMP_ONE
#define UNIT SL_RAMP_UNIT

static void factor_formula(void **state) {
    (void)state;
    sl_ramp r = {.duration = 10 * SEC, .from = ONE / 10};
    assert_int_equal(sl_ramp_validate(&r), SL_OK);
    int64_t s = 5 * SEC;
    assert_i64(sl_ramp_factor(&r, s, 0), ONE / 10);              /* before the start: the lowest */
    assert_i64(sl_ramp_factor(&r, s, s), ONE / 10);              /* the start */
    assert_i64(sl_ramp_factor(&r, s, s + 5 * SEC), 550000);      /* half way */
    assert_i64(sl_ramp_factor(&r, s, s + 10 * SEC - 1), 999999); /* floor */
    assert_i64(sl_ramp_factor(&r, s, s + 10 * SEC), ONE);
    assert_i64(sl_ramp_factor(&r, s, SL_TIME_MAX), ONE);
    sl_ramp whole = {.duration = 1, .from = ONE};
    assert_i64(sl_ramp_factor(&whole, 0, 0), ONE);
}

typedef struct ramped {
    sl_params unit;
    sl_table *t;
} ramped;

static ramped make(sl_params p) {
    ramped r;
    assert_int_equal(sl_ramp_params(&p, &r.unit), SL_OK);
    sl_table_options o = {.params = r.unit, .max_memory = 1 << 20, .seed = 1};
    assert_int_equal(sl_table_create(&o, &r.t), SL_OK);
    return r;
}

static sl_decision check(ramped *r, int64_t cost, int64_t factor, int64_t now) {
    sl_decision d;
    int64_t units = sl_ramp_cost(&r->unit, cost, factor, 0);
    assert_int_equal(sl_table_check(r->t, "k", 1, units, now, &d), SL_OK);
    sl_ramp_decision(&r->unit, factor, 0, &d);
    return d;
}

static int admitted_at_once(ramped *r, int64_t factor, int64_t now) {
    int n = 0;
    while (check(r, 1, factor, now).allowed) n++;
    return n;
}

static void bucket_scaled(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_TOKEN_BUCKET, .rate = {100, SEC}, .burst = 100};
    ramped r = make(p);
    sl_decision d = check(&r, 1, ONE / 10, 0);
    assert_true(d.allowed);
    assert_i64(d.limit, 10); /* the scaled burst */
    assert_i64(d.remaining, 9);
    assert_int_equal(admitted_at_once(&r, ONE / 10, 0), 9);
    d = check(&r, 1, ONE / 10, 0);
    assert_false(d.allowed);
    assert_i64(d.retry_after, 100 * MS); /* 10 units of 100/s at a tenth: 10/s */
    /* the scaled rate: 10/s at a tenth over the next second */
    int n = 0;
    for (int64_t t = 10 * MS; t <= SEC; t += 10 * MS) n += check(&r, 1, ONE / 10, t).allowed;
    assert_int_equal(n, 10);
    sl_table_destroy(r.t);
}

static void full_key_takes_scaled_burst(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_GCRA, .rate = {100, SEC}, .burst = 100};
    ramped r = make(p);
    assert_true(check(&r, 0, ONE, 0).allowed);              /* a full key (a peek stores nothing) */
    assert_int_equal(admitted_at_once(&r, ONE / 4, 0), 25); /* not 100 */
    assert_int_equal(admitted_at_once(&r, ONE, 0), 0);      /* each took 4 of 100 */
    /* a key holding 50 of 100 admits a quarter of them: 12 */
    for (int i = 0; i < 50; i++) assert_true(check(&r, 1, ONE, SEC).allowed);
    assert_int_equal(admitted_at_once(&r, ONE / 4, SEC), 12);
    sl_table_destroy(r.t);
}

static void windows_scaled(void **state) {
    (void)state;
    sl_params fw = {.algorithm = SL_FIXED_WINDOW, .rate = {100, SEC}};
    ramped r = make(fw);
    assert_int_equal(admitted_at_once(&r, ONE / 4, 0), 25);
    assert_int_equal(admitted_at_once(&r, ONE / 2, SEC), 50); /* the next window */
    sl_table_destroy(r.t);
    sl_params sw = {.algorithm = SL_SLIDING_WINDOW, .rate = {100, SEC}};
    r = make(sw);
    assert_int_equal(admitted_at_once(&r, ONE / 4, 0), 25);
    sl_table_destroy(r.t);
}

static void queue_delays_scaled(void **state) {
    (void)state;
    /* 5/s with room for 5: at 1/2, room for 2 and a 400 ms interval */
    sl_params p = {.algorithm = SL_LEAKY_QUEUE, .rate = {5, SEC}, .burst = 5};
    ramped r = make(p);
    sl_decision d = check(&r, 1, ONE / 2, 0);
    assert_true(d.allowed);
    assert_i64(d.delay, 0);
    assert_i64(d.limit, 2);
    d = check(&r, 1, ONE / 2, 0);
    assert_true(d.allowed);
    assert_i64(d.delay, 400 * MS);
    assert_false(check(&r, 1, ONE / 2, 0).allowed);
    sl_table_destroy(r.t);
}

static void options_scaled(void **state) {
    (void)state;
    /* refill: steps, 10 per second into a bucket of 10: at a half, 5 now and 5 a step later */
    sl_params st = {
        .algorithm = SL_TOKEN_BUCKET, .rate = {10, SEC}, .burst = 10, .flags = SL_STEP_REFILL};
    ramped r = make(st);
    assert_int_equal(admitted_at_once(&r, ONE / 2, 0), 5);
    assert_int_equal(admitted_at_once(&r, ONE / 2, SEC - 1), 0);
    assert_int_equal(admitted_at_once(&r, ONE / 2, SEC), 5);
    sl_table_destroy(r.t);
    /* count_rejected: a refusal empties what is left, never beyond empty */
    sl_params cr = {
        .algorithm = SL_GCRA, .rate = {10, SEC}, .burst = 10, .flags = SL_COUNT_REJECTED};
    r = make(cr);
    assert_int_equal(admitted_at_once(&r, ONE / 2, 0), 5);
    sl_decision d = check(&r, 1, ONE / 2, 0);
    assert_false(d.allowed);
    assert_i64(d.retry_after, 200 * MS); /* one request at 5/s, no debt beyond empty */
    sl_table_destroy(r.t);
    /* delay_after: nginx's burst=4 delay=2 as leaky_queue burst 5, delay_after 2: at 100%
       the first 3 go at once, the 4th waits one interval (200 ms) */
    sl_params da = {.algorithm = SL_LEAKY_QUEUE, .rate = {5, SEC}, .burst = 5, .delay_after = 2};
    r = make(da);
    for (int i = 0; i < 3; i++) assert_i64(check(&r, 1, ONE, 0).delay, 0);
    assert_i64(check(&r, 1, ONE, 0).delay, 200 * MS);
    sl_table_destroy(r.t);
}

static void lone_request_passes(void **state) {
    (void)state;
    /* burst 3 at 1%: a lone request takes the whole bucket */
    sl_params p = {.algorithm = SL_TOKEN_BUCKET, .rate = {3, SEC}, .burst = 3};
    ramped r = make(p);
    sl_decision d = check(&r, 1, ONE / 100, 0);
    assert_true(d.allowed);
    assert_i64(d.limit, 1);
    assert_i64(d.remaining, 0);
    assert_false(check(&r, 1, ONE / 100, 0).allowed);
    /* a cap (one server's share of 2: 1.5 of the 3 requests) charges a lone request at
       most the share, and a decision of that share's table says 1 */
    assert_i64(sl_ramp_cost(&r.unit, 1, ONE / 100, 1500), 1500);
    sl_decision sd = {.allowed = true, .limit = 1500, .remaining = 0};
    sl_ramp_decision(&r.unit, ONE / 100, 1500, &sd);
    assert_i64(sd.limit, 1);
    /* a cost above the burst never passes, ramp or not */
    sl_decision never;
    int64_t units = sl_ramp_cost(&r.unit, 4, ONE / 100, 0);
    assert_i64(units, 4 * UNIT);
    assert_int_equal(sl_table_check(r.t, "x", 1, units, 0, &never), SL_ECOST);
    sl_table_destroy(r.t);
}

static uint64_t rng = 88172645463325252u;
static uint64_t next(void) {
    return helper_rand(&rng);
}
static int64_t pick(int64_t lo, int64_t hi) {
    return helper_pick(&rng, lo, hi);
}

static const sl_algorithm algos[] = {SL_FIXED_WINDOW, SL_SLIDING_WINDOW, SL_TOKEN_BUCKET, SL_GCRA,
                                     SL_LEAKY_QUEUE};

static sl_params random_params(void) {
    sl_params p = {.algorithm = algos[next() % COUNT(algos)],
                   .rate = {pick(1, 1000), pick(1, 10) * (next() % 2 ? SEC : MS)}};
    p.burst = sl_algorithm_is_bucket(p.algorithm) ? pick(1, 500) : 0;
    return p;
}

static void properties_of_factor_and_charge(void **state) {
    (void)state;
    for (int round = 0; round < 2000; round++) {
        sl_ramp r = {.duration = pick(1, 600) * SEC, .from = pick(1, ONE)};
        int64_t start = pick(0, 1000) * SEC, prev = 0;
        for (int64_t t = 0; t < start + r.duration + 2 * SEC; t += pick(1, 20) * SEC / 4) {
            int64_t f = sl_ramp_factor(&r, start, t);
            assert_le(prev, f); /* monotonic */
            assert_le(r.from, f);
            assert_le(f, ONE);
            if (t >= start + r.duration) assert_i64(f, ONE);
            prev = f;
        }
        assert_i64(sl_ramp_factor(&r, start, start + r.duration), ONE);
        sl_params p = random_params(), u;
        assert_int_equal(sl_ramp_params(&p, &u), SL_OK);
        int64_t f = pick(1, ONE), lim = sl_params_limit(&p);
        assert_le(sl_ramp_limit(&u, f), lim); /* never above the unramped limit */
        assert_le(1, sl_ramp_limit(&u, f));
        assert_i64(sl_ramp_limit(&u, ONE), lim);
        for (int64_t c = 1; c <= lim; c += pick(1, 50)) {
            assert_le(c * UNIT, sl_ramp_cost(&u, c, f, 0));            /* never charged less */
            assert_le(sl_ramp_cost(&u, c, f, 0), sl_params_limit(&u)); /* still passes fresh */
            assert_i64(sl_ramp_cost(&u, c, ONE, 0), c * UNIT);
            int64_t cap = pick(1, sl_params_limit(&u)); /* a share of the limit */
            int64_t capped = sl_ramp_cost(&u, c, f, cap);
            assert_le(c * UNIT, capped); /* a cap never charges less than unramped */
            if (c * UNIT <= cap) assert_le(capped, cap);
        }
    }
}

/* At a factor of 1 a unit table decides what the plain table decides. */
static void unit_table_at_one_is_plain(void **state) {
    (void)state;
    for (int round = 0; round < 100; round++) {
        sl_params p = random_params();
        ramped r = make(p);
        sl_table *plain;
        sl_table_options o = {.params = p, .max_memory = 1 << 20, .seed = 1};
        assert_int_equal(sl_table_create(&o, &plain), SL_OK);
        int64_t now = 0, lim = sl_params_limit(&p);
        for (int i = 0; i < 300; i++) {
            now += pick(0, 3) * p.rate.period / (p.rate.limit > 1 ? p.rate.limit : 1);
            int64_t c = pick(0, lim < 3 ? lim : 3);
            sl_decision a, b = check(&r, c, ONE, now);
            assert_int_equal(sl_table_check(plain, "k", 1, c, now, &a), SL_OK);
            assert_int_equal(a.allowed, b.allowed);
            assert_i64(a.limit, b.limit);
            assert_i64(a.remaining, b.remaining);
        }
        sl_table_destroy(plain);
        sl_table_destroy(r.t);
    }
}

/* A ramp never admits more than the limit without it: over [0, t] a token
 * bucket admits at most burst + rate x t, whatever the factors. */
static void bucket_never_above_unramped(void **state) {
    (void)state;
    for (int round = 0; round < 200; round++) {
        int64_t limit = pick(1, 100), burst = pick(1, 100);
        sl_params p = {.algorithm = next() % 2 ? SL_TOKEN_BUCKET : SL_GCRA,
                       .rate = {limit, SEC},
                       .burst = burst};
        ramped r = make(p);
        sl_ramp ramp = {.duration = pick(1, 30) * SEC, .from = pick(1, ONE)};
        int64_t now = 0, start = 0, admitted = 0;
        for (int i = 0; i < 2000; i++) {
            now += pick(0, 20) * MS;
            if (next() % 500 == 0) start = now; /* the ramp restarts */
            int64_t f = sl_ramp_factor(&ramp, start, now);
            int64_t c = pick(1, burst < 4 ? burst : 4);
            if (check(&r, c, f, now).allowed) admitted += c;
            /* burst + floor(limit * now / 1 s) */
            assert_le(admitted, burst + (int64_t)((__int128)limit * now / SEC));
        }
        sl_table_destroy(r.t);
    }
}

static void bad_input(void **state) {
    (void)state;
    sl_ramp r = {.duration = 0, .from = ONE};
    assert_int_equal(sl_ramp_validate(&r), SL_EINVAL);
    r = (sl_ramp){.duration = SEC, .from = 0};
    assert_int_equal(sl_ramp_validate(&r), SL_EINVAL);
    r = (sl_ramp){.duration = SEC, .from = ONE + 1};
    assert_int_equal(sl_ramp_validate(&r), SL_EINVAL);
    r = (sl_ramp){.duration = SL_RAMP_DURATION_MAX + 1, .from = ONE};
    assert_int_equal(sl_ramp_validate(&r), SL_EINVAL);
    assert_int_equal(sl_ramp_validate(NULL), SL_EINVAL);
    sl_params u, log = {.algorithm = SL_SLIDING_LOG, .rate = {10, SEC}};
    assert_int_equal(sl_ramp_params(&log, &u), SL_EALGORITHM);
    sl_params huge = {.algorithm = SL_FIXED_WINDOW, .rate = {INT64_C(1) << 60, SEC}};
    assert_int_not_equal(sl_ramp_params(&huge, &u), SL_OK);
    sl_params bad = {.algorithm = SL_TOKEN_BUCKET, .rate = {10, SEC}, .burst = 0};
    assert_int_equal(sl_ramp_params(&bad, &u), SL_EBURST);
    sl_params ok = {.algorithm = SL_TOKEN_BUCKET, .rate = {10, SEC}, .burst = 10};
    assert_int_equal(sl_ramp_params(&ok, &u), SL_OK);
    assert_i64(sl_ramp_cost(&u, 0, ONE, 0), 0);
    assert_i64(sl_ramp_cost(&u, INT64_MAX / 2, ONE, 0), INT64_MAX);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(factor_formula),
        cmocka_unit_test(bucket_scaled),
        cmocka_unit_test(full_key_takes_scaled_burst),
        cmocka_unit_test(windows_scaled),
        cmocka_unit_test(queue_delays_scaled),
        cmocka_unit_test(options_scaled),
        cmocka_unit_test(lone_request_passes),
        cmocka_unit_test(properties_of_factor_and_charge),
        cmocka_unit_test(unit_table_at_one_is_plain),
        cmocka_unit_test(bucket_never_above_unramped),
        cmocka_unit_test(bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
