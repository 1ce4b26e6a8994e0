/* test_nginx_delay.c: the leaky queue with delay_after against nginx's
 * two-stage limit_req (`burst=B delay=D`), transcribed from
 * ngx_http_limit_req_module.c (integer milli-requests, whole milliseconds):
 * ngx_http_limit_req_lookup decides, ngx_http_limit_req_account delays by
 * (excess - delay) / rate. `burst=B delay=D` is leaky_queue burst B+1,
 * delay_after D; `nodelay` is delay=B; plain `burst=B` is delay=0. Also the
 * bounds of delay_after (sl_params_validate) and the config key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "policy/config.h"
#include "sluice/sluice.h"
#include "helpers.h"

typedef struct nginx_node {
    int64_t last_ms, excess;
    int seen;
} nginx_node;

/* Returns -1 (refused, 503) or the delay in ms. rate and the bounds are in
 * milli-requests (nginx keeps rate=10r/s as 10000, burst=20 as 20000). */
static int64_t nginx_limit_req(nginx_node *lr, int64_t now_ms, int64_t rate_mr, int64_t burst_mr,
                               int64_t delay_mr) {
    int64_t excess = 0;
    if (!lr->seen) {
        lr->seen = 1;
        lr->last_ms = now_ms;
        lr->excess = 0;
    } else {
        int64_t ms = now_ms - lr->last_ms;
        if (ms < 0) ms = 0;
        excess = lr->excess - rate_mr * ms / 1000 + 1000;
        if (excess < 0) excess = 0;
        if (excess > burst_mr) return -1;
        lr->excess = excess;
        if (ms) lr->last_ms = now_ms;
    }
    return excess <= delay_mr ? 0 : (excess - delay_mr) * 1000 / rate_mr;
}

static sl_table *queue(int64_t per_sec, int64_t burst, int64_t delay_after) {
    return table_ok((sl_table_options){.params = {.algorithm = SL_LEAKY_QUEUE,
                                                  .rate = {per_sec, SEC},
                                                  .burst = burst,
                                                  .delay_after = delay_after},
                                       .seed = 7});
}

/* limit_req rate=10r/s burst=20 delay=8: 21 at once, the first 9 at once,
 * then one every 100 ms; the 22nd refused. */
static void burst_20_delay_8(void **state) {
    (void)state;
    sl_table *t = queue(10, 21, 8);
    nginx_node lr = {0};
    for (int i = 0; i < 21; i++) {
        sl_decision d = check_one(t, 0);
        assert_true(d.allowed);
        int64_t want = i <= 8 ? 0 : (i - 8) * 100;
        assert_int_equal(d.delay, want * MS);
        assert_int_equal(nginx_limit_req(&lr, 0, 10000, 20000, 8000), want);
    }
    assert_false(check_one(t, 0).allowed);
    assert_int_equal(nginx_limit_req(&lr, 0, 10000, 20000, 8000), -1);
    /* a peek reports the queue's wait past the first 8 */
    sl_decision d;
    assert_int_equal(sl_table_check(t, "k", 1, 0, 0, &d), SL_OK);
    assert_int_equal(d.delay, 1300 * MS);
    sl_table_destroy(t);
}

/* Random traces on whole milliseconds, several rates, bursts and delays
 * (delay=0: plain burst; delay=B: nodelay): the same answers, delays to the
 * millisecond nginx truncates to. */
