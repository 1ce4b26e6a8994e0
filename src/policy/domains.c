/* domains.c: envoyproxy/ratelimit's ShouldRateLimit against a compiled set
 * of rule files (domains.h, third stage; the files are read by
 * domains_read.c and compiled by domains_set.c).
 *
 * Matching is upstream's GetLimit: at each level of nested descriptors the
 * request entry is looked up as key+value, then against the wildcard values
 * (a value with '*' anywhere, each '*' any run of bytes, the whole value
 * matched; in file order), then as key only; a rule applies when its depth
 * equals the descriptor's length. Matching is on (key, value) pairs:
 * upstream compares joined "key_value" strings, which differs only for keys
 * that themselves contain '_' or '*' around a wildcard. A descriptor's
 * quota_mode and metadata are kept on its limit (sl__domain_set_match
 * reports them); deciding does not use them yet.
 *
 * Deciding: all the limits of one request go to the one decision engine
 * (decide.h) in one call: all or nothing, shadow limits as their own group
 * (a shadow limit that would refuse never blocks the request nor makes
 * others consume). The config's top-level `shadow: true` makes every limit
 * of the set a shadow limit (a view of the set, not state: a reload that
 * turns it off keeps the tables). A check (hits 0) refuses when one more
 * hit would; `charge_refused_hits` gives every limit count_rejected.
 *
 * Accounting: every limit counts its outcomes (allowed, limited,
 * shadow_limited) for /metrics, by domain and rule; each domain has one
 * heavy-hitters sketch of the descriptors refused (shadow refusals included)
 * for /v1/top?domain=; and a shadow refusal is logged through the
 * process-wide budget of sl__log_limited, so a flood cannot fill the disk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/domains_internal.h"
#include "sluice/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/units.h"

/* ---- matching ---------------------------------------------------------------- */

/* Whether value v matches pattern p, where each '*' stands for any run of
 * bytes (none included) and everything else for itself: the whole value,
 * as upstream matches wildcard values ("foo*" is a prefix, "bar*b" and
 * "foo*bar*baz" more). The classic two-pointer walk: on a mismatch, the
 * last '*' takes one more byte; O(|p|*|v|) at worst, linear for one '*'. */
static bool glob_match(const char *p, size_t pn, const char *v, size_t vn) {
    size_t i = 0, j = 0, star = SIZE_MAX, mark = 0;
    while (j < vn) {
        if (i < pn && p[i] == '*') {
            star = i++;
            mark = j;
        } else if (i < pn && p[i] == v[j]) {
            i++, j++;
        } else if (star != SIZE_MAX) {
            i = star + 1;
            j = ++mark;
        } else {
            return false;
        }
    }
    while (i < pn && p[i] == '*') i++;
    return i == pn;
}

static const cnode *lookup(const sl__domain_set *s, const clevel *lv, const sl__rls_entry *e,
                           bool *via_share) {
    *via_share = false;
    /* key + value */
    if (e->value_len) {
        uint64_t h = pair_hash(s->seed, e->key, e->key_len, e->value, e->value_len, false);
        for (uint32_t j = (uint32_t)h & lv->mask; lv->slots[j]; j = (j + 1) & lv->mask) {
            const cnode *c = &lv->nodes[lv->slots[j] - 1];
            if (c->value && c->klen == e->key_len && c->vlen == e->value_len &&
                !memcmp(c->key, e->key, c->klen) && !memcmp(c->value, e->value, c->vlen))
                return c;
        }
    }
    /* wildcards, in file order */
    for (size_t i = 0; i < lv->nwild; i++) {
        const cnode *c = &lv->nodes[lv->wild[i]];
        if (c->klen == e->key_len && !memcmp(c->key, e->key, c->klen) &&
            glob_match(c->value, c->plen, e->value, e->value_len)) {
            *via_share = c->share;
            return c;
        }
    }
    /* key only */
    uint64_t h = pair_hash(s->seed, e->key, e->key_len, NULL, 0, true);
    for (uint32_t j = (uint32_t)h & lv->mask; lv->slots[j]; j = (j + 1) & lv->mask) {
        const cnode *c = &lv->nodes[lv->slots[j] - 1];
        if (!c->value && c->klen == e->key_len && !memcmp(c->key, e->key, c->klen)) return c;
    }
    return NULL;
}

