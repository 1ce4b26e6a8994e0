/* test_adaptive.c: the adaptive concurrency limit (sluice/adaptive.h) on a
 * fake clock: growth while latency stays at its minimum (the exact
 * sequence of the header), shrinking when it rises, the bounds, windows
 * without samples, min_rtt measured afresh after its window, a clock going
 * back, bad arguments; and an sl_concurrency whose limit it drives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sluice/sluice.h"
#include "helpers.h"

#define T0 (1000 * SEC)

static sl_adaptive *make(int64_t min, int64_t max, int64_t init) {
    sl_adaptive_options o = {.min_limit = min, .max_limit = max, .initial_limit = init};
    sl_adaptive *a;
    assert_int_equal(sl_adaptive_create(&o, T0, &a), SL_OK);
    return a;
}

/* n samples of `lat` in window w (1 s windows from T0), then one sample in
 * the next window so that w's take effect; returns the limit. */
static int64_t window(sl_adaptive *a, int64_t w, int n, int64_t lat) {
    for (int i = 0; i < n; i++) sl_adaptive_sample(a, lat, T0 + w * SEC + i);
    return sl_adaptive_limit(a);
}

static void test_grows_at_min_rtt(void **state) {
    (void)state;
    sl_adaptive *a = make(1, 1000, 10);
    assert_int_equal(sl_adaptive_limit(a), 10);
    int64_t want[] = {10, 12, 14, 16, 18, 20};
    for (int w = 0; w < 6; w++) assert_int_equal(window(a, w, 5, 10 * MS), want[w]);
    assert_int_equal(sl_adaptive_min_rtt(a), 10 * MS);
    /* up to the max */
    for (int w = 6; w < 400; w++) window(a, w, 3, 10 * MS);
    assert_int_equal(sl_adaptive_limit(a), 1000);
    /* latency within the tolerance (150 %) still grows or holds */
    sl_adaptive_destroy(a);
    a = make(1, 1000, 10);
    window(a, 0, 1, 10 * MS);
    assert_int_equal(window(a, 1, 1, 15 * MS), 12); /* window 0's effect: 10 -> 12 */
    assert_int_equal(window(a, 2, 1, 15 * MS), 14); /* 15 ms = 1.5 x min: gradient 1 */
    assert_int_equal(window(a, 3, 1, 15 * MS), 16);
    sl_adaptive_destroy(a);
    /* a limit of 1 grows */
    a = make(1, 10, 1);
    window(a, 0, 1, MS);
    assert_int_equal(window(a, 1, 1, MS), 2);
    sl_adaptive_destroy(a);
}

static void test_shrinks_when_latency_rises(void **state) {
    (void)state;
    sl_adaptive *a = make(10, 1000, 100);
    window(a, 0, 10, 10 * MS); /* min_rtt 10 ms */
    /* 40 ms: more than twice the tolerated 15 ms, the gradient is 1/2 */
    assert_int_equal(window(a, 1, 10, 40 * MS), 105); /* window 0's growth: 100 + 10 */
    assert_int_equal(window(a, 2, 10, 40 * MS), 84);  /* 105 -> 52 + 10 -> ceil(167 / 2) */
    assert_int_equal(window(a, 3, 10, 40 * MS), 68);  /* 84 -> 42 + 9 -> ceil(135 / 2) */
    for (int w = 4; w < 40; w++) window(a, w, 10, 40 * MS);
    /* the floor: 10 -> 5 + 3 -> ceil(18 / 2) = 9, clamped to 10 */
    assert_int_equal(sl_adaptive_limit(a), 10);
    sl_adaptive_destroy(a);
    /* without a floor in the way it settles where the headroom balances the
       halving: 6 -> 3 + 2 -> ceil(11 / 2) = 6 */
    a = make(1, 1000, 100);
    for (int w = 0; w < 40; w++) window(a, w, 10, w ? 40 * MS : 10 * MS);
    assert_int_equal(sl_adaptive_limit(a), 6);
    sl_adaptive_destroy(a);
    /* a gradient between 1/2 and 1: 20 ms against 15 tolerated = 3/4 */
    a = make(1, 1000, 100);
    window(a, 0, 1, 10 * MS);
    assert_int_equal(window(a, 1, 1, 20 * MS), 105); /* window 0: 100 -> 105 */
    /* 105 x 15/20 = 78 (floor of 78.75), + 10 -> ceil(193 / 2) = 97 */
    assert_int_equal(window(a, 2, 1, 20 * MS), 97);
    assert_int_equal(window(a, 3, 1, 20 * MS), 89); /* 72 + 9 -> ceil(178 / 2) */
    sl_adaptive_destroy(a);
}

