/* test_lease.c: the concurrency limiter (sluice/concurrency.h) on a fake
 * clock: acquire up to the limit, the refusal's retry_after (the earliest
 * expiry of a held lease), release (idempotent, never another's slot),
 * renew, expiry to the nanosecond, a clock going back, the memory cap
 * (refuse and count, never forget a lease), limit changes; and threads on
 * one key that never hold more than the limit at once. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"
#include "helpers.h"

#define T0 (1000 * SEC)

static sl_concurrency *make(int64_t limit, int64_t lease) {
    sl_concurrency *c = NULL;
    sl_concurrency_options o = {.limit = limit, .lease = lease, .seed = 42};
    assert_int_equal(sl_concurrency_create(&o, &c), SL_OK);
    return c;
}

static sl_acquire acq(sl_concurrency *c, const char *key, int64_t now) {
    sl_acquire a;
    assert_int_equal(sl_concurrency_acquire(c, key, strlen(key), now, &a), SL_OK);
    return a;
}

/* The empty key may be given as NULL (keylen 0): one key, found again
 * without handing memcmp a NULL (UBSan's nonnull check once saw it). */
static void test_empty_key_null(void **state) {
    (void)state;
    sl_concurrency *c = make(3, 10 * SEC);
    sl_acquire a;
    assert_int_equal(sl_concurrency_acquire(c, NULL, 0, T0, &a), SL_OK);
    assert_int_equal(sl_concurrency_acquire(c, NULL, 0, T0, &a), SL_OK);
    assert_int_equal(a.in_flight, 2);
    assert_int_equal(sl_concurrency_in_flight(c, NULL, 0, T0), 2);
    assert_int_equal(sl_concurrency_in_flight(c, "", 0, T0), 2);
    sl_concurrency_destroy(c);
}

static void test_limit_and_retry(void **state) {
    (void)state;
    sl_concurrency *c = make(3, 10 * SEC);
    sl_acquire a1 = acq(c, "k", T0);
    sl_acquire a2 = acq(c, "k", T0 + 1 * SEC);
    sl_acquire a3 = acq(c, "k", T0 + 2 * SEC);
    assert_true(a1.acquired && a2.acquired && a3.acquired);
    assert_int_equal(a1.lease.expires, T0 + 10 * SEC);
    assert_int_equal(a3.in_flight, 3);
    assert_int_equal(a3.remaining, 0);
    assert_int_equal(a1.remaining, 2);
    assert_int_equal(a3.limit, 3);
    assert_true(a1.lease.id && a2.lease.id != a1.lease.id && a3.lease.id != a2.lease.id);
    /* full: the earliest expiry is a1's */
    sl_acquire r = acq(c, "k", T0 + 3 * SEC);
    assert_false(r.acquired);
    assert_int_equal(r.retry_after, 7 * SEC);
    assert_int_equal(r.in_flight, 3);
    assert_int_equal(r.lease.id, 0);
    /* another key is independent */
    assert_true(acq(c, "other", T0 + 3 * SEC).acquired);
    /* releasing a1 frees a slot at once; the earliest is then a2's */
    int64_t left = -1;
    assert_int_equal(sl_concurrency_release(c, "k", 1, a1.lease.id, T0 + 3 * SEC, &left), SL_OK);
    assert_int_equal(left, 2);
    sl_acquire a4 = acq(c, "k", T0 + 4 * SEC);
    assert_true(a4.acquired);
    r = acq(c, "k", T0 + 4 * SEC);
    assert_false(r.acquired);
    assert_int_equal(r.retry_after, 7 * SEC); /* a2 expires at T0 + 11 s */
    /* a refusal changes nothing */
    assert_int_equal(sl_concurrency_in_flight(c, "k", 1, T0 + 4 * SEC), 3);
    sl_concurrency_destroy(c);
}

