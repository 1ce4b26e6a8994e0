/* test_ramp_config.c: ramp_up: in the config (config_ramp.c) and in the
 * engine (decide.c) on the memory store with a fake clock:
 * - ramp_up parsed (percentages with decimals), and a clear error for each
 *   bad value, a missing key, sliding_log, concurrency limits, limits too
 *   large to count in units;
 * - a ramped policy through the engine: the scaled burst when the ramp
 *   starts, more as it goes, the whole limit after it (answers in requests:
 *   limit, remaining), a restart (recovery, POST /v1/ramp) scaling a key
 *   that was full back down, a policy without ramp_up untouched;
 * - a reload keeps a ramped policy's state when ramp_up is unchanged, and
 *   starts it afresh when ramp_up changes (its units change);
 * - examples/ramp-up loads and ramps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/config.h"
#include "policy/policy.h"
#include "policy/ramp.h"
#include "sluice/sluice.h"

#include "helpers.h"
#include "decide_helper.h"

#ifndef SLUICE_SOURCE_DIR
#error "SLUICE_SOURCE_DIR must name the source tree (tests/ramp.cmake)"
#endif

#define T0 (1000 * SEC)
#define TB "    burst: 100\n"

#define parse_ok       config_parse_ok
#define expect_errors_ config_expect_errors

#define POLICY(alg, extra, ramp)                                                                   \
    "policies:\n  - name: api\n    algorithm: " alg "\n    rate: 100/s\n" extra                    \
    "    ramp_up: " ramp "\n"

static void parse(void **state) {
    (void)state;
    sl__config *c =
        parse_ok(POLICY("token_bucket", "    burst: 100\n", "{duration: 5m, from: 10%}"));
    assert_i64(c->policies[0].ramp.duration, 300 * SEC);
    assert_i64(c->policies[0].ramp.from, 100000);
    sl__config_free(c);
    c = parse_ok(POLICY("fixed_window", "", "{duration: 1500ms, from: 2.5%}"));
    assert_i64(c->policies[0].ramp.duration, 1500 * MS);
    assert_i64(c->policies[0].ramp.from, 25000);
    sl__config_free(c);
    c = parse_ok(POLICY("gcra", "    burst: 1\n", "{duration: 1s, from: 0.0001%}"));
    assert_i64(c->policies[0].ramp.from, 1);
    sl__config_free(c);
    c = parse_ok("policies:\n  - name: api\n    algorithm: gcra\n    rate: 1/s\n    burst: 1\n");
    assert_i64(c->policies[0].ramp.duration, 0); /* no ramp */
    sl__config_free(c);
}

static void errors(void **state) {
    (void)state;
    expect_errors(POLICY("token_bucket", TB, "{duration: 5m}"),
                  "t.yaml:6: policies[0].ramp_up.from: missing (the share of the limit at the "
                  "start, such as 10%)");
    expect_errors(POLICY("token_bucket", TB, "{from: 10%}"),
                  "t.yaml:6: policies[0].ramp_up.duration: missing (how long the ramp lasts, such "
                  "as 5m)");
    const char *pct = "expected a percentage above 0% and at most 100%, such as 10% or 2.5%";
    char want[256];
    const char *bad[] = {"0%", "10", "101%", "1.23456%", "%", ".5%", "5.%", "-1%", "1e1%"};
    for (size_t i = 0; i < COUNT(bad); i++) {
        char text[512];
        snprintf(text, sizeof text,
                 POLICY("token_bucket", "    burst: 100\n", "{duration: 5m, from: \"%s\"}"),
                 bad[i]);
        snprintf(want, sizeof want, "t.yaml:6: policies[0].ramp_up.from: \"%s\": %s", bad[i], pct);
        expect_errors(text, want);
    }
    expect_errors(POLICY("token_bucket", TB, "{duration: 48h, from: 10%}"),
                  "t.yaml:6: policies[0].ramp_up.duration: \"48h\" is out of range (1ms to 1d)");
    expect_errors(POLICY("token_bucket", TB, "5m"),
                  "t.yaml:6: policies[0].ramp_up: expected a mapping of duration and from, such "
                  "as {duration: 5m, from: 10%}, got \"5m\"");
    expect_errors(POLICY("token_bucket", TB, "{duration: 5m, from: 10%, to: 50%}"),
                  "t.yaml:6: policies[0].ramp_up.to: unknown key (expected duration or from)");
    expect_errors(POLICY("sliding_log", "", "{duration: 5m, from: 10%}"),
                  "t.yaml:5: policies[0].ramp_up: not for algorithm: sliding_log (it keeps one "
                  "time per request counted: use sliding_window)");
    expect_errors("policies:\n  - name: api\n    algorithm: fixed_window\n"
                  "    rate: 1000000000000000000/s\n    ramp_up: {duration: 5m, from: 10%}\n",
                  "t.yaml:5: policies[0].ramp_up: the limit or burst is too large to ramp (a "
                  "ramped limit counts thousandths of a request: at most 2^61 / 1000)");
    expect_errors("policies:\n  - name: c\n    algorithm: concurrency\n    limit: 3\n"
                  "    ramp_up: {duration: 5m, from: 10%}\n",
                  "t.yaml:5: policies[0].ramp_up: not for algorithm: concurrency (a ramp scales "
                  "a rate and a burst; a concurrency limit's N is not ramped (yet))");
}

