/* decide_helper.h: the engine's calls (src/policy/decide.h) run on the
 * memory store, which decides inline, as one function each: what the unit
 * tests and fuzz targets use instead of synchronous copies of the engine.
 * Include after the headers of what is used (policy.h, rules.h, cell.h,
 * domains.h); each helper exists when its header was included. */
#ifndef SLUICE_TESTS_DECIDE_HELPER_H
#define SLUICE_TESTS_DECIDE_HELPER_H

#include <stdlib.h>
#include <string.h>

#include "policy/decide.h"
#include "sluice/error.h"
#include "sluice/table.h"
#include "store/memory.h"

static void helper_done_nothing(sl__decide_call *c) {
    (void)c;
}

/* Runs c on the memory store (inline) and leaves its outcome in c. */
static inline void helper_run(sl__decide_call *c, int64_t now) {
    c->done = helper_done_nothing;
    sl__engine_decide(sl__decider_memory(), c, now);
}

#ifdef CMOCKA_H_ /* the cmocka tests' */
/* A limit of the engine on a keyed table of its own, as policy.c makes one:
 * p's parameters, name, shadow, a top-keys sketch of 8 and, when near, a
 * near-limit sketch of 8. helper_limit_free frees it (and its stripes). */
typedef struct helper_limit {
    sl__decide_limit l;
    sl_params p;
} helper_limit;

static inline helper_limit *helper_limit_new(const char *name, sl_params p, bool shadow,
                                             bool near) {
    helper_limit *x = calloc(1, sizeof *x);
    assert_non_null(x);
    x->p = p;
    sl__decide_limit_init(&x->l, shadow);
    x->l.store.name = name;
    x->l.store.params = &x->p;
    sl_table *t = NULL;
    sl_table_options o = {.params = x->p};
    assert_int_equal(sl_table_create(&o, &t), SL_OK);
    x->l.store.table = t;
    assert_int_equal(sl__topk_create(8, &x->l.top), 0);
    if (near) assert_int_equal(sl__topk_create(8, &x->l.near), 0);
    return x;
}

static inline void helper_limit_free(helper_limit *x) {
    sl__store_limit_stripes_free(&x->l.store);
    sl_table_destroy(x->l.store.table);
    sl__topk_destroy(x->l.top);
    sl__topk_destroy(x->l.near);
    free(x);
}
#endif

/* A store that answers later: it keeps the call the engine hands it (held),
 * which the test completes by hand (the items' decisions, then
 * held->done(held)); sl__engine_decide_on(&ls.base, ...) decides on it. */
typedef struct helper_later_store {
    sl__store base;
    sl__store_call *held;
} helper_later_store;

static inline void helper_later_decide(sl__store *s, sl__store_call *c) {
    ((helper_later_store *)s)->held = c;
}

static inline void helper_later_free(sl__store *s) {
    (void)s;
}

static inline helper_later_store helper_later_store_new(void) {
    static const sl__store_ops ops = {.decide = helper_later_decide, .free = helper_later_free};
    return (helper_later_store){.base = {.ops = &ops}};
}

#ifdef SLUICE_POLICY_POLICY_H
/* One request of one policy: hrc of the engine (SL_ECOST: never passes),
 * the decision, and whether shadow mode allowed a refusal. */
static inline int policy_check(sl__policy *p, const char *key, size_t keylen, int64_t cost,
                               int64_t now, sl_decision *d, bool *shadowed) {
    *d = (sl_decision){0};
    *shadowed = false;
    sl__decide_item it = sl__policy_use(p, key, keylen, cost, false);
    sl__decide_call *c = sl__decide_call_new(&it, 1, NULL, NULL, 0);
    if (!c) return SL_ENOMEM;
    helper_run(c, now);
    *d = c->items[0].decision;
    *shadowed = c->items[0].shadowed;
    int hrc = c->rc;
    sl__decide_call_free(c);
    return hrc;
}

/* n uses of policies decided as one request (the engine's groups); the
 * outcome goes back into items; *refused as the call's. */
static inline int policy_check_all(sl__policy_item *items, size_t n, int64_t now,
                                   sl__policy_label_fn label, void *ctx, size_t *refused) {
    sl__decide_item di[SL_CHECK_MAX];
    *refused = n;
    if (n > SL_CHECK_MAX) return SL_ETOOMANY;
    for (size_t i = 0; i < n; i++)
        di[i] = sl__policy_use(items[i].policy, items[i].key, items[i].keylen, items[i].cost,
                               items[i].shadow);
    sl__decide_call *c = sl__decide_call_new(di, n, label, ctx, 0);
    if (!c) return SL_ENOMEM;
    helper_run(c, now);
    for (size_t i = 0; i < n; i++) {
        items[i].decision = c->items[i].decision;
        items[i].decided = c->items[i].decided;
        items[i].shadowed = c->items[i].shadowed;
    }
    *refused = c->refused;
    int hrc = c->rc;
    sl__decide_call_free(c);
    return hrc;
}
#endif

#ifdef SLUICE_POLICY_RULES_H
/* sl__rules_prepare, the engine, sl__rules_finish. */
static inline void rules_decide(const sl__rules *r, const sl__request *req, int64_t now,
                                sl__rules_answer *a) {
    static _Thread_local char arena[SL__RULES_ARENA]; /* a's keys, until the next call */
    a->arena = arena;
    sl__decide_call *c = sl__rules_prepare(r, req, NULL, a, 0);
    if (!c) return;
    helper_run(c, now);
    sl__rules_finish(a, c);
    sl__decide_call_free(c);
}
#endif

#ifdef SLUICE_POLICY_CELL_H
/* CL.THROTTLE: 0 and reply[], or a negative SL_E* code and its message in
 * err (SL__CELL_ERR_MAX bytes, or NULL). */
static inline int cell_throttle(sl__cell *cell, const char *key, size_t keylen, int64_t max_burst,
                                int64_t count, int64_t period, int64_t quantity, int64_t now,
                                int64_t reply[5], char *err) {
    size_t errlen = err ? SL__CELL_ERR_MAX : 0;
    sl__decide_call *c;
    int hrc =
        sl__cell_prepare(cell, key, keylen, max_burst, count, period, quantity, 0, &c, err, errlen);
    if (hrc != 0) return hrc;
    helper_run(c, now);
    hrc = sl__cell_finish(c, reply, err, errlen);
    sl__decide_call_free(c);
    return hrc;
}
#endif

#ifdef SLUICE_POLICY_DOMAINS_H
/* ShouldRateLimit in the protocol-neutral structs. */
static inline int domain_decide(sl__domain_set *s, const sl__rls_request *req, int64_t now,
                                sl__rls_status *statuses, int *overall, const char **message) {
    sl__decide_call *c = NULL;
    int hrc = sl__domain_prepare(s, req, now, statuses, overall, message, 0, &c);
    if (hrc != SL_OK || !c) return hrc;
    helper_run(c, now);
    size_t n;
    hrc = sl__domain_finish(c, statuses, &n, overall, message);
    sl__decide_call_free(c);
    return hrc;
}
#endif

#endif
