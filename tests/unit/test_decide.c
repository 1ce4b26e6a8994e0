/* test_decide.c: the decision engine (src/policy/decide.h) over the store
 * interface (src/store/store.h), on a fake clock, with limits built by hand
 * (no config): the memory store's group contract as the engine reports it,
 * and a fake store that answers later, as the Redis store does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/table_any.h"
#include "policy/decide.h"
#include "sluice/sluice.h"
#include "store/batch.h"
#include "store/memory.h"

#define SEC SL_NS_PER_SEC
#define T0  (INT64_C(1769904000) * SEC)

typedef struct lim {
    sl_decide_limit l;
    sl_params p;
} lim;

static lim *lim_new(const char *name, sl_algorithm a, int64_t limit, int64_t period,
                    int64_t burst) {
    lim *x = calloc(1, sizeof *x);
    assert_non_null(x);
    x->p = (sl_params){.algorithm = a, .rate = {.limit = limit, .period = period}, .burst = burst};
    sl__decide_limit_init(&x->l, false);
    x->l.store.name = name;
    x->l.store.params = &x->p;
    sl_table *t = NULL;
    sl_table_options o = {.params = x->p};
    assert_int_equal(sl_table_create(&o, &t), SL_OK);
    x->l.store.table = t;
    assert_int_equal(sl__topk_create(8, &x->l.top), 0);
    return x;
}

static void lim_free(lim *x) {
    sl_table_destroy(x->l.store.table);
    sl__topk_destroy(x->l.top);
    free(x);
}

static int done_calls;
static void count_done(sl_decide_call *c) {
    (void)c;
    done_calls++;
}

/* Decides items on d (NULL: memory) and returns the call (done ran). */
static sl_decide_call *run(sl_decider *d, const sl_decide_item *items, size_t n, int64_t now) {
    sl_decide_call *c = sl__decide_call_new(items, n, NULL, NULL, 0);
    assert_non_null(c);
    c->done = count_done;
    done_calls = 0;
    sl__engine_decide(d, c, now);
    return c;
}

static sl_decide_item use(lim *x, const char *key, int64_t cost, bool shadow) {
    return (sl_decide_item){
        .limit = &x->l, .key = key, .keylen = strlen(key), .cost = cost, .shadow = shadow};
}

static uint64_t n_of(atomic_uint_fast64_t *c) {
    return atomic_load(c);
}

/* Enforced limits: all pass and all are charged, or none is. */
static void test_all_or_nothing(void **state) {
    (void)state;
    lim *a = lim_new("a", SL_FIXED_WINDOW, 2, 60 * SEC, 0);
    lim *b = lim_new("b", SL_FIXED_WINDOW, 5, 60 * SEC, 0);
    sl_decide_item it[2] = {use(a, "k", 1, false), use(b, "k", 1, false)};
    for (int i = 0; i < 2; i++) {
        sl_decide_call *c = run(NULL, it, 2, T0);
        assert_int_equal(done_calls, 1);
        assert_int_equal(c->rc, SL_OK);
        assert_int_equal(c->refused, 2);
        sl__decide_call_free(c);
    }
    sl_decide_call *c = run(NULL, it, 2, T0);
    assert_int_equal(c->rc, SL_OK);
    assert_int_equal(c->refused, 0);
    assert_false(c->items[0].decision.allowed);
    /* b was not charged: it says what it has now */
    assert_true(c->items[1].decision.allowed);
    assert_int_equal(c->items[1].decision.remaining, 3);
    sl__decide_call_free(c);
    assert_int_equal(n_of(&a->l.allowed), 2);
    assert_int_equal(n_of(&a->l.limited), 1);
    assert_int_equal(n_of(&b->l.allowed), 2);
    assert_int_equal(n_of(&b->l.limited), 0);
    sl__topk_item top[1];
    assert_int_equal(sl__topk_list(a->l.top, top, 1), 1);
    assert_int_equal(top[0].keylen, 1);
    lim_free(a);
    lim_free(b);
}

/* Shadow limits: their own group after the enforced one passed; a refusal
 * there is reported allowed (retry 0), counted, and charges none of them. */