static sl__policy_set *build(const char *text, sl__policy_set *prev, int64_t now) {
    sl__config *c = parse_ok(text);
    sl__policy_set *s = NULL;
    char err[256];
    assert_int_equal(sl__policy_set_create(c, prev, now, &s, err, sizeof err), 0);
    sl__config_free(c);
    return s;
}

static sl_decision check(sl__policy *p, const char *key, int64_t now) {
    sl_decision d;
    bool shadowed;
    assert_int_equal(policy_check(p, key, strlen(key), 1, now, &d, &shadowed), SL_OK);
    return d;
}

static int burst_of(sl__policy *p, const char *key, int64_t now) {
    int n = 0;
    while (check(p, key, now).allowed) n++;
    return n;
}

static const char ramped[] =
    POLICY("token_bucket", "    burst: 100\n",
           "{duration: 100s, from: 10%}") "  - name: plain\n    algorithm: token_bucket\n    rate: "
                                          "100/s\n    burst: 100\n";

static void engine_ramps(void **state) {
    (void)state;
    sl__policy_set *s = build(ramped, NULL, T0);
    sl__policy *api = sl__policy_find(s, "api", 3), *plain = sl__policy_find(s, "plain", 5);
    assert_non_null(api);
    sl__ramp_restart(T0, SL__RAMP_BY_START);
    sl_decision d = check(api, "a", T0);
    assert_true(d.allowed);
    assert_i64(d.limit, 10);
    assert_i64(d.remaining, 9);
    assert_int_equal(burst_of(api, "a", T0), 9);
    assert_int_equal(burst_of(plain, "a", T0), 100); /* no ramp_up: untouched */
    /* half way: 55%, a fresh key takes 55 */
    assert_int_equal(burst_of(api, "b", T0 + 50 * SEC), 55);
    /* after the duration: the whole limit */
    assert_int_equal(burst_of(api, "c", T0 + 100 * SEC), 100);
    d = check(api, "d", T0 + 200 * SEC);
    assert_i64(d.limit, 100);
    assert_i64(d.remaining, 99);
    /* a restart (the store recovered): a full key is scaled back to 10 */
    sl__ramp_restart(T0 + 300 * SEC, SL__RAMP_BY_RECOVERY);
    assert_int_equal(burst_of(api, "e", T0 + 300 * SEC), 10);
    /* a restart never moves the start back */
    sl__ramp_restart(T0, SL__RAMP_BY_ADMIN);
    assert_i64(sl__ramp_started(), T0 + 300 * SEC);
    assert_true(sl__ramp_restarts(SL__RAMP_BY_ADMIN) >= 1);
    sl__policy_set_release(s);
}

static void reload_keeps_state(void **state) {
    (void)state;
    int64_t t = T0 + 1000 * SEC;
    sl__ramp_restart(t, SL__RAMP_BY_ADMIN);
    sl__policy_set *s1 = build(ramped, NULL, t);
    sl__policy *a1 = sl__policy_find(s1, "api", 3);
    assert_int_equal(burst_of(a1, "k", t), 10);
    sl__policy_set *s2 = build(ramped, s1, t); /* unchanged: the same policy, its state */
    assert_ptr_equal(sl__policy_find(s2, "api", 3), a1);
    assert_int_equal(burst_of(a1, "k", t), 0);
    sl__policy_set *s3 =
        build(POLICY("token_bucket", "    burst: 100\n", "{duration: 100s, from: 20%}"), s2, t);
    sl__policy *a3 = sl__policy_find(s3, "api", 3);
    assert_ptr_not_equal(a3, a1); /* a changed ramp: new units, fresh state */
    assert_int_equal(burst_of(a3, "k", t), 20);
    sl__policy_set_release(s1);
    sl__policy_set_release(s2);
    sl__policy_set_release(s3);
}

static void example_loads(void **state) {
    (void)state;
    sl__config *c = NULL;
    static sl__config_errors e;
    if (sl__config_load(SLUICE_SOURCE_DIR "/examples/ramp-up/sluice.yaml", &c, &e) != 0) {
        print_errors(&e);
        fail();
    }
    sl__policy_set *s = NULL;
    char err[256];
    int64_t t = T0 + 5000 * SEC;
    assert_int_equal(sl__policy_set_create(c, NULL, t, &s, err, sizeof err), 0);
    sl__ramp_restart(t, SL__RAMP_BY_START);
    assert_int_equal(burst_of(sl__policy_find(s, "api", 3), "x", t), 10);
    assert_int_equal(burst_of(sl__policy_find(s, "search", 6), "x", t), 250);
    assert_int_equal(burst_of(sl__policy_find(s, "login", 5), "x", t), 5);
    sl__policy_set_release(s);
    sl__config_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse),         cmocka_unit_test(errors),
        cmocka_unit_test(engine_ramps),  cmocka_unit_test(reload_keeps_state),
        cmocka_unit_test(example_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
