/* test_cell.c: CL.THROTTLE's state (src/policy/cell.c, core/table_any.h,
 * the any-rate items of src/store/decide.lua), issue 12 item 2: one state
 * per key whatever the parameters, judged with the parameters of each call
 * (redis-cell's model), in one table with one memory cap.
 *
 * - memory, on fixed clocks: redis-cell's answers when a key's parameters
 *   change; thousands of distinct parameter sets never refuse a new one;
 *   every key shares one cap; idle keys are reclaimed; a state moved to
 *   another rate is rounded up (never a credit), and with one rate
 *   throughout an any-rate table decides exactly as a plain GCRA table
 *   (random traces side by side);
 * - Redis: the same through the decision script against a real
 *   redis-server started on a unix socket in a temporary directory (the
 *   test fails, never skips, without it), with explicit times: one Redis key
 *   whatever the parameters, the parameter-change answers, a key given with
 *   two parameter sets in one script call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "core/table_any.h"
#include "policy/cell.h"
#include "sluice/sluice.h"
#include "store/redis_script.h"
#include "util/buf.h"

#include "redis_fixture.h"
#include "helpers.h"

/* 2023-11-14 in Unix ns: the clock of every memory test */
#define T0 (INT64_C(1700000000) * SEC)

#include "cell_expect.h"

/* A call that must succeed; returns limited. */
static int64_t throttle_any(sl__cell *c, const char *key, int64_t b, int64_t n, int64_t p,
                            int64_t now) {
    int64_t r[5];
    char err[SL__CELL_ERR_MAX];
    if (cell_throttle(c, key, strlen(key), b, n, p, 1, now, r, err) != 0)
        fail_msg("CL.THROTTLE %s %lld %lld %lld: %s", key, (long long)b, (long long)n, (long long)p,
                 err);
    return r[0];
}

static sl__cell *make_cell(size_t cap) {
    sl__cell *c = NULL;
    assert_int_equal(sl__cell_create(cap, &c), 0);
    return c;
}

/* ---- memory ------------------------------------------------------------------ */

/* redis-cell keeps a key's tat when a caller changes its limits, and judges
 * it with the parameters of each call (T = 60 s each time here; tau = 60 s,
 * then 300 s, then 60 s again). */
static void test_params_change_keeps_state(void **state) {
    (void)state;
    sl__cell *c = make_cell(1 << 20);
    throttle(c, "rk", 0, 1, 60, 1, T0, (want5){0, 1, 0, -1, 60});
    throttle(c, "rk", 4, 1, 60, 1, T0, (want5){0, 5, 3, -1, 120});
    throttle(c, "rk", 0, 1, 60, 1, T0, (want5){1, 1, 0, 120, 120});
    /* tat = T0 + 120 s: with burst 1 the next one passes at T0 + 120 s */
    throttle(c, "rk", 0, 1, 60, 1, T0 + 60 * SEC, (want5){1, 1, 0, 60, 60});
    throttle(c, "rk", 0, 1, 60, 1, T0 + 120 * SEC, (want5){0, 1, 0, -1, 60});
    /* a faster rate on the same key: T = 6 s, tau = 18 s; the tat is 60 s ahead */
    throttle(c, "rk", 2, 10, 60, 1, T0 + 120 * SEC, (want5){1, 3, 0, 48, 60});
    throttle(c, "rk", 2, 10, 60, 0, T0 + 168 * SEC, (want5){0, 3, 1, -1, 12}); /* peek */
    throttle(c, "rk", 2, 10, 60, 1, T0 + 168 * SEC, (want5){0, 3, 0, -1, 18});
    uint64_t keys;
    sl__cell_stats(c, &keys, NULL, NULL);
    assert_i64(keys, 1); /* one state, whatever the parameters */
    sl__cell_destroy(c);
}

/* No sequence of commands can refuse a new parameter set: 5000 distinct
 * sets on one key, then a new key with a new set; the first key's state
 * holds all 5000 charges. */
static void test_many_parameter_sets(void **state) {
    (void)state;
    sl__cell *c = make_cell(1 << 20);
    for (int64_t i = 0; i < 5000; i++) assert_i64(throttle_any(c, "x", 1001 + i, 1, 1, T0), 0);
    throttle(c, "y", 7, 3, 9, 1, T0, (want5){0, 8, 7, -1, 3});
    throttle(c, "x", 0, 1, 1, 1, T0, (want5){1, 1, 0, 5000, 5000});
    uint64_t keys, bytes;
    sl__cell_stats(c, &keys, &bytes, NULL);
    assert_i64(keys, 2);
    sl__cell_destroy(c);
}

