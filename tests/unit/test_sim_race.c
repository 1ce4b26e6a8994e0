/* test_sim_race.c: the seed's narrative of the algorithm race (section 05)
 * as tests on the built-in traces: the fixed window's boundary burst, the
 * sliding log never above the limit in any period, the token bucket the
 * most generous, the queue accepting exactly what GCRA accepts while its
 * released stream stays under the rate, every algorithm near the rate on
 * steady traffic; plus the exact busiest-interval computation against brute
 * force, independent keys, costs and window alignment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "client/prng.h"
#include "cli/sim_race.h"
#include "helpers.h"

enum { FW, SLOG, SWIN, TB, GCRA, LQ };

static const sl__cli_race_config five_per_s = {
    .rate = {5, SEC},
    .burst = 5,
    .algs = {SL_FIXED_WINDOW, SL_SLIDING_LOG, SL_SLIDING_WINDOW, SL_TOKEN_BUCKET, SL_GCRA,
             SL_LEAKY_QUEUE},
    .nalgs = 6,
};

static void run_builtin(sl__cli_trace_builtin which, uint64_t seed, sl__cli_trace *t,
                        sl__cli_race_result res[6]) {
    char err[256];
    assert_int_equal(sl__cli_trace_builtin_make(which, 6000, seed, t, err, sizeof err), 0);
    assert_int_equal(sl__cli_race_run(t, &five_per_s, res, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) assert_int_equal(res[i].allowed + res[i].rejected, t->n);
}

/* Most allowed requests (by arrival + delay) in any [s, s + len), brute force. */
static int64_t brute_busiest(const sl__cli_trace *t, const sl__cli_race_result *r, int64_t len) {
    int64_t best = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!r->ok[i]) continue;
        int64_t s = t->reqs[i].t + r->delay[i], n = 0;
        for (size_t j = 0; j < t->n; j++) {
            int64_t at = t->reqs[j].t + r->delay[j];
            if (r->ok[j] && at >= s && at < s + len) n += t->reqs[j].cost;
        }
        if (n > best) best = n;
    }
    return best;
}

static void busiest_matches_brute_force(void **state) {
    (void)state;
    sl__prng r;
    sl__prng_seed(&r, 42);
    for (int round = 0; round < 300; round++) {
        size_t n = (size_t)sl__prng_upto(&r, 40);
        int64_t times[41], weights[41];
        int64_t t = 0;
        for (size_t i = 0; i < n; i++) {
            t += (int64_t)sl__prng_upto(&r, 300);
            times[i] = t;
            weights[i] = (int64_t)sl__prng_upto(&r, 3);
        }
        int64_t period = 1 + (int64_t)sl__prng_upto(&r, 1000);
        int64_t best = 0, best_at = n ? times[0] : 0;
        for (size_t i = 0; i < n; i++) {
            int64_t sum = 0;
            for (size_t j = 0; j < n; j++)
                if (times[j] >= times[i] && times[j] < times[i] + period) sum += weights[j];
            if (sum > best) best = sum, best_at = times[i];
        }
        int64_t at;
        assert_int_equal(sl__cli_busiest_interval(times, weights, n, period, &at), best);
        assert_int_equal(at, best_at);
    }
}

static void bursty_tells_the_seeds_story(void **state) {
    (void)state;
    sl__cli_trace t;
    sl__cli_race_result res[6];
    run_builtin(TRACE_BURSTY, 1, &t, res);

    /* fixed window: more than the limit in one period, thanks to the burst
     * straddling the 5 s edge: its busiest interval holds allowed requests on
     * both sides of the edge */
    assert_true(res[FW].busiest > 5);
    assert_true(res[FW].busiest_at < 5 * SEC && res[FW].busiest_at + SEC > 5 * SEC);
    int64_t before = 0, after = 0;
    for (size_t i = 0; i < t.n; i++) {
        int64_t at = t.reqs[i].t;
        if (!res[FW].ok[i] || at < res[FW].busiest_at || at >= res[FW].busiest_at + SEC) continue;
        if (at < 5 * SEC)
            before++;
        else
            after++;
    }
    assert_true(before > 0 && after > 0 && before + after == res[FW].busiest);

    /* sliding log: never more than 5 in any second, checked by brute force */
    assert_true(res[SLOG].busiest <= 5);
    assert_int_equal(brute_busiest(&t, &res[SLOG], SEC), res[SLOG].busiest);
    /* it is the strictest of the windows, the counter lands close to it */
    assert_true(res[SLOG].allowed <= res[FW].allowed);
    assert_in_range(res[SWIN].allowed, res[SLOG].allowed - 3, res[SLOG].allowed + 3);
    /* the counter's even-spread assumption lets more than 5 through around 2 s */
    assert_true(res[SWIN].busiest > 5);

    /* token bucket: the most generous, close to burst + rate in its busiest second */
    for (int i = 0; i < 6; i++) assert_true(res[TB].allowed >= res[i].allowed);
    assert_in_range(res[TB].busiest, 8, 10);

    /* the queue accepts what the token bucket and GCRA accept, and its
     * released stream never exceeds the rate in any second */
    assert_int_equal(res[LQ].allowed, res[TB].allowed);
    assert_int_equal(res[LQ].allowed, res[GCRA].allowed);
    assert_true(res[LQ].busiest <= 5);
    assert_int_equal(brute_busiest(&t, &res[LQ], SEC), res[LQ].busiest);
    assert_int_equal(res[LQ].max_delay, 800 * MS); /* room for 4 to wait, 200 ms apart */
    for (int i = 0; i < 5; i++) assert_int_equal(res[i].max_delay, 0);

    /* busiest is exact for every row */
    for (int i = 0; i < 6; i++) assert_int_equal(brute_busiest(&t, &res[i], SEC), res[i].busiest);
    sl__cli_race_results_free(res, 6);
    sl__cli_trace_free(&t);
}

