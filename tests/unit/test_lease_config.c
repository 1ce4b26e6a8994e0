/* test_lease_config.c: concurrency limits in the config (algorithm:
 * concurrency, limit, lease; config_leases.c): defaults and bounds, a clear
 * error for every key that makes no sense for them, names shared with the
 * rate policies, batched mode refused, examples/protection loaded; and the
 * lease set built from a config and rebuilt by a reload (held leases kept,
 * the new limit in force) through the engine's memory store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/config.h"
#include "policy/lease_set.h"
#include "policy/policy.h"
#include "sluice/sluice.h"

#include "helpers.h"

#ifndef SLUICE_SOURCE_DIR
#error "SLUICE_SOURCE_DIR must name the source tree (tests/lease.cmake)"
#endif

#define T0 (1000 * SEC)

#define parse_ok       config_parse_ok
#define expect_errors_ config_expect_errors

static void test_parse(void **state) {
    (void)state;
    sl__config *c = parse_ok("policies:\n"
                             "  - name: api\n    algorithm: gcra\n    rate: 5/s\n    burst: 5\n"
                             "  - name: jobs\n    algorithm: concurrency\n    limit: 4\n"
                             "  - name: slow\n    algorithm: concurrency\n    limit: 65536\n"
                             "    lease: 2m\n    on_failure: closed\n");
    /* kept apart from the rate policies */
    assert_int_equal(c->npolicies, 1);
    assert_string_equal(c->policies[0].name, "api");
    assert_int_equal(c->nleases, 2);
    const sl__lease_config *j = sl__config_lease(c, "jobs", 4);
    assert_non_null(j);
    assert_int_equal(j->limit, 4);
    assert_int_equal(j->lease, 30 * SEC); /* the default */
    assert_int_equal(j->line, 6);
    const sl__lease_config *s = sl__config_lease(c, "slow", 4);
    assert_int_equal(s->limit, SL_CONCURRENCY_MAX);
    assert_int_equal(s->lease, 120 * SEC);
    assert_int_equal(s->on_failure, SL__FAIL_SET_CLOSED);
    assert_null(sl__config_lease(c, "api", 3));
    assert_null(sl__config_policy(c, "jobs", 4));
    sl__config_free(c);
}

static void test_errors(void **state) {
    (void)state;
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n",
                  "t.yaml:2: policies[0].limit: missing (a concurrency limit needs limit: N, how "
                  "many requests may be in flight at once per key)");
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 3\n"
                  "    rate: 5/s\n    burst: 2\n",
                  "t.yaml:5: policies[0].rate: not for algorithm: concurrency (a concurrency "
                  "limit counts requests held at once, not per period: use limit: N)",
                  "t.yaml:6: policies[0].burst: not for algorithm: concurrency (a concurrency "
                  "limit has no burst: limit: N is how many are held at once)");
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 0\n",
                  "t.yaml:4: policies[0].limit: 0 is out of range (1 to 65536)");
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 1\n"
                  "    lease: 25h\n",
                  "t.yaml:5: policies[0].lease: \"25h\" is out of range (1ms to 1d)");
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 1\n"
                  "    lease: 1500us\n",
                  "t.yaml:5: policies[0].lease: must be a whole number of milliseconds");
    expect_errors("policies:\n  - name: p\n    algorithm: gcra\n    rate: 1/s\n    burst: 1\n"
                  "    limit: 3\n",
                  "t.yaml:6: policies[0].limit: only a concurrency limit (algorithm: "
                  "concurrency) has a limit");
    /* one name space for both kinds */
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 1\n"
                  "  - name: j\n    algorithm: gcra\n    rate: 1/s\n    burst: 1\n",
                  "t.yaml:5: policies[1].name: duplicate policy name \"j\" (first at line 2)");
    /* batched mode would let every server hold the whole limit */
    expect_errors("store:\n  type: redis\n  redis:\n    sync: batched\n"
                  "policies:\n  - name: j\n    algorithm: concurrency\n    limit: 1\n",
                  "t.yaml:6: policy j: a concurrency limit needs sync: exact (batched mode would "
                  "let every server hold the limit)");
}