/* upstream GetLimit: the rule limit for a descriptor, or NULL. via[i] is
 * the node entry i matched when that was a share_threshold wildcard (its
 * pattern stands for the value in the table key), else NULL. */
static const climit *match(const sl__domain_set *s, const cdomain *d, const sl__rls_descriptor *q,
                           const cnode **via) {
    const clevel *lv = &d->top;
    const climit *found = NULL;
    for (size_t i = 0; i < q->nentries; i++) via[i] = NULL;
    for (size_t i = 0; i < q->nentries; i++) {
        bool share;
        const cnode *c = lookup(s, lv, &q->entries[i], &share);
        via[i] = share ? c : NULL;
        if (c && c->limit && i + 1 == q->nentries) found = c->limit;
        if (!c || !c->kids) break;
        lv = c->kids;
    }
    return found;
}

bool sl__domain_set_match(const sl__domain_set *s, const char *domain, size_t dlen,
                          const sl__rls_descriptor *q, sl__domain_match *out) {
    const cdomain *d = sl__dset_find(s, domain, dlen);
    if (!d || !q->nentries || q->nentries > SL__RLS_MAX_ENTRIES) return false;
    const cnode *via[SL__RLS_MAX_ENTRIES];
    const climit *c = match(s, d, q, via);
    if (!c) return false;
    *out = (sl__domain_match){.rule = c->st->id + d->len + 1,
                              .name = c->name,
                              .metadata = c->metadata,
                              .requests_per_unit = c->rpu,
                              .unit = c->unit,
                              .unlimited = c->unlimited,
                              .shadow = c->shadow || s->shadow,
                              .quota_mode = c->quota || s->quota};
    for (size_t i = 0; i < q->nentries; i++) out->shared |= via[i] != NULL;
    return true;
}

/* ---- deciding ------------------------------------------------------------------ */