/* Every key of every parameter set counts against the one cap. */
static void test_one_memory_cap(void **state) {
    (void)state;
    const size_t cap = 1 << 20;
    sl__cell *c = make_cell(cap);
    char key[32];
    for (int64_t set = 0; set < 64; set++) {
        for (int j = 0; j < 2000; j++) {
            snprintf(key, sizeof key, "k%lld:%d", (long long)set, j);
            assert_i64(throttle_any(c, key, 1000 + set, 1, 3600, T0), 0);
        }
    }
    uint64_t keys, bytes, evicted;
    sl__cell_stats(c, &keys, &bytes, &evicted);
    if (bytes > cap)
        fail_msg("CL.THROTTLE holds %llu bytes, cap %zu", (unsigned long long)bytes, cap);
    assert_true(evicted > 0); /* 128000 live keys do not fit in 1 MiB: counted, not refused */
    assert_true(keys < 128000);
    sl__cell_destroy(c);
}

/* Keys that hold no live state are reclaimed: by a sweep, and by inserts. */
static void test_idle_keys_reclaimed(void **state) {
    (void)state;
    sl__cell *c = make_cell(1 << 20);
    char key[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_i64(throttle_any(c, key, i % 50, 1 + i % 7, 1 + i % 11, T0), 0);
    }
    uint64_t keys, bytes0, bytes;
    sl__cell_stats(c, &keys, &bytes0, NULL);
    assert_i64(keys, 5000);
    /* every tat is at most 11 s ahead; an hour later all are fresh */
    size_t dropped = sl__cell_sweep(c, T0 + 3600 * SEC, 1 << 20);
    assert_i64(dropped, 5000);
    sl__cell_stats(c, &keys, &bytes, NULL);
    assert_i64(keys, 0);
    /* a fresh key answers as if it had never been seen */
    throttle(c, "k1", 4, 1, 1, 1, T0 + 3600 * SEC, (want5){0, 5, 4, -1, 1});
    sl__cell_destroy(c);
}

static sl__plan plan_of(int64_t max_burst, int64_t count, int64_t period_ns) {
    sl_params p = {.algorithm = SL_GCRA,
                   .rate = {.limit = count, .period = period_ns},
                   .burst = max_burst + 1};
    sl__plan plan;
    assert_int_equal(sl__plan_any_rate(&plan, &p), 0);
    return plan;
}

/* The core: a state moved to another rate is rounded up to that rate's
 * 1/n ns (never earlier: no credit); the same rate (any burst) is exact. */
static void test_rebase_rounds_up(void **state) {
    (void)state;
    sl_table_options o = {
        .params = {.algorithm = SL_GCRA, .rate = {.limit = 1, .period = SEC}, .burst = 1},
        .max_memory = 1 << 20};
    sl_table *t;
    assert_int_equal(sl__table_create_any_rate(&o, &t), 0);
    sl__plan third = plan_of(2, 3, SEC); /* T = 333333333 + 1/3 ns */
    sl__plan half = plan_of(0, 2, SEC);  /* T = 500000000 ns: n = 1 */
    sl__plan third_b = plan_of(9, 3, SEC);
    sl_decision d;
    assert_int_equal(sl__table_check_with(t, &third, "a", 1, 1, T0, &d), 0);
    assert_true(d.allowed);
    assert_i64(d.reset_after, 333333334); /* 333333333 + 1/3, rounded up */
    /* the same n with another burst: exact, 3 x T = 1 s */
    assert_int_equal(sl__table_check_with(t, &third_b, "a", 1, 2, T0, &d), 0);
    assert_true(d.allowed);
    assert_i64(d.reset_after, SEC);
    assert_i64(d.remaining, 7); /* tau = 10/3 s, used 1 s */
    /* another key: 1/3 ns of remainder moved to n = 1 becomes 1 ns */
    assert_int_equal(sl__table_check_with(t, &third, "b", 1, 1, T0, &d), 0);
    assert_int_equal(sl__table_check_with(t, &half, "b", 1, 0, T0, &d), 0); /* peek */
    assert_i64(d.reset_after, 333333334);
    assert_int_equal(sl__table_check_with(t, &half, "b", 1, 1, T0, &d), 0); /* stored at n = 1 */
    assert_false(d.allowed);                                                /* tau = T */
    assert_i64(d.retry_after, 333333334);
    assert_int_equal(sl__table_check_with(t, &third, "b", 1, 1, T0 + 333333334, &d), 0);
    assert_true(d.allowed); /* tat = T0 + 333333334 exactly: fresh at that instant */
    assert_i64(d.reset_after, 333333334);
    /* a plan or a table of the wrong kind is refused */
    sl_table *plain;
    assert_int_equal(sl_table_create(&o, &plain), 0);
    assert_int_equal(sl__table_check_with(plain, &third, "a", 1, 1, T0, &d), SL_EINVAL);
    sl__plan fixed;
    assert_int_equal(sl__plan_init(&fixed, &o.params), 0);
    assert_int_equal(sl__table_check_with(t, &fixed, "a", 1, 1, T0, &d), SL_EINVAL);
    sl_params flagged = o.params;
    flagged.flags = SL_COUNT_REJECTED;
    assert_int_equal(sl__plan_any_rate(&fixed, &flagged), SL_EINVAL);
    sl_table_destroy(plain);
    sl_table_destroy(t);
}

