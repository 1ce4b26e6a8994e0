/* test_retry.c: the retry budget (sluice/retry.h), on a fake clock:
 * - the budget's arithmetic: min_retries, floor(F x ratio), slots leaving
 *   the window, refused retries count nothing, retry_after exact;
 * - the clock going back counts in the latest slot;
 * - bad options and arguments; the memory cap (eviction admits no more than
 *   a fresh key);
 * - random traces against a reference model written from the header's
 *   definition (a list of every counted event);
 * - threads on one key never admit more retries than the budget allows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "helpers.h"

static sl_retry *make(int64_t ppm, int64_t min, int64_t window) {
    sl_retry_options o = {.ratio_ppm = ppm, .min_retries = min, .window = window, .seed = 7};
    sl_retry *b = NULL;
    assert_int_equal(sl_retry_create(&o, &b), SL_OK);
    return b;
}

static sl_retry_decision note(sl_retry *b, const char *key, bool retry, int64_t now) {
    sl_retry_decision d;
    assert_int_equal(sl_retry_note(b, key, strlen(key), retry, now, &d), SL_OK);
    return d;
}

static void budget(void **state) {
    (void)state;
    sl_retry *b = make(100000, 2, 10 * SEC); /* 10 %, 2 always, 10 s (1 s slots) */
    /* no first attempts: min_retries only */
    assert_true(note(b, "k", true, 0).allowed);
    assert_true(note(b, "k", true, 0).allowed);
    sl_retry_decision d = note(b, "k", true, 0);
    assert_false(d.allowed);
    assert_int_equal(d.retries, 2);
    assert_int_equal(d.budget, 2);
    assert_int_equal(d.retry_after, 10 * SEC); /* slot 0 leaves at 10 s */
    /* 9 first attempts: floor(0.9) = 0, still 2 */
    for (int i = 0; i < 9; i++) assert_true(note(b, "k", false, 1 * SEC).allowed);
    assert_false(note(b, "k", true, 1 * SEC).allowed);
    /* the 10th: floor(1.0) = 1, a third retry passes */
    d = note(b, "k", false, 1 * SEC);
    assert_int_equal(d.firsts, 10);
    assert_int_equal(d.budget, 3);
    d = note(b, "k", true, 1 * SEC);
    assert_true(d.allowed);
    assert_int_equal(d.retries, 3);
    d = note(b, "k", true, 2 * SEC);
    assert_false(d.allowed);
    /* at 10 s slot 0 (2 retries) leaves: R = 1, F = 10, budget 3 */
    assert_int_equal(d.retry_after, 8 * SEC);
    assert_false(note(b, "k", true, 10 * SEC - 1).allowed);
    d = note(b, "k", true, 10 * SEC);
    assert_true(d.allowed);
    assert_int_equal(d.retries, 2);
    assert_int_equal(d.firsts, 10);
    /* other keys are apart */
    assert_true(note(b, "other", true, 10 * SEC).allowed);
    /* at 21 s everything left */
    d = note(b, "k", true, 21 * SEC);
    assert_true(d.allowed);
    assert_int_equal(d.firsts, 0);
    assert_int_equal(d.retries, 1);
    sl_retry_destroy(b);
}

static void never_alone(void **state) {
    (void)state;
    sl_retry *b = make(500000, 0, 100 * MS); /* 50 %, none without first attempts */
    sl_retry_decision d = note(b, "k", true, 0);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, -1);
    note(b, "k", false, 0);
    assert_false(note(b, "k", true, 0).allowed); /* floor(0.5) = 0 */
    note(b, "k", false, 5 * MS);
    assert_true(note(b, "k", true, 5 * MS).allowed);
    d = note(b, "k", true, 5 * MS);
    assert_false(d.allowed);
    /* only new first attempts can: slot 0 leaving takes a first attempt too */
    assert_int_equal(d.retry_after, -1);
    /* 100 % ratio, exact at the largest counts */
    sl_retry_destroy(b);
    b = make(SL_RETRY_PPM, 0, 10 * SEC);
    for (int i = 0; i < 5; i++) note(b, "k", false, 0);
    for (int i = 0; i < 5; i++) assert_true(note(b, "k", true, 0).allowed);
    assert_false(note(b, "k", true, 0).allowed);
    sl_retry_destroy(b);
}

