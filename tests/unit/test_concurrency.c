/* test_concurrency.c: many threads on one table or limiter. The total
 * admitted never exceeds the bound of the algorithm (buckets: burst + rate *
 * elapsed; fixed and sliding window counters: the limit per window; sliding
 * log: the limit per any period), and buckets admit what the bound allows
 * but for a few tokens (no thread is starved). Concurrent multi-key checks on
 * overlapping keys neither deadlock nor half-apply, and eviction under
 * contention keeps the memory cap and its accounting. Run under TSan as well
 * as ASan.
 *
 * Time is a shared virtual clock, never the machine's: each call takes the
 * next tick of an atomic counter (sl_limiter_wait a fake sl_clock that jumps
 * to the slot it waits for), and every thread makes a fixed number of calls.
 * So the numbers do not depend on how fast or loaded the machine is (issue
 * 12 item 19: lower bounds on admissions in real time failed under ctest
 * -j16); the threads still race for the same locks in every interleaving the
 * scheduler picks, and a tick taken by one thread may reach the table after
 * a later tick of another, as real clock readings do. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers, alarm */
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
#include <unistd.h>

#include "sluice/sluice.h"

#include "helpers.h"

#define US      INT64_C(1000)
#define THREADS 4
#define CALLS   20000        /* per thread and run */
#define T0      (1000 * SEC) /* the virtual clock's start */
#define HOUR    (3600 * SEC)
/* What a bucket may leave unused at the end: a call whose tick is late (its
 * thread was descheduled between taking the tick and calling) may be refused
 * where a punctual one would pass, and at most THREADS - 1 calls are late at
 * any moment. */
#define BUCKET_SLACK (4 * THREADS)

static uint64_t rng_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ---- one hot key, every algorithm ------------------------------------------- */

/* The shared virtual clock is helpers.h's fake_clock: each call takes its
 * next tick (fake_clock_tick), what one call of one thread sees as now. */

typedef struct hammer {
    sl_table *table;
    sl_algorithm alg;
    int64_t period, step;
    fake_clock *clock;
    pthread_barrier_t *start;
    /* out */
    int64_t calls, admitted, errors;
    int64_t *marks; /* per admitted request: window index or log stamp */
    size_t nmarks, cap;
} hammer;

static void *hammer_main(void *p) {
    hammer *h = p;
    pthread_barrier_wait(h->start);
    for (int i = 0; i < CALLS; i++) {
        int64_t now = fake_clock_tick(h->clock, h->step);
        sl_decision d;
        int rc = sl_table_check(h->table, "hot", 3, 1, now, &d);
        h->calls++;
        if (rc) {
            h->errors++;
            continue;
        }
        if (!d.allowed) continue;
        h->admitted++;
        /* Recover from the decision what the limiter counted this request in:
         * the window that ends at now + reset_after (fixed), the window before
         * the one that ends then (sliding counter), or the log stamp. */
        int64_t mark;
        if (h->alg == SL_FIXED_WINDOW)
            mark = (now + d.reset_after) / h->period - 1;
        else if (h->alg == SL_SLIDING_WINDOW)
            mark = (now + d.reset_after) / h->period - 2;
        else if (h->alg == SL_SLIDING_LOG)
            mark = now + d.reset_after - h->period;
        else
            continue;
        if (h->nmarks == h->cap) {
            h->cap = h->cap ? 2 * h->cap : 1024;
            h->marks = realloc(h->marks, h->cap * sizeof *h->marks);
            if (!h->marks) abort();
        }
        h->marks[h->nmarks++] = mark;
    }
    return NULL;
}

/* step: virtual ns per call, a few calls per token or many per window, so
 * that the limiter (not the callers) is the bottleneck. */