static void test_release_idempotent(void **state) {
    (void)state;
    sl_concurrency *c = make(2, 10 * SEC);
    sl_acquire a = acq(c, "k", T0), b = acq(c, "k", T0);
    assert_int_equal(sl_concurrency_release(c, "k", 1, a.lease.id, T0, NULL), SL_OK);
    /* twice: reported, and b keeps its slot */
    assert_int_equal(sl_concurrency_release(c, "k", 1, a.lease.id, T0, NULL), SL_ELEASE);
    assert_int_equal(sl_concurrency_in_flight(c, "k", 1, T0), 1);
    /* unknown ids, id 0, b's id under another key: nothing freed */
    assert_int_equal(sl_concurrency_release(c, "k", 1, 0, T0, NULL), SL_ELEASE);
    assert_int_equal(sl_concurrency_release(c, "k", 1, b.lease.id ^ 1, T0, NULL), SL_ELEASE);
    assert_int_equal(sl_concurrency_release(c, "x", 1, b.lease.id, T0, NULL), SL_ELEASE);
    assert_int_equal(sl_concurrency_in_flight(c, "k", 1, T0), 1);
    assert_int_equal(sl_concurrency_release(c, "k", 1, b.lease.id, T0, NULL), SL_OK);
    assert_int_equal(sl_concurrency_in_flight(c, "k", 1, T0), 0);
    /* the key's record is gone with its last lease */
    sl_concurrency_stats st;
    sl_concurrency_stats_get(c, &st);
    assert_int_equal(st.keys, 0);
    assert_int_equal(st.leases, 0);
    assert_string_equal(sl_strerror(SL_ELEASE),
                        "no such lease (never acquired, already released, or expired)");
    sl_concurrency_destroy(c);
}

static void test_expiry(void **state) {
    (void)state;
    sl_concurrency *c = make(1, 5 * SEC);
    sl_acquire a = acq(c, "k", T0);
    /* held until the nanosecond before its expiry */
    sl_acquire r = acq(c, "k", T0 + 5 * SEC - 1);
    assert_false(r.acquired);
    assert_int_equal(r.retry_after, 1);
    assert_int_equal(sl_concurrency_in_flight(c, "k", 1, T0 + 5 * SEC - 1), 1);
    assert_int_equal(sl_concurrency_in_flight(c, "k", 1, T0 + 5 * SEC), 0);
    /* gone at its expiry: a crashed client's slot comes back */
    sl_acquire b = acq(c, "k", T0 + 5 * SEC);
    assert_true(b.acquired);
    /* the expired lease can neither be released nor renewed, and b is kept */
    assert_int_equal(sl_concurrency_release(c, "k", 1, a.lease.id, T0 + 5 * SEC, NULL), SL_ELEASE);
    assert_int_equal(sl_concurrency_renew(c, "k", 1, a.lease.id, T0 + 5 * SEC, NULL), SL_ELEASE);
    assert_int_equal(sl_concurrency_in_flight(c, "k", 1, T0 + 5 * SEC), 1);
    /* a lease expired but not yet swept is not released either */
    assert_int_equal(sl_concurrency_release(c, "k", 1, b.lease.id, T0 + 10 * SEC, NULL), SL_ELEASE);
    sl_concurrency_stats st;
    sl_concurrency_stats_get(c, &st);
    assert_int_equal(st.keys, 0);
    sl_concurrency_destroy(c);
}

static void test_renew(void **state) {
    (void)state;
    sl_concurrency *c = make(1, 5 * SEC);
    sl_acquire a = acq(c, "k", T0);
    sl_lease l;
    assert_int_equal(sl_concurrency_renew(c, "k", 1, a.lease.id, T0 + 4 * SEC, &l), SL_OK);
    assert_int_equal(l.id, a.lease.id);
    assert_int_equal(l.expires, T0 + 9 * SEC);
    /* past its first expiry, still held */
    assert_false(acq(c, "k", T0 + 8 * SEC).acquired);
    /* a renewal never shortens (a shorter lease time, or a clock gone back) */
    assert_int_equal(sl_concurrency_set_lease(c, 1 * SEC), SL_OK);
    assert_int_equal(sl_concurrency_renew(c, "k", 1, a.lease.id, T0 + 6 * SEC, &l), SL_OK);
    assert_int_equal(l.expires, T0 + 9 * SEC);
    assert_int_equal(sl_concurrency_renew(c, "k", 1, a.lease.id ^ 2, T0 + 6 * SEC, &l), SL_ELEASE);
    /* new leases take the new lease time */
    sl_acquire b = acq(c, "k", T0 + 9 * SEC);
    assert_true(b.acquired);
    assert_int_equal(b.lease.expires, T0 + 10 * SEC);
    sl_concurrency_destroy(c);
}