static void test_shadow_group(void **state) {
    (void)state;
    lim *e = lim_new("e", SL_FIXED_WINDOW, 10, 60 * SEC, 0);
    lim *s1 = lim_new("s1", SL_FIXED_WINDOW, 1, 60 * SEC, 0);
    lim *s2 = lim_new("s2", SL_FIXED_WINDOW, 5, 60 * SEC, 0);
    atomic_store(&s2->l.shadow, true); /* shadow by the limit, s1 by its use */
    sl_decide_item it[3] = {use(e, "k", 1, false), use(s1, "k", 1, true), use(s2, "k", 1, false)};
    sl_decide_call *c = run(NULL, it, 3, T0);
    assert_int_equal(c->refused, 3);
    sl__decide_call_free(c);
    c = run(NULL, it, 3, T0);
    assert_int_equal(c->rc, SL_OK);
    assert_int_equal(c->refused, 3); /* passes */
    assert_true(c->items[1].shadowed);
    assert_true(c->items[1].decision.allowed);
    assert_int_equal(c->items[1].decision.retry_after, 0);
    assert_false(c->items[2].shadowed);
    assert_int_equal(c->items[2].decision.remaining, 4); /* not charged again */
    assert_int_equal(c->items[0].decision.remaining, 8); /* the enforced one was */
    sl__decide_call_free(c);
    assert_int_equal(n_of(&s1->l.shadow_limited), 1);
    assert_int_equal(n_of(&s2->l.shadow_limited), 0);
    assert_int_equal(n_of(&s2->l.allowed), 1);
    assert_int_equal(n_of(&e->l.allowed), 2);
    lim_free(e);
    lim_free(s1);
    lim_free(s2);
}

/* When the enforced group refuses, shadow limits are only looked at. */
static void test_refused_shadow_looked_at(void **state) {
    (void)state;
    lim *e = lim_new("e", SL_FIXED_WINDOW, 1, 60 * SEC, 0);
    lim *s = lim_new("s", SL_FIXED_WINDOW, 5, 60 * SEC, 0);
    sl_decide_item it[2] = {use(e, "k", 1, false), use(s, "k", 1, true)};
    sl__decide_call_free(run(NULL, it, 2, T0));
    sl_decide_call *c = run(NULL, it, 2, T0);
    assert_int_equal(c->refused, 0);
    assert_int_equal(c->items[1].decision.remaining, 4);
    sl__decide_call_free(c);
    assert_int_equal(n_of(&s->l.allowed), 1);
    assert_int_equal(n_of(&s->l.shadow_limited), 0);
    lim_free(e);
    lim_free(s);
}

/* A cost that can never pass: SL_ECOST for an enforced limit (nothing
 * charged, nothing counted); a shadow refusal for a shadow one. */
static void test_cost_never_passes(void **state) {
    (void)state;
    lim *a = lim_new("a", SL_TOKEN_BUCKET, 1, SEC, 3);
    lim *b = lim_new("b", SL_FIXED_WINDOW, 5, 60 * SEC, 0);
    sl_decide_item it[2] = {use(b, "k", 1, false), use(a, "k", 4, false)};
    sl_decide_call *c = run(NULL, it, 2, T0);
    assert_int_equal(c->rc, SL_ECOST);
    assert_int_equal(c->refused, 1);
    assert_int_equal(c->items[1].decision.retry_after, -1);
    sl__decide_call_free(c);
    assert_int_equal(n_of(&a->l.limited) + n_of(&b->l.allowed), 0);
    it[1].shadow = true;
    c = run(NULL, it, 2, T0);
    assert_int_equal(c->rc, SL_OK);
    assert_int_equal(c->refused, 2);
    assert_true(c->items[1].shadowed);
    sl__decide_call_free(c);
    assert_int_equal(n_of(&a->l.shadow_limited), 1);
    assert_int_equal(n_of(&b->l.allowed), 1);
    lim_free(a);
    lim_free(b);
}

