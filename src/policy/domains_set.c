/* domains_set.c: the rule files compiled into a set (domains.h, second
 * stage): per domain a tree of levels, each with a hash table of exact
 * (key, value) and key-only nodes and a list of wildcard values in file
 * order; every rule limit with one engine limit (decide.h) whose table is
 * created on first use, kept by the next set while the limit does not
 * change (same domain, path and parameters), and each domain's sketch of
 * refused descriptors shared the same way. A set is reference counted and
 * swapped on reload like the policy set; its statistics feed /metrics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/domains_internal.h"
#include "sluice/error.h"

void sl__dstr_add(str *s, const char *p, size_t n) {
    if (s->failed) return;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 128;
        while (cap < s->len + n + 1) cap *= 2;
        char *np = realloc(s->p, cap);
        if (!np) {
            s->failed = true;
            return;
        }
        s->p = np;
        s->cap = cap;
    }
    /* s->p is allocated above when cap is 0 */
    // NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker)
    memcpy(s->p + s->len, p, n);
    s->len += n;
    s->p[s->len] = '\0';
}

/* ---- the compiled set ---------------------------------------------------- */

static void *arena_alloc(sl__domain_set *s, size_t n) {
    n = (n + 15) & ~(size_t)15;
    arena_block *b = s->arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = s->arena;
        s->arena = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

static const char *arena_str(sl__domain_set *s, const char *src, size_t n) {
    char *p = arena_alloc(s, n + 1);
    if (p) memcpy(p, src, n), p[n] = '\0';
    return p;
}

static void lstate_release(lstate *st) {
    if (!st || atomic_fetch_sub(&st->refs, 1) != 1) return;
    sl_table_destroy(atomic_load(&st->lim.store.table));
    free(st->id);
    free(st);
}

/* A limit's state; `top` is its domain's sketch of refused descriptors. */
lstate *sl__dset_lstate_new(const char *id, size_t idlen, const sl_params *p, size_t max_memory,
                            sl__fail_mode on_failure, sl__topk *top, uint32_t rpu, int unit) {
    lstate *st = calloc(1, sizeof *st);
    if (!st || !(st->id = malloc(idlen + 1))) {
        free(st);
        return NULL;
    }
    memcpy(st->id, id, idlen);
    st->id[idlen] = '\0';
    st->idlen = idlen;
    st->params = *p;
    st->max_memory = max_memory;
    st->rpu = rpu;
    st->unit = unit;
    const char *rule = st->id + strlen(st->id) + 1;
    snprintf(st->rname, sizeof st->rname, "rls:%s:%s", st->id, rule);
    atomic_init(&st->refs, 1);
    sl__decide_limit_init(&st->lim, false);
    st->lim.top = top;
    st->lim.log_shadow = sl__dset_log_shadow;
    st->lim.store.name = st->rname;
    st->lim.store.params = &st->params;
    st->lim.store.on_failure = on_failure;
    atomic_init(&st->lim.store.table, NULL);
    atomic_init(&st->lim.store.fallback, NULL);
    return st;
}

/* The table, created on first use (several threads may race: one wins). It
 * is also the Redis store's local fallback. */
sl_table *sl__dset_table(lstate *st) {
    sl_table *t = atomic_load_explicit(&st->lim.store.table, memory_order_acquire);
    if (t || !st->params.algorithm) return t;
    sl_table_options o = {.params = st->params, .max_memory = st->max_memory};
    if (sl_table_create(&o, &t) != SL_OK) return NULL;
    sl_table *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&st->lim.store.table, &expected, t,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        sl_table_destroy(t);
        t = expected;
    }
    atomic_store_explicit(&st->lim.store.fallback, t, memory_order_release);
    return t;
}

static bool same_params(const sl_params *a, const sl_params *b) {
    return a->algorithm == b->algorithm && a->rate.limit == b->rate.limit &&
           a->rate.period == b->rate.period && a->burst == b->burst && a->flags == b->flags;
}

static void dtop_release(dtop *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    sl__topk_destroy(t->top);
    free(t);
}

/* The sketch of domain `name` in prev (shared), or a new one. */
static dtop *dtop_for(const sl__domain_set *prev, const char *name, size_t len);

void sl__domain_set_retain(sl__domain_set *s) {
    atomic_fetch_add(&s->refs, 1);
}