/* With one rate throughout, an any-rate table decides exactly as a plain
 * GCRA table: random traces (costs, peeks, time steps, a clock that steps
 * back a little) over several keys, side by side. */
static void test_same_rate_same_decisions(void **state) {
    (void)state;
    static const int64_t rates[][3] = {{0, 1, SEC}, {2, 3, SEC}, {9, 7, 3 * SEC}, {4, 1000, SEC}};
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        sl_table_options o = {.params = {.algorithm = SL_GCRA,
                                         .rate = {.limit = rates[r][1], .period = rates[r][2]},
                                         .burst = rates[r][0] + 1},
                              .max_memory = 1 << 20};
        sl_table *any, *plain;
        assert_int_equal(sl__table_create_any_rate(&o, &any), 0);
        assert_int_equal(sl_table_create(&o, &plain), 0);
        sl__plan plan = plan_of(rates[r][0], rates[r][1], rates[r][2]);
        int64_t now = T0;
        for (int i = 0; i < 20000; i++) {
            helper_rand(&x);
            now += (int64_t)(x % 400) * MS - 50 * MS; /* sometimes back by up to 50 ms */
            char key[2] = {(char)('a' + (x >> 20) % 5), 0};
            int64_t cost = (int64_t)((x >> 30) % (uint64_t)(rates[r][0] + 3));
            sl_decision a, b;
            int ra = sl__table_check_with(any, &plan, key, 1, cost, now, &a);
            int rb = sl_table_check(plain, key, 1, cost, now, &b);
            assert_int_equal(ra, rb);
            if (a.allowed != b.allowed || a.remaining != b.remaining ||
                a.retry_after != b.retry_after || a.reset_after != b.reset_after)
                fail_msg(
                    "rate %zu step %d: any-rate {%d %lld %lld %lld}, plain {%d %lld %lld %lld}", r,
                    i, a.allowed, (long long)a.remaining, (long long)a.retry_after,
                    (long long)a.reset_after, b.allowed, (long long)b.remaining,
                    (long long)b.retry_after, (long long)b.reset_after);
        }
        sl_table_destroy(any);
        sl_table_destroy(plain);
    }
}

/* ---- Redis ------------------------------------------------------------------- */

#define US    INT64_C(1000)
#define T0_US (T0 / US)

/* CL.THROTTLE's parameters as sl__cell_throttle_store sends them. */
static sl_params cell_params(int64_t max_burst, int64_t count, int64_t period_s) {
    return (sl_params){.algorithm = SL_GCRA,
                       .rate = {.limit = count, .period = period_s * SEC},
                       .burst = max_burst + 1};
}

static const char RK[] = "t:{rk}:cell:tat";

static sl__script_item cell_item(const sl_params *p, int64_t cost, unsigned group) {
    return (sl__script_item){.params = p,
                             .any_rate = true,
                             .rkey = RK,
                             .rkeylen = sizeof RK - 1,
                             .cost = cost,
                             .group = group};
}

static void want(const sl__script_item *it, bool allowed, int64_t limit, int64_t remaining,
                 int64_t retry, int64_t reset) {
    const sl_decision *d = &it->decision;
    if (!it->decided || d->allowed != allowed || d->limit != limit || d->remaining != remaining ||
        d->retry_after != retry || d->reset_after != reset)
        fail_msg("got {decided %d allowed %d limit %lld remaining %lld retry %lld reset %lld}, "
                 "want {allowed %d limit %lld remaining %lld retry %lld reset %lld}",
                 it->decided, d->allowed, (long long)d->limit, (long long)d->remaining,
                 (long long)d->retry_after, (long long)d->reset_after, allowed, (long long)limit,
                 (long long)remaining, (long long)retry, (long long)reset);
}

