/* test_sim_fair.c: `sluice sim fair`, noisy neighbours (seed section 11):
 * - the default run's numbers for seed 1 (a 10,000-job dump, 100 small
 *   tenants over 10 s, a server of 1000/s);
 * - on several seeds and weights: under FIFO every small job waits behind
 *   the whole dump; under weighted fair queuing it waits at most the job in
 *   service, the big tenant's visit (its weight) and the small tenants that
 *   were already waiting;
 * - a worked example with a rate that does not divide the second (3/s);
 * - without a dump both disciplines agree; determinism per seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "cli/sim_fair.h"
#include "helpers.h"

#define MSEC INT64_C(1000000)

static sl__cli_fair_config default_config(void) {
    return (sl__cli_fair_config){.jobs = 10000,
                                 .tenants = 100,
                                 .spread = 10 * SEC,
                                 .rate = {1000, SEC},
                                 .weight_big = 1,
                                 .weight_small = 1,
                                 .seed = 1};
}

static void default_run_numbers(void **state) {
    (void)state;
    sl__cli_fair_config cfg = default_config();
    sl__cli_fair_result r;
    char err[256];
    assert_int_equal(sl__cli_fair_run(&cfg, &r, err, sizeof err), 0);
    assert_int_equal(r.service, MSEC);
    /* FIFO: a small job waits for what is left of the dump */
    assert_int_equal(r.small[FAIR_FIFO].p50, 5219959025);
    assert_int_equal(r.small[FAIR_FIFO].p99, 9856305021);
    assert_int_equal(r.small[FAIR_FIFO].max, 9917885698);
    assert_int_equal(r.big[FAIR_FIFO].p50, 4999 * MSEC);
    assert_int_equal(r.big[FAIR_FIFO].max, 9999 * MSEC);
    /* WFQ: about a job's service time; the dump pays 100 jobs' worth */
    assert_int_equal(r.small[FAIR_WFQ].p50, 510796);
    assert_int_equal(r.small[FAIR_WFQ].p99, 995536);
    assert_int_equal(r.small[FAIR_WFQ].max, 1311650);
    assert_int_equal(r.big[FAIR_WFQ].p50, 5052 * MSEC);
    assert_int_equal(r.big[FAIR_WFQ].max, 10099 * MSEC);
    /* the server never idles: the last job starts at the same time */
    assert_int_equal(r.done_at[FAIR_FIFO], 10099 * MSEC);
    assert_int_equal(r.done_at[FAIR_WFQ], 10099 * MSEC);
    sl__cli_fair_result_free(&r);
}

static int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