static void run_hot_key(sl_algorithm alg, int64_t limit, int64_t period, int64_t burst,
                        int64_t step) {
    sl_table_options o = {.params = {.algorithm = alg, .rate = {limit, period}, .burst = burst}};
    sl_table *t;
    assert_int_equal(sl_table_create(&o, &t), SL_OK);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS + 1);
    fake_clock clock = {.now = T0};
    hammer h[THREADS];
    pthread_t th[THREADS];
    const int64_t t_start = T0;
    for (int i = 0; i < THREADS; i++) {
        h[i] = (hammer){.table = t,
                        .alg = alg,
                        .period = period,
                        .step = step,
                        .clock = &clock,
                        .start = &start};
        assert_int_equal(pthread_create(&th[i], NULL, hammer_main, &h[i]), 0);
    }
    pthread_barrier_wait(&start);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    const int64_t t_end = atomic_load(&clock.now); /* the last tick taken */
    pthread_barrier_destroy(&start);

    int64_t calls = 0, admitted = 0, errors = 0;
    size_t nmarks = 0;
    for (int i = 0; i < THREADS; i++) {
        calls += h[i].calls;
        admitted += h[i].admitted;
        errors += h[i].errors;
        nmarks += h[i].nmarks;
    }
    int64_t *marks = malloc((nmarks + 1) * sizeof *marks);
    assert_non_null(marks);
    nmarks = 0;
    for (int i = 0; i < THREADS; i++) {
        if (h[i].nmarks) memcpy(marks + nmarks, h[i].marks, h[i].nmarks * sizeof *marks);
        nmarks += h[i].nmarks;
        free(h[i].marks);
    }
    qsort(marks, nmarks, sizeof *marks, cmp_i64);
    assert_i64(errors, 0);
    assert_i64(calls, (int64_t)THREADS * CALLS);
    assert_i64(t_end - t_start, calls * step);
    print_message("  %-14s %lld calls, %lld admitted in %lld virtual ms\n", sl_algorithm_name(alg),
                  (long long)calls, (long long)admitted, (long long)((t_end - t_start) / MS));
    /* the test is only meaningful if the limiter was the bottleneck */
    assert_le(2 * admitted, calls);

    const int64_t elapsed = t_end - t_start;
    if (alg == SL_TOKEN_BUCKET || alg == SL_GCRA || alg == SL_LEAKY_QUEUE) {
        /* admitted <= burst + limit * elapsed / period, exactly */
        __int128 lhs = (__int128)admitted * period;
        __int128 rhs = (__int128)burst * period + (__int128)limit * elapsed;
        if (lhs > rhs)
            fail_msg("%s: %lld admitted > bound %lld", sl_algorithm_name(alg), (long long)admitted,
                     (long long)(rhs / period));
        /* and all of it but for a few tokens: nobody starved, nothing lost */
        if (lhs + (__int128)BUCKET_SLACK * period < rhs)
            fail_msg("%s: only %lld admitted, bound %lld (slack %d)", sl_algorithm_name(alg),
                     (long long)admitted, (long long)(rhs / period), BUCKET_SLACK);
    } else if (alg == SL_SLIDING_LOG) {
        /* any N+1 admitted requests span at least one period */
        for (size_t i = 0; i + (size_t)limit < nmarks; i++)
            if (marks[i + (size_t)limit] - marks[i] < period)
                fail_msg("sliding log: %lld admitted within %lld ns", (long long)limit + 1,
                         (long long)(marks[i + (size_t)limit] - marks[i]));
        assert_le(limit, admitted);
    } else {
        /* at most N per window, and per windows touched in all */
        int64_t windows = t_end / period - t_start / period + 1;
        assert_le(admitted, limit * windows);
        for (size_t i = 0, j; i < nmarks; i = j) {
            for (j = i; j < nmarks && marks[j] == marks[i]; j++) {
            }
            if ((int64_t)(j - i) > limit)
                fail_msg("%s: %zu admitted in window %lld (limit %lld)", sl_algorithm_name(alg),
                         j - i, (long long)marks[i], (long long)limit);
        }
        assert_le(limit, admitted);
    }
    free(marks);
    sl_table_destroy(t);
}

static void hot_key_buckets(void **state) {
    (void)state;
    /* 125 us a call: 4 calls per token at 2000/s, 5.3 at 1500/s */
    run_hot_key(SL_TOKEN_BUCKET, 2000, SEC, 100, 125 * US);
    run_hot_key(SL_GCRA, 2000, SEC, 100, 125 * US);
    run_hot_key(SL_LEAKY_QUEUE, 3000, 2 * SEC, 50, 125 * US); /* 1500/s */
}

static void hot_key_windows(void **state) {
    (void)state;
    /* 50 us a call: 1000 calls per window of 100 */
    run_hot_key(SL_FIXED_WINDOW, 100, 50 * MS, 0, 50 * US);
    run_hot_key(SL_SLIDING_WINDOW, 100, 50 * MS, 0, 50 * US);
    run_hot_key(SL_SLIDING_LOG, 100, 50 * MS, 0, 50 * US);
}

/* ---- the standalone limiter ------------------------------------------------- */