void sl__domain_set_release(sl__domain_set *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    for (size_t i = 0; i < s->nstates; i++) lstate_release(s->states[i]);
    free(s->states);
    size_t nov = atomic_load(&s->nov);
    for (size_t i = 0; i < nov; i++) lstate_release(s->ov[i].st);
    for (size_t i = 0; i < s->ndomains; i++) dtop_release(s->domains[i].refused);
    pthread_mutex_destroy(&s->ov_lock);
    for (arena_block *b = s->arena, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(s);
}

/* ---- compiling ------------------------------------------------------------- */

/* Open-addressing index of (bytes -> value) used while compiling. */
typedef struct smap {
    struct {
        const char *k;
        size_t n;
        uint64_t h;
        void *v;
    } * e;
    size_t mask, count;
} smap;

static bool smap_init(smap *m, size_t expect) {
    size_t cap = 16;
    while (cap < 2 * expect + 2) cap *= 2;
    m->e = calloc(cap, sizeof *m->e);
    m->mask = cap - 1;
    m->count = 0;
    return m->e != NULL;
}

static void **smap_slot(smap *m, const char *k, size_t n, bool *found) {
    uint64_t h = sl__hash(k, n, 0x5eed);
    for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
        if (!m->e[i].k) {
            *found = false;
            m->e[i].k = k;
            m->e[i].n = n;
            m->e[i].h = h;
            m->count++;
            return &m->e[i].v;
        }
        if (m->e[i].h == h && m->e[i].n == n && !memcmp(m->e[i].k, k, n)) {
            *found = true;
            return &m->e[i].v;
        }
    }
}

static void *smap_get(const smap *m, const char *k, size_t n) {
    if (!m->e) return NULL;
    uint64_t h = sl__hash(k, n, 0x5eed);
    for (size_t i = h & m->mask; m->e[i].k; i = (i + 1) & m->mask)
        if (m->e[i].h == h && m->e[i].n == n && !memcmp(m->e[i].k, k, n)) return m->e[i].v;
    return NULL;
}

typedef struct builder {
    sl__domain_set *s;
    sl__topk *top; /* the sketch of the domain being compiled */
    smap prev;     /* id -> lstate of the previous set */
    smap names;    /* rate_limit name -> id + 1 */
    int nnames;
    size_t states_cap;
    char *err;
    size_t errlen;
    bool failed;
} builder;

static int name_id(builder *b, const char *name) {
    bool found;
    void **slot = smap_slot(&b->names, name, strlen(name), &found);
    if (!found) *slot = (void *)(intptr_t)(++b->nnames);
    return (int)(intptr_t)*slot - 1;
}

static climit *compile_limit(builder *b, const rdesc *d, const char *domain, size_t dlen,
                             const str *path) {
    sl__domain_set *s = b->s;
    const rlimit *r = d->limit;
    climit *c = arena_alloc(s, sizeof *c);
    if (!c) return NULL;
    c->rpu = r->rpu;
    c->unit = r->unit;
    c->period = sl__rls_unit_seconds[r->unit] * NS_SEC;
    c->unlimited = r->unlimited;
    c->shadow = d->shadow_mode;
    c->quota = d->quota_mode;
    c->metadata = d->metadata ? arena_str(s, d->metadata, strlen(d->metadata)) : NULL;
    if (d->metadata && !c->metadata) return NULL;
    c->name = r->name ? arena_str(s, r->name, strlen(r->name)) : NULL;
    c->name_id = r->name ? name_id(b, r->name) : -1;
    if (r->nreplaces) {
        c->replaces = arena_alloc(s, r->nreplaces * sizeof *c->replaces);
        if (!c->replaces) return NULL;
        for (size_t i = 0; i < r->nreplaces; i++) c->replaces[i] = name_id(b, r->replaces[i]);
        c->nreplaces = r->nreplaces;
    }
    sl_params p = {0};
    if (!r->unlimited && r->rpu > 0) {
        p.algorithm = r->algorithm;
        p.rate.limit = r->rpu;
        p.rate.period = c->period;
        p.burst = sl_algorithm_is_bucket(p.algorithm) ? (r->burst ? r->burst : r->rpu) : 0;
        p.flags = s->limit_flags;
    }
    /* id: domain NUL path */
    str id = {0};
    sl__dstr_add(&id, domain, dlen);
    sl__dstr_add(&id, "", 1);
    sl__dstr_add(&id, path->p, path->len);
    if (id.failed) return free(id.p), NULL;
    lstate *old = smap_get(&b->prev, id.p, id.len);
    lstate *st;
    if (old && same_params(&old->params, &p) && old->max_memory == s->max_memory &&
        old->lim.store.on_failure == s->on_failure) {
        atomic_fetch_add(&old->refs, 1);
        st = old;
    } else {
        st = sl__dset_lstate_new(id.p, id.len, &p, s->max_memory, s->on_failure, b->top, c->rpu,
                                 c->unit);
    }
    free(id.p);
    if (!st) return NULL;
    if (s->nstates == b->states_cap) {
        size_t cap = b->states_cap ? 2 * b->states_cap : 64;
        /* an array of pointers */
        // NOLINTNEXTLINE(bugprone-sizeof-expression)
        lstate **ns = realloc(s->states, cap * sizeof *ns);
        if (!ns) {
            lstate_release(st);
            return NULL;
        }
        s->states = ns;
        b->states_cap = cap;
    }
    s->states[s->nstates++] = st;
    c->st = st;
    return c;
}