static void clock_back(void **state) {
    (void)state;
    sl_retry *b = make(0, 1, 10 * SEC);
    assert_true(note(b, "k", true, 20 * SEC).allowed);
    /* back to 5 s: counted in slot 20 (the latest), still in the window */
    sl_retry_decision d = note(b, "k", true, 5 * SEC);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, 25 * SEC); /* slot 20 leaves at 30 s */
    assert_false(note(b, "k", true, 30 * SEC - 1).allowed);
    assert_true(note(b, "k", true, 30 * SEC).allowed);
    sl_retry_destroy(b);
}

static void bad_arguments(void **state) {
    (void)state;
    sl_retry *b = NULL;
    sl_retry_options o = {.ratio_ppm = 100000, .min_retries = 1, .window = 10 * SEC};
    o.ratio_ppm = SL_RETRY_PPM + 1;
    assert_int_equal(sl_retry_create(&o, &b), SL_EINVAL);
    o.ratio_ppm = -1;
    assert_int_equal(sl_retry_create(&o, &b), SL_EINVAL);
    o.ratio_ppm = 0;
    o.min_retries = -1;
    assert_int_equal(sl_retry_create(&o, &b), SL_EINVAL);
    o.min_retries = 0;
    o.window = 10 * SEC + 1; /* not a multiple of 10 */
    assert_int_equal(sl_retry_create(&o, &b), SL_EINVAL);
    o.window = SL_RETRY_WINDOW_MIN - 10;
    assert_int_equal(sl_retry_create(&o, &b), SL_EINVAL);
    o.window = SL_RETRY_WINDOW_MAX + 10;
    assert_int_equal(sl_retry_create(&o, &b), SL_EINVAL);
    o.window = 10 * SEC;
    o.max_memory = 100;
    assert_int_equal(sl_retry_create(&o, &b), SL_EINVAL);
    assert_null(b);
    o.max_memory = 0;
    assert_int_equal(sl_retry_create(&o, &b), SL_OK);
    sl_retry_decision d;
    assert_int_equal(sl_retry_note(b, "", 0, true, 0, &d), SL_EKEY);
    assert_int_equal(sl_retry_note(b, "k", 1, true, -1, &d), SL_EINVAL);
    assert_int_equal(sl_retry_note(b, "k", 1, true, SL_TIME_MAX + 1, &d), SL_EINVAL);
    assert_int_equal(sl_retry_note(b, "k", 1, true, SL_TIME_MAX, &d), SL_OK);
    sl_retry_destroy(b);
}

/* At the cap, keys are evicted, and a key that comes back admits what a
 * fresh key admits: min_retries. */
static void memory_cap(void **state) {
    (void)state;
    sl_retry_options o = {
        .ratio_ppm = SL_RETRY_PPM, .min_retries = 1, .window = 10 * SEC, .max_memory = 64 << 10};
    sl_retry *b = NULL;
    assert_int_equal(sl_retry_create(&o, &b), SL_OK);
    for (int i = 0; i < 20; i++) note(b, "victim", false, 0);
    char key[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        note(b, key, false, 0);
    }
    sl_retry_stats st;
    sl_retry_stats_get(b, &st);
    assert_true(st.bytes <= (size_t)(64 << 10));
    assert_true(st.evicted > 0);
    assert_true(st.keys < 5000);
    sl_retry_decision d = note(b, "victim", true, 0); /* evicted: fresh */
    assert_true(d.allowed);
    assert_int_equal(d.firsts, 0);
    assert_false(note(b, "victim", true, 0).allowed);
    sl_retry_destroy(b);
}

/* The reference: every counted event (slot, first or retry) of one key,
 * the rule applied to the events whose slots are in the window. */
typedef struct ref_event {
    int64_t slot;
    bool retry;
} ref_event;

typedef struct ref {
    ref_event ev[4096];
    int n;
    int64_t latest; /* slot */
} ref;

static bool ref_note(ref *m, int64_t slot, bool retry, int64_t ppm, int64_t min, int64_t *F,
                     int64_t *R) {
    if (slot < m->latest) slot = m->latest;
    m->latest = slot;
    *F = *R = 0;
    for (int i = 0; i < m->n; i++) {
        if (m->ev[i].slot <= slot - SL_RETRY_SLOTS) continue;
        if (m->ev[i].retry)
            (*R)++;
        else
            (*F)++;
    }
    bool ok = !retry || *R + 1 <= min + (*F * ppm) / SL_RETRY_PPM;
    if (ok) {
        m->ev[m->n].slot = slot;
        m->ev[m->n].retry = retry;
        m->n++;
        if (retry)
            (*R)++;
        else
            (*F)++;
    }
    return ok;
}

