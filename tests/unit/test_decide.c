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

#include "decide_helper.h"
#include "store/batch.h"
#include "store/memory.h"
#include "helpers.h"

#define T0 (INT64_C(1769904000) * SEC)

typedef helper_limit lim;

/* lim_new with flags (SL_COUNT_REJECTED, ...). */
static lim *lim_flags(const char *name, sl_algorithm a, int64_t limit, int64_t period,
                      int64_t burst, uint32_t flags) {
    sl_params p = {
        .algorithm = a, .rate = {.limit = limit, .period = period}, .burst = burst, .flags = flags};
    return helper_limit_new(name, p, false, false);
}

static lim *lim_new(const char *name, sl_algorithm a, int64_t limit, int64_t period,
                    int64_t burst) {
    return lim_flags(name, a, limit, period, burst, 0);
}

/* A calendar-month quota of n, as policy.c makes one: a fixed window of 31
 * days on the calendar clock, with its stripes. */
#define DAY (86400 * SEC)
#define FEB (28 * DAY) /* T0 is 2026-02-01 00:00 UTC */
static lim *quota_new(const char *name, int64_t n) {
    lim *x = lim_new(name, SL_FIXED_WINDOW, n, 31 * DAY, 0);
    x->l.store.calendar_month = true;
    assert_int_equal(sl__store_limit_stripes(&x->l.store), SL_OK);
    return x;
}

#define lim_free helper_limit_free

static int done_calls;
static void count_done(sl__decide_call *c) {
    (void)c;
    done_calls++;
}

/* Decides items on d (NULL: memory) and returns the call (done ran). */
static sl__decide_call *run(sl__decider *d, const sl__decide_item *items, size_t n, int64_t now) {
    sl__decide_call *c = sl__decide_call_new(items, n, NULL, NULL, 0);
    assert_non_null(c);
    c->done = count_done;
    done_calls = 0;
    sl__engine_decide(d, c, now);
    return c;
}

