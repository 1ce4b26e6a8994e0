/* test_table_lock.c: the shard lock (core/shard_lock.h) and the table's
 * decisions under it, with threads (label "concurrency": run under TSan too).
 *
 * - linearizable: THREADS threads make random checks (costs 1-3) on KEYS
 *   token-bucket keys at one fixed time, so no token comes back and the
 *   order of the decisions is all that matters. Each decision reports what
 *   is left after it; the allowed ones of a key, sorted by what they left,
 *   must form one chain from the burst down (each took exactly its cost from
 *   the one before), and every refusal must have seen a point of that chain
 *   too small for its cost. That order is then replayed in one thread on a
 *   fresh table, every decision equal, the totals equal.
 * - mutual exclusion: a plain counter incremented under the lock by every
 *   thread ends at the number of increments.
 * - bounded waiting: a thread that takes the lock again at once, in a loop,
 *   does not keep a second thread out; the second one takes it WAITER_TAKES
 *   times while the first never stops (an alarm fails the test if it
 *   hangs).
 *
 * No timing enters a verdict: every check is on counts and values. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers, alarm */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/shard_lock.h"
#include "sluice/sluice.h"

#define THREADS      4
#define KEYS         3
#define OPS          20000 /* per thread */
#define BURST        15000 /* per key: about a quarter of the demand passes */
#define NOW          (1000 * SL_NS_PER_SEC)
#define WAITER_TAKES 20000

typedef struct op {
    int key;
    int64_t cost;
    bool allowed;
    int64_t remaining;
} op;

typedef struct worker {
    sl_table *table;
    pthread_barrier_t *start;
    uint64_t seed;
    op ops[OPS];
} worker;

static const char *const key_names[KEYS] = {"alice", "bob", "a-key-too-long-to-be-inline"};

static uint64_t rng_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void *worker_main(void *p) {
    worker *w = p;
    pthread_barrier_wait(w->start);
    for (int i = 0; i < OPS; i++) {
        uint64_t r = rng_next(&w->seed);
        op *o = &w->ops[i];
        o->key = (int)(r % KEYS);
        o->cost = 1 + (int64_t)((r >> 8) % 3);
        sl_decision d;
        const char *k = key_names[o->key];
        int rc = sl_table_check(w->table, k, strlen(k), o->cost, NOW, &d);
        if (rc != SL_OK) abort();
        o->allowed = d.allowed;
        o->remaining = d.remaining;
    }
    return NULL;
}

/* Sort: by key, then what was left, most first; at one point of the chain
 * the allowed op (which made it) before the refusals (which saw it). */
static int cmp_op(const void *a, const void *b) {
    const op *x = *(op *const *)a, *y = *(op *const *)b;
    if (x->key != y->key) return x->key - y->key;
    if (x->remaining != y->remaining) return x->remaining < y->remaining ? 1 : -1;
    return (int)y->allowed - (int)x->allowed;
}

static sl_table *bucket_table(void) {
    sl_table_options o = {.params = {.algorithm = SL_TOKEN_BUCKET,
                                     .rate = {1, 3600 * SL_NS_PER_SEC},
                                     .burst = BURST}};
    sl_table *t;
    assert_int_equal(sl_table_create(&o, &t), SL_OK);
    return t;
}

