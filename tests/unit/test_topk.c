/* test_topk.c: the space-saving heavy-hitters sketch behind /v1/top
 * (src/core/topk.h), against exact counts: exact while the keys fit; on
 * skewed, uniform and adversarial streams every key heavier than
 * total/capacity is present, every count is an upper bound and
 * count - error a lower bound, error <= total/capacity, the counts add up
 * to the total, and no key is ever listed twice (which would betray a
 * broken index after replacements); ordering, truncation of long keys,
 * weights, and many threads adding at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/topk.h"
#include "sluice/error.h"

static uint64_t rng = 0x853c49e6748fea9bu;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t key_of(char *buf, size_t size, unsigned k) {
    return (size_t)snprintf(buf, size, "key-%u", k);
}

/* Parses "key-<n>" back to n. */
static unsigned index_of(const sl__topk_item *it) {
    char tmp[SL__TOPK_KEY_MAX + 1];
    memcpy(tmp, it->key, it->keylen);
    tmp[it->keylen] = '\0';
    unsigned n;
    if (sscanf(tmp, "key-%u", &n) != 1) fail_msg("unexpected key %s", tmp);
    return n;
}

static void test_create_bounds(void **state) {
    (void)state;
    sl__topk *t = NULL;
    assert_int_equal(sl__topk_create(0, &t), SL_EINVAL);
    assert_int_equal(sl__topk_create((1u << 20) + 1, &t), SL_EINVAL);
    assert_int_equal(sl__topk_create(1, &t), 0);
    sl__topk_item it[2];
    assert_int_equal(sl__topk_list(t, it, 2), 0); /* empty */
    sl__topk_destroy(t);
    sl__topk_destroy(NULL);
}

static void test_exact_when_keys_fit(void **state) {
    (void)state;
    sl__topk *t;
    assert_int_equal(sl__topk_create(8, &t), 0);
    sl__topk_add(t, "b", 1, 3);
    sl__topk_add(t, "a", 1, 3);
    sl__topk_add(t, "c", 1, 1);
    sl__topk_add(t, "ab", 2, 5);
    sl__topk_add(t, "", 0, 2); /* the empty key is a key */
    sl__topk_add(t, "c", 1, 1);
    sl__topk_add(t, "zero", 4, 0);
    sl__topk_item it[8];
    size_t n = sl__topk_list(t, it, 8);
    assert_int_equal(n, 6);
    /* heaviest first; equal counts by key bytes */
    static const char *const keys[] = {"ab", "a", "b", "", "c", "zero"};
    static const uint64_t counts[] = {5, 3, 3, 2, 2, 0};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(it[i].keylen, strlen(keys[i]));
        assert_memory_equal(it[i].key, keys[i], it[i].keylen);
        assert_int_equal(it[i].count, counts[i]);
        assert_int_equal(it[i].error, 0);
    }
    /* fewer than held */
    assert_int_equal(sl__topk_list(t, it, 2), 2);
    assert_int_equal(it[0].count, 5);
    assert_int_equal(it[1].keylen, 1);
    assert_int_equal(sl__topk_list(t, it, 0), 0);
    sl__topk_destroy(t);
}

/* The guarantees, checked against exact counts after every `every` adds. */
static void check_guarantees(sl__topk *t, size_t cap, const uint64_t *truth, unsigned universe,
                             uint64_t total) {
    sl__topk_item *it = malloc(cap * sizeof *it);
    size_t n = sl__topk_list(t, it, cap);
    assert_true(n <= cap);
    char *seen = calloc(universe, 1);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned k = index_of(&it[i]);
        assert_true(k < universe);
        if (seen[k]) fail_msg("key-%u listed twice", k);
        seen[k] = 1;
        sum += it[i].count;
        if (it[i].count < truth[k])
            fail_msg("key-%u: count %llu below true %llu", k, (unsigned long long)it[i].count,
                     (unsigned long long)truth[k]);
        if (it[i].count - it[i].error > truth[k])
            fail_msg("key-%u: count-error %llu above true %llu", k,
                     (unsigned long long)(it[i].count - it[i].error), (unsigned long long)truth[k]);
        if (it[i].error > total / cap)
            fail_msg("key-%u: error %llu above total/capacity %llu", k,
                     (unsigned long long)it[i].error, (unsigned long long)(total / cap));
        if (i) assert_true(it[i - 1].count >= it[i].count);
    }
    /* every add lands in exactly one counter */
    assert_int_equal(sum, total);
    for (unsigned k = 0; k < universe; k++)
        if (truth[k] * cap > total && !seen[k])
            fail_msg("key-%u (true %llu > total %llu / %zu) missing", k,
                     (unsigned long long)truth[k], (unsigned long long)total, cap);
    free(seen);
    free(it);
}

typedef enum { ZIPF, UNIFORM, FLOOD_THEN_HEAVY, HEAVY_THEN_FLOOD, WEIGHTED } stream_kind;

