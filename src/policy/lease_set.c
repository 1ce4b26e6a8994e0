/* lease_set.c: the running concurrency limits and the start of a lease
 * operation (see lease_set.h). */
#include "policy/lease_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/adaptive.h"
#include "sluice/error.h"
#include "store/memory.h"
#include "util/units.h"

typedef struct entry {
    sl__lease_limit lim; /* first */
    atomic_int refs;
    bool adaptive; /* as built: a reload that changes these makes a new entry */
    int64_t min_limit, max_limit;
} entry;

struct sl__lease_set {
    size_t n;
    entry **e;
};

static void entry_release(entry *e) {
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1) return;
    sl_concurrency_destroy(e->lim.conc);
    sl_concurrency_destroy(e->lim.fallback);
    sl_adaptive_destroy(e->lim.adaptive);
    free(e);
}

static int64_t fallback_limit(int64_t limit, unsigned instances) {
    int64_t l = instances > 1 ? limit / (int64_t)instances : limit;
    return l < 1 ? 1 : l;
}

static void set_limit(sl__lease_limit *l, int64_t limit) {
    atomic_store(&l->limit, limit);
    sl_concurrency_set_limit(l->conc, limit);
    sl_concurrency_set_limit(l->fallback, fallback_limit(limit, l->instances));
}

/* Applies lc to e's limit (new or reused: an adaptive limit keeps where it
 * got to). */
static void apply(entry *e, const sl__config *cfg, const sl__lease_config *lc, bool fresh) {
    sl__lease_limit *l = &e->lim; /* instances: fixed at creation (the store section is) */
    int64_t limit = fresh || !e->adaptive ? lc->limit : atomic_load(&l->limit);
    atomic_store(&l->limit, limit);
    atomic_store(&l->lease, lc->lease);
    atomic_store(&l->on_failure, (int)sl__config_fail_mode(lc->on_failure, cfg->redis.on_failure));
    sl_concurrency_set_limit(l->conc, limit);
    sl_concurrency_set_lease(l->conc, lc->lease);
    sl_concurrency_set_limit(l->fallback, fallback_limit(limit, l->instances));
    sl_concurrency_set_lease(l->fallback, lc->lease);
}

static entry *entry_new(const sl__config *cfg, const sl__lease_config *lc, int64_t now) {
    entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    atomic_init(&e->refs, 1);
    snprintf(e->lim.name, sizeof e->lim.name, "%s", lc->name);
    e->lim.instances = cfg->redis.expected_instances ? cfg->redis.expected_instances : 1;
    sl_concurrency_options o = {
        .limit = lc->limit, .lease = lc->lease, .max_memory = cfg->max_memory};
    sl_concurrency_options f = o;
    f.limit = fallback_limit(lc->limit, e->lim.instances);
    e->adaptive = lc->adaptive;
    e->min_limit = lc->min_limit;
    e->max_limit = lc->max_limit;
    sl_adaptive_options ao = {
        .min_limit = lc->min_limit, .max_limit = lc->max_limit, .initial_limit = lc->limit};
    if (sl_concurrency_create(&o, &e->lim.conc) != SL_OK ||
        sl_concurrency_create(&f, &e->lim.fallback) != SL_OK ||
        (lc->adaptive && sl_adaptive_create(&ao, now, &e->lim.adaptive) != SL_OK)) {
        sl_concurrency_destroy(e->lim.conc);
        sl_concurrency_destroy(e->lim.fallback);
        free(e);
        return NULL;
    }
    return e;
}

int sl__lease_set_create(const sl__config *cfg, const sl__lease_set *prev, int64_t now,
                         sl__lease_set **out, char *err, size_t errlen) {
    sl__lease_set *s = calloc(1, sizeof *s);
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
    if (!s || !(s->e = calloc(cfg->nleases ? cfg->nleases : 1, sizeof *s->e))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < cfg->nleases; i++) {
        const sl__lease_config *lc = &cfg->leases[i];
        entry *e =
            prev ? (entry *)(void *)sl__lease_set_find(prev, lc->name, strlen(lc->name)) : NULL;
        if (e && (e->adaptive != lc->adaptive || e->min_limit != lc->min_limit ||
                  e->max_limit != lc->max_limit))
            e = NULL; /* adaptivity changed: a limit afresh */
        bool fresh = !e;
        if (e)
            atomic_fetch_add(&e->refs, 1);
        else if (!(e = entry_new(cfg, lc, now))) {
            snprintf(err, errlen, "policy %s: out of memory", lc->name);
            sl__lease_set_free(s);
            return SL_ENOMEM;
        }
        apply(e, cfg, lc, fresh);
        s->e[s->n++] = e;
    }
    *out = s;
    return 0;
}

void sl__lease_set_free(sl__lease_set *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) entry_release(s->e[i]);
    free(s->e);
    free(s);
}

sl__lease_limit *sl__lease_set_find(const sl__lease_set *s, const char *name, size_t len) {
    for (size_t i = 0; s && i < s->n; i++) {
        sl__lease_limit *l = &s->e[i]->lim;
        if (strlen(l->name) == len && memcmp(l->name, name, len) == 0) return l;
    }
    return NULL;
}

size_t sl__lease_set_count(const sl__lease_set *s) {
    return s ? s->n : 0;
}

sl__lease_limit *sl__lease_set_at(const sl__lease_set *s, size_t i) {
    return &s->e[i]->lim;
}

void sl__lease_start(sl__decider *d, sl__lease_call *c) {
    c->rc = SL_OK;
    c->from = SL__FROM_REDIS;
    c->retry_closed = 0;
    c->in_flight = -1;
    c->state = NULL;
    memset(&c->acq, 0, sizeof c->acq);
    memset(&c->lease, 0, sizeof c->lease);
    sl__store_lease(d ? sl__decider_store(d) : sl__memory_store(), c);
}

void sl__lease_count(const sl__lease_call *c) {
    sl__lease_limit *l = c->limit;
    switch (c->op) {
    case SL__LEASE_ACQUIRE:
        atomic_fetch_add_explicit(c->acq.acquired ? &l->acquired : &l->refused, 1,
                                  memory_order_relaxed);
        if (c->from < SL__FROM_COUNT)
            atomic_fetch_add_explicit(&l->from[c->from], 1, memory_order_relaxed);
        break;
    case SL__LEASE_RELEASE:
        atomic_fetch_add_explicit(c->rc == SL_OK ? &l->released : &l->unknown, 1,
                                  memory_order_relaxed);
        /* an adaptive limit follows the latencies of the work its leases covered */
        if (c->rc == SL_OK && c->latency > 0 && l->adaptive) {
            int64_t next = sl_adaptive_sample(l->adaptive, c->latency, c->now);
            if (next > 0 && next != atomic_load(&l->limit)) set_limit(l, next);
        }
        break;
    default:
        if (c->rc == SL_ELEASE) atomic_fetch_add_explicit(&l->unknown, 1, memory_order_relaxed);
    }
}

bool sl__lease_id_parse(const char *s, size_t n, uint64_t *out) {
    return sl__hex_u64(s, n, out) && *out != 0;
}
