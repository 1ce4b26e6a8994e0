/* test_sim_herd.c: the retry herd of seed section 09 as tests: with no
 * jitter the workers return in lockstep and most are refused again; with a
 * jitter as large as the hint they spread under the limit, all are served,
 * with about one retry each; determinism per seed; nothing after --duration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cli/sim_herd.h"
#include "helpers.h"

static sl__cli_herd_config seed_config(int64_t jitter_s) {
    return (sl__cli_herd_config){
        .workers = 300,
        .alg = SL_TOKEN_BUCKET,
        .rate = {150, SEC},
        .burst = 30,
        .retry_after = 2 * SEC,
        .jitter = jitter_s * SEC,
        .duration = 12 * SEC,
        .seed = 1,
    };
}

static void no_jitter_lockstep_most_refused_again(void **state) {
    (void)state;
    sl__cli_herd_config cfg = seed_config(0);
    sl__cli_herd_result r;
    char err[256];
    assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), 0);
    /* lockstep: requests only in the 100 ms bins at 0, 2, 4, ... s */
    int waves = 0;
    for (size_t b = 0; b < r.nbins; b++) {
        int64_t sent = r.served_bin[b] + r.rejected_bin[b];
        if (b % 20 != 0) {
            assert_int_equal(sent, 0);
            continue;
        }
        waves++;
        /* every wave gets the burst and no more; most are refused */
        assert_int_equal(r.served_bin[b], 30);
        assert_true(r.rejected_bin[b] * 10 >= sent * 8);
    }
    assert_int_equal(waves, 6);
    assert_int_equal(r.sent, 300 + 270 + 240 + 210 + 180 + 150);
    assert_int_equal(r.served, 180);
    assert_int_equal(r.unserved, 120);
    assert_int_equal(r.last_served_at, 10 * SEC);
    assert_int_equal(r.all_served_at, -1);
    sl__cli_herd_result_free(&r);

    /* the seed's telling: the key exhausted at 0, so all 300 were told 2 s */
    cfg.start_empty = true;
    assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), 0);
    assert_int_equal(r.retries, 1200);
    assert_int_equal(r.unserved, 150);
    sl__cli_herd_result_free(&r);
}

static void jitter_as_large_as_the_hint_spreads_the_herd(void **state) {
    (void)state;
    sl__cli_herd_config cfg = seed_config(2);
    sl__cli_herd_result r;
    char err[256];
    for (uint64_t seed = 1; seed <= 5; seed++) {
        cfg.seed = seed;
        cfg.start_empty = false;
        assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), 0);
        assert_int_equal(r.unserved, 0);
        assert_true(r.all_served_at >= 2 * SEC && r.all_served_at <= 4 * SEC);
        /* 270 were refused at 0: close to one retry each */
        assert_in_range(r.retries, 270, 290);
        sl__cli_herd_result_free(&r);

        /* all 300 told 2 s at once: close to one request per worker */
        cfg.start_empty = true;
        assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), 0);
        assert_int_equal(r.unserved, 0);
        assert_in_range(r.retries, 300, 320);
        assert_true(r.all_served_at <= 4 * SEC);
        sl__cli_herd_result_free(&r);
    }
    /* a smaller jitter is better than none but bunches more */
    cfg = seed_config(1);
    sl__cli_herd_result none, some;
    sl__cli_herd_config c0 = seed_config(0);
    assert_int_equal(sl__cli_herd_run(&c0, &none, err, sizeof err), 0);
    assert_int_equal(sl__cli_herd_run(&cfg, &some, err, sizeof err), 0);
    assert_true(some.sent < none.sent && some.unserved <= none.unserved);
    assert_true(some.retries > 270);
    sl__cli_herd_result_free(&none);
    sl__cli_herd_result_free(&some);
}

