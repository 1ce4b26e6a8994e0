/* policy.c: the running policy set (see policy.h). A set is an immutable
 * array of reference-counted policies; a reload builds a new array that
 * shares every unchanged policy (same name and limit; the shadow flag may
 * change, it is a view, not state) with the old one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "sluice/error.h"

#define TOPK_CAPACITY 64

struct sl_policy_set {
    atomic_int refs;
    size_t n;
    sl_policy **p;
    size_t max_memory;
};

static void policy_release(sl_policy *p) {
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
    sl_table_destroy(p->table);
    sl__topk_destroy(p->top);
    free(p);
}

/* Same limit, so the state can be kept: algorithm, rate, burst, flags. */
static bool same_limit(const sl_policy_config *a, const sl_policy_config *b) {
    return a->params.algorithm == b->params.algorithm &&
           a->params.rate.limit == b->params.rate.limit &&
           a->params.rate.period == b->params.rate.period &&
           a->params.burst == b->params.burst && a->params.flags == b->params.flags;
}

static sl_policy *policy_new(const sl_policy_config *cfg, size_t max_memory, int64_t now,
                             char *err, size_t errlen) {
    sl_policy *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->cfg = *cfg;
    if (p->cfg.params.flags & SL_START_EMPTY) p->cfg.params.origin = now;
    atomic_init(&p->shadow, cfg->shadow);
    atomic_init(&p->refs, 1);
    atomic_init(&p->allowed, 0);
    atomic_init(&p->limited, 0);
    atomic_init(&p->shadow_limited, 0);
    sl_table_options o = {.params = p->cfg.params, .max_memory = max_memory};
    int rc = sl_table_create(&o, &p->table);
    if (rc == SL_OK && sl__topk_create(TOPK_CAPACITY, &p->top) != 0) rc = SL_ENOMEM;
    if (rc != SL_OK) {
        snprintf(err, errlen, "policy %s: %s", cfg->name, sl_strerror(rc));
        sl_table_destroy(p->table);
        free(p);
        return NULL;
    }
    return p;
}

int sl__policy_set_create(const sl_config *cfg, sl_policy_set *prev, int64_t now,
                          sl_policy_set **out, char *err, size_t errlen) {
    sl_policy_set *s = calloc(1, sizeof *s);
    if (!s || !(s->p = calloc(cfg->npolicies ? cfg->npolicies : 1, sizeof *s->p))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    atomic_init(&s->refs, 1);
    s->max_memory = cfg->max_memory;
    for (size_t i = 0; i < cfg->npolicies; i++) {
        const sl_policy_config *pc = &cfg->policies[i];
        sl_policy *old = prev ? sl__policy_find(prev, pc->name, strlen(pc->name)) : NULL;
        if (old && same_limit(&old->cfg, pc) && prev->max_memory == cfg->max_memory) {
            /* Keep the state; only the shadow flag may change. */
            atomic_fetch_add(&old->refs, 1);
            atomic_store(&old->shadow, pc->shadow);
            s->p[s->n++] = old;
        } else {
            sl_policy *p = policy_new(pc, cfg->max_memory, now, err, errlen);
            if (!p) {
                sl__policy_set_release(s);
                return -1;
            }
            s->p[s->n++] = p;
        }
    }
    *out = s;
    return 0;
}

void sl__policy_set_retain(sl_policy_set *s) {
    atomic_fetch_add(&s->refs, 1);
}

void sl__policy_set_release(sl_policy_set *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    for (size_t i = 0; i < s->n; i++) policy_release(s->p[i]);
    free(s->p);
    free(s);
}

size_t sl__policy_set_count(const sl_policy_set *s) {
    return s->n;
}

sl_policy *sl__policy_set_at(const sl_policy_set *s, size_t i) {
    return i < s->n ? s->p[i] : NULL;
}

sl_policy *sl__policy_find(const sl_policy_set *s, const char *name, size_t len) {
    if (!s || len > SL_POLICY_NAME_MAX) return NULL;
    for (size_t i = 0; i < s->n; i++) {
        const char *n = s->p[i]->cfg.name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) return s->p[i];
    }
    return NULL;
}

int sl__policy_check(sl_policy *p, const char *key, size_t keylen, int64_t cost, int64_t now,
                     sl_decision *d, bool *shadowed) {
    *shadowed = false;
    int rc = sl_table_check(p->table, key, keylen, cost, now, d);
    if (rc != SL_OK) return rc;
    if (d->allowed) {
        atomic_fetch_add_explicit(&p->allowed, 1, memory_order_relaxed);
        return SL_OK;
    }
    sl__topk_add(p->top, key, keylen, 1);
    if (atomic_load_explicit(&p->shadow, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&p->shadow_limited, 1, memory_order_relaxed);
        *shadowed = true;
        d->allowed = true;
        d->retry_after = 0;
        return SL_OK;
    }
    atomic_fetch_add_explicit(&p->limited, 1, memory_order_relaxed);
    return SL_OK;
}