/* The fake clock of sl_limiter_wait (helpers.h): now() reads the shared
 * virtual clock, sleep_until() moves it forward to t (never back). */
typedef struct lim_arg {
    sl_limiter *l;
    pthread_barrier_t *start;
    fake_clock *clock;
    int64_t end;
    bool wait; /* sl_limiter_wait on the fake clock instead of allow */
    int64_t calls, admitted, errors;
} lim_arg;

#define LIM_STEP (250 * US) /* allow: 4 calls per token at 1000/s */

static void *limiter_main(void *p) {
    lim_arg *a = p;
    const sl_clock fake = fake_clock_of(a->clock);
    pthread_barrier_wait(a->start);
    for (int i = 0; i < CALLS; i++) {
        a->calls++;
        if (a->wait) {
            /* a deadline at the end of the run: a slot beyond it fails at
             * once, and so would every later one (slots only move later) */
            int rc = sl_limiter_wait(a->l, 1, a->end, &fake);
            if (rc == SL_EDEADLINE) break;
            if (rc == SL_OK)
                a->admitted++;
            else
                a->errors++;
        } else if (sl_limiter_allow(a->l, 1, fake_clock_tick(a->clock, LIM_STEP))) {
            a->admitted++;
        }
    }
    return NULL;
}

static void run_limiter(bool wait) {
    const int64_t limit = 1000, burst = 20, run_ns = 300 * MS;
    const int64_t t_start = T0;
    fake_clock clock = {.now = T0};
    sl_limiter *l;
    assert_int_equal(sl_limiter_create((sl_rate){limit, SEC}, burst, 0, t_start, &l), SL_OK);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS + 1);
    lim_arg a[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i] = (lim_arg){
            .l = l, .start = &start, .clock = &clock, .end = t_start + run_ns, .wait = wait};
        assert_int_equal(pthread_create(&th[i], NULL, limiter_main, &a[i]), 0);
    }
    pthread_barrier_wait(&start);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    const int64_t t_end = atomic_load(&clock.now);
    pthread_barrier_destroy(&start);
    int64_t admitted = 0, calls = 0, errors = 0;
    for (int i = 0; i < THREADS; i++) {
        admitted += a[i].admitted;
        calls += a[i].calls;
        errors += a[i].errors;
    }
    print_message("  limiter %-5s %lld calls, %lld admitted in %lld virtual ms\n",
                  wait ? "wait" : "allow", (long long)calls, (long long)admitted,
                  (long long)((t_end - t_start) / MS));
    assert_i64(errors, 0);
    if (wait) {
        /* Every slot up to the deadline is booked by some thread, none twice,
         * none beyond: the burst at t_start, then one slot per ms up to and
         * including t_start + 300 ms. The clock went exactly as far as the
         * last slot. */
        assert_i64(admitted, burst + limit * run_ns / SEC);
        assert_i64(t_end, t_start + run_ns);
    } else {
        assert_i64(t_end - t_start, calls * LIM_STEP);
        __int128 lhs = (__int128)admitted * SEC;
        __int128 rhs = (__int128)burst * SEC + (__int128)limit * (t_end - t_start);
        if (lhs > rhs) fail_msg("limiter: %lld admitted > bound", (long long)admitted);
        if (lhs + (__int128)BUCKET_SLACK * SEC < rhs)
            fail_msg("limiter: only %lld admitted, bound %lld", (long long)admitted,
                     (long long)(rhs / SEC));
    }
    /* every token was either used or is still there: never negative at the end */
    assert_le(0, sl_limiter_tokens(l, t_end));
    sl_limiter_destroy(l);
}

static void limiter_threads(void **state) {
    (void)state;
    run_limiter(false);
    run_limiter(true);
}

/* ---- sl_table_check_all on overlapping keys ---------------------------------- */

#define MULTI_TABLES   3
#define MULTI_KEYS     8
#define MULTI_CAPACITY 3000
#define MULTI_ITERS    12000

typedef struct multi_arg {
    sl_table **tables;
    pthread_barrier_t *start;
    int64_t now;
    uint64_t seed;
    /* out: what this thread's passing requests took from each key */
    int64_t taken[MULTI_TABLES][MULTI_KEYS];
    int64_t passed, refused, errors;
} multi_arg;

static const char *const multi_keys[MULTI_KEYS] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};