static long long dbsize(void) {
    redisReply *r = cmd("DBSIZE");
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* The parameter-change answers in Redis, on one key. */
static void test_redis_params_change_keeps_state(void **state) {
    (void)state;
    freeReplyObject(cmd("FLUSHALL"));
    sl_params a = cell_params(0, 1, 60), b = cell_params(4, 1, 60);
    sl__script_item it = cell_item(&a, 1, 0);
    run(&it, 1, T0_US);
    want(&it, true, 1, 0, 0, 60 * SEC);
    it = cell_item(&b, 1, 0);
    run(&it, 1, T0_US);
    want(&it, true, 5, 3, 0, 120 * SEC);
    it = cell_item(&a, 1, 0);
    run(&it, 1, T0_US);
    want(&it, false, 1, 0, 120 * SEC, 120 * SEC);
    assert_i64(dbsize(), 1);
    redisReply *r = cmd("GET %s", RK);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    /* tat (us), frac, n in hex (decide.lua): 1 per 60 s is n = 1 */
    char wantv[64];
    snprintf(wantv, sizeof wantv, "cell|%llx:0:1", (unsigned long long)(T0_US + 120 * 1000000));
    assert_string_equal(r->str, wantv);
    freeReplyObject(r);
}

/* Exact with the same n, rounded up to the new n's 1/n us otherwise; a key
 * given with two parameter sets in one script call (two requests of one
 * worker's loop iteration) is decided in order, without an error. */
static void test_redis_rebase_and_one_call(void **state) {
    (void)state;
    freeReplyObject(cmd("FLUSHALL"));
    sl_params third = cell_params(2, 3, 1), half = cell_params(0, 2, 1);
    sl__script_item it = cell_item(&third, 1, 0);
    run(&it, 1, T0_US);
    want(&it, true, 3, 2, 0, 333334 * US); /* 333333 + 1/3 us, rounded up */
    it = cell_item(&half, 0, 0);
    run(&it, 1, T0_US);
    want(&it, true, 1, 0, 0, 333334 * US);

    freeReplyObject(cmd("FLUSHALL"));
    sl_params a = cell_params(0, 1, 60), b = cell_params(4, 1, 60);
    sl__script_item two[3] = {cell_item(&a, 1, 0), cell_item(&b, 1, 2), cell_item(&a, 1, 4)};
    run(two, 3, T0_US);
    want(&two[0], true, 1, 0, 0, 60 * SEC);
    want(&two[1], true, 5, 3, 0, 120 * SEC);
    want(&two[2], false, 1, 0, 120 * SEC, 120 * SEC);
    assert_i64(dbsize(), 1);
}

/* 1000 distinct parameter sets: one Redis key, never an error. */
static void test_redis_many_parameter_sets(void **state) {
    (void)state;
    freeReplyObject(cmd("FLUSHALL"));
    for (int64_t i = 0; i < 1000; i++) {
        sl_params p = cell_params(1001 + i, 1, 1);
        sl__script_item it = cell_item(&p, 1, 0);
        run(&it, 1, T0_US);
        want(&it, true, 1002 + i, 1001, 0, (i + 1) * SEC);
    }
    assert_i64(dbsize(), 1);
}

int main(void) {
    const struct CMUnitTest memory[] = {
        cmocka_unit_test(test_params_change_keeps_state),
        cmocka_unit_test(test_many_parameter_sets),
        cmocka_unit_test(test_one_memory_cap),
        cmocka_unit_test(test_idle_keys_reclaimed),
        cmocka_unit_test(test_rebase_rounds_up),
        cmocka_unit_test(test_same_rate_same_decisions),
    };
    const struct CMUnitTest redis[] = {
        cmocka_unit_test(test_redis_params_change_keeps_state),
        cmocka_unit_test(test_redis_rebase_and_one_call),
        cmocka_unit_test(test_redis_many_parameter_sets),
    };
    int failed = cmocka_run_group_tests_name("cell (memory)", memory, NULL, NULL);
    failed +=
        cmocka_run_group_tests_name("cell (redis)", redis, redis_fixture_start, redis_fixture_stop);
    return failed;
}