static void test_clock_back(void **state) {
    (void)state;
    sl_concurrency *c = make(1, 5 * SEC);
    sl_acquire a = acq(c, "k", T0 + 100 * SEC);
    /* a caller whose clock reads earlier sees the lease held, and longer */
    sl_acquire r = acq(c, "k", T0);
    assert_false(r.acquired);
    assert_int_equal(r.retry_after, 105 * SEC);
    assert_int_equal(sl_concurrency_release(c, "k", 1, a.lease.id, T0, NULL), SL_OK);
    sl_concurrency_destroy(c);
}

static void test_args(void **state) {
    (void)state;
    sl_concurrency *c = NULL;
    sl_concurrency_options o = {.limit = 0, .lease = SEC};
    assert_int_equal(sl_concurrency_create(&o, &c), SL_EINVAL);
    o.limit = SL_CONCURRENCY_MAX + 1;
    assert_int_equal(sl_concurrency_create(&o, &c), SL_EINVAL);
    o.limit = 1;
    o.lease = 0;
    assert_int_equal(sl_concurrency_create(&o, &c), SL_EINVAL);
    o.lease = SL_CONCURRENCY_LEASE_MAX + 1;
    assert_int_equal(sl_concurrency_create(&o, &c), SL_EINVAL);
    o.lease = SEC;
    o.max_memory = 100;
    assert_int_equal(sl_concurrency_create(&o, &c), SL_EINVAL);
    c = make(1, SEC);
    sl_acquire a;
    assert_int_equal(sl_concurrency_acquire(c, "k", 1, -1, &a), SL_EINVAL);
    assert_int_equal(sl_concurrency_acquire(c, "k", 1, SL_TIME_MAX + 1, &a), SL_EINVAL);
    assert_int_equal(sl_concurrency_acquire(c, "k", SL_KEY_MAX + 1, T0, &a), SL_EKEY);
    assert_int_equal(sl_concurrency_release(c, "k", 1, 1, -1, NULL), SL_EINVAL);
    assert_int_equal(sl_concurrency_renew(c, "k", SL_KEY_MAX + 1, 1, T0, NULL), SL_EKEY);
    assert_int_equal(sl_concurrency_in_flight(c, "k", 1, -5), SL_EINVAL);
    assert_int_equal(sl_concurrency_set_limit(c, 0), SL_EINVAL);
    assert_int_equal(sl_concurrency_set_lease(c, -1), SL_EINVAL);
    /* an empty key is a key */
    assert_int_equal(sl_concurrency_acquire(c, "", 0, T0, &a), SL_OK);
    assert_true(a.acquired);
    sl_concurrency_destroy(c);
}

static void test_set_limit(void **state) {
    (void)state;
    sl_concurrency *c = make(4, 10 * SEC);
    sl_acquire l[4];
    for (int i = 0; i < 4; i++) l[i] = acq(c, "k", T0);
    /* lowered: the held leases stay; acquires refused until below */
    assert_int_equal(sl_concurrency_set_limit(c, 2), SL_OK);
    assert_int_equal(sl_concurrency_limit(c), 2);
    assert_false(acq(c, "k", T0).acquired);
    sl_concurrency_release(c, "k", 1, l[0].lease.id, T0, NULL);
    sl_concurrency_release(c, "k", 1, l[1].lease.id, T0, NULL);
    assert_false(acq(c, "k", T0).acquired); /* 2 held, limit 2 */
    sl_concurrency_release(c, "k", 1, l[2].lease.id, T0, NULL);
    assert_true(acq(c, "k", T0).acquired);
    /* raised past the lease array's size: it grows */
    assert_int_equal(sl_concurrency_set_limit(c, 40), SL_OK);
    for (int i = 0; i < 38; i++) assert_true(acq(c, "k", T0).acquired);
    sl_acquire r = acq(c, "k", T0);
    assert_false(r.acquired);
    assert_int_equal(r.in_flight, 40);
    sl_concurrency_destroy(c);
}

static void test_ids_unique(void **state) {
    (void)state;
    enum { N = 20000 };
    sl_concurrency *c = make(SL_CONCURRENCY_MAX, SEC);
    uint64_t *ids = malloc(N * sizeof *ids);
    for (int i = 0; i < N; i++) {
        sl_acquire a = acq(c, "k", T0);
        assert_true(a.acquired);
        ids[i] = a.lease.id;
        /* give half back: ids are never reused */
        if (i % 2) assert_int_equal(sl_concurrency_release(c, "k", 1, a.lease.id, T0, NULL), 0);
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < i + 64 && j < N; j++) assert_true(ids[i] != ids[j]);
    free(ids);
    sl_concurrency_destroy(c);
}