static void linearizable(void **state) {
    (void)state;
    sl_table *t = bucket_table();
    static worker w[THREADS];
    pthread_t th[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        w[i] =
            (worker){.table = t, .start = &start, .seed = 0x9e3779b97f4a7c15u * (uint64_t)(i + 1)};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);

    static op *order[THREADS * OPS];
    size_t n = 0;
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < OPS; j++) order[n++] = &w[i].ops[j];
    qsort(order, n, sizeof order[0], cmp_op);

    /* the chain, per key: each allowed op took its cost from the point
     * before; each refusal saw a point of the chain smaller than its cost */
    int64_t left[KEYS], passed[KEYS] = {0};
    for (int k = 0; k < KEYS; k++) left[k] = BURST;
    for (size_t i = 0; i < n; i++) {
        const op *o = order[i];
        if (o->allowed) {
            if (o->remaining != left[o->key] - o->cost)
                fail_msg("key %d: an allowed cost %lld left %lld after %lld (a lost or doubled "
                         "update)",
                         o->key, (long long)o->cost, (long long)o->remaining,
                         (long long)left[o->key]);
            left[o->key] = o->remaining;
            passed[o->key] += o->cost;
        } else if (o->remaining != left[o->key] || o->cost <= o->remaining) {
            fail_msg("key %d: a refusal of cost %lld saw %lld, the chain was at %lld", o->key,
                     (long long)o->cost, (long long)o->remaining, (long long)left[o->key]);
        }
    }
    /* the serial replay of that order: the same decisions, the same totals */
    sl_table *serial = bucket_table();
    int64_t replay_passed[KEYS] = {0};
    for (size_t i = 0; i < n; i++) {
        const op *o = order[i];
        const char *k = key_names[o->key];
        sl_decision d;
        assert_int_equal(sl_table_check(serial, k, strlen(k), o->cost, NOW, &d), SL_OK);
        assert_int_equal(d.allowed, o->allowed);
        assert_int_equal(d.remaining, o->remaining);
        if (d.allowed) replay_passed[o->key] += o->cost;
    }
    for (int k = 0; k < KEYS; k++) {
        sl_decision a, b;
        const char *key = key_names[k];
        assert_int_equal(sl_table_check(t, key, strlen(key), 0, NOW, &a), SL_OK);
        assert_int_equal(sl_table_check(serial, key, strlen(key), 0, NOW, &b), SL_OK);
        assert_int_equal(a.remaining, b.remaining);
        assert_int_equal(passed[k], replay_passed[k]);
        assert_int_equal(passed[k], BURST - a.remaining);
        /* the demand outran the burst: refusals happened on every key */
        assert_true(a.remaining < 3);
    }
    sl_table_destroy(serial);
    sl_table_destroy(t);
}

/* ---- the lock alone ---------------------------------------------------- */

typedef struct lock_arg {
    sl__shard_lock *lock;
    atomic_int *stop;
    int64_t *counter; /* written only under the lock */
    int *inside;      /* threads in the critical section: read and written under the lock */
    int64_t takes, overlaps;
} lock_arg;

/* One critical section: a read-modify-write of the counter spread over a
 * few steps, and a count of threads inside that must be 0 on entry. */
static void critical(lock_arg *a) {
    sl__shard_lock_take(a->lock);
    if ((*a->inside)++) a->overlaps++;
    int64_t v = *a->counter;
    for (volatile int i = 0; i < 20; i++) {
    }
    *a->counter = v + 1;
    (*a->inside)--;
    sl__shard_lock_give(a->lock);
    a->takes++;
}

/* Takes and gives back the lock as fast as it can until told to stop. */
static void *hog_main(void *p) {
    lock_arg *a = p;
    while (!atomic_load_explicit(a->stop, memory_order_relaxed)) critical(a);
    return NULL;
}

static void *waiter_main(void *p) {
    lock_arg *a = p;
    for (int i = 0; i < WAITER_TAKES; i++) critical(a);
    atomic_store(a->stop, 1);
    return NULL;
}

static void no_starvation(void **state) {
    (void)state;
    static sl__shard_lock lock;
    sl__shard_lock_init(&lock);
    atomic_int stop = 0;
    int64_t counter = 0;
    int inside = 0;
    lock_arg hogs[THREADS - 1],
        waiter = {.lock = &lock, .stop = &stop, .counter = &counter, .inside = &inside};
    pthread_t th[THREADS];
    alarm(240); /* a starved waiter fails the test instead of hanging it */
    for (int i = 0; i < THREADS - 1; i++) {
        hogs[i] = waiter;
        assert_int_equal(pthread_create(&th[i], NULL, hog_main, &hogs[i]), 0);
    }
    assert_int_equal(pthread_create(&th[THREADS - 1], NULL, waiter_main, &waiter), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    alarm(0);
    int64_t takes = waiter.takes, overlaps = waiter.overlaps;
    for (int i = 0; i < THREADS - 1; i++) {
        takes += hogs[i].takes;
        overlaps += hogs[i].overlaps;
    }
    assert_int_equal(overlaps, 0);
    assert_int_equal(waiter.takes, WAITER_TAKES);
    assert_int_equal(counter, takes); /* mutual exclusion: no increment lost */
    assert_int_equal(atomic_load(&lock.locked), 0);
    assert_int_equal(atomic_load(&lock.want), 0);
    assert_int_equal(atomic_load(&lock.next), atomic_load(&lock.serving));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linearizable),
        cmocka_unit_test(no_starvation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
