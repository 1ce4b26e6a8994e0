/* test_retry_redis.c: the retry budgets' Lua script (src/store/retry.lua)
 * against a real redis-server (tests/unit/redis_fixture.h) on a fake clock
 * (the script's explicit now_us), differential: random traces of first
 * attempts and retries (times forward, jumps past the window, steps back)
 * through the script and through the library (sluice/retry.h) give the same
 * answer, F, R and retry_after at every step; and the key's TTL covers its
 * window. Slots are long (10 s and more): Redis expires keys in its real time,
 * which the fake clock does not move. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#pragma GCC diagnostic ignored "-Wunused-function" /* the fixture's decide helpers */
#include "redis_fixture.h"
#include "helpers.h"
#include "sluice/sluice.h"
#include "store/retry.h"

#define US INT64_C(1000) /* ns */
#define T0 (INT64_C(1700000000) * 1000000)

typedef struct answer {
    long long ok, F, R, after;
} answer;

static answer call(const char *key, bool retry, long long ppm, long long min, long long slot_us,
                   long long now_us) {
    redisReply *r = cmd("EVAL %s 1 %s %d %lld %lld %lld %lld", sl__retry_script_source(), key,
                        retry ? 1 : 0, ppm, min, slot_us, now_us);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4)
        fail_msg("reply type %d: %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    answer a = {r->element[0]->integer, r->element[1]->integer, r->element[2]->integer,
                r->element[3]->integer};
    freeReplyObject(r);
    return a;
}

static void test_against_library(void **state) {
    (void)state;
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    const long long ppms[] = {0, 1, 100000, 333333, 500000, 1000000};
    for (int trace = 0; trace < 40; trace++) {
        long long ppm = ppms[helper_rand(&seed) % 6], min = (long long)(helper_rand(&seed) % 4);
        /* slots of 10..50 s: the key's TTL (real time, 11 slots) outlives any trace */
        long long slot_us = (long long)(1 + helper_rand(&seed) % 5) * 10000000;
        sl_retry_options o = {.ratio_ppm = ppm,
                              .min_retries = min,
                              .window = slot_us * US * SL_RETRY_SLOTS,
                              .seed = 3};
        sl_retry *b = NULL;
        assert_int_equal(sl_retry_create(&o, &b), SL_OK);
        char key[32];
        snprintf(key, sizeof key, "t%d", trace);
        long long now = T0 + (long long)(helper_rand(&seed) % 100000);
        for (int step = 0; step < 300; step++) {
            uint64_t r = helper_rand(&seed);
            if (r % 10 == 0)
                now += (long long)(helper_rand(&seed) % (uint64_t)(slot_us * 20));
            else if (r % 10 < 6)
                now += (long long)(helper_rand(&seed) % (uint64_t)slot_us);
            else if (r % 10 == 6)
                now -= (long long)(helper_rand(&seed) % (uint64_t)slot_us);
            bool retry = helper_rand(&seed) % 3 != 0;
            answer a = call(key, retry, ppm, min, slot_us, now);
            sl_retry_decision d;
            assert_int_equal(sl_retry_note(b, key, strlen(key), retry, now * US, &d), SL_OK);
            long long after = d.retry_after < 0 ? -1 : d.retry_after / US;
            if (a.ok != d.allowed || a.F != d.firsts || a.R != d.retries || a.after != after)
                fail_msg("trace %d step %d (ppm %lld min %lld slot %lld us, retry %d): script "
                         "%lld F %lld R %lld after %lld, library %d F %lld R %lld after %lld",
                         trace, step, ppm, min, slot_us, retry, a.ok, a.F, a.R, a.after, d.allowed,
                         (long long)d.firsts, (long long)d.retries, after);
        }
        /* the hash lives one window and a slot after its latest write, no more */
        redisReply *t = cmd("PTTL %s", key);
        assert_true(t->integer > 0 && t->integer <= slot_us * 11 / 1000 + 1);
        freeReplyObject(t);
        sl_retry_destroy(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_library),
    };
    return cmocka_run_group_tests(tests, redis_fixture_start, redis_fixture_stop);
}