/* The cap: every key holding a live lease is kept (refused and counted
 * instead); once their leases expire, new keys fit again. */
static void test_memory_cap(void **state) {
    (void)state;
    sl_concurrency *c = NULL;
    sl_concurrency_options o = {.limit = 1, .lease = 10 * SEC, .max_memory = 64 << 10, .seed = 7};
    assert_int_equal(sl_concurrency_create(&o, &c), SL_OK);
    char key[32];
    int held = 0, refused = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        sl_acquire a;
        int rc = sl_concurrency_acquire(c, key, strlen(key), T0, &a);
        if (rc == SL_OK) {
            assert_true(a.acquired);
            held++;
        } else {
            assert_int_equal(rc, SL_ENOMEM);
            assert_false(a.acquired);
            assert_int_equal(a.retry_after, 10 * SEC); /* the full shard's earliest expiry */
            refused++;
        }
    }
    assert_true(held > 100 && refused > 0);
    sl_concurrency_stats st;
    sl_concurrency_stats_get(c, &st);
    assert_true(st.bytes <= st.max_bytes);
    assert_int_equal(st.keys, held);
    assert_int_equal(st.leases, held);
    assert_int_equal(st.refused_full, refused);
    /* every key kept still refuses a second lease: nothing was forgotten */
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        assert_true(sl_concurrency_in_flight(c, key, strlen(key), T0) <= 1);
    }
    /* after the expiry, new keys get room (the full shards are swept) */
    int later = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "new-%d", i);
        sl_acquire a;
        if (sl_concurrency_acquire(c, key, strlen(key), T0 + 10 * SEC, &a) == SL_OK) later++;
    }
    assert_int_equal(later, 200);
    sl_concurrency_stats_get(c, &st);
    assert_true(st.bytes <= st.max_bytes);
    assert_true(sl_concurrency_sweep(c, T0 + 20 * SEC) > 0);
    sl_concurrency_stats_get(c, &st);
    assert_int_equal(st.keys, 0);
    sl_concurrency_destroy(c);
}

/* ---- threads ---------------------------------------------------------------- */

#define THREADS 4
#define ROUNDS  20000
#define LIMIT   3

typedef struct shared {
    sl_concurrency *c;
    atomic_int held[2]; /* per key: acquired and not yet released */
    atomic_int max_held;
    atomic_long acquired;
    pthread_barrier_t start;
} shared;

static void *worker(void *arg) {
    shared *s = arg;
    pthread_barrier_wait(&s->start);
    for (int i = 0; i < ROUNDS; i++) {
        int k = i & 1;
        const char *key = k ? "b" : "a";
        sl_acquire a;
        /* a fixed clock and a long lease: only releases free slots */
        if (sl_concurrency_acquire(s->c, key, 1, T0, &a) != SL_OK || !a.acquired) continue;
        int now = atomic_fetch_add(&s->held[k], 1) + 1;
        int m = atomic_load(&s->max_held);
        while (now > m && !atomic_compare_exchange_weak(&s->max_held, &m, now)) {
        }
        atomic_fetch_add(&s->acquired, 1);
        atomic_fetch_sub(&s->held[k], 1);
        if (sl_concurrency_release(s->c, key, 1, a.lease.id, T0, NULL) != SL_OK) abort();
    }
    return NULL;
}

static void test_threads_never_above_limit(void **state) {
    (void)state;
    shared s = {.c = make(LIMIT, 3600 * SEC)};
    pthread_barrier_init(&s.start, NULL, THREADS);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, &s);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&s.start);
    assert_true(atomic_load(&s.max_held) <= LIMIT);
    assert_true(atomic_load(&s.acquired) > 0);
    assert_int_equal(sl_concurrency_in_flight(s.c, "a", 1, T0), 0);
    assert_int_equal(sl_concurrency_in_flight(s.c, "b", 1, T0), 0);
    sl_concurrency_destroy(s.c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_key_null),
        cmocka_unit_test(test_limit_and_retry),
        cmocka_unit_test(test_release_idempotent),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_renew),
        cmocka_unit_test(test_clock_back),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_set_limit),
        cmocka_unit_test(test_ids_unique),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_threads_never_above_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
