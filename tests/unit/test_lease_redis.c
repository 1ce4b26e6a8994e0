/* test_lease_redis.c: the concurrency limits' Lua script (src/store/lease.lua)
 * against a real redis-server (tests/unit/redis_fixture.h) on a fake clock
 * (the script's explicit now_us): acquire up to the limit, the refusal's
 * retry_after (the earliest held expiry), expiry to the microsecond, release
 * (once; never another lease), renew (never shorter, not after expiry), the
 * key's TTL covering its latest lease, and a lowered limit. The same rules as
 * the memory store's limiter (test_lease.c), in microseconds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>

#pragma GCC diagnostic ignored "-Wunused-function" /* the fixture's decide helpers */
#include "redis_fixture.h"
#include "store/lease.h"

#define S  INT64_C(1000000) /* us */
#define T0 (INT64_C(1700000000) * S)

typedef struct answer {
    long long ok, in_flight, ttl, retry;
} answer;

/* One script call: op a|r|n on key with limit, lease_us, id at now_us. */
static answer call(const char *key, const char *op, long long limit, long long lease,
                   const char *id, long long now) {
    redisReply *r = cmd("EVAL %s 1 %s %s %lld %lld %s %lld", sl__lease_script_source(), key, op,
                        limit, lease, id, now);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4) fail_msg("reply type %d", r->type);
    answer a = {r->element[0]->integer, r->element[1]->integer, r->element[2]->integer,
                r->element[3]->integer};
    freeReplyObject(r);
    return a;
}

static void test_acquire_release_expire(void **state) {
    (void)state;
    answer a = call("k1", "a", 2, 10 * S, "aaaa", T0);
    assert_int_equal(a.ok, 1);
    assert_int_equal(a.in_flight, 1);
    assert_int_equal(a.ttl, 10 * S);
    a = call("k1", "a", 2, 10 * S, "bbbb", T0 + 1 * S);
    assert_int_equal(a.ok, 1);
    assert_int_equal(a.in_flight, 2);
    /* full: retry until the earliest held lease (aaaa, at T0 + 10 s) */
    a = call("k1", "a", 2, 10 * S, "cccc", T0 + 3 * S);
    assert_int_equal(a.ok, 0);
    assert_int_equal(a.in_flight, 2);
    assert_int_equal(a.retry, 7 * S);
    /* held until the microsecond before its expiry, gone at it */
    assert_int_equal(call("k1", "a", 2, 10 * S, "cccc", T0 + 10 * S - 1).retry, 1);
    a = call("k1", "a", 2, 10 * S, "cccc", T0 + 10 * S);
    assert_int_equal(a.ok, 1);
    assert_int_equal(a.in_flight, 2);
    /* the expired lease is not released, nor renewed; bbbb is released once */
    assert_int_equal(call("k1", "r", 2, 10 * S, "aaaa", T0 + 10 * S).ok, 0);
    assert_int_equal(call("k1", "n", 2, 10 * S, "aaaa", T0 + 10 * S).ok, 0);
    a = call("k1", "r", 2, 10 * S, "bbbb", T0 + 10 * S);
    assert_int_equal(a.ok, 1);
    assert_int_equal(a.in_flight, 1);
    assert_int_equal(call("k1", "r", 2, 10 * S, "bbbb", T0 + 10 * S).ok, 0);
    /* another key's lease id frees nothing here */
    call("k2", "a", 1, 10 * S, "dddd", T0 + 10 * S);
    assert_int_equal(call("k1", "r", 2, 10 * S, "dddd", T0 + 10 * S).ok, 0);
    assert_int_equal(call("k1", "a", 2, 10 * S, "eeee", T0 + 10 * S).in_flight, 2);
    redisReply *r = cmd("ZCARD k1");
    assert_int_equal(r->integer, 2);
    freeReplyObject(r);
}

static void test_renew_and_ttl(void **state) {
    (void)state;
    call("k3", "a", 1, 5 * S, "aaaa", T0);
    /* the renew below is the last call that sets the key's TTL (5 s from then,
       in real time): the real time is measured from before it */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    answer a = call("k3", "n", 1, 5 * S, "aaaa", T0 + 4 * S);
    assert_int_equal(a.ok, 1);
    assert_int_equal(a.ttl, 5 * S); /* expires at T0 + 9 s */
    assert_int_equal(call("k3", "a", 1, 5 * S, "bbbb", T0 + 8 * S).retry, 1 * S);
    /* never shorter: a shorter lease time keeps T0 + 9 s */
    a = call("k3", "n", 1, 1 * S, "aaaa", T0 + 6 * S);
    assert_int_equal(a.ttl, 3 * S);
    /* the key's TTL covers its latest lease (in real ms: at least the lease,
       less the real time since the renew was sent, however slow the machine) */
    redisReply *r = cmd("PTTL k3");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long elapsed_ms =
        (t1.tv_sec - t0.tv_sec) * 1000LL + (t1.tv_nsec - t0.tv_nsec) / 1000000 + 1;
    assert_true(r->integer <= 5002);
    assert_true(r->integer >= 5000 - elapsed_ms);
    freeReplyObject(r);
    /* the last lease released: the key is gone */
    call("k3", "r", 1, 5 * S, "aaaa", T0 + 6 * S);
    r = cmd("EXISTS k3");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
}

static void test_lowered_limit(void **state) {
    (void)state;
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "id%d", i);
        assert_int_equal(call("k4", "a", 4, 60 * S, id, T0).ok, 1);
    }
    /* a lower limit refuses while 4 are held; the held ones stay */
    answer a = call("k4", "a", 2, 60 * S, "x", T0);
    assert_int_equal(a.ok, 0);
    assert_int_equal(a.in_flight, 4);
    call("k4", "r", 2, 60 * S, "id0", T0);
    call("k4", "r", 2, 60 * S, "id1", T0);
    assert_int_equal(call("k4", "a", 2, 60 * S, "x", T0).ok, 0);
    call("k4", "r", 2, 60 * S, "id2", T0);
    assert_int_equal(call("k4", "a", 2, 60 * S, "x", T0).ok, 1);
    /* an unknown op is an error, and changes nothing */
    redisReply *r = cmd("EVAL %s 1 k4 z 2 1 y %lld", sl__lease_script_source(), (long long)T0);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_release_expire),
        cmocka_unit_test(test_renew_and_ttl),
        cmocka_unit_test(test_lowered_limit),
    };
    return cmocka_run_group_tests(tests, redis_fixture_start, redis_fixture_stop);
}