static void edge_fixed_window_doubles_the_limit(void **state) {
    (void)state;
    sl__cli_trace t;
    sl__cli_race_result res[6];
    run_builtin(TRACE_EDGE, 1, &t, res);
    /* about 2x the limit in well under one period: 10 within half a second */
    int64_t times[20], ones[20];
    size_t m = 0;
    for (size_t i = 0; i < t.n; i++)
        if (res[FW].ok[i]) times[m] = t.reqs[i].t, ones[m++] = 1;
    assert_int_equal(sl__cli_busiest_interval(times, ones, m, SEC / 2, NULL), 10);
    assert_int_equal(res[FW].busiest, 10);
    /* the sliding log never exceeds the limit in any period */
    assert_int_equal(res[SLOG].busiest, 5);
    assert_int_equal(brute_busiest(&t, &res[SLOG], SEC), 5);
    sl__cli_race_results_free(res, 6);
    sl__cli_trace_free(&t);
}

static void steady_ends_near_the_rate(void **state) {
    (void)state;
    sl__cli_trace t;
    sl__cli_race_result res[6];
    run_builtin(TRACE_STEADY, 1, &t, res);
    /* after the start, every algorithm lets through about 5 per second:
     * count the last 5 s (25 at exactly the rate) */
    for (int a = 0; a < 6; a++) {
        int64_t late = 0;
        for (size_t i = 0; i < t.n; i++) late += res[a].ok[i] && t.reqs[i].t >= 5 * SEC;
        assert_in_range(late, 20, 26);
    }
    /* the seed's numbers: the log 50, the counter noticeably stingier */
    assert_int_equal(res[SLOG].allowed, 50);
    assert_true(res[SWIN].allowed < res[SLOG].allowed);
    sl__cli_race_results_free(res, 6);
    sl__cli_trace_free(&t);
}

static void token_bucket_equals_gcra_and_queue_accepts_the_same(void **state) {
    (void)state;
    for (sl__cli_trace_builtin b = TRACE_BURSTY; b < TRACE_NONE; b++) {
        for (uint64_t seed = 1; seed <= (b == TRACE_POISSON ? 5u : 1u); seed++) {
            sl__cli_trace t;
            sl__cli_race_result res[6];
            run_builtin(b, seed, &t, res);
            for (size_t i = 0; i < t.n; i++) {
                assert_int_equal(res[TB].ok[i], res[GCRA].ok[i]);
                assert_int_equal(res[LQ].ok[i], res[GCRA].ok[i]);
            }
            assert_true(res[LQ].busiest <= 5);
            sl__cli_race_results_free(res, 6);
            sl__cli_trace_free(&t);
        }
    }
}

static void keys_are_independent_and_costs_count(void **state) {
    (void)state;
    const char *text = "0,a\n0,a\n0,a\n0,b\n0,b\n0,b\n0.1,a,2\n0.1,b,9\n";
    sl__cli_trace t;
    char err[256];
    assert_int_equal(sl__cli_trace_parse("t.csv", text, strlen(text), &t, err, sizeof err), 0);
    sl__cli_race_config cfg = {
        .rate = {5, SEC}, .burst = 4, .algs = {SL_FIXED_WINDOW, SL_TOKEN_BUCKET}, .nalgs = 2};
    sl__cli_race_result res[2];
    assert_int_equal(sl__cli_race_run(&t, &cfg, res, err, sizeof err), 0);
    /* fixed window 5 per key: a gets 3 + 2 (cost 2), b gets 3 and not 9 */
    assert_int_equal(res[0].allowed, 7);
    assert_int_equal(res[0].busiest, 8);     /* cost units, both keys together */
    assert_int_equal(res[0].busiest_key, 5); /* never more than the limit for one key */
    /* token bucket of 4 per key: a gets 3, then cost 2 does not fit (1 + 0.5
     * tokens); b gets 3, and cost 9 > burst can never pass (refused, no error) */
    assert_int_equal(res[1].allowed, 6);
    assert_false(res[1].ok[7]);
    sl__cli_race_results_free(res, 2);
    sl__cli_trace_free(&t);
}

static void windows_align_with_the_trace_seconds(void **state) {
    (void)state;
    const char *text = "0.999\n1.000\n1.999\n2\n";
    sl__cli_trace t;
    char err[256];
    assert_int_equal(sl__cli_trace_parse("t.csv", text, strlen(text), &t, err, sizeof err), 0);
    sl__cli_race_config cfg = {.rate = {1, SEC}, .burst = 1, .algs = {SL_FIXED_WINDOW}, .nalgs = 1};
    sl__cli_race_result res[1];
    assert_int_equal(sl__cli_race_run(&t, &cfg, res, err, sizeof err), 0);
    /* windows are [k s, (k+1) s) of the trace: 0.999 in the first, 1.000
     * opens the second, 1.999 finds it full, 2 opens the third */
    assert_int_equal(res[0].allowed, 3);
    assert_true(res[0].ok[0] && res[0].ok[1] && !res[0].ok[2] && res[0].ok[3]);
    sl__cli_race_results_free(res, 1);
    sl__cli_trace_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(busiest_matches_brute_force),
        cmocka_unit_test(bursty_tells_the_seeds_story),
        cmocka_unit_test(edge_fixed_window_doubles_the_limit),
        cmocka_unit_test(steady_ends_near_the_rate),
        cmocka_unit_test(token_bucket_equals_gcra_and_queue_accepts_the_same),
        cmocka_unit_test(keys_are_independent_and_costs_count),
        cmocka_unit_test(windows_align_with_the_trace_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
