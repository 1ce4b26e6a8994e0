/* test_shed_redis.c: the fleet's shedding capacity in Redis (decide.lua's
 * token bucket with a floor; `shedding: {scope: fleet}`, docs/protection.md)
 * against the library's shedder (sluice/shed.h, the reference model), on a
 * real redis-server (redis_fixture.h) with explicit times (a fake clock):
 * - random traces of priorities and costs (1 and up: the store's cost 0 is
 *   a look, always allowed, where sl_shed_admit's peek says whether a
 *   request would pass): admitted, available (the
 *   script's remaining), retry_after (whole us: exact for rates whose
 *   emission interval is a whole us, else within the us), costs a priority
 *   can never take (retry -1);
 * - one call with the capacity and a policy as one all-or-nothing group: the
 *   policy refuses -> the capacity is not charged; the capacity refuses ->
 *   the policy is not charged;
 * - a floor at or above the burst is an error reply. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "sluice/sluice.h"
#include "store/redis_script.h"
#include "util/buf.h"

#include "redis_fixture.h"

#define US    INT64_C(1000) /* ns per us */
#define S_US  INT64_C(1000000)
#define T0_US INT64_C(1700000000000000)

/* Runs the script and PERSISTs key in one MULTI/EXEC (its TTL runs on
 * Redis's real clock, the trace's time is simulated). */
static void run_keep(sl__script_item *items, size_t n, int64_t now_us, const char *key) {
    static bool loaded;
    if (!loaded) {
        load_script();
        loaded = true;
    }
    long long pttl;
    run_persist(items, n, now_us, &key, 1, &pttl);
}

typedef struct capacity {
    int64_t limit, period_us, burst, rc, rd;
    bool tolerant; /* emission interval not a whole us: retry within 1 us, later */
} capacity;

static const capacity caps[] = {
    {10, S_US, 10, 2, 3, false},    {2, S_US, 3, 1, 1, false},        {100, S_US, 40, 10, 5, false},
    {5, 10 * S_US, 8, 0, 3, false}, {1, S_US, 2, 0, 0, false},        {3, S_US, 6, 1, 2, true},
    {7, 2 * S_US, 20, 4, 4, true},  {1000, S_US, 200, 40, 20, false},
};

static int64_t floor_of(const capacity *c, sl_priority p) {
    return p == SL_PRIORITY_CRITICAL ? 0 : p == SL_PRIORITY_DEFAULT ? c->rc : c->rc + c->rd;
}

static void trace(const capacity *c, uint64_t seed, int steps) {
    rng = seed;
    sl_shed_options o = {.rate = {c->limit, c->period_us * US},
                         .burst = c->burst,
                         .reserve_critical = c->rc,
                         .reserve_default = c->rd};
    int64_t now = T0_US + below(S_US);
    sl_shed *ref = NULL;
    assert_int_equal(sl_shed_create(&o, now * US, &ref), SL_OK);
    sl_params pa = {.algorithm = SL_TOKEN_BUCKET, .rate = o.rate, .burst = c->burst};
    char key[64];
    snprintf(key, sizeof key, "shed:%llx", (unsigned long long)seed);
    redisReply *r = cmd("DEL %s", key);
    freeReplyObject(r);
    int64_t interval = c->period_us / c->limit;
    for (int s = 0; s < steps; s++) {
        int64_t roll = below(10);
        now += roll < 3 ? 0 : roll < 9 ? below(2 * interval) + 1 : below(3 * c->burst * interval);
        sl_priority p = (sl_priority)below(SL_PRIORITIES);
        int64_t fl = floor_of(c, p);
        int64_t cost = below(30) == 0 ? c->burst - fl + 1 + below(2) : 1 + below(2);
        sl_shed_decision d;
        int rcm = sl_shed_admit(ref, p, cost, now * US, &d);
        assert_true(rcm == SL_OK || rcm == SL_ECOST);
        sl__script_item it = {.params = &pa,
                              .rkey = key,
                              .rkeylen = strlen(key),
                              .cost = cost,
                              .floor = fl,
                              .group = 0};
        run_keep(&it, 1, now, key);
        const sl_decision *x = &it.decision;
        char ctx[160];
        snprintf(ctx, sizeof ctx, "%lld/%lld us burst %lld seed %llx step %d (%s, cost %lld)",
                 (long long)c->limit, (long long)c->period_us, (long long)c->burst,
                 (unsigned long long)seed, s, sl_priority_name(p), (long long)cost);
        if (x->allowed != d.admitted)
            fail_msg("%s: shed admitted %d, redis %d", ctx, d.admitted, x->allowed);
        if (rcm == SL_OK && x->remaining != d.available)
            fail_msg("%s: shed available %lld, redis remaining %lld", ctx, (long long)d.available,
                     (long long)x->remaining);
        int64_t want = d.retry_after, got = x->retry_after;
        bool same = want == got ||
                    (want > 0 && got > want && got - want < US && (c->tolerant || want % US != 0));
        if (!same)
            fail_msg("%s: shed retry_after %lld ns, redis %lld", ctx, (long long)want,
                     (long long)got);
        if (x->limit != c->burst) fail_msg("%s: limit %lld", ctx, (long long)x->limit);
    }
    sl_shed_destroy(ref);
}

