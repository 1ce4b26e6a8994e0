/* test_worked_examples.c: the seed's worked examples (DESIGN.md section 3),
 * exactly, on a fake clock: token bucket 2/s burst 3, GCRA 5/s burst 5, the
 * sliding counter at 1:15 and 1:45, the sliding log at 1:05 and 1:12, the
 * fixed window's 2x boundary burst, the leaky queue's delays, and nginx's
 * `rate=10r/s burst=20 nodelay` behaving as a token bucket of size 21. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sluice/sluice.h"
#include "helpers.h"

static sl_table *make(sl_algorithm a, int64_t limit, int64_t period, int64_t burst) {
    return table_ok((sl_table_options){
        .params = {.algorithm = a, .rate = {limit, period}, .burst = burst}, .seed = 42});
}

/* seed section 04: r = 2/s, b = 3 */
static void token_bucket_2_per_s_burst_3(void **state) {
    (void)state;
    sl_table *t = make(SL_TOKEN_BUCKET, 2, SEC, 3);
    for (int i = 0; i < 3; i++) {
        sl_decision d = check_one(t, 0);
        assert_true(d.allowed);
        assert_int_equal(d.remaining, 2 - i);
    }
    sl_decision d = check_one(t, 0);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 500 * MS);
    assert_int_equal(d.limit, 3);
    d = check_one(t, 600 * MS); /* 1.2 tokens: take one, 0.2 left */
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    d = check_one(t, 600 * MS);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 400 * MS);  /* 0.8 token at 2/s */
    assert_int_equal(d.reset_after, 1400 * MS); /* 2.8 tokens to refill */
    sl_table_destroy(t);
}

/* seed section 04: GCRA, T = 200 ms, tau = 800 ms */
static void gcra_5_per_s_burst_5(void **state) {
    (void)state;
    sl_table *t = make(SL_GCRA, 5, SEC, 5);
    for (int i = 0; i < 5; i++) assert_true(check_one(t, 0).allowed);
    sl_decision d = check_one(t, 0); /* 1000 - 0 > 800 */
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 200 * MS);
    assert_int_equal(d.reset_after, 1000 * MS);
    d = check_one(t, 200 * MS); /* 1000 - 200 = 800, not over */
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    assert_false(check_one(t, 200 * MS).allowed);
    sl_table_destroy(t);
}

/* seed section 03: 10 per minute; 1:15 and 1:45 */
static void sliding_counter_at_1_15_and_1_45(void **state) {
    (void)state;
    sl_table *t = make(SL_SLIDING_WINDOW, 10, 60 * SEC, 0);
    int ok = 0;
    for (int i = 0; i < 12; i++) ok += check_one(t, 0).allowed;
    assert_int_equal(ok, 10);
    /* 1:15: estimate 10 * 0.75 = 7.5; 8.5 and 9.5 fit, 10.5 does not */
    assert_true(check_one(t, 75 * SEC).allowed);
    assert_true(check_one(t, 75 * SEC).allowed);
    sl_decision d = check_one(t, 75 * SEC);
    assert_false(d.allowed);
    /* passes once 10 * (60 - e) / 60 + 2 + 1 <= 10, i.e. e >= 18 s: 3 s from 1:15 */
    assert_int_equal(d.retry_after, 3 * SEC);
    /* 1:45: 10 * 0.25 + 2 = 4.5, five more fit */
    int later = 0;
    for (int i = 0; i < 10; i++) later += check_one(t, 105 * SEC).allowed;
    assert_int_equal(later, 5);
    sl_table_destroy(t);
}

/* seed section 03: 3 per 60 s */
static void sliding_log_at_1_05_and_1_12(void **state) {
    (void)state;
    sl_table *t = make(SL_SLIDING_LOG, 3, 60 * SEC, 0);
    assert_true(check_one(t, 10 * SEC).allowed);
    assert_true(check_one(t, 30 * SEC).allowed);
    assert_true(check_one(t, 50 * SEC).allowed);
    sl_decision d = check_one(t, 65 * SEC);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 5 * SEC); /* the 0:10 entry slides out at 1:10 */
    assert_true(check_one(t, 72 * SEC).allowed);
    assert_false(check_one(t, 72 * SEC).allowed);
    sl_table_destroy(t);
}

