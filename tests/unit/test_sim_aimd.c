/* test_sim_aimd.c: the adaptive client of seed section 10: the seed's
 * example (20 -> 20.5 -> 21 -> 10.5), floor and cap, the client pacing
 * itself exactly at its current rate, and the sawtooth around the server's
 * limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/sim_aimd.h"
#include "helpers.h"

static sl__cli_aimd_config defaults(void) {
    return (sl__cli_aimd_config){
        .start = 1000,
        .increase = 500,
        .floor = 1000,
        .cap = 50000,
        .decrease_ppm = 500000,
        .alg = SL_TOKEN_BUCKET,
        .rate = {20, SEC},
        .burst = 10,
        .duration = 30 * SEC,
    };
}

static void seed_example_and_bounds(void **state) {
    (void)state;
    sl__cli_aimd_config cfg = defaults();
    /* "Starting from 20/s, two successes and a 429 give 20.5 -> 21 -> 10.5" */
    int64_t r = 20000;
    r = sl__cli_aimd_step(&cfg, r, false);
    assert_int_equal(r, 20500);
    r = sl__cli_aimd_step(&cfg, r, false);
    assert_int_equal(r, 21000);
    r = sl__cli_aimd_step(&cfg, r, true);
    assert_int_equal(r, 10500);
    /* halving rounds down to 0.001/s, never below the floor, never above the cap */
    assert_int_equal(sl__cli_aimd_step(&cfg, 42875, true), 21437);
    assert_int_equal(sl__cli_aimd_step(&cfg, 1500, true), 1000);
    assert_int_equal(sl__cli_aimd_step(&cfg, 49800, false), 50000);
}

static void sawtooth_around_the_limit(void **state) {
    (void)state;
    sl__cli_aimd_config cfg = defaults();
    sl__cli_aimd_result r;
    char err[256];
    assert_int_equal(sl__cli_aimd_run(&cfg, &r, err, sizeof err), 0);
    assert_true(r.n > 0);
    assert_int_equal((int64_t)r.n, r.served + r.rejected);
    int64_t prev_rate = cfg.start, prev_prev_rate = cfg.start, prev_t = -1, cuts = 0, above = 0,
            served_late = 0;
    for (size_t i = 0; i < r.n; i++) {
        const sl__cli_aimd_point *p = &r.pts[i];
        assert_true(p->t >= 0 && p->t < cfg.duration);
        assert_in_range(p->rate, cfg.floor, cfg.cap);
        /* the rate follows the rule exactly */
        assert_int_equal(p->rate, sl__cli_aimd_step(&cfg, prev_rate, !p->ok));
        /* paced by its own limiter: never faster than the rate in force,
         * (t - prev_t) * rate >= 1 request (1000 s in these units), except for
         * the credit of the nanosecond the previous send time was rounded up
         * by (at most 1 ns at the rate before; the limiter keeps that fraction
         * rather than lose it, so there is no drift) */
        if (prev_t >= 0) assert_true((p->t - prev_t) * prev_rate + prev_prev_rate >= 1000 * SEC);
        prev_prev_rate = prev_rate;
        if (!p->ok) cuts++;
        if (p->rate > 20000) above++;
        if (p->t >= 10 * SEC) served_late += p->ok;
        prev_rate = p->rate;
        prev_t = p->t;
    }
    /* a sawtooth: cut many times, over the limit between cuts */
    assert_true(cuts >= 8);
    assert_true(above > 0);
    /* and the served rate hugs the server's limit: 20/s over the last 20 s */
    assert_in_range(served_late, 300, 20 * 20 + 10);
    sl__cli_aimd_result_free(&r);
}

static void a_generous_server_lets_the_client_reach_the_cap(void **state) {
    (void)state;
    sl__cli_aimd_config cfg = defaults();
    cfg.rate = (sl_rate){1000, SEC};
    cfg.burst = 1000;
    cfg.duration = 20 * SEC;
    sl__cli_aimd_result r;
    char err[256];
    assert_int_equal(sl__cli_aimd_run(&cfg, &r, err, sizeof err), 0);
    assert_int_equal(r.rejected, 0);
    assert_int_equal(r.pts[r.n - 1].rate, cfg.cap);
    sl__cli_aimd_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_example_and_bounds),
        cmocka_unit_test(sawtooth_around_the_limit),
        cmocka_unit_test(a_generous_server_lets_the_client_reach_the_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