/* CL.THROTTLE's kind of limit: one any-rate table, each item its own plan. */
static void test_any_rate(void **state) {
    (void)state;
    lim *x = calloc(1, sizeof *x);
    sl__decide_limit_init(&x->l, false);
    x->l.store.name = "cell:tat";
    x->l.store.any_rate = true;
    sl_table_options o = {
        .params = {.algorithm = SL_GCRA, .rate = {.limit = 1, .period = SEC}, .burst = 1}};
    sl_table *t = NULL;
    assert_int_equal(sl__table_create_any_rate(&o, &t), SL_OK);
    x->l.store.table = t;
    sl_params p = {.algorithm = SL_GCRA, .rate = {.limit = 10, .period = SEC}, .burst = 2};
    sl__plan plan;
    assert_int_equal(sl__plan_any_rate(&plan, &p), SL_OK);
    sl_decide_item it = {
        .limit = &x->l, .key = "k", .keylen = 1, .cost = 1, .params = &p, .plan = &plan};
    int allowed = 0;
    for (int i = 0; i < 3; i++) {
        sl_decide_call *c = run(NULL, &it, 1, T0);
        allowed += c->items[0].decision.allowed;
        sl__decide_call_free(c);
    }
    assert_int_equal(allowed, 2);
    sl_table_destroy(t);
    free(x);
}

/* ---- a store that answers later ---------------------------------------------- */

typedef struct later_store {
    sl_store base;
    sl_store_call *held;
} later_store;

static void later_decide(sl_store *s, sl_store_call *c) {
    ((later_store *)s)->held = c;
}

static void later_free(sl_store *s) {
    (void)s;
}

static const sl_store_ops later_ops = {.decide = later_decide, .free = later_free};

/* The engine on such a store (through a decider built on it by hand is not
 * possible: deciders come from the engine), so the store call is driven
 * directly as the engine hands it over. */
static void test_later_and_fail_modes(void **state) {
    (void)state;
    lim *a = lim_new("a", SL_FIXED_WINDOW, 2, 60 * SEC, 0);
    later_store ls = {.base = {.ops = &later_ops}};
    sl_decide_item it = use(a, "k", 1, false);
    sl_decide_call *c = sl__decide_call_new(&it, 1, NULL, NULL, 0);
    c->done = count_done;
    done_calls = 0;
    /* what sl__engine_decide does, on the fake store */
    sl__engine_decide_on(&ls.base, c, T0);
    assert_int_equal(done_calls, 0); /* not inline */
    assert_non_null(ls.held);
    assert_int_equal(ls.held->items[0].group, 0);
    assert_ptr_equal(ls.held->items[0].limit, &a->l.store);
    /* Redis failed; the local fallback refused */
    ls.held->from = SL_FROM_LOCAL;
    ls.held->items[0].decided = true;
    ls.held->items[0].decision = (sl_decision){.allowed = false, .limit = 2, .retry_after = SEC};
    ls.held->done(ls.held);
    assert_int_equal(done_calls, 1);
    assert_int_equal(c->from, SL_FROM_LOCAL);
    assert_int_equal(c->refused, 0);
    assert_int_equal(n_of(&a->l.store.from[SL_FROM_LOCAL]), 1);
    assert_int_equal(n_of(&a->l.limited), 1);
    sl__decide_call_free(c);
    lim_free(a);
}

/* ---- batched mode ---------------------------------------------------------------- */

static void test_batched_records(void **state) {
    (void)state;
    sl_redis_config cfg = {.sync_interval = 100 * SL_NS_PER_MS};
    sl_batch *b = sl__batch_new(&cfg);
    assert_non_null(b);
    sl_redis_stats rs = {0};
    sl_store *st = sl__batch_store_new(b, NULL, NULL, &rs, NULL);
    assert_non_null(st);
    assert_int_equal(atomic_load(&rs.up), 1);
    lim *a = lim_new("a", SL_FIXED_WINDOW, 3, 60 * SEC, 0);
    sl_decide_item it = use(a, "k", 2, false);
    sl_decide_call *c = sl__decide_call_new(&it, 1, NULL, NULL, 0);
    c->done = count_done;
    done_calls = 0;
    sl__engine_decide_on(st, c, T0);
    assert_int_equal(done_calls, 1); /* inline, as the memory store */
    assert_true(c->items[0].decision.allowed);
    assert_int_equal(c->items[0].decision.remaining, 1);
    assert_false(sl__batch_in_debt(b, "a", "k", 1));
    sl__decide_call_free(c);
    sl__store_free(st);
    sl__batch_free(b);
    lim_free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_or_nothing),
        cmocka_unit_test(test_shadow_group),
        cmocka_unit_test(test_refused_shadow_looked_at),
        cmocka_unit_test(test_cost_never_passes),
        cmocka_unit_test(test_any_rate),
        cmocka_unit_test(test_later_and_fail_modes),
        cmocka_unit_test(test_batched_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