static void *multi_main(void *p) {
    multi_arg *a = p;
    pthread_barrier_wait(a->start);
    uint64_t x = a->seed;
    for (int it = 0; it < MULTI_ITERS; it++) {
        sl_check c[6];
        int tab[6], key[6];
        size_t n = 2 + rng_next(&x) % 5;
        for (size_t i = 0; i < n; i++) {
            tab[i] = (int)(rng_next(&x) % MULTI_TABLES);
            /* table 2 has one key (a global limit); the others a few, often repeated */
            key[i] = tab[i] == 2 ? 0 : (int)(rng_next(&x) % MULTI_KEYS);
            c[i] = (sl_check){.table = a->tables[tab[i]],
                              .key = multi_keys[key[i]],
                              .keylen = 2,
                              .cost = 1 + (int64_t)(rng_next(&x) % 2)};
        }
        size_t refused = 99;
        int rc = sl_table_check_all(c, n, a->now, &refused);
        if (rc) {
            a->errors++;
        } else if (refused == n) {
            a->passed++;
            for (size_t i = 0; i < n; i++) a->taken[tab[i]][key[i]] += c[i].cost;
        } else {
            a->refused++;
            if (refused > n || c[refused].decision.allowed) a->errors++;
        }
    }
    return NULL;
}

static void check_all_overlapping(void **state) {
    (void)state;
    alarm(60);                      /* a lock-order deadlock fails the test instead of hanging it */
    const int64_t now = 1000 * SEC; /* fixed: no refill, so the books must balance exactly */
    /* one shard (every key shares it), four shards, default shards */
    sl_table_options o[MULTI_TABLES] = {
        {.params = {.algorithm = SL_TOKEN_BUCKET, .rate = {1, HOUR}, .burst = MULTI_CAPACITY},
         .shards = 1},
        {.params = {.algorithm = SL_FIXED_WINDOW, .rate = {MULTI_CAPACITY, HOUR}}, .shards = 4},
        {.params = {.algorithm = SL_GCRA, .rate = {1, HOUR}, .burst = 4 * MULTI_CAPACITY}},
    };
    const int64_t capacity[MULTI_TABLES] = {MULTI_CAPACITY, MULTI_CAPACITY, 4 * MULTI_CAPACITY};
    sl_table *tables[MULTI_TABLES];
    for (int i = 0; i < MULTI_TABLES; i++)
        assert_int_equal(sl_table_create(&o[i], &tables[i]), SL_OK);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS + 1);
    multi_arg *a = calloc(THREADS, sizeof *a);
    assert_non_null(a);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i].tables = tables;
        a[i].start = &start;
        a[i].now = now;
        a[i].seed = 0x9e3779b97f4a7c15u * (uint64_t)(i + 1);
        assert_int_equal(pthread_create(&th[i], NULL, multi_main, &a[i]), 0);
    }
    pthread_barrier_wait(&start);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    alarm(0);

    int64_t passed = 0, refused = 0, errors = 0;
    for (int i = 0; i < THREADS; i++) {
        passed += a[i].passed;
        refused += a[i].refused;
        errors += a[i].errors;
    }
    print_message("  check_all: %lld passed, %lld refused\n", (long long)passed,
                  (long long)refused);
    assert_i64(errors, 0);
    assert_true(passed > 0);
    assert_true(refused > 0);
    /* What is gone from each key is exactly what passing requests took. */
    for (int tb = 0; tb < MULTI_TABLES; tb++) {
        int nkeys = tb == 2 ? 1 : MULTI_KEYS;
        for (int k = 0; k < nkeys; k++) {
            int64_t taken = 0;
            for (int i = 0; i < THREADS; i++) taken += a[i].taken[tb][k];
            sl_decision d;
            assert_int_equal(sl_table_check(tables[tb], multi_keys[k], 2, 0, now, &d), SL_OK);
            if (d.remaining != capacity[tb] - taken)
                fail_msg("table %d key %s: remaining %lld, but passing requests took %lld of "
                         "%lld",
                         tb, multi_keys[k], (long long)d.remaining, (long long)taken,
                         (long long)capacity[tb]);
        }
    }
    free(a);
    for (int i = 0; i < MULTI_TABLES; i++) sl_table_destroy(tables[i]);
}

/* ---- eviction under contention ------------------------------------------------ */

#define EVICT_CALLS 3000 /* per thread: far more keys than 64 KiB holds */

typedef struct evict_arg {
    sl_table *table;
    pthread_barrier_t *start;
    fake_clock *clock;
    _Atomic int *running;
    int id;
    int64_t inserted, errors;
} evict_arg;

