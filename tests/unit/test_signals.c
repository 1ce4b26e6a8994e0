/* test_signals.c: the near-limit signals the engine fills (policy/decide.h,
 * issue 17): the histogram of remaining / limit after each decision (its
 * integer bucket bounds exactly at 0, 1, 5, 10, 25, 50 and 100 %, the sum in
 * millionths, 2^61 limits without overflow) and the sketch of keys allowed
 * with at most a tenth of their limit left (/v1/top?by=near), with labels,
 * refusals and shadow limits. Fake clock, memory store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "policy/decide.h"
#include "sluice/sluice.h"
#include "decide_helper.h"
#include "helpers.h"

#define T0 (INT64_C(1769904000) * SEC)

typedef helper_limit lim;

static lim *lim_new(sl_algorithm a, int64_t limit, int64_t period, int64_t burst, bool shadow) {
    sl_params p = {.algorithm = a, .rate = {.limit = limit, .period = period}, .burst = burst};
    return helper_limit_new("t", p, shadow, true);
}

#define lim_free helper_limit_free

/* One call of items for limits ls[0..n) (key, cost each), labels optional. */
static int decide(lim **ls, const char **keys, const int64_t *costs, size_t n,
                  sl__decide_label_fn label, int64_t now) {
    sl__decide_item it[SL_CHECK_MAX];
    for (size_t i = 0; i < n; i++)
        it[i] = (sl__decide_item){
            .limit = &ls[i]->l, .key = keys[i], .keylen = strlen(keys[i]), .cost = costs[i]};
    sl__decide_call *c = sl__decide_call_new(it, n, label, NULL, 0);
    assert_non_null(c);
    helper_run(c, now);
    int rc = c->rc;
    sl__decide_call_free(c);
    return rc;
}

static int one(lim *x, const char *key, int64_t cost, int64_t now) {
    return decide(&x, &key, &cost, 1, NULL, now);
}

static uint64_t bucket(const lim *x, int b) {
    return atomic_load(&x->l.ratio[b]);
}

/* A fixed window of 100 drained by 1 at a time: remaining 99, 98, ..., 0.
 * Bucket bounds are inclusive: remaining 1 is 1 % (le 0.01), 5 is le 0.05. */
static void test_histogram_bounds(void **state) {
    (void)state;
    lim *x = lim_new(SL_FIXED_WINDOW, 100, 3600 * SEC, 0, false);
    for (int i = 0; i < 100; i++) assert_int_equal(one(x, "k", 1, T0), SL_OK);
    assert_int_equal(bucket(x, 0), 1);  /* remaining 0 */
    assert_int_equal(bucket(x, 1), 1);  /* 1 */
    assert_int_equal(bucket(x, 2), 4);  /* 2..5 */
    assert_int_equal(bucket(x, 3), 5);  /* 6..10 */
    assert_int_equal(bucket(x, 4), 15); /* 11..25 */
    assert_int_equal(bucket(x, 5), 25); /* 26..50 */
    assert_int_equal(bucket(x, 6), 49); /* 51..99 */
    assert_int_equal(bucket(x, 7), 0);
    /* the sum of 0.00 .. 0.99: 49.5 */
    assert_int_equal(atomic_load(&x->l.ratio_sum), 49500000);
    /* a refusal observes what was left (0) */
    assert_int_equal(one(x, "k", 1, T0), SL_OK);
    assert_int_equal(bucket(x, 0), 2);
    assert_int_equal(atomic_load(&x->l.limited), 1);
    lim_free(x);
}

/* A 2^61 limit: the products stay exact (128 bits), and a 1/3 is 333333
 * millionths (rounded down). */
static void test_histogram_large_limit(void **state) {
    (void)state;
    int64_t big = INT64_C(1) << 61;
    lim *x = lim_new(SL_FIXED_WINDOW, big, 3600 * SEC, 0, false);
    assert_int_equal(one(x, "k", big - big / 10, T0), SL_OK); /* leaves a tenth, rounded down */
    assert_int_equal(bucket(x, 3), 1);                        /* le 0.1 */
    assert_int_equal(one(x, "k", 1, T0), SL_OK);              /* a tenth less one */
    assert_int_equal(bucket(x, 3), 2);
    assert_int_equal(atomic_load(&x->l.ratio_sum), 2 * 99999); /* 0.0999999... twice */
    lim *y = lim_new(SL_FIXED_WINDOW, 3, 3600 * SEC, 0, false);
    assert_int_equal(one(y, "k", 2, T0), SL_OK);
    assert_int_equal(atomic_load(&y->l.ratio_sum), 333333);
    assert_int_equal(bucket(y, 5), 1);
    lim_free(x);
    lim_free(y);
}