static void against_reference(void **state) {
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    static ref models[3];
    const int64_t ppms[] = {0, 1, 100000, 333333, 500000, SL_RETRY_PPM};
    long checked = 0;
    for (int trace = 0; trace < 200; trace++) {
        int64_t ppm = ppms[helper_rand(&seed) % 6], min = (int64_t)(helper_rand(&seed) % 4);
        int64_t width = (int64_t)(1 + helper_rand(&seed) % 5) * MS, window = width * SL_RETRY_SLOTS;
        sl_retry *b = make(ppm, min, window);
        memset(models, 0, sizeof models);
        int64_t now = (int64_t)(helper_rand(&seed) % 1000) * MS;
        for (int step = 0; step < 1300; step++) {
            uint64_t r = helper_rand(&seed);
            if (r % 8 == 0)
                now += (int64_t)(helper_rand(&seed) % (uint64_t)(window * 2));
            else if (r % 8 < 5)
                now += (int64_t)(helper_rand(&seed) % (uint64_t)width);
            else if (r % 8 == 5 && now > width)
                now -= (int64_t)(helper_rand(&seed) % (uint64_t)width);
            int k = (int)(helper_rand(&seed) % 3);
            bool retry = helper_rand(&seed) % 3 != 0;
            char key[2] = {(char)('a' + k), 0};
            int64_t F, R;
            bool want = ref_note(&models[k], now / width, retry, ppm, min, &F, &R);
            sl_retry_decision d = note(b, key, retry, now);
            if (d.allowed != want || d.firsts != F || d.retries != R)
                fail_msg("trace %d step %d key %d: ppm %lld min %lld now %lld retry %d: got "
                         "%d F %lld R %lld, want %d F %lld R %lld",
                         trace, step, k, (long long)ppm, (long long)min, (long long)now, retry,
                         d.allowed, (long long)d.firsts, (long long)d.retries, want, (long long)F,
                         (long long)R);
            if (!d.allowed) {
                /* retry_after: nothing passes before it (with no new first attempts), and
                   it passes at it */
                ref copy = models[k];
                int64_t latest = copy.latest;
                if (d.retry_after > 0) {
                    int64_t f2, r2;
                    int64_t at = now + d.retry_after;
                    assert_true(ref_note(&copy, at / width, true, ppm, min, &f2, &r2));
                    copy = models[k];
                    if (at - 1 >= now && (at - 1) / width >= latest)
                        assert_false(ref_note(&copy, (at - 1) / width, true, ppm, min, &f2, &r2));
                } else {
                    assert_int_equal(d.retry_after, -1);
                    int64_t f2, r2;
                    assert_false(
                        ref_note(&copy, latest + SL_RETRY_SLOTS - 1, true, ppm, min, &f2, &r2));
                    assert_int_equal(min, 0);
                }
            }
            checked++;
            if (models[k].n > 4000) { /* keep the model small: only the window matters */
                int j = 0;
                for (int i = 0; i < models[k].n; i++)
                    if (models[k].ev[i].slot > models[k].latest - SL_RETRY_SLOTS)
                        models[k].ev[j++] = models[k].ev[i];
                models[k].n = j;
            }
        }
        sl_retry_destroy(b);
    }
    assert_true(checked == 200L * 1300);
}

typedef struct thread_arg {
    sl_retry *b;
    _Atomic long admitted;
} thread_arg;

static void *hammer(void *p) {
    thread_arg *a = p;
    for (int i = 0; i < 20000; i++) {
        sl_retry_decision d;
        if (sl_retry_note(a->b, "hot", 3, i % 4 != 0 ? true : false, 0, &d) == SL_OK && d.allowed &&
            i % 4 != 0)
            a->admitted++;
    }
    return NULL;
}

/* 4 threads, 5,000 first attempts each (20,000), retries at 10 % + 3: never
 * more than 2,003 retries admitted in one window; and as many, since every
 * retry tried after the last first attempt passes while under budget. */
static void threads(void **state) {
    (void)state;
    thread_arg a = {.b = make(100000, 3, 10 * SEC)};
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, hammer, &a);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    assert_true(a.admitted <= 2003);
    sl_retry_decision d = note(a.b, "hot", false, 0);
    assert_int_equal(d.firsts, 20001);
    assert_int_equal(d.retries, a.admitted);
    sl_retry_destroy(a.b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(budget),     cmocka_unit_test(never_alone),
        cmocka_unit_test(clock_back), cmocka_unit_test(bad_arguments),
        cmocka_unit_test(memory_cap), cmocka_unit_test(against_reference),
        cmocka_unit_test(threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