/* seed section 02: limit 3, four quick requests; then the boundary burst */
static void fixed_window_edge_burst(void **state) {
    (void)state;
    sl_table *t = make(SL_FIXED_WINDOW, 3, 60 * SEC, 0);
    assert_true(check_one(t, SEC).allowed);
    assert_true(check_one(t, SEC).allowed);
    assert_true(check_one(t, SEC).allowed);
    sl_decision d = check_one(t, SEC);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 59 * SEC);
    sl_table_destroy(t);

    /* 10 per minute: 10 requests in 0:55..0:59 and 10 in 1:00..1:04 all pass */
    t = make(SL_FIXED_WINDOW, 10, 60 * SEC, 0);
    int ok = 0;
    for (int i = 0; i < 10; i++) ok += check_one(t, 55 * SEC + i * 400 * MS).allowed;
    for (int i = 0; i < 10; i++) ok += check_one(t, 60 * SEC + i * 400 * MS).allowed;
    assert_int_equal(ok, 20);
    assert_false(check_one(t, 64 * SEC).allowed);
    sl_table_destroy(t);
}

/* DESIGN.md section 3: 5/s with room for 5: delays 0, 200, 400, 600, 800 ms */
static void leaky_queue_delays(void **state) {
    (void)state;
    sl_table *t = make(SL_LEAKY_QUEUE, 5, SEC, 5);
    for (int i = 0; i < 5; i++) {
        sl_decision d = check_one(t, 0);
        assert_true(d.allowed);
        assert_int_equal(d.delay, i * 200 * MS);
    }
    sl_decision d = check_one(t, 0);
    assert_false(d.allowed);
    assert_int_equal(d.delay, 0);
    sl_table_destroy(t);
}

/* nginx limit_req, transcribed from ngx_http_limit_req_module.c (integer
 * milli-requests): the reference for "rate=10r/s burst=20 nodelay". */
typedef struct nginx_node {
    int64_t last_ms, excess;
    int seen;
} nginx_node;

static int nginx_limit_req(nginx_node *lr, int64_t now_ms, int64_t rate_mr, int64_t burst_mr) {
    if (!lr->seen) {
        lr->seen = 1;
        lr->last_ms = now_ms;
        lr->excess = 0;
        return 1;
    }
    int64_t ms = now_ms - lr->last_ms;
    if (ms < 0) ms = 0;
    int64_t excess = lr->excess - rate_mr * ms / 1000 + 1000;
    if (excess < 0) excess = 0;
    if (excess > burst_mr) return 0;
    lr->excess = excess;
    if (ms) lr->last_ms = now_ms;
    return 1;
}

static void nginx_nodelay_is_token_bucket_of_21(void **state) {
    (void)state;
    sl_table *t = make(SL_TOKEN_BUCKET, 10, SEC, 21);
    nginx_node lr = {0};
    /* 21 at once pass, the 22nd does not; then 10/s */
    for (int i = 0; i < 21; i++) {
        assert_true(check_one(t, 0).allowed);
        assert_true(nginx_limit_req(&lr, 0, 10 * 1000, 20 * 1000));
    }
    assert_false(check_one(t, 0).allowed);
    assert_false(nginx_limit_req(&lr, 0, 10 * 1000, 20 * 1000));
    /* a random trace on whole milliseconds: identical decisions */
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    int64_t now = 0;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        now += (int64_t)(x % 250); /* ms; often 0 */
        int a = check_one(t, now * MS).allowed;
        int b = nginx_limit_req(&lr, now, 10 * 1000, 20 * 1000);
        if (a != b) fail_msg("step %d at %lld ms: sluice %d nginx %d", i, (long long)now, a, b);
    }
    sl_table_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(token_bucket_2_per_s_burst_3),
        cmocka_unit_test(gcra_5_per_s_burst_5),
        cmocka_unit_test(sliding_counter_at_1_15_and_1_45),
        cmocka_unit_test(sliding_log_at_1_05_and_1_12),
        cmocka_unit_test(fixed_window_edge_burst),
        cmocka_unit_test(leaky_queue_delays),
        cmocka_unit_test(nginx_nodelay_is_token_bucket_of_21),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