static void test_example_loads(void **state) {
    (void)state;
    sl__config *c = NULL;
    sl__config_errors e;
    assert_int_equal(sl__config_load(SLUICE_SOURCE_DIR "/examples/protection/sluice.yaml", &c, &e),
                     0);
    assert_int_equal(c->nleases, 2);
    assert_int_equal(sl__config_lease(c, "reports", 7)->limit, 4);
    sl__config_free(c);
}

static void count_done(sl__lease_call *c) {
    sl__lease_count(c);
}

static sl__lease_call acquire(sl__lease_limit *l, const char *key, int64_t now) {
    sl__lease_call c = {.op = SL__LEASE_ACQUIRE,
                        .limit = l,
                        .key = key,
                        .keylen = strlen(key),
                        .now = now,
                        .done = count_done};
    sl__lease_start(NULL, &c);
    return c;
}

/* A reload keeps every held lease and puts the new limit in force. */
static void test_reload_keeps_leases(void **state) {
    (void)state;
    sl__config *c1 = parse_ok("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 2\n");
    char err[256];
    sl__policy_set *s1, *s2;
    assert_int_equal(sl__policy_set_create(c1, NULL, T0, &s1, err, sizeof err), 0);
    sl__lease_limit *l1 = sl__lease_set_find(sl__policy_set_leases(s1), "j", 1);
    assert_non_null(l1);
    sl__lease_call a = acquire(l1, "k", T0), b = acquire(l1, "k", T0);
    assert_true(a.acq.acquired && b.acq.acquired);
    assert_false(acquire(l1, "k", T0).acq.acquired);
    assert_int_equal(atomic_load(&l1->acquired), 2);
    assert_int_equal(atomic_load(&l1->refused), 1);

    sl__config *c2 = parse_ok("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 3\n");
    assert_int_equal(sl__policy_set_create(c2, s1, T0, &s2, err, sizeof err), 0);
    sl__policy_set_release(s1);
    sl__lease_limit *l2 = sl__lease_set_find(sl__policy_set_leases(s2), "j", 1);
    assert_ptr_equal(l1, l2);
    sl__lease_call x = acquire(l2, "k", T0);
    assert_true(x.acq.acquired);
    assert_int_equal(x.acq.in_flight, 3);
    assert_false(acquire(l2, "k", T0).acq.acquired);
    /* a lease of before the reload is released after it */
    sl__lease_call r = {.op = SL__LEASE_RELEASE,
                        .limit = l2,
                        .key = "k",
                        .keylen = 1,
                        .id = a.acq.lease.id,
                        .now = T0,
                        .done = count_done};
    sl__lease_start(NULL, &r);
    assert_int_equal(r.rc, SL_OK);
    assert_int_equal(r.in_flight, 2);
    sl__lease_start(NULL, &r);
    assert_int_equal(r.rc, SL_ELEASE);
    assert_int_equal(atomic_load(&l2->released), 1);
    assert_int_equal(atomic_load(&l2->unknown), 1);
    sl__policy_set_release(s2);
    sl__config_free(c1);
    sl__config_free(c2);
}