static uint32_t clamp_u32(int64_t v) {
    return v <= 0 ? 0 : v >= (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The override table for (domain, rpu, unit), created on first use. */
static lstate *override_state(sl__domain_set *s, const cdomain *d, uint32_t rpu, int unit) {
    size_t di = (size_t)(d - s->domains);
    size_t n = atomic_load_explicit(&s->nov, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (s->ov[i].domain == di && s->ov[i].rpu == rpu && s->ov[i].unit == unit)
            return s->ov[i].st;
    pthread_mutex_lock(&s->ov_lock);
    n = atomic_load_explicit(&s->nov, memory_order_acquire);
    lstate *st = NULL;
    for (size_t i = 0; i < n && !st; i++)
        if (s->ov[i].domain == di && s->ov[i].rpu == rpu && s->ov[i].unit == unit) st = s->ov[i].st;
    if (!st && n < SL__RLS_MAX_OVERRIDES) {
        sl_params p = {.algorithm = SL_FIXED_WINDOW,
                       .rate = {.limit = rpu, .period = sl__rls_unit_seconds[unit] * NS_SEC},
                       .flags = s->limit_flags};
        char id[FIELD_MAX + 64];
        int k = snprintf(id, sizeof id, "%.*s%climit_override.%u_per_%s",
                         (int)(d->len < FIELD_MAX ? d->len : FIELD_MAX), d->name, '\0', rpu,
                         sl__rls_unit_names[unit]);
        st = sl__dset_lstate_new(id, (size_t)k, &p, s->max_memory, s->on_failure, d->refused->top,
                                 rpu, unit);
        if (st) {
            s->ov[n] = (override){.domain = di, .rpu = rpu, .unit = unit, .st = st};
            atomic_store_explicit(&s->nov, n + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&s->ov_lock);
    return st;
}

typedef struct item {
    size_t desc;      /* index of the descriptor */
    lstate *st;       /* the rule's or override's state; NULL for an override of 0 */
    const climit *cl; /* NULL for an override */
    uint32_t rpu;
    int unit;
    int64_t period;
    int64_t cost;
    bool shadow, share;
    bool quota;      /* quota_mode (enforced): one "any" group of its own (decide.h) */
    bool refused;    /* over the limit (for a shadow limit: would have been) */
    bool counted;    /* counted already (a table limit: by the engine) */
    sl_decision dec; /* table limits: what the limit answered */
} item;

static void put_varint(str *k, size_t v) {
    char b[10];
    size_t n = 0;
    do {
        b[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    sl__dstr_add(k, b, n);
}

/* printable ASCII of s[0..n) at buf[o..cap): other bytes become '?'. */
static size_t put_text(char *buf, size_t o, size_t cap, const char *s, size_t n) {
    for (size_t i = 0; i < n && o < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[o++] = (char)(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return o;
}

/* The sketch key of a refused descriptor (at most SL__TOPK_KEY_MAX bytes):
 * its rule's stats key, TOP_SEP, and the entries as "key=value,key=value",
 * in printable ASCII. Returns the length. */
static size_t descriptor_label(const item *it, const sl__rls_descriptor *q, char *buf) {
    const size_t cap = SL__TOPK_KEY_MAX;
    const char *rule = it->st->id + strlen(it->st->id) + 1;
    size_t o = put_text(buf, 0, cap, rule, strlen(rule));
    if (o < cap) buf[o++] = TOP_SEP;
    for (size_t e = 0; e < q->nentries; e++) {
        if (e && o < cap) buf[o++] = ',';
        o = put_text(buf, o, cap, q->entries[e].key, q->entries[e].key_len);
        if (o < cap) buf[o++] = '=';
        o = put_text(buf, o, cap, q->entries[e].value, q->entries[e].value_len);
    }
    return o;
}

/* A domain limit's shadow log line: its domain and rule, the descriptor
 * (from the sketch label: rule TOP_SEP entries) and its rate. */
void sl__dset_log_shadow(const sl__decide_limit *l, const char *label, size_t n,
                         const sl_decision *d, int64_t now) {
    (void)d;
    const lstate *st = (const lstate *)(const void *)l;
    char dom[SHOW_MAX + 1];
    dom[put_text(dom, 0, SHOW_MAX, st->id, strlen(st->id))] = '\0';
    size_t sep = 0;
    while (sep < n && label[sep] != TOP_SEP) sep++;
    const char *what = sep < n ? label + sep + 1 : "";
    sl__log_limited(now, SL__LOG_INFO,
                    "shadow: domain %s rule %.*s would have refused %.*s (%u per %s)", dom,
                    (int)sep, label, (int)(sep < n ? n - sep - 1 : 0), what, (unsigned)st->rpu,
                    sl__rls_unit_name(st->unit));
}

/* A request's limits while the engine decides them (the call's user area;
 * the caller's bytes follow). */
typedef struct dstate {
    sl__domain_set *set; /* held */
    const cdomain *domain;
    item items[SL__RLS_MAX_DESCRIPTORS];
    size_t nitems;
    size_t map[SL_CHECK_MAX]; /* engine item -> items index */
    size_t nactive;
    int64_t now;
    size_t ndesc;
    sl__rls_status statuses[SL__RLS_MAX_DESCRIPTORS]; /* those final before deciding */
} dstate;

#define DSTATE_BYTES ((sizeof(dstate) + 15) & ~(size_t)15)

typedef struct label_ctx {
    const item *items;
    const size_t *map;
    const sl__rls_request *req;
} label_ctx;

static size_t label_of(void *ctx, size_t a, char *buf, size_t size) {
    (void)size; /* SL__TOPK_KEY_MAX */
    const label_ctx *lc = ctx;
    const item *it = &lc->items[lc->map[a]];
    return descriptor_label(it, &lc->req->descriptors[it->desc], buf);
}

static void statuses_of(const cdomain *d, item *items, size_t nitems, int64_t now,
                        const sl__rls_request *req, sl__rls_status *statuses, int *overall);
static void note_refusal(const cdomain *d, const item *it, const sl__rls_request *req, int64_t now);

/* A request's checks before anything is looked up: its domain and
 * descriptors present, within the caps, overrides with a valid unit;
 * statuses[i] set to OK for each descriptor. SL_EINVAL with *message. */
static int check_request(const sl__rls_request *req, sl__rls_status *statuses,
                         const char **message) {
    if (!req->domain_len) return *message = "rate limit domain must not be empty", SL_EINVAL;
    if (!req->ndescriptors)
        return *message = "rate limit descriptor list must not be empty", SL_EINVAL;
    if (req->ndescriptors > SL__RLS_MAX_DESCRIPTORS)
        return *message = "too many descriptors (at most 64)", SL_EINVAL;
    for (size_t i = 0; i < req->ndescriptors; i++) {
        const sl__rls_descriptor *q = &req->descriptors[i];
        if (q->nentries > SL__RLS_MAX_ENTRIES)
            return *message = "too many entries in a descriptor (at most 32)", SL_EINVAL;
        if (q->has_limit &&
            (q->limit_unit < SL__RLS_UNIT_SECOND || q->limit_unit > SL__RLS_UNIT_YEAR))
            return *message = "a descriptor's limit override needs a unit from SECOND to YEAR",
                   SL_EINVAL;
        statuses[i] = (sl__rls_status){.code = SL__RLS_OK};
    }
    return SL_OK;
}

/* Step 1: which rule applies to each descriptor (overrides need none);
 * shared[i] when it matched through a share_threshold wildcard. */
static void match_all(const sl__domain_set *s, const cdomain *d, const sl__rls_request *req,
                      const climit **matched, bool *shared) {
    const cnode *via[SL__RLS_MAX_ENTRIES];
    for (size_t i = 0; i < req->ndescriptors; i++) {
        const sl__rls_descriptor *q = &req->descriptors[i];
        matched[i] = NULL;
        shared[i] = false;
        if (q->has_limit) continue;
        matched[i] = match(s, d, q, via);
        for (size_t e = 0; matched[i] && e < q->nentries && !shared[i]; e++)
            shared[i] = via[e] != NULL;
    }
}

/* Step 2, replaces: a matched limit whose name another matched limit
 * replaces is dropped (upstream: unlimited ones replace too). */
static void drop_replaced(size_t n, const climit **matched) {
    for (size_t i = 0; i < n; i++) {
        const climit *c = matched[i];
        if (!c || c->name_id < 0) continue;
        bool replaced = false;
        for (size_t j = 0; j < n && !replaced; j++)
            for (size_t r = 0; matched[j] && r < matched[j]->nreplaces && !replaced; r++)
                replaced = matched[j]->replaces[r] == c->name_id;
        if (replaced) matched[i] = NULL;
    }
}

/* A request's limits on their way into the engine call (decide's steps 3
 * to 5): the items, the engine's items and which item each is. */
typedef struct plan {
    item items[SL__RLS_MAX_DESCRIPTORS];
    size_t nitems;
    sl__decide_item active[SL_CHECK_MAX];
    size_t map[SL_CHECK_MAX]; /* engine item -> items index */
    size_t nactive;
} plan;

/* Step 3: the limits to decide, into pl->items. An unlimited rule is
 * answered (and counted) here; a descriptor without a rule says nothing.
 * SL_ETOOMANY with *message when an override's table cannot be had. */
static int collect_items(sl__domain_set *s, const cdomain *d, const sl__rls_request *req,
                         const climit **matched, const bool *shared, sl__rls_status *statuses,
                         plan *pl, const char **message) {
    int64_t request_cost = req->hits_addend ? req->hits_addend : 1;
    pl->nitems = 0;
    for (size_t i = 0; i < req->ndescriptors; i++) {
        const sl__rls_descriptor *q = &req->descriptors[i];
        const climit *c = matched[i];
        item it = {.desc = i, .share = shared[i]};
        it.cost = q->has_hits ? (q->hits > INT64_MAX ? INT64_MAX : (int64_t)q->hits) : request_cost;
        if (q->has_limit) {
            it.rpu = q->limit_requests_per_unit;
            it.unit = q->limit_unit;
            it.period = sl__rls_unit_seconds[it.unit] * NS_SEC;
            if (it.rpu && !(it.st = override_state(s, d, it.rpu, it.unit)))
                return *message = "too many distinct limit overrides", SL_ETOOMANY;
        } else if (!c) {
            continue; /* no rule: OK, nothing else said (upstream) */
        } else if (c->unlimited) {
            statuses[i].limit_remaining = UINT32_MAX;
            statuses[i].metadata = c->metadata;
            atomic_fetch_add_explicit(&c->st->lim.allowed, 1, memory_order_relaxed);
            continue;
        } else {
            it.cl = c;
            it.st = c->st;
            it.rpu = c->rpu;
            it.unit = c->unit;
            it.period = c->period;
            it.shadow = c->shadow;
            it.quota = c->quota || s->quota;
        }
        it.shadow |= s->shadow; /* the config's top-level shadow: a dry run of everything */
        it.quota &= !it.shadow; /* a shadow limit never refuses: no quota group */
        pl->items[pl->nitems++] = it;
    }
    return SL_OK;
}

/* The bytes the table keys of pl's items take at most (step 4). */
static size_t keys_need(const sl__rls_request *req, const plan *pl) {
    size_t need = 1;
    for (size_t k = 0; k < pl->nitems; k++) {
        const sl__rls_descriptor *q = &req->descriptors[pl->items[k].desc];
        for (size_t e = 0; e < q->nentries; e++)
            need += 21 + q->entries[e].value_len + (pl->items[k].cl ? 0 : q->entries[e].key_len);
    }
    return need;
}

/* An item's table key, appended to keys: a rule's table by the entries'
 * values (the rule fixes the keys), an override's by keys and values;
 * via (from match, for a share_threshold item) puts the pattern for the
 * value it matched, so that the pattern has one counter. */
static void put_key(str *keys, const item *it, const sl__rls_descriptor *q, const cnode **via) {
    for (size_t e = 0; e < q->nentries; e++) {
        const sl__rls_entry *x = &q->entries[e];
        if (!it->cl) put_varint(keys, x->key_len), sl__dstr_add(keys, x->key, x->key_len);
        if (it->share && via[e]) { /* share_threshold: one counter for the pattern */
            sl__dstr_add(keys, "*", 1);
            put_varint(keys, via[e]->vlen);
            sl__dstr_add(keys, via[e]->value, via[e]->vlen);
        } else {
            put_varint(keys, x->value_len);
            sl__dstr_add(keys, x->value, x->value_len);
        }
    }
}

/* Step 4: the engine items of pl's limits other than those of 0 requests
 * (refused here), their keys in keys. When an enforced limit of 0 (or every
 * quota group's) refuses the request, the others only look (cost 0).
 * SL_EINVAL past SL_CHECK_MAX items, SL_ENOMEM, with *message. */
static int table_items(const sl__domain_set *s, const cdomain *d, const sl__rls_request *req,
                       plan *pl, str *keys, const char **message) {
    const cnode *via[SL__RLS_MAX_ENTRIES];
    bool blocked = false;          /* an enforced limit of 0 refuses the request */
    size_t nquota = 0, quota0 = 0; /* quota groups, and those of a limit of 0 */
    uint8_t groups = 0;
    pl->nactive = 0;
    for (size_t k = 0; k < pl->nitems; k++) {
        item *it = &pl->items[k];
        nquota += it->quota;
        if (it->rpu == 0) {
            it->refused = true; /* a limit of 0 is always exhausted: a check (hits 0) too */
            blocked |= !it->shadow && !it->quota;
            quota0 += it->quota;
            continue;
        }
        if (pl->nactive == SL_CHECK_MAX)
            return *message = "too many rate-limited descriptors in one request (at most 16)",
                   SL_EINVAL;
        const sl__rls_descriptor *q = &req->descriptors[it->desc];
        if (it->share) match(s, d, q, via);
        size_t off = keys->len;
        put_key(keys, it, q, via);
        if (!sl__dset_table(it->st) || keys->failed) return *message = "out of memory", SL_ENOMEM;
        /* the key's bytes: an offset now, a pointer once the buffer stops moving */
        pl->active[pl->nactive] = (sl__decide_item){.limit = &it->st->lim,
                                                    .keylen = keys->len - off,
                                                    .cost = it->cost,
                                                    .shadow = it->shadow,
                                                    .any_group = it->quota ? ++groups : 0};
        pl->active[pl->nactive].key = (const void *)(uintptr_t)off;
        pl->map[pl->nactive++] = k;
    }
    blocked |= nquota && quota0 == nquota; /* every quota group is a limit of 0 */
    for (size_t a = 0; a < pl->nactive; a++) {
        pl->active[a].key = keys->p + (uintptr_t)pl->active[a].key;
        if (blocked) pl->active[a].cost = 0; /* refused anyway: the others are only looked at */
    }
    return SL_OK;
}

/* Step 5: the table limits as one engine call (all or nothing, shadow
 * limits as their own group), its dstate written; the limits of 0 are
 * counted now (their labels need the request). NULL when out of memory. */
static sl__decide_call *start_call(sl__domain_set *s, const cdomain *d, const sl__rls_request *req,
                                   int64_t now, plan *pl, const sl__rls_status *statuses,
                                   size_t user_bytes) {
    label_ctx lc = {.items = pl->items, .map = pl->map, .req = req};
    sl__decide_call *c =
        sl__decide_call_new_own(pl->active, pl->nactive, label_of, &lc, DSTATE_BYTES + user_bytes,
                                DSTATE_BYTES); /* written below, as far as it is read */
    if (!c) return NULL;
    for (size_t k = 0; k < pl->nitems; k++) {
        item *it = &pl->items[k];
        if (it->rpu || !it->st) continue;
        atomic_fetch_add_explicit(!it->refused ? &it->st->lim.allowed
                                  : it->shadow ? &it->st->lim.shadow_limited
                                               : &it->st->lim.limited,
                                  1, memory_order_relaxed);
        if (it->refused) note_refusal(d, it, req, now);
        it->counted = true;
    }
    dstate *ds = sl__decide_call_user(c);
    ds->set = s;
    sl__domain_set_retain(s);
    ds->domain = d;
    memcpy(ds->items, pl->items, pl->nitems * sizeof *pl->items);
    ds->nitems = pl->nitems;
    memcpy(ds->map, pl->map, pl->nactive * sizeof *pl->map);
    ds->nactive = pl->nactive;
    ds->now = now;
    ds->ndesc = req->ndescriptors;
    memcpy(ds->statuses, statuses, req->ndescriptors * sizeof *statuses);
    return c;
}

/* Steps 1-5 of a decision; the table limits go into an engine call. */
static int decide(sl__domain_set *s, const sl__rls_request *req, int64_t now,
                  sl__rls_status *statuses, int *overall, const char **message, size_t user_bytes,
                  sl__decide_call **call) {
    *call = NULL;
    *overall = SL__RLS_OK;
    *message = NULL;
    int rc = check_request(req, statuses, message);
    if (rc != SL_OK) return rc;
    const cdomain *d = sl__dset_find(s, req->domain, req->domain_len);
    if (!d) return SL_OK; /* unknown domain: nothing applies (upstream) */

    const climit *matched[SL__RLS_MAX_DESCRIPTORS];
    bool shared[SL__RLS_MAX_DESCRIPTORS];
    match_all(s, d, req, matched, shared);
    drop_replaced(req->ndescriptors, matched);
    plan pl;
    rc = collect_items(s, d, req, matched, shared, statuses, &pl, message);
    if (rc != SL_OK || !pl.nitems) return rc;

    char stack[KEY_STACK_BYTES];
    str keys = {.p = stack, .cap = sizeof stack};
    if (keys_need(req, &pl) > sizeof stack) keys = (str){0};
    rc = table_items(s, d, req, &pl, &keys, message);
    if (rc == SL_OK && pl.nactive) {
        *call = start_call(s, d, req, now, &pl, statuses, user_bytes);
        if (!*call) rc = SL_ENOMEM, *message = "out of memory";
    } else if (rc == SL_OK) {
        statuses_of(d, pl.items, pl.nitems, now, req, statuses, overall);
    }
    if (keys.p != stack) free(keys.p);
    return rc;
}

/* A refused descriptor the engine did not see (a limit of 0 requests): into
 * the domain's sketch, and for a shadow limit into the log. */
static void note_refusal(const cdomain *d, const item *it, const sl__rls_request *req,
                         int64_t now) {
    char buf[SL__TOPK_KEY_MAX];
    size_t n = descriptor_label(it, &req->descriptors[it->desc], buf);
    sl__topk_add(d->refused->top, buf, n, 1);
    if (it->shadow) sl__dset_log_shadow(&it->st->lim, buf, n, &it->dec, now);
}

/* 6. the statuses, in the descriptors' order (req: for the labels of
 * refusals the engine did not see; NULL when there are none) */
static void statuses_of(const cdomain *d, item *items, size_t nitems, int64_t now,
                        const sl__rls_request *req, sl__rls_status *statuses, int *overall) {
    /* over: an ordinary enforced limit is, or every quota-mode one (upstream) */
    size_t nquota = 0, quota_over = 0;
    bool over = false;
    for (size_t k = 0; k < nitems; k++) {
        item *it = &items[k];
        bool no = it->rpu == 0 || it->refused || !it->dec.allowed;
        nquota += it->quota;
        quota_over += it->quota && no;
        over |= no && !it->shadow && !it->quota;
    }
    over |= nquota && quota_over == nquota;
    for (size_t k = 0; k < nitems; k++) {
        item *it = &items[k];
        sl__rls_status *st = &statuses[it->desc];
        st->has_limit = true;
        st->requests_per_unit = it->rpu;
        st->unit = it->unit;
        st->name = it->cl ? it->cl->name : NULL;
        int64_t window_left = it->period - now % it->period;
        if (it->rpu == 0) {
            st->reset_seconds = sl__ceil_s(window_left);
        } else {
            it->refused |= !it->dec.allowed;
            st->limit_remaining = clamp_u32(it->dec.remaining);
            if (it->st->params.algorithm == SL_FIXED_WINDOW) /* upstream: the window's end */
                st->reset_seconds = sl__ceil_s(window_left);
            else if (it->refused && it->dec.retry_after > 0)
                st->reset_seconds = sl__ceil_s(it->dec.retry_after);
            else
                st->reset_seconds = sl__ceil_s(it->dec.reset_after);
        }
        if (it->refused && it->quota && !over) { /* a quota over, the request passes */
            st->limit_remaining = 0;
            st->quota_over = true;
        } else if (it->refused && !it->shadow) { /* upstream never says more than 0 here (an
                                                    Envoy would show X-RateLimit-Remaining > 0
                                                    on a 429) */
            st->code = SL__RLS_OVER_LIMIT;
            st->limit_remaining = 0;
            *overall = SL__RLS_OVER_LIMIT;
        }
        if (!it->refused && it->cl) st->metadata = it->cl->metadata;
        if (it->st && !it->counted) { /* a limit of 0: counted here */
            atomic_uint_fast64_t *c = !it->refused ? &it->st->lim.allowed
                                      : it->shadow ? &it->st->lim.shadow_limited
                                                   : &it->st->lim.limited;
            atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
            if (it->refused && req) note_refusal(d, it, req, now);
        }
    }
}

/* A check (hits_addend 0) of an exhausted limit: Envoy checks on the request
 * path with 0 and charges at the stream's end, so a check refuses when one
 * more hit would (the peer's rule). The engine allowed it (a cost of 0 always
 * passes), and counted it so when its group passed: counted as a refusal
 * here instead. The request's
 * other descriptors, if it has any, were charged (as the peer charges every
 * descriptor). */
static void refuse_check(item *it, bool shadow_group, bool counted_allowed) {
    it->refused = true;
    if (counted_allowed) atomic_fetch_sub_explicit(&it->st->lim.allowed, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(shadow_group ? &it->st->lim.shadow_limited : &it->st->lim.limited, 1,
                              memory_order_relaxed);
}

static void dstate_release(void *arg) {
    dstate *ds = arg;
    sl__domain_set_release(ds->set);
}

int sl__domain_prepare(sl__domain_set *s, const sl__rls_request *req, int64_t now,
                       sl__rls_status *statuses, int *overall, const char **message,
                       size_t user_bytes, sl__decide_call **call) {
    int rc = decide(s, req, now, statuses, overall, message, user_bytes, call);
    if (*call) sl__decide_call_on_free(*call, dstate_release, sl__decide_call_user(*call));
    return rc;
}

void *sl__domain_user(sl__decide_call *c) {
    return (char *)sl__decide_call_user(c) + DSTATE_BYTES;
}

int sl__domain_finish(sl__decide_call *c, sl__rls_status *statuses, size_t *n, int *overall,
                      const char **message) {
    dstate *ds = sl__decide_call_user(c);
    *overall = SL__RLS_OK;
    *message = NULL;
    *n = ds->ndesc;
    if (c->rc != SL_OK && c->rc != SL_ECOST) {
        *message = c->rc == SL_EKEY ? "a descriptor is longer than 65535 bytes" : "out of memory";
        return c->rc == SL_EKEY ? SL_EINVAL : SL_ENOMEM;
    }
    memcpy(statuses, ds->statuses, ds->ndesc * sizeof *statuses);
    /* which groups passed (the engine counted their items as allowed) */
    bool enforced_passed = c->refused == c->n, shadow_passed = enforced_passed;
    for (size_t a = 0; a < ds->nactive; a++)
        if (c->items[a].shadow_group && c->items[a].shadowed) shadow_passed = false;
    for (size_t a = 0; a < ds->nactive; a++) {
        item *it = &ds->items[ds->map[a]];
        const sl__decide_item *di = &c->items[a];
        it->counted = true;
        if (di->decided) {
            it->dec = di->decision;
            if (!di->decision.allowed || di->shadowed)
                it->refused = true;
            else if (it->cost == 0 && it->dec.remaining < 1)
                refuse_check(it, c->items[a].shadow_group,
                             c->items[a].shadow_group ? shadow_passed : enforced_passed);
        } else { /* not decided (the deny cache or a fail mode decided another) */
            it->dec = (sl_decision){.allowed = true, .limit = it->rpu, .remaining = it->rpu};
        }
        if (it->dec.retry_after < 0) it->dec.retry_after = 0; /* a cost that never passes */
    }
    statuses_of(ds->domain, ds->items, ds->nitems, ds->now, NULL, statuses, overall);
    return SL_OK;
}

/* ---- the answer's dynamic_metadata -------------------------------------------------------- */

/* Whether the object members o[0..n) already hold the key k (a JSON string). */
static bool has_key(const char *o, size_t n, const char *k, size_t klen) {
    const char *p = o + 1, *end = o + n;
    while (p < end && *p == '"') {
        size_t kl = sl__json_skip(p, end);
        if (!kl) return false;
        if (kl == klen && !memcmp(p, k, klen)) return true;
        p += kl + 1; /* the key and ':' */
        size_t vl = sl__json_skip(p, end);
        if (!vl) return false;
        p += vl + 1; /* the value and ',' */
    }
    return false;
}

size_t sl__domain_dynamic_metadata(const sl__rls_status *st, size_t n, char **out) {
    *out = NULL;
    bool any = false; /* most answers have nothing to say: no allocation then */
    for (size_t i = 0; i < n && !any; i++) any = st[i].quota_over || st[i].metadata;
    if (!any) return 0;
    str o = {0};
    sl__dstr_add(&o, "{", 1);
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (!st[i].quota_over) continue;
        char num[48];
        int k = snprintf(num, sizeof num, "%s%zu", first ? "\"quotaModeViolations\":[" : ",", i);
        sl__dstr_add(&o, num, (size_t)k);
        first = false;
    }
    if (!first) sl__dstr_add(&o, "]", 1);
    size_t members = 0; /* bounded: each is looked for among those before it */
    for (size_t i = 0; i < n; i++) {
        const char *m = st[i].metadata;
        if (!m) continue;
        const char *p = m + 1, *end = m + strlen(m);
        while (p < end && *p == '"' && members < SL__RLS_METADATA_MAX_KEYS) {
            size_t kl = sl__json_skip(p, end);
            size_t vl = kl ? sl__json_skip(p + kl + 1, end) : 0;
            if (!vl) break;
            if (!has_key(o.p, o.len, p, kl)) {
                if (!first) sl__dstr_add(&o, ",", 1);
                sl__dstr_add(&o, p, kl + 1 + vl);
                first = false;
                members++;
            }
            p += kl + 1 + vl + 1;
        }
    }
    sl__dstr_add(&o, "}", 1);
    if (first || o.failed) {
        free(o.p);
        *out = NULL;
        return 0;
    }
    *out = o.p;
    return o.len;
}