static void test_quiet_windows_and_min_rtt_reset(void **state) {
    (void)state;
    sl_adaptive_options o = {.min_limit = 1,
                             .max_limit = 100,
                             .initial_limit = 50,
                             .window = SEC,
                             .min_rtt_window = 10 * SEC};
    sl_adaptive *a;
    assert_int_equal(sl_adaptive_create(&o, T0, &a), SL_OK);
    window(a, 0, 1, 10 * MS);
    /* nine windows without samples change nothing */
    assert_int_equal(window(a, 10, 1, 10 * MS), 54); /* only window 0 counted: 50 -> 54 */
    /* the backend is slower for good: within the min_rtt window it is judged against 10 ms */
    assert_int_equal(window(a, 11, 1, 30 * MS), 58);
    assert_int_equal(window(a, 12, 1, 30 * MS), 47); /* gradient 1/2 */
    assert_int_equal(sl_adaptive_min_rtt(a), 10 * MS);
    /* ... and after it, 30 ms is the new minimum: growth again */
    for (int w = 13; w < 25; w++) window(a, w, 1, 30 * MS);
    assert_int_equal(sl_adaptive_min_rtt(a), 30 * MS);
    int64_t before = sl_adaptive_limit(a);
    assert_true(window(a, 25, 1, 30 * MS) > before);
    sl_adaptive_destroy(a);
}

static void test_clock_back_and_args(void **state) {
    (void)state;
    sl_adaptive *a = make(1, 100, 10);
    sl_adaptive_sample(a, 10 * MS, T0 + 5 * SEC);
    /* an earlier now counts in the current window and ends none */
    assert_int_equal(sl_adaptive_sample(a, 10 * MS, T0), 10);
    assert_int_equal(sl_adaptive_sample(a, 10 * MS, T0 + 6 * SEC), 12);
    assert_int_equal(sl_adaptive_sample(a, 0, T0 + 7 * SEC), SL_EINVAL);
    assert_int_equal(sl_adaptive_sample(a, 1, -1), SL_EINVAL);
    sl_adaptive_destroy(a);
    sl_adaptive_options bad[] = {
        {.min_limit = 0, .max_limit = 1},
        {.min_limit = 2, .max_limit = 1},
        {.min_limit = 1, .max_limit = SL_CONCURRENCY_MAX + 1},
        {.min_limit = 1, .max_limit = 10, .initial_limit = 11},
        {.min_limit = 1, .max_limit = 10, .window = 1},
        {.min_limit = 1, .max_limit = 10, .window = 2 * SEC, .min_rtt_window = SEC},
        {.min_limit = 1, .max_limit = 10, .tolerance_pct = 99},
        {.min_limit = 1, .max_limit = 10, .tolerance_pct = 1001},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(sl_adaptive_create(&bad[i], T0, &a), SL_EINVAL);
}

/* The adaptive limit driving a concurrency limiter's. */
static void test_drives_concurrency(void **state) {
    (void)state;
    sl_adaptive *a = make(2, 50, 2);
    sl_concurrency_options co = {.limit = 2, .lease = 60 * SEC, .seed = 1};
    sl_concurrency *c;
    assert_int_equal(sl_concurrency_create(&co, &c), SL_OK);
    int64_t now = T0;
    for (int w = 0; w < 20; w++) {
        for (int i = 0; i < 3; i++, now += MS) {
            sl_acquire q;
            assert_int_equal(sl_concurrency_acquire(c, "b", 1, now, &q), SL_OK);
            if (!q.acquired) continue;
            sl_concurrency_release(c, "b", 1, q.lease.id, now + MS, NULL);
            sl_concurrency_set_limit(c, sl_adaptive_sample(a, 5 * MS, now + MS));
        }
        now = T0 + (w + 1) * SEC;
    }
    assert_true(sl_concurrency_limit(c) > 2);
    assert_int_equal(sl_concurrency_limit(c), sl_adaptive_limit(a));
    sl_concurrency_destroy(c);
    sl_adaptive_destroy(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grows_at_min_rtt),
        cmocka_unit_test(test_shrinks_when_latency_rises),
        cmocka_unit_test(test_quiet_windows_and_min_rtt_reset),
        cmocka_unit_test(test_clock_back_and_args),
        cmocka_unit_test(test_drives_concurrency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