static size_t near_list(lim *x, sl__topk_item *items) {
    return sl__topk_list(x->l.near, items, 8);
}

/* Only allowed decisions with remaining * 10 <= limit count as near. */
static void test_near_sketch(void **state) {
    (void)state;
    lim *x = lim_new(SL_TOKEN_BUCKET, 1, 3600 * SEC, 20, false);
    sl__topk_item items[8];
    assert_int_equal(one(x, "alice", 17, T0), SL_OK); /* 3 left: 15 % */
    assert_int_equal(near_list(x, items), 0);
    assert_int_equal(one(x, "alice", 1, T0), SL_OK); /* 2 left: 10 % */
    assert_int_equal(one(x, "alice", 2, T0), SL_OK); /* 0 left */
    assert_int_equal(one(x, "alice", 1, T0), SL_OK); /* refused: in the rejected sketch only */
    assert_int_equal(near_list(x, items), 1);
    assert_memory_equal(items[0].key, "alice", 5);
    assert_int_equal(items[0].count, 2);
    assert_int_equal(sl__topk_list(x->l.top, items, 8), 1);
    assert_int_equal(items[0].count, 1);
    lim_free(x);
}

static size_t label_fn(void *ctx, size_t i, char *buf, size_t size) {
    (void)ctx;
    return (size_t)snprintf(buf, size, "label%zu", i);
}

/* Items of a refused group are not near (nothing was charged); a shadow
 * limit is; labels replace keys. */
static void test_near_groups_and_labels(void **state) {
    (void)state;
    lim *a = lim_new(SL_FIXED_WINDOW, 10, 3600 * SEC, 0, false);
    lim *b = lim_new(SL_FIXED_WINDOW, 10, 3600 * SEC, 0, false);
    lim *s = lim_new(SL_FIXED_WINDOW, 10, 3600 * SEC, 0, true);
    lim *ls[] = {a, b, s};
    const char *keys[] = {"ka", "kb", "ks"};
    int64_t nine[] = {9, 9, 9};
    assert_int_equal(decide(ls, keys, nine, 3, label_fn, T0), SL_OK);
    sl__topk_item items[8];
    assert_int_equal(near_list(a, items), 1);
    assert_memory_equal(items[0].key, "label0", 6);
    assert_int_equal(near_list(s, items), 1);
    assert_memory_equal(items[0].key, "label2", 6);
    /* b refuses: a's decision in that call is not charged, not near */
    lim *ab[] = {a, b};
    int64_t costs[] = {1, 5};
    assert_int_equal(decide(ab, keys, costs, 2, NULL, T0), SL_OK);
    assert_int_equal(near_list(a, items), 1);
    assert_int_equal(items[0].count, 1);
    assert_int_equal(atomic_load(&a->l.allowed), 1);
    /* every decided item was observed: a twice, b twice, s once */
    uint64_t na = 0, nb = 0, ns = 0;
    for (int i = 0; i <= SL__RATIO_BUCKETS; i++) {
        na += bucket(a, i);
        nb += bucket(b, i);
        ns += bucket(s, i);
    }
    assert_int_equal(na, 2);
    assert_int_equal(nb, 2);
    assert_int_equal(ns, 1);
    lim_free(a);
    lim_free(b);
    lim_free(s);
}

/* A cost that can never pass is not a decision: nothing observed. */
static void test_ecost_not_observed(void **state) {
    (void)state;
    lim *x = lim_new(SL_TOKEN_BUCKET, 1, SEC, 5, false);
    assert_int_equal(one(x, "k", 6, T0), SL_ECOST);
    for (int i = 0; i <= SL__RATIO_BUCKETS; i++) assert_int_equal(bucket(x, i), 0);
    lim_free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_histogram_bounds),   cmocka_unit_test(test_histogram_large_limit),
        cmocka_unit_test(test_near_sketch),        cmocka_unit_test(test_near_groups_and_labels),
        cmocka_unit_test(test_ecost_not_observed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