static bool compile_level(builder *b, const rdesc *d, size_t n, clevel *lv, const char *domain,
                          size_t dlen, str *path) {
    sl__domain_set *s = b->s;
    lv->nodes = arena_alloc(s, (n ? n : 1) * sizeof *lv->nodes);
    size_t cap = 4;
    while (cap < 2 * n) cap *= 2;
    lv->slots = arena_alloc(s, cap * sizeof *lv->slots);
    lv->wild = arena_alloc(s, (n ? n : 1) * sizeof *lv->wild);
    if (!lv->nodes || !lv->slots || !lv->wild) return false;
    lv->mask = (uint32_t)(cap - 1);
    lv->n = n;
    for (size_t i = 0; i < n; i++) {
        const rdesc *x = &d[i];
        cnode *c = &lv->nodes[i];
        c->key = arena_str(s, x->key, x->klen);
        c->klen = x->klen;
        if (x->value) {
            c->value = arena_str(s, x->value, x->vlen);
            c->vlen = x->vlen;
            c->wildcard = memchr(x->value, '*', x->vlen) != NULL;
            c->plen = x->vlen;
            if (x->value[x->vlen - 1] == '*') c->vlen--;
        }
        if (!c->key || (x->value && !c->value)) return false;
        c->share = x->share_threshold && c->wildcard;
        if (c->wildcard) {
            lv->wild[lv->nwild++] = (uint32_t)i;
        } else {
            uint64_t h = pair_hash(s->seed, c->key, c->klen, c->value, c->vlen, !c->value);
            uint32_t j = (uint32_t)h & lv->mask;
            while (lv->slots[j]) j = (j + 1) & lv->mask;
            lv->slots[j] = (uint32_t)i + 1;
        }
        size_t mark = path->len;
        if (mark) sl__dstr_add(path, ".", 1);
        sl__dstr_add(path, x->key, x->klen);
        if (x->value) sl__dstr_add(path, "_", 1), sl__dstr_add(path, x->value, x->vlen);
        if (path->failed) return false;
        if (x->limit && !(c->limit = compile_limit(b, x, domain, dlen, path))) return false;
        if (x->nkids) {
            c->kids = arena_alloc(s, sizeof *c->kids);
            if (!c->kids || !compile_level(b, x->kids, x->nkids, c->kids, domain, dlen, path))
                return false;
        }
        path->len = mark;
        path->p[mark] = '\0';
    }
    return true;
}