static void deterministic_per_seed(void **state) {
    (void)state;
    sl__cli_herd_config cfg = seed_config(1);
    sl__cli_herd_result a, b, c;
    char err[256];
    assert_int_equal(sl__cli_herd_run(&cfg, &a, err, sizeof err), 0);
    assert_int_equal(sl__cli_herd_run(&cfg, &b, err, sizeof err), 0);
    cfg.seed = 2;
    assert_int_equal(sl__cli_herd_run(&cfg, &c, err, sizeof err), 0);
    assert_int_equal(a.sent, b.sent);
    assert_int_equal(a.last_served_at, b.last_served_at);
    bool differ = a.last_served_at != c.last_served_at;
    for (size_t i = 0; i < a.nbins; i++) {
        assert_int_equal(a.served_bin[i], b.served_bin[i]);
        assert_int_equal(a.rejected_bin[i], b.rejected_bin[i]);
        differ |= a.rejected_bin[i] != c.rejected_bin[i];
    }
    assert_true(differ);
    sl__cli_herd_result_free(&a);
    sl__cli_herd_result_free(&b);
    sl__cli_herd_result_free(&c);
}

static void stops_at_the_duration(void **state) {
    (void)state;
    sl__cli_herd_config cfg = seed_config(0);
    cfg.duration = 2 * SEC; /* the wave at exactly 2 s is not sent */
    sl__cli_herd_result r;
    char err[256];
    assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), 0);
    assert_int_equal(r.nbins, 20);
    assert_int_equal(r.sent, 300);
    assert_int_equal(r.unserved, 270);
    sl__cli_herd_result_free(&r);
    cfg.duration = 2 * SEC + 1;
    assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), 0);
    assert_int_equal(r.nbins, 21);
    assert_int_equal(r.sent, 570);
    sl__cli_herd_result_free(&r);
}

static void a_queue_serves_late(void **state) {
    (void)state;
    sl__cli_herd_config cfg = seed_config(0);
    cfg.alg = SL_LEAKY_QUEUE;
    sl__cli_herd_result r;
    char err[256];
    assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), 0);
    /* the queue takes 30 per wave too, but releases them 1/150 s apart */
    assert_int_equal(r.served, 180);
    assert_true(r.last_served_at > 10 * SEC && r.last_served_at < 10 * SEC + SEC / 5);
    sl__cli_herd_result_free(&r);
}

/* The herd after a recovery against ramp_up (5 s from 10%): the first wave
 * gets 10% of the burst, and at no time has the ramp served more than the
 * limit without it allows (burst + rate x t); everyone is still served. */
static void a_ramp_holds_the_first_wave(void **state) {
    (void)state;
    sl__cli_herd_config cfg = seed_config(2), plain = cfg;
    cfg.ramp = (sl_ramp){.duration = 5 * SEC, .from = SL_RAMP_ONE / 10};
    sl__cli_herd_result r, b;
    char err[256];
    assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), 0);
    assert_int_equal(sl__cli_herd_run(&plain, &b, err, sizeof err), 0);
    assert_int_equal(r.served_bin[0], 3);  /* 10% of the burst of 30 */
    assert_int_equal(b.served_bin[0], 30); /* the whole burst at once */
    int64_t served = 0, base_served = 0;
    for (size_t i = 0; i < r.nbins; i++) {
        served += r.served_bin[i];
        base_served += b.served_bin[i];
        /* by the end of bin i (t = (i + 1) x 100 ms): at most 30 + 150/s x t */
        assert_true(served <= 30 + 15 * (int64_t)(i + 1));
        if (i < 20) assert_true(served <= base_served); /* the ramp's first 2 s */
    }
    assert_int_equal(r.unserved, 0);
    assert_int_equal(r.served, 300);
    sl__cli_herd_result_free(&r);
    sl__cli_herd_result_free(&b);
    cfg.alg = SL_SLIDING_LOG; /* one time per request counted: cannot be ramped */
    assert_int_equal(sl__cli_herd_run(&cfg, &r, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "--ramp-up"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_jitter_lockstep_most_refused_again),
        cmocka_unit_test(jitter_as_large_as_the_hint_spreads_the_herd),
        cmocka_unit_test(deterministic_per_seed),
        cmocka_unit_test(stops_at_the_duration),
        cmocka_unit_test(a_queue_serves_late),
        cmocka_unit_test(a_ramp_holds_the_first_wave),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