static sl__decide_item use(lim *x, const char *key, int64_t cost, bool shadow) {
    return (sl__decide_item){
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
    sl__decide_item it[2] = {use(a, "k", 1, false), use(b, "k", 1, false)};
    for (int i = 0; i < 2; i++) {
        sl__decide_call *c = run(NULL, it, 2, T0);
        assert_int_equal(done_calls, 1);
        assert_int_equal(c->rc, SL_OK);
        assert_int_equal(c->refused, 2);
        sl__decide_call_free(c);
    }
    sl__decide_call *c = run(NULL, it, 2, T0);
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
    sl__decide_item it[3] = {use(e, "k", 1, false), use(s1, "k", 1, true), use(s2, "k", 1, false)};
    sl__decide_call *c = run(NULL, it, 3, T0);
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
    sl__decide_item it[2] = {use(e, "k", 1, false), use(s, "k", 1, true)};
    sl__decide_call_free(run(NULL, it, 2, T0));
    sl__decide_call *c = run(NULL, it, 2, T0);
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
    sl__decide_item it[2] = {use(b, "k", 1, false), use(a, "k", 4, false)};
    sl__decide_call *c = run(NULL, it, 2, T0);
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
    sl__decide_item it = {
        .limit = &x->l, .key = "k", .keylen = 1, .cost = 1, .params = &p, .plan = &plan};
    int allowed = 0;
    for (int i = 0; i < 3; i++) {
        sl__decide_call *c = run(NULL, &it, 1, T0);
        allowed += c->items[0].decision.allowed;
        sl__decide_call_free(c);
    }
    assert_int_equal(allowed, 2);
    sl_table_destroy(t);
    free(x);
}

/* ---- the store contract where the memory store once differed from Redis -------
 * (test_differential.c's former findings, each its shrunk case) */

/* Finding 1: a shadow group with a cost that can never pass refuses with
 * nothing charged; only that item is shadowed, the other says what its
 * limit has at its cost (a look: reset_after as after the charge). */
static void test_shadow_never_others(void **state) {
    (void)state;
    lim *a = lim_new("a", SL_FIXED_WINDOW, 5, 60 * SEC, 0);
    sl__decide_item it[2] = {use(a, "k", 6, true), use(a, "k", 2, true)};
    sl__decide_call *c = run(NULL, it, 2, T0);
    assert_int_equal(c->rc, SL_OK);
    assert_int_equal(c->refused, 2);
    assert_true(c->items[0].shadowed);
    assert_false(c->items[1].shadowed);
    assert_true(c->items[1].decision.allowed);
    assert_int_equal(c->items[1].decision.remaining, 5);
    assert_int_equal(c->items[1].decision.reset_after, 60 * SEC);
    sl__decide_call_free(c);
    assert_int_equal(n_of(&a->l.shadow_limited), 1);
    sl__decide_item one = use(a, "k", 1, false);
    c = run(NULL, &one, 1, T0);
    assert_int_equal(c->items[0].decision.remaining, 4); /* nothing was charged */
    sl__decide_call_free(c);
    lim_free(a);
}

/* Finding 2: SL_ECOST; the other items say what their limits have at their
 * cost: allowed with the window's reset, or refused with its retry. */
static void test_ecost_others(void **state) {
    (void)state;
    lim *a = lim_new("a", SL_TOKEN_BUCKET, 1, SEC, 3);
    lim *b = lim_new("b", SL_FIXED_WINDOW, 5, 60 * SEC, 0);
    sl__decide_item pre = use(b, "k", 3, false);
    sl__decide_call_free(run(NULL, &pre, 1, T0));
    sl__decide_item it[3] = {use(b, "k", 1, false), use(b, "k", 3, false), use(a, "k", 4, false)};
    sl__decide_call *c = run(NULL, it, 3, T0);
    assert_int_equal(c->rc, SL_ECOST);
    assert_int_equal(c->refused, 2);
    assert_true(c->items[0].decision.allowed);
    assert_int_equal(c->items[0].decision.remaining, 2);
    assert_int_equal(c->items[0].decision.reset_after, 60 * SEC);
    assert_false(c->items[1].decision.allowed); /* 3 > 2 left: refused, not "never" */
    assert_int_equal(c->items[1].decision.remaining, 2);
    assert_int_equal(c->items[1].decision.retry_after, 60 * SEC);
    assert_int_equal(c->items[2].decision.retry_after, -1);
    assert_int_equal(c->items[2].decision.remaining, 0);
    sl__decide_call_free(c);
    lim_free(a);
    lim_free(b);
}

/* Finding 3: a quota in a refused group is decided like any other limit:
 * the same key twice (15 + 1 of 15) refuses the second with the month's
 * end; a third use (cost 2) is a look (allowed, 15 left); a cost above the
 * quota reports remaining 0. */
static void test_quota_refused(void **state) {
    (void)state;
    lim *q = quota_new("q", 15);
    sl__decide_item it[3] = {use(q, "k", 15, false), use(q, "k", 1, false), use(q, "k", 2, false)};
    sl__decide_call *c = run(NULL, it, 3, T0);
    assert_int_equal(c->rc, SL_OK);
    assert_int_equal(c->refused, 1);
    assert_false(c->items[1].decision.allowed);
    assert_int_equal(c->items[1].decision.remaining, 0);
    assert_int_equal(c->items[1].decision.retry_after, FEB);
    assert_true(c->items[2].decision.allowed);
    assert_int_equal(c->items[2].decision.remaining, 15);
    assert_int_equal(c->items[2].decision.reset_after, FEB);
    assert_true(c->items[0].decision.allowed);
    assert_int_equal(c->items[0].decision.reset_after, FEB); /* as after the charge */
    sl__decide_call_free(c);
    lim *w = lim_new("w", SL_FIXED_WINDOW, 5, 60 * SEC, 0);
    sl__decide_item big[2] = {use(w, "k", 1, false), use(q, "k", 16, false)};
    c = run(NULL, big, 2, T0);
    assert_int_equal(c->rc, SL_ECOST);
    assert_int_equal(c->refused, 1);
    assert_int_equal(c->items[1].decision.remaining, 0);
    sl__decide_call_free(c);
    lim_free(w);
    lim_free(q);
}

/* Finding 6: items are decided in the order given, quotas included: an
 * earlier limit that refuses, or whose cost can never pass, is the one
 * named, not a quota after it. */
static void test_quota_in_order(void **state) {
    (void)state;
    lim *q = quota_new("q", 12);
    lim *g = lim_flags("g", SL_GCRA, 73, 730 * INT64_C(1000), 38, SL_COUNT_REJECTED);
    lim *w = lim_new("w", SL_FIXED_WINDOW, 1, 60 * SEC, 0);
    sl__decide_item pre[2] = {use(q, "k", 12, false), use(w, "k", 1, false)};
    sl__decide_call_free(run(NULL, pre, 2, T0));
    sl__decide_item it[2] = {use(w, "k", 1, false), use(q, "k", 1, false)};
    sl__decide_call *c = run(NULL, it, 2, T0);
    assert_int_equal(c->rc, SL_OK);
    assert_int_equal(c->refused, 0);
    sl__decide_call_free(c);
    sl__decide_item never[2] = {use(g, "k", 40, false), use(q, "k", 1, false)};
    c = run(NULL, never, 2, T0);
    assert_int_equal(c->rc, SL_ECOST);
    assert_int_equal(c->refused, 0);
    sl__decide_call_free(c);
    lim_free(q);
    lim_free(g);
    lim_free(w);
}

/* Finding 4: count_rejected items of a refused group are charged as a
 * rejection and report the state that charge left; a later use of the same
 * key sees it. */
static void test_count_rejected_refused(void **state) {
    (void)state;
    lim *a = lim_flags("a", SL_FIXED_WINDOW, 5, 60 * SEC, 0, SL_COUNT_REJECTED);
    sl__decide_item pre = use(a, "k", 3, false);
    sl__decide_call_free(run(NULL, &pre, 1, T0));
    sl__decide_item it[2] = {use(a, "k", 3, false), use(a, "k", 1, false)};
    sl__decide_call *c = run(NULL, it, 2, T0);
    assert_int_equal(c->refused, 0);
    assert_int_equal(c->items[0].decision.remaining, 0);
    assert_false(c->items[1].decision.allowed); /* the charge of item 0 filled it */
    assert_int_equal(c->items[1].decision.remaining, 0);
    sl__decide_call_free(c);
    lim_free(a);
}

/* The shadow group is a dry run of enforcement: when it refuses, its
 * count_rejected limits are charged as a rejection, as they would be if
 * enforced (store.h), and nothing else of it. */
static void test_shadow_count_rejected_charged(void **state) {
    (void)state;
    lim *s = lim_flags("s", SL_FIXED_WINDOW, 2, 60 * SEC, 0, SL_COUNT_REJECTED);
    lim *o = lim_new("o", SL_FIXED_WINDOW, 5, 60 * SEC, 0);
    sl__decide_item pre = use(s, "k", 1, true);
    sl__decide_call_free(run(NULL, &pre, 1, T0));
    sl__decide_item it[2] = {use(o, "k", 1, true), use(s, "k", 2, true)};
    sl__decide_call *c = run(NULL, it, 2, T0);
    assert_int_equal(c->refused, 2);
    assert_true(c->items[1].shadowed);
    assert_int_equal(c->items[1].decision.remaining, 0); /* charged: full */
    assert_int_equal(c->items[0].decision.remaining, 5); /* not charged */
    sl__decide_call_free(c);
    sl__decide_item one = use(s, "k", 1, false);
    c = run(NULL, &one, 1, T0);
    assert_false(c->items[0].decision.allowed);
    sl__decide_call_free(c);
    lim_free(s);
    lim_free(o);
}

/* ---- a store that answers later ---------------------------------------------- */

/* The engine on such a store (through a decider built on it by hand is not
 * possible: deciders come from the engine), so the store call is driven
 * directly as the engine hands it over. */
static void test_later_and_fail_modes(void **state) {
    (void)state;
    lim *a = lim_new("a", SL_FIXED_WINDOW, 2, 60 * SEC, 0);
    helper_later_store ls = helper_later_store_new();
    sl__decide_item it = use(a, "k", 1, false);
    sl__decide_call *c = sl__decide_call_new(&it, 1, NULL, NULL, 0);
    c->done = count_done;
    done_calls = 0;
    /* what sl__engine_decide does, on the fake store */
    sl__engine_decide_on(&ls.base, c, T0);
    assert_int_equal(done_calls, 0); /* not inline */
    assert_non_null(ls.held);
    assert_int_equal(ls.held->items[0].group, 0);
    assert_ptr_equal(ls.held->items[0].limit, &a->l.store);
    /* Redis failed; the local fallback refused */
    ls.held->from = SL__FROM_LOCAL;
    ls.held->items[0].decided = true;
    ls.held->items[0].decision = (sl_decision){.allowed = false, .limit = 2, .retry_after = SEC};
    ls.held->done(ls.held);
    assert_int_equal(done_calls, 1);
    assert_int_equal(c->from, SL__FROM_LOCAL);
    assert_int_equal(c->refused, 0);
    assert_int_equal(n_of(&a->l.store.from[SL__FROM_LOCAL]), 1);
    assert_int_equal(n_of(&a->l.limited), 1);
    sl__decide_call_free(c);
    lim_free(a);
}

/* ---- batched mode ---------------------------------------------------------------- */

static void test_batched_records(void **state) {
    (void)state;
    sl__redis_config cfg = {.sync_interval = 100 * SL_NS_PER_MS};
    sl__batch *b = sl__batch_new(&cfg);
    assert_non_null(b);
    sl__redis_stats rs = {0};
    sl__store *st = sl__batch_store_new(b, NULL, NULL, &rs, NULL);
    assert_non_null(st);
    assert_int_equal(atomic_load(&rs.up), 1);
    lim *a = lim_new("a", SL_FIXED_WINDOW, 3, 60 * SEC, 0);
    sl__decide_item it = use(a, "k", 2, false);
    sl__decide_call *c = sl__decide_call_new(&it, 1, NULL, NULL, 0);
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

/* A refused group's count_rejected charges are recorded too (the fleet hears
 * of them): an item with room its cost, the refusing one what it had left. */
static void test_batched_records_rejected(void **state) {
    (void)state;
    sl__redis_config cfg = {.sync_interval = 100 * SL_NS_PER_MS};
    sl__batch *b = sl__batch_new(&cfg);
    sl__redis_stats rs = {0};
    sl__store *st = sl__batch_store_new(b, NULL, NULL, &rs, NULL);
    lim *tight = lim_flags("tight", SL_FIXED_WINDOW, 3, 60 * SEC, 0, SL_COUNT_REJECTED);
    lim *wide = lim_flags("wide", SL_FIXED_WINDOW, 100, 60 * SEC, 0, SL_COUNT_REJECTED);
    lim *plain = lim_new("plain", SL_FIXED_WINDOW, 100, 60 * SEC, 0);
    sl__decide_item it[3] = {use(tight, "k", 2, false), use(wide, "k", 2, false),
                             use(plain, "k", 2, false)};
    sl__decide_call *c = sl__decide_call_new(it, 3, NULL, NULL, 0);
    c->done = count_done;
    sl__engine_decide_on(st, c, T0); /* passes: 2 each */
    assert_int_equal(c->refused, 3);
    sl__decide_call_free(c);
    assert_int_equal(sl__batch_pending(b, "tight", "k", 1), 2);
    c = sl__decide_call_new(it, 3, NULL, NULL, 0);
    c->done = count_done;
    sl__engine_decide_on(st, c, T0); /* tight has 1 left: refused */
    assert_int_equal(c->refused, 0);
    sl__decide_call_free(c);
    assert_int_equal(sl__batch_pending(b, "tight", "k", 1), 3); /* + what it had left */
    assert_int_equal(sl__batch_pending(b, "wide", "k", 1), 4);  /* + its cost */
    assert_int_equal(sl__batch_pending(b, "plain", "k", 1), 2); /* nothing: not counted */
    /* a cost that can never pass charges nothing at all */
    sl__decide_item never[2] = {use(tight, "k", 4, false), use(wide, "k", 1, false)};
    c = sl__decide_call_new(never, 2, NULL, NULL, 0);
    c->done = count_done;
    sl__engine_decide_on(st, c, T0);
    sl__decide_call_free(c);
    assert_int_equal(sl__batch_pending(b, "wide", "k", 1), 4);
    sl__store_free(st);
    sl__batch_free(b);
    lim_free(tight);
    lim_free(wide);
    lim_free(plain);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_or_nothing),
        cmocka_unit_test(test_shadow_group),
        cmocka_unit_test(test_refused_shadow_looked_at),
        cmocka_unit_test(test_cost_never_passes),
        cmocka_unit_test(test_any_rate),
        cmocka_unit_test(test_shadow_never_others),
        cmocka_unit_test(test_ecost_others),
        cmocka_unit_test(test_quota_refused),
        cmocka_unit_test(test_quota_in_order),
        cmocka_unit_test(test_count_rejected_refused),
        cmocka_unit_test(test_shadow_count_rejected_charged),
        cmocka_unit_test(test_later_and_fail_modes),
        cmocka_unit_test(test_batched_records),
        cmocka_unit_test(test_batched_records_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