static int build(const sl__domain_rules *rules, size_t max_memory, sl__fail_mode on_failure,
                 unsigned limit_flags, sl__domain_set *prev, sl__domain_set **out, char *err,
                 size_t errlen) {
    *out = NULL;
    sl__domain_set *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return SL_ENOMEM;
    }
    atomic_init(&s->refs, 1);
    atomic_init(&s->nov, 0);
    pthread_mutex_init(&s->ov_lock, NULL);
    s->seed = sl__random_seed();
    s->max_memory = max_memory;
    s->on_failure = on_failure;
    s->limit_flags = limit_flags;
    builder b = {.s = s, .err = err, .errlen = errlen};
    size_t nd = rules ? rules->n : 0;
    bool ok = smap_init(&b.names, 64) && smap_init(&b.prev, prev ? prev->nstates : 0);
    if (ok && prev)
        for (size_t i = 0; i < prev->nstates; i++) {
            bool found;
            *smap_slot(&b.prev, prev->states[i]->id, prev->states[i]->idlen, &found) =
                prev->states[i];
        }
    size_t cap = 4;
    while (cap < 2 * nd) cap *= 2;
    s->domains = ok ? arena_alloc(s, (nd ? nd : 1) * sizeof *s->domains) : NULL;
    s->dslots = ok ? arena_alloc(s, cap * sizeof *s->dslots) : NULL;
    s->dmask = (uint32_t)(cap - 1);
    ok = ok && s->domains && s->dslots;
    str path = {0};
    for (size_t i = 0; ok && i < nd; i++) {
        const rdomain *r = &rules->d[i];
        cdomain *c = &s->domains[s->ndomains++];
        c->name = arena_str(s, r->name, r->len);
        c->len = r->len;
        c->refused = dtop_for(prev, r->name, r->len);
        ok = c->name != NULL && c->refused != NULL;
        uint32_t j = (uint32_t)sl__hash(r->name, r->len, s->seed) & s->dmask;
        while (s->dslots[j]) j = (j + 1) & s->dmask;
        s->dslots[j] = (uint32_t)i + 1;
        path.len = 0;
        b.top = ok ? c->refused->top : NULL;
        ok = ok && compile_level(&b, r->descs, r->n, &c->top, r->name, r->len, &path);
    }
    free(path.p);
    /* limit overrides: keep the tables of the domains that remain */
    if (ok && prev) {
        size_t nov = atomic_load(&prev->nov), k = 0;
        for (size_t i = 0; i < nov; i++) {
            const cdomain *pd = &prev->domains[prev->ov[i].domain];
            for (size_t j = 0; j < s->ndomains; j++) {
                if (s->domains[j].len != pd->len ||
                    memcmp(s->domains[j].name, pd->name, pd->len) != 0 ||
                    prev->ov[i].st->lim.store.on_failure != on_failure ||
                    prev->ov[i].st->params.flags != limit_flags)
                    continue;
                s->ov[k] = prev->ov[i];
                s->ov[k].domain = j;
                atomic_fetch_add(&s->ov[k].st->refs, 1);
                k++;
            }
        }
        atomic_store(&s->nov, k);
    }
    free(b.names.e);
    free(b.prev.e);
    if (!ok) {
        snprintf(err, errlen, "out of memory while compiling the rule files");
        sl__domain_set_release(s);
        return SL_ENOMEM;
    }
    *out = s;
    return SL_OK;
}

int sl__domain_set_build(const sl__domain_rules *rules, size_t max_memory, sl__domain_set *prev,
                         int64_t now, sl__domain_set **out, char *err, size_t errlen) {
    (void)now;
    return build(rules, max_memory, SL__FAIL_OPEN, 0, prev, out, err, errlen);
}

static bool any_quota(const rdesc *d, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (d[i].quota_mode || any_quota(d[i].kids, d[i].nkids)) return true;
    return false;
}

/* Whether a rule of r (NULL: none) is in quota_mode. */
static bool rules_quota(const sl__domain_rules *r) {
    for (size_t i = 0; r && i < r->n; i++)
        if (any_quota(r->d[i].descs, r->d[i].n)) return true;
    return false;
}

int sl__domain_set_create(const sl__config *cfg, sl__domain_set *prev, int64_t now,
                          sl__domain_set **out, char *err, size_t errlen) {
    (void)now;
    /* each try of an "any" group that refuses charges count_rejected limits
       (decide.h): quota groups would charge refused hits more than once */
    if (cfg->charge_refused_hits && (cfg->quota_mode || rules_quota(cfg->domain_rules))) {
        snprintf(err, errlen,
                 "charge_refused_hits: not supported with quota_mode rules "
                 "(docs/envoy.md)");
        *out = NULL;
        return SL_EINVAL;
    }
    int rc = build(cfg->domain_rules, cfg->max_memory, cfg->redis.on_failure,
                   cfg->charge_refused_hits ? SL_COUNT_REJECTED : 0, prev, out, err, errlen);
    if (rc == 0) sl__domain_set_shadow(*out, cfg->shadow);
    if (rc == 0) sl__domain_set_quota_mode(*out, cfg->quota_mode);
    return rc;
}