static void run_stream(size_t cap, stream_kind kind, unsigned universe, int adds) {
    sl__topk *t;
    assert_int_equal(sl__topk_create(cap, &t), 0);
    uint64_t *truth = calloc(universe, sizeof *truth);
    uint64_t total = 0;
    for (int i = 0; i < adds; i++) {
        unsigned k;
        uint64_t w = 1;
        double u = (double)(next_rand() >> 11) / 9007199254740992.0;
        switch (kind) {
        case ZIPF:
            k = (unsigned)(u * u * u * u * universe);
            break;
        case UNIFORM:
            k = (unsigned)(next_rand() % universe);
            break;
        case FLOOD_THEN_HEAVY: /* distinct keys first, then a few heavy ones */
            k = i < adds / 2 ? (unsigned)(i % universe) : (unsigned)(next_rand() % 3);
            break;
        case HEAVY_THEN_FLOOD:
            k = i < adds / 3 ? (unsigned)(next_rand() % 3) : (unsigned)(i % universe);
            break;
        default: /* WEIGHTED */
            k = (unsigned)(u * u * universe);
            w = 1 + next_rand() % 50;
            break;
        }
        if (k >= universe) k = universe - 1;
        char key[32];
        size_t len = key_of(key, sizeof key, k);
        sl__topk_add(t, key, len, w);
        truth[k] += w;
        total += w;
        if (i % 997 == 0 || i == adds - 1) check_guarantees(t, cap, truth, universe, total);
    }
    free(truth);
    sl__topk_destroy(t);
}

static void test_guarantees(void **state) {
    (void)state;
    static const size_t caps[] = {1, 2, 3, 8, 64, 200};
    static const stream_kind kinds[] = {ZIPF, UNIFORM, FLOOD_THEN_HEAVY, HEAVY_THEN_FLOOD,
                                        WEIGHTED};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            run_stream(caps[c], kinds[k], 3000, 30000);
}

/* A heavy hitter arriving after the sketch is full of others is found and
 * ranked first. */
static void test_late_heavy_hitter(void **state) {
    (void)state;
    sl__topk *t;
    assert_int_equal(sl__topk_create(16, &t), 0);
    char key[32];
    for (unsigned i = 0; i < 1000; i++) sl__topk_add(t, key, key_of(key, sizeof key, i), 1);
    for (int i = 0; i < 500; i++) sl__topk_add(t, "attacker", 8, 1);
    sl__topk_item it[16];
    size_t n = sl__topk_list(t, it, 16);
    assert_int_equal(n, 16);
    assert_int_equal(it[0].keylen, 8);
    assert_memory_equal(it[0].key, "attacker", 8);
    assert_true(it[0].count >= 500);
    assert_true(it[0].count - it[0].error <= 500);
    sl__topk_destroy(t);
}

/* Keys are truncated to SL__TOPK_KEY_MAX bytes: two keys sharing that prefix
 * share a counter. */
static void test_long_keys(void **state) {
    (void)state;
    sl__topk *t;
    assert_int_equal(sl__topk_create(4, &t), 0);
    char a[300], b[300];
    memset(a, 'x', sizeof a);
    memcpy(b, a, sizeof b);
    b[299] = 'y';
    sl__topk_add(t, a, sizeof a, 1);
    sl__topk_add(t, b, sizeof b, 2);
    sl__topk_add(t, a, SL__TOPK_KEY_MAX, 1);
    sl__topk_add(t, a, SL__TOPK_KEY_MAX - 1, 1);
    sl__topk_item it[4];
    size_t n = sl__topk_list(t, it, 4);
    assert_int_equal(n, 2);
    assert_int_equal(it[0].keylen, SL__TOPK_KEY_MAX);
    assert_int_equal(it[0].count, 4);
    assert_int_equal(it[1].keylen, SL__TOPK_KEY_MAX - 1);
    assert_int_equal(it[1].count, 1);
    sl__topk_destroy(t);
}

typedef struct worker_arg {
    sl__topk *t;
    unsigned seed;
} worker_arg;

#define THREADS    4
#define PER_THREAD 20000

static void *worker(void *p) {
    worker_arg *a = p;
    uint64_t x = 0x9e3779b97f4a7c15u * (a->seed + 1);
    char key[32];
    for (int i = 0; i < PER_THREAD; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        sl__topk_add(a->t, key, key_of(key, sizeof key, (unsigned)(x % 200)), 1);
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    sl__topk *t;
    assert_int_equal(sl__topk_create(32, &t), 0);
    pthread_t th[THREADS];
    worker_arg args[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        args[i] = (worker_arg){t, i};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    sl__topk_item it[32];
    size_t n = sl__topk_list(t, it, 32);
    assert_int_equal(n, 32);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) sum += it[i].count;
    assert_int_equal(sum, (uint64_t)THREADS * PER_THREAD);
    sl__topk_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_bounds), cmocka_unit_test(test_exact_when_keys_fit),
        cmocka_unit_test(test_guarantees),    cmocka_unit_test(test_late_heavy_hitter),
        cmocka_unit_test(test_long_keys),     cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