static void bounded_under_wfq_behind_the_dump_under_fifo(void **state) {
    (void)state;
    static const struct {
        int64_t jobs, tenants, spread;
        sl_rate rate;
        uint32_t wb, ws;
    } cases[] = {
        {10000, 100, 10 * SEC, {1000, SEC}, 1, 1}, {10000, 100, 10 * SEC, {1000, SEC}, 10, 1},
        {5000, 1000, 2 * SEC, {1000, SEC}, 4, 1},  {2000, 300, 1 * SEC, {7, 10 * MSEC}, 1, 3},
        {3000, 50, 30 * SEC, {100, SEC}, 2, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (uint64_t seed = 1; seed <= 4; seed++) {
            sl__cli_fair_config cfg = {.jobs = cases[c].jobs,
                                       .tenants = cases[c].tenants,
                                       .spread = cases[c].spread,
                                       .rate = cases[c].rate,
                                       .weight_big = cases[c].wb,
                                       .weight_small = cases[c].ws,
                                       .seed = seed};
            sl__cli_fair_result r;
            char err[256];
            assert_int_equal(sl__cli_fair_run(&cfg, &r, err, sizeof err), 0);
            int64_t svc = ceil_div(cfg.rate.period, cfg.rate.limit);
            int64_t dump_end = (int64_t)((__int128)cfg.jobs * cfg.rate.period / cfg.rate.limit);
            for (int64_t i = 0; i < cfg.tenants; i++) {
                int64_t a = r.arrival[i];
                assert_true(a >= 0 && a <= cfg.spread);
                /* FIFO: behind every job of the dump */
                assert_true(r.wait[FAIR_FIFO][i] >= dump_end - a);
                /* WFQ: the job in service, the big tenant's visit, and the
                 * small jobs already waiting when it came */
                int64_t ahead = 0;
                for (int64_t j = 0; j < cfg.tenants; j++)
                    if (j != i && r.arrival[j] <= a && r.arrival[j] + r.wait[FAIR_WFQ][j] >= a)
                        ahead++;
                assert_true(r.wait[FAIR_WFQ][i] <= (1 + cfg.weight_big + ahead) * svc);
            }
            assert_true(r.small[FAIR_WFQ].max < r.small[FAIR_FIFO].p50);
            assert_int_equal(r.done_at[FAIR_FIFO], r.done_at[FAIR_WFQ]);
            sl__cli_fair_result_free(&r);
        }
}

static void a_rate_that_does_not_divide(void **state) {
    (void)state;
    /* 3/s: services start at 0, 1/3 s, 2/3 s, 1 s (rounded down to the ns) */
    sl__cli_fair_config cfg = {.jobs = 3,
                               .tenants = 1,
                               .spread = 0,
                               .rate = {3, SEC},
                               .weight_big = 1,
                               .weight_small = 1,
                               .seed = 1};
    sl__cli_fair_result r;
    char err[256];
    assert_int_equal(sl__cli_fair_run(&cfg, &r, err, sizeof err), 0);
    assert_int_equal(r.arrival[0], 0);
    assert_int_equal(r.wait[FAIR_FIFO][0], SEC);      /* after the three */
    assert_int_equal(r.wait[FAIR_WFQ][0], 333333333); /* after the first */
    assert_int_equal(r.big[FAIR_WFQ].max, 1 * SEC);   /* the dump's last */
    assert_int_equal(r.done_at[FAIR_FIFO], SEC);
    sl__cli_fair_result_free(&r);

    /* weight 2 for the dump: two of its jobs, then the small one */
    cfg.weight_big = 2;
    assert_int_equal(sl__cli_fair_run(&cfg, &r, err, sizeof err), 0);
    assert_int_equal(r.wait[FAIR_WFQ][0], 666666666);
    sl__cli_fair_result_free(&r);
}

static void without_a_dump_both_agree(void **state) {
    (void)state;
    sl__cli_fair_config cfg = default_config();
    cfg.jobs = 0;
    cfg.tenants = 2000;
    cfg.spread = SEC; /* 2000 jobs in 1 s at 1000/s: a queue builds up */
    sl__cli_fair_result r;
    char err[256];
    assert_int_equal(sl__cli_fair_run(&cfg, &r, err, sizeof err), 0);
    for (int64_t i = 0; i < cfg.tenants; i++)
        assert_int_equal(r.wait[FAIR_FIFO][i], r.wait[FAIR_WFQ][i]);
    assert_true(r.small[FAIR_FIFO].max > 500 * MSEC);
    assert_int_equal(r.big[FAIR_FIFO].max, 0);
    sl__cli_fair_result_free(&r);
}

static void deterministic_per_seed(void **state) {
    (void)state;
    sl__cli_fair_config cfg = default_config();
    sl__cli_fair_result a, b, c;
    char err[256];
    assert_int_equal(sl__cli_fair_run(&cfg, &a, err, sizeof err), 0);
    assert_int_equal(sl__cli_fair_run(&cfg, &b, err, sizeof err), 0);
    cfg.seed = 2;
    assert_int_equal(sl__cli_fair_run(&cfg, &c, err, sizeof err), 0);
    bool differ = false;
    for (int64_t i = 0; i < cfg.tenants; i++) {
        assert_int_equal(a.arrival[i], b.arrival[i]);
        assert_int_equal(a.wait[FAIR_WFQ][i], b.wait[FAIR_WFQ][i]);
        assert_int_equal(a.wait[FAIR_FIFO][i], b.wait[FAIR_FIFO][i]);
        differ |= a.arrival[i] != c.arrival[i];
    }
    assert_true(differ);
    sl__cli_fair_result_free(&a);
    sl__cli_fair_result_free(&b);
    sl__cli_fair_result_free(&c);
}

static void bad_parameters(void **state) {
    (void)state;
    sl__cli_fair_config cfg = default_config();
    sl__cli_fair_result r;
    char err[256];
    cfg.tenants = 0;
    assert_int_equal(sl__cli_fair_run(&cfg, &r, err, sizeof err), SL_EINVAL);
    cfg = default_config();
    cfg.weight_big = 0;
    assert_int_equal(sl__cli_fair_run(&cfg, &r, err, sizeof err), SL_EINVAL);
    cfg = default_config();
    cfg.rate = (sl_rate){1, INT64_C(1) << 62}; /* 10,100 jobs of 2^62 ns each */
    assert_int_equal(sl__cli_fair_run(&cfg, &r, err, sizeof err), SL_EOVERFLOW);
    assert_non_null(strstr(err, "time domain"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_run_numbers),
        cmocka_unit_test(bounded_under_wfq_behind_the_dump_under_fifo),
        cmocka_unit_test(a_rate_that_does_not_divide),
        cmocka_unit_test(without_a_dump_both_agree),
        cmocka_unit_test(deterministic_per_seed),
        cmocka_unit_test(bad_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