void sl__domain_set_shadow(sl__domain_set *s, bool shadow) {
    s->shadow = shadow;
}

void sl__domain_set_quota_mode(sl__domain_set *s, bool quota_mode) {
    s->quota = quota_mode;
}

/* ---- matching ---------------------------------------------------------------- */

/* ---- finding a domain -------------------------------------------------------- */

const cdomain *sl__dset_find(const sl__domain_set *s, const char *name, size_t len) {
    if (!s || !s->ndomains) return NULL;
    for (uint32_t j = (uint32_t)sl__hash(name, len, s->seed) & s->dmask; s->dslots[j];
         j = (j + 1) & s->dmask) {
        const cdomain *d = &s->domains[s->dslots[j] - 1];
        if (d->len == len && !memcmp(d->name, name, len)) return d;
    }
    return NULL;
}

static dtop *dtop_for(const sl__domain_set *prev, const char *name, size_t len) {
    const cdomain *old = sl__dset_find(prev, name, len);
    if (old && old->refused) {
        atomic_fetch_add(&old->refused->refs, 1);
        return old->refused;
    }
    dtop *t = calloc(1, sizeof *t);
    if (!t || sl__topk_create(TOP_CAPACITY, &t->top) != 0) {
        free(t);
        return NULL;
    }
    atomic_init(&t->refs, 1);
    return t;
}

/* ---- statistics --------------------------------------------------------------- */

size_t sl__domain_set_rule_count(const sl__domain_set *s) {
    return s ? s->nstates + atomic_load(&((sl__domain_set *)s)->nov) : 0;
}

bool sl__domain_set_rule_stats(const sl__domain_set *s, size_t i, sl__domain_rule_stats *out) {
    if (!s) return false;
    lstate *st;
    if (i < s->nstates)
        st = s->states[i];
    else if (i - s->nstates < atomic_load(&((sl__domain_set *)s)->nov))
        st = ((sl__domain_set *)s)->ov[i - s->nstates].st;
    else
        return false;
    out->domain = st->id;
    out->rule = st->id + strlen(st->id) + 1;
    out->allowed = atomic_load_explicit(&st->lim.allowed, memory_order_relaxed);
    out->limited = atomic_load_explicit(&st->lim.limited, memory_order_relaxed);
    out->shadow_limited = atomic_load_explicit(&st->lim.shadow_limited, memory_order_relaxed);
    sl_table *t = atomic_load_explicit(&st->lim.store.table, memory_order_acquire);
    out->keys = 0;
    if (t) {
        sl_table_stats ts;
        sl_table_stats_get(t, &ts);
        out->keys = ts.keys;
    }
    return true;
}

long sl__domain_set_top(const sl__domain_set *s, const char *domain, size_t dlen, const char *rule,
                        size_t rlen, sl__domain_top_item *out, size_t max) {
    const cdomain *d = sl__dset_find(s, domain, dlen);
    if (!d) return SL_EINVAL;
    sl__topk_item all[TOP_CAPACITY];
    size_t n = sl__topk_list(d->refused->top, all, TOP_CAPACITY), k = 0;
    _Static_assert(SL__DOMAIN_TOP_TEXT >= SL__TOPK_KEY_MAX, "a sketch key fits");
    for (size_t i = 0; i < n && k < max; i++) {
        const char *p = all[i].key;
        size_t len = all[i].keylen, sep = 0;
        while (sep < len && p[sep] != TOP_SEP) sep++;
        if (rule && (sep != rlen || memcmp(p, rule, rlen) != 0)) continue;
        sl__domain_top_item *o = &out[k++];
        memcpy(o->rule, p, sep);
        o->rule[sep] = '\0';
        size_t kl = sep < len ? len - sep - 1 : 0;
        memcpy(o->key, p + len - kl, kl);
        o->key[kl] = '\0';
        o->count = all[i].count;
        o->error = all[i].error;
    }
    return (long)k;
}