static void test_adaptive_config(void **state) {
    (void)state;
    sl__config *c = parse_ok("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 10\n"
                             "    adaptive: true\n    min_limit: 2\n    max_limit: 100\n"
                             "  - name: k\n    algorithm: concurrency\n    limit: 5\n"
                             "    adaptive: true\n    max_limit: 5\n");
    const sl__lease_config *j = sl__config_lease(c, "j", 1), *k = sl__config_lease(c, "k", 1);
    assert_true(j->adaptive);
    assert_int_equal(j->min_limit, 2);
    assert_int_equal(j->max_limit, 100);
    assert_int_equal(k->min_limit, 1); /* the default */
    sl__config_free(c);
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 3\n"
                  "    adaptive: true\n",
                  "t.yaml:2: policies[0].max_limit: missing (adaptive: true needs max_limit: the "
                  "most it may grow to)");
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 3\n"
                  "    max_limit: 9\n",
                  "t.yaml:5: policies[0].max_limit: only an adaptive concurrency limit "
                  "(adaptive: true) has bounds");
    expect_errors("policies:\n  - name: j\n    algorithm: concurrency\n    limit: 30\n"
                  "    adaptive: true\n    min_limit: 2\n    max_limit: 20\n",
                  "t.yaml:4: policies[0].limit: 30: must lie within min_limit 2 and max_limit 20 "
                  "(it is where an adaptive limit starts)");
    expect_errors("policies:\n  - name: p\n    algorithm: gcra\n    rate: 1/s\n    burst: 1\n"
                  "    adaptive: true\n",
                  "t.yaml:6: policies[0].adaptive: only a concurrency limit (algorithm: "
                  "concurrency) has a adaptive");
}

/* Releases that say their latency move an adaptive limit, window by
 * window (1 s windows on the workers' clock), the memory store's limiter
 * with it; a reload keeps where it got to. */
static void test_adaptive_release(void **state) {
    (void)state;
    const char *text = "policies:\n  - name: j\n    algorithm: concurrency\n    limit: 10\n"
                       "    adaptive: true\n    max_limit: 100\n";
    sl__config *cfg = parse_ok(text);
    char err[256];
    sl__policy_set *s1, *s2;
    assert_int_equal(sl__policy_set_create(cfg, NULL, T0, &s1, err, sizeof err), 0);
    sl__lease_limit *l = sl__lease_set_find(sl__policy_set_leases(s1), "j", 1);
    /* a window's samples count from the first release after it: 10, 10, 12, 14 */
    int64_t want[] = {10, 10, 12, 14};
    for (int w = 0; w < 4; w++) {
        int64_t now = T0 + w * SEC;
        sl__lease_call a = acquire(l, "k", now);
        assert_true(a.acq.acquired);
        assert_int_equal(a.acq.limit, want[w]);
        sl__lease_call r = {.op = SL__LEASE_RELEASE,
                            .limit = l,
                            .key = "k",
                            .keylen = 1,
                            .id = a.acq.lease.id,
                            .latency = 10 * SL_NS_PER_MS,
                            .now = now,
                            .done = count_done};
        sl__lease_start(NULL, &r);
        assert_int_equal(r.rc, SL_OK);
    }
    assert_int_equal(sl_concurrency_limit(l->conc), 16);
    /* a release without a latency changes nothing */
    sl__lease_call a = acquire(l, "k", T0 + 10 * SEC);
    sl__lease_call r = {.op = SL__LEASE_RELEASE,
                        .limit = l,
                        .key = "k",
                        .keylen = 1,
                        .id = a.acq.lease.id,
                        .now = T0 + 10 * SEC,
                        .done = count_done};
    sl__lease_start(NULL, &r);
    assert_int_equal(atomic_load(&l->limit), 16); /* no sample: window 3's is not counted */
    assert_int_equal(sl__policy_set_create(cfg, s1, T0 + 11 * SEC, &s2, err, sizeof err), 0);
    sl__policy_set_release(s1);
    assert_ptr_equal(sl__lease_set_find(sl__policy_set_leases(s2), "j", 1), l);
    assert_int_equal(atomic_load(&l->limit), 16);
    sl__policy_set_release(s2);
    sl__config_free(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),           cmocka_unit_test(test_errors),
        cmocka_unit_test(test_example_loads),   cmocka_unit_test(test_reload_keeps_leases),
        cmocka_unit_test(test_adaptive_config), cmocka_unit_test(test_adaptive_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