static void *evict_main(void *p) {
    evict_arg *a = p;
    pthread_barrier_wait(a->start);
    char k1[64], k2[64];
    uint64_t x = 0x2545f4914f6cdd1du * (uint64_t)(a->id + 1);
    for (int64_t i = 0; i < EVICT_CALLS; i++) {
        int64_t now = fake_clock_tick(a->clock, US);
        /* random keys (distinct: a thread prefix and 64 random bits); every
         * fifth one too long to be stored inline */
        unsigned long long r = rng_next(&x);
        int n1 =
            snprintf(k1, sizeof k1, i % 5 ? "%d-%016llx" : "thread-%d-long-key-%016llx", a->id, r);
        sl_decision d;
        if (i % 7 == 3) {
            /* two new keys in one request: both pinned while the other is inserted */
            int n2 = snprintf(k2, sizeof k2, "%d-%016llx-b", a->id, r);
            sl_check c[2] = {{.table = a->table, .key = k1, .keylen = (size_t)n1, .cost = 1},
                             {.table = a->table, .key = k2, .keylen = (size_t)n2, .cost = 1}};
            size_t refused;
            int rc = sl_table_check_all(c, 2, now, &refused);
            if (rc || refused != 2)
                a->errors++;
            else
                a->inserted += 2;
        } else {
            int rc = sl_table_check(a->table, k1, (size_t)n1, 1, now, &d);
            if (rc || !d.allowed)
                a->errors++;
            else
                a->inserted++;
        }
    }
    atomic_fetch_sub(a->running, 1);
    return NULL;
}

typedef struct monitor_arg {
    sl_table *table;
    pthread_barrier_t *start;
    fake_clock *clock;
    _Atomic int *running; /* inserting threads not done yet */
    int64_t samples, over_cap;
    uint64_t worst;
} monitor_arg;

static void *monitor_main(void *p) {
    monitor_arg *m = p;
    pthread_barrier_wait(m->start);
    while (atomic_load(m->running) > 0) {
        sl_table_stats s;
        sl_table_stats_get(m->table, &s);
        m->samples++;
        if (s.bytes > s.max_bytes) {
            m->over_cap++;
            if (s.bytes > m->worst) m->worst = s.bytes;
        }
        sl_table_sweep(m->table, atomic_load(&m->clock->now), 256);
    }
    return NULL;
}

static void eviction_under_contention(void **state) {
    (void)state;
    sl_table_options o = {.params = {.algorithm = SL_TOKEN_BUCKET, .rate = {1, HOUR}, .burst = 5},
                          .max_memory = 64 << 10};
    sl_table *t;
    assert_int_equal(sl_table_create(&o, &t), SL_OK);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS + 2);
    fake_clock clock = {.now = T0};
    _Atomic int running = THREADS;
    evict_arg a[THREADS];
    pthread_t th[THREADS + 1];
    for (int i = 0; i < THREADS; i++) {
        a[i] =
            (evict_arg){.table = t, .start = &start, .clock = &clock, .running = &running, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, evict_main, &a[i]), 0);
    }
    monitor_arg m = {.table = t, .start = &start, .clock = &clock, .running = &running};
    assert_int_equal(pthread_create(&th[THREADS], NULL, monitor_main, &m), 0);
    pthread_barrier_wait(&start);
    for (int i = 0; i <= THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);

    int64_t inserted = 0, errors = 0;
    for (int i = 0; i < THREADS; i++) {
        inserted += a[i].inserted;
        errors += a[i].errors;
    }
    sl_table_stats s;
    sl_table_stats_get(t, &s);
    print_message("  eviction: %lld keys inserted, %llu held, %llu evicted live, %lld samples\n",
                  (long long)inserted, (unsigned long long)s.keys,
                  (unsigned long long)s.evicted_live, (long long)m.samples);
    assert_i64(errors, 0);
    if (m.over_cap)
        fail_msg("%lld of %lld samples over the cap (worst %llu > %llu)", (long long)m.over_cap,
                 (long long)m.samples, (unsigned long long)m.worst,
                 (unsigned long long)s.max_bytes);
    assert_le(s.bytes, s.max_bytes);
    assert_true(s.evicted_live > 0);
    assert_i64(s.keys + s.evicted_live + s.evicted_idle, inserted);
    sl_table_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hot_key_buckets),           cmocka_unit_test(hot_key_windows),
        cmocka_unit_test(limiter_threads),           cmocka_unit_test(check_all_overlapping),
        cmocka_unit_test(eviction_under_contention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