static void test_traces(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        for (uint64_t k = 0; k < 4; k++) trace(&caps[i], (i << 16) + 0x5ed0 + k, 150);
}

/* The capacity and a policy in one group (store.h's all-or-nothing). */
static void test_one_group(void **state) {
    (void)state;
    sl_params cap = {.algorithm = SL_TOKEN_BUCKET, .rate = {10, SL_NS_PER_SEC}, .burst = 4};
    sl_params pol = {.algorithm = SL_FIXED_WINDOW, .rate = {1, 3600 * SL_NS_PER_SEC}};
    const char *ck = "g:cap", *pk1 = "g:{a}:p", *pk2 = "g:{b}:p";
    redisReply *r = cmd("DEL %s %s %s", ck, pk1, pk2);
    freeReplyObject(r);
    int64_t now = T0_US;
    sl__script_item it[2] = {
        {.params = &cap, .rkey = ck, .rkeylen = strlen(ck), .cost = 1, .floor = 1},
        {.params = &pol, .rkey = pk1, .rkeylen = strlen(pk1), .cost = 1}};
    run_keep(it, 2, now, ck); /* both pass: 3 tokens left */
    assert_true(it[0].decision.allowed && it[1].decision.allowed);
    assert_int_equal(it[0].decision.remaining, 2); /* above the floor of 1 */
    run_keep(it, 2, now, ck);                      /* the policy refuses: nothing taken */
    assert_true(!it[1].decision.allowed);
    assert_int_equal(it[0].decision.remaining, 2);
    sl__script_item peek = it[0];
    peek.cost = 0;
    run(&peek, 1, now); /* a look writes nothing (no TTL to keep) */
    assert_int_equal(peek.decision.remaining, 2);
    /* two requests of one call (as a flight sends them: groups 0 and 2), a
       default and a critical one: 3 -> 1 */
    sl__script_item two[2] = {
        {.params = &cap, .rkey = ck, .rkeylen = strlen(ck), .cost = 1, .floor = 1},
        {.params = &cap, .rkey = ck, .rkeylen = strlen(ck), .cost = 1, .floor = 0, .group = 2}};
    run_keep(two, 2, now, ck);
    assert_true(two[0].decision.allowed && two[1].decision.allowed);
    assert_int_equal(two[1].decision.remaining, 1);
    /* the capacity refuses at its floor: the policy of key b is not charged */
    sl__script_item refused[2] = {
        {.params = &cap, .rkey = ck, .rkeylen = strlen(ck), .cost = 1, .floor = 1},
        {.params = &pol, .rkey = pk2, .rkeylen = strlen(pk2), .cost = 1}};
    run_keep(refused, 2, now, ck);
    assert_false(refused[0].decision.allowed);
    assert_int_equal(refused[0].decision.retry_after, 100 * SL_NS_PER_MS);
    assert_true(refused[1].decision.allowed); /* a look: it would have passed */
    r = cmd("EXISTS %s", pk2);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    /* a critical request (floor 0) takes the last token */
    refused[0].floor = 0;
    run_keep(refused, 2, now, ck);
    assert_true(refused[0].decision.allowed && refused[1].decision.allowed);
    assert_int_equal(refused[0].decision.remaining, 0);
}

static void test_bad_floor(void **state) {
    (void)state;
    sl_params cap = {.algorithm = SL_TOKEN_BUCKET, .rate = {10, SL_NS_PER_SEC}, .burst = 4};
    sl__script_item it = {.params = &cap, .rkey = "b:cap", .rkeylen = 5, .cost = 1, .floor = 4};
    redisReply *r = eval_raw(&it, 1, T0_US, true);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "floor"));
    freeReplyObject(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traces),
        cmocka_unit_test(test_one_group),
        cmocka_unit_test(test_bad_floor),
    };
    return cmocka_run_group_tests(tests, redis_fixture_start, redis_fixture_stop);
}