static void random_traces_match_nginx(void **state) {
    (void)state;
    static const int64_t rates[] = {10, 3, 1, 250};
    static const int64_t bursts[] = {20, 5, 1, 0};
    uint64_t x = 0x2545f4914f6cdd1dULL;
    for (size_t ri = 0; ri < sizeof rates / sizeof rates[0]; ri++) {
        for (size_t bi = 0; bi < sizeof bursts / sizeof bursts[0]; bi++) {
            int64_t B = bursts[bi];
            for (int64_t D = 0; D <= B; D += (B > 4 ? 3 : 1)) {
                sl_table *t = queue(rates[ri], B + 1, D);
                nginx_node lr = {0};
                int64_t now = 0;
                for (int i = 0; i < 5000; i++) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    now += (int64_t)(x % 5 == 0 ? x % 2000 : x % 40); /* ms; often 0 */
                    sl_decision d = check_one(t, now * MS);
                    int64_t want = nginx_limit_req(&lr, now, rates[ri] * 1000, B * 1000, D * 1000);
                    int64_t got = d.allowed ? d.delay / MS : -1;
                    if (got != want)
                        fail_msg("%lld r/s burst=%lld delay=%lld, step %d at %lld ms: sluice %lld "
                                 "(%lld ns) nginx %lld",
                                 (long long)rates[ri], (long long)B, (long long)D, i,
                                 (long long)now, (long long)got, (long long)d.delay,
                                 (long long)want);
                }
                sl_table_destroy(t);
            }
        }
    }
}

static void delay_after_bounds(void **state) {
    (void)state;
    sl_params p = {.algorithm = SL_LEAKY_QUEUE, .rate = {10, SEC}, .burst = 21, .delay_after = 20};
    assert_int_equal(sl_params_validate(&p), SL_OK);
    p.delay_after = 21;
    assert_int_equal(sl_params_validate(&p), SL_EINVAL);
    p.delay_after = -1;
    assert_int_equal(sl_params_validate(&p), SL_EINVAL);
    p.delay_after = 3;
    p.algorithm = SL_GCRA;
    assert_int_equal(sl_params_validate(&p), SL_EINVAL);
    p.algorithm = SL_SLIDING_WINDOW;
    assert_int_equal(sl_params_validate(&p), SL_EINVAL);
    p.delay_after = 0;
    assert_int_equal(sl_params_validate(&p), SL_OK);
}

static const char *config_error(const char *text) {
    static sl__config_errors e;
    sl__config *c = NULL;
    if (sl__config_parse(text, strlen(text), "t.yaml", &c, &e) == 0) {
        sl__config_free(c);
        return NULL;
    }
    return e.msg[0];
}

#define POLICY(extra)                                                                              \
    "policies:\n  - name: web\n    algorithm: leaky_queue\n    rate: 10/s\n    burst: 21\n" extra

static void delay_after_in_config(void **state) {
    (void)state;
    sl__config *c = NULL;
    const char *ok = POLICY("    delay_after: 8\n");
    assert_int_equal(sl__config_parse(ok, strlen(ok), "t.yaml", &c, NULL), 0);
    assert_int_equal(c->policies[0].params.delay_after, 8);
    sl__config_free(c);

    const char *err = config_error(POLICY("    delay_after: 21\n"));
    assert_non_null(err);
    assert_non_null(strstr(err, "policies[0].delay_after"));
    assert_non_null(strstr(err, "must be below the burst"));
    err = config_error("policies:\n  - name: web\n    algorithm: gcra\n    rate: 10/s\n"
                       "    burst: 21\n    delay_after: 3\n");
    assert_non_null(err);
    assert_non_null(strstr(err, "only a leaky_queue delays requests"));
    err = config_error(POLICY("    delay_after: -1\n"));
    assert_non_null(err);
    /* the Redis store decides it too (decide.lua, the module), with
       delay_after below 2^42 (it travels in the script's flags) */
#define REDIS_STORE "store:\n  type: redis\n  redis:\n    url: redis://127.0.0.1:1/0\n"
    const char *redis = REDIS_STORE POLICY("    delay_after: 8\n");
    assert_int_equal(sl__config_parse(redis, strlen(redis), "t.yaml", &c, NULL), 0);
    assert_int_equal(c->policies[0].params.delay_after, 8);
    sl__config_free(c);
    err = config_error(REDIS_STORE "policies:\n  - name: web\n    algorithm: leaky_queue\n"
                                   "    rate: 1000000/s\n    burst: 4398046511105\n"
                                   "    delay_after: 4398046511104\n");
    assert_non_null(err);
    assert_non_null(strstr(err, "too large for the Redis store"));
#undef REDIS_STORE
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(burst_20_delay_8),
        cmocka_unit_test(random_traces_match_nginx),
        cmocka_unit_test(delay_after_bounds),
        cmocka_unit_test(delay_after_in_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
