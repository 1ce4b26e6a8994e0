/* policy.c: the running policy set (see policy.h). A set is an immutable
 * array of reference-counted policies; a reload builds a new array that
 * shares every unchanged policy (same name and limit; the shadow flag may
 * change, it is a view, not state) with the old one. Tier variants are
 * policies like the others, named "policy:tier", so they keep their state
 * across reloads, show in /metrics and /v1/top, and can be checked by name.
 * Each policy is a limit of the decision engine (policy/decide.h): its
 * table, fallback, fail mode and calendar stripes are bound here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/lease_set.h"
#include "policy/policy.h"
#include "policy/rules.h"
#include "store/retry.h"
#include "sluice/error.h"
#include "util/log.h"

#define TOPK_CAPACITY 64

struct sl__policy_set {
    atomic_int refs;
    size_t n;
    sl__policy **p;
    size_t max_memory;
    bool redis;                  /* store.type: redis */
    unsigned expected_instances; /* of the local fallback tables */
    sl__rules *rules;
    struct sl__lease_set *leases; /* the concurrency limits (lease_set.h) */
    struct shed_ref *shed;        /* load shedding (shedding:), or NULL */
};

/* The server's shedding capacity, shared by the sets of successive reloads
 * while shedding: (and the store settings it depends on) does not change:
 * its tokens carry over. */
typedef struct shed_ref {
    atomic_int refs;
    sl__decide_capacity cap;
    sl__shed_config cfg;
    bool redis;         /* store.type redis (a fleet capacity's store) */
    unsigned instances; /* store.redis.expected_instances (a fleet's local share) */
    sl__fail_mode on_failure;
} shed_ref;

static void shed_release(shed_ref *r) {
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1) return;
    sl_shed_destroy(r->cap.local);
    free(r);
}

static bool same_shed(const shed_ref *r, const sl__config *cfg) {
    const sl__shed_config *a = &r->cfg, *b = &cfg->shedding;
    bool redis = cfg->store_type == SL__STORE_REDIS;
    return a->rate.limit == b->rate.limit && a->rate.period == b->rate.period &&
           a->burst == b->burst && a->reserve_critical == b->reserve_critical &&
           a->reserve_default == b->reserve_default && strcmp(a->header, b->header) == 0 &&
           a->fleet == b->fleet && r->redis == redis &&
           (!a->fleet ||
            (r->instances == cfg->redis.expected_instances &&
             r->on_failure == sl__config_fail_mode(b->on_failure, cfg->redis.on_failure)));
}

/* A fleet capacity's local share (its fail mode local): rate and burst
 * divided among `instances` servers as a policy's fallback (at least 1
 * each), the reserves too (rounded down, and lowered until sheddable
 * traffic keeps a token). */
static sl_shed_options shed_share(sl_shed_options o, unsigned instances) {
    if (instances <= 1) return o;
    o.rate.limit = o.rate.limit / instances > 0 ? o.rate.limit / instances : 1;
    o.burst = o.burst / instances > 0 ? o.burst / instances : 1;
    o.reserve_critical /= instances;
    o.reserve_default /= instances;
    while (o.reserve_critical + o.reserve_default >= o.burst)
        if (o.reserve_default > 0)
            o.reserve_default--;
        else
            o.reserve_critical--;
    return o;
}

/* The capacity for cfg: prev's when unchanged, else a new one, full at now. */
static int shed_for(const sl__config *cfg, const sl__policy_set *prev, int64_t now,
                    shed_ref **out) {
    *out = NULL;
    if (!cfg->shedding.enabled) return 0;
    if (prev && prev->shed && same_shed(prev->shed, cfg)) {
        atomic_fetch_add(&prev->shed->refs, 1);
        *out = prev->shed;
        return 0;
    }
    shed_ref *r = calloc(1, sizeof *r);
    if (!r) return SL_ENOMEM;
    const sl__shed_config *c = &cfg->shedding;
    sl_shed_options o = {.rate = c->rate,
                         .burst = c->burst,
                         .reserve_critical = c->reserve_critical,
                         .reserve_default = c->reserve_default};
    r->cfg = *c;
    r->redis = cfg->store_type == SL__STORE_REDIS;
    r->instances = cfg->redis.expected_instances;
    r->on_failure = sl__config_fail_mode(c->on_failure, cfg->redis.on_failure);
    sl__decide_capacity *cap = &r->cap;
    cap->fleet = c->fleet && r->redis;
    cap->name = "shed!"; /* no policy name has a '!' */
    cap->params = (sl_params){.algorithm = SL_TOKEN_BUCKET, .rate = c->rate, .burst = c->burst};
    cap->floor[SL_PRIORITY_CRITICAL] = 0;
    cap->floor[SL_PRIORITY_DEFAULT] = c->reserve_critical;
    cap->floor[SL_PRIORITY_SHEDDABLE] = c->reserve_critical + c->reserve_default;
    cap->on_failure = r->on_failure;
    for (int i = 0; i < SL__FROM_COUNT; i++) atomic_init(&cap->from[i], 0);
    if (cap->fleet) o = shed_share(o, r->instances);
    int rc = sl_shed_create(&o, now < 0 ? 0 : now, &cap->local);
    if (rc != SL_OK) {
        free(r);
        return rc;
    }
    atomic_init(&r->refs, 1);
    *out = r;
    return 0;
}

sl__decide_capacity *sl__policy_set_shed(const sl__policy_set *s, const char **header) {
    if (!s || !s->shed) return NULL;
    if (header) *header = s->shed->cfg.header;
    return &s->shed->cap;
}

static void policy_release(sl__policy *p) {
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
    sl_table_destroy(p->lim.store.table);
    sl_table_destroy(p->lim.store.fallback);
    sl__topk_destroy(p->lim.top);
    sl__topk_destroy(p->lim.near);
    sl__store_limit_stripes_free(&p->lim.store);
    if (p->retry) {
        sl_retry_destroy(p->retry->mem);
        sl_retry_destroy(p->retry->fallback);
        free(p->retry);
    }
    free(p);
}

static bool same_retry(const struct sl__retry_budget_config *a,
                       const struct sl__retry_budget_config *b) {
    return a->window == b->window && a->ratio_ppm == b->ratio_ppm &&
           a->min_retries == b->min_retries && strcmp(a->header, b->header) == 0;
}

/* p's retry budget (cfg.retry): the memory store's, and for the Redis
 * store's local fail mode one at min_retries / expected_instances. */
static int retry_new(sl__policy *p, const sl__config *conf) {
    const struct sl__retry_budget_config *rc = &p->cfg.retry;
    if (!rc->window) return SL_OK;
    sl__retry_limit *r = calloc(1, sizeof *r);
    if (!r) return SL_ENOMEM;
    p->retry = r;
    r->name = p->cfg.name;
    r->opts = (sl_retry_options){.ratio_ppm = rc->ratio_ppm,
                                 .min_retries = rc->min_retries,
                                 .window = rc->window,
                                 .max_memory = conf->max_memory};
    r->on_failure = p->lim.store.on_failure;
    int e = sl_retry_create(&r->opts, &r->mem);
    if (e == SL_OK && conf->store_type == SL__STORE_REDIS && r->on_failure == SL__FAIL_LOCAL) {
        sl_retry_options f = r->opts;
        unsigned n = conf->redis.expected_instances > 1 ? conf->redis.expected_instances : 1;
        f.min_retries /= n;
        r->fallback_min = f.min_retries;
        e = sl_retry_create(&f, &r->fallback);
    }
    return e;
}

/* Same limit, so the state can be kept: algorithm, rate, burst, flags, and
 * the graphql: block (read by POST /v1/graphql from the running policy). */
static bool same_limit(const sl__policy_config *a, const sl__policy_config *b) {
    return a->params.algorithm == b->params.algorithm &&
           a->params.rate.limit == b->params.rate.limit &&
           a->params.rate.period == b->params.rate.period && a->params.burst == b->params.burst &&
           a->params.flags == b->params.flags && a->calendar == b->calendar &&
           a->graphql.configured == b->graphql.configured &&
           a->graphql.scheme == b->graphql.scheme && a->graphql.divisor == b->graphql.divisor &&
           a->graphql.default_page == b->graphql.default_page &&
           a->graphql.max_cost == b->graphql.max_cost && a->ramp.duration == b->ramp.duration &&
           a->ramp.from == b->ramp.from && same_retry(&a->retry, &b->retry);
}

/* The local fallback of a limit shared by `instances` servers: its rate
 * and size divided among them (at least 1 each). */
static sl_params fallback_params(sl_params p, unsigned instances) {
    if (instances <= 1) return p;
    p.rate.limit = p.rate.limit / instances > 0 ? p.rate.limit / instances : 1;
    if (p.burst > 0) p.burst = p.burst / instances > 0 ? p.burst / instances : 1;
    return p;
}

static void quota_at(const sl__policy *p, int64_t now, uint64_t *q, uint64_t *w);

/* Bytes 0x20-0x7e but '"' and '\\' only (sl__policy.text_plain). */
static bool plain_text(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
    }
    return true;
}

static sl__policy *policy_new(const sl__policy_config *cfg, size_t base_len, bool shadow,
                              const sl__config *conf, int64_t now, char *err, size_t errlen) {
    size_t max_memory = conf->max_memory;
    sl__policy *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->cfg = *cfg;
    p->base_len = base_len;
    sl__policy_rate_format(&p->cfg, p->rate_text, sizeof p->rate_text);
    p->name_len = strlen(p->cfg.name);
    p->rate_len = strlen(p->rate_text);
    p->text_plain = plain_text(p->cfg.name, p->name_len) && plain_text(p->rate_text, p->rate_len);
    quota_at(p, now, &p->quota_q, &p->quota_w);
    p->quota_known = true;
    if (p->cfg.params.flags & SL_START_EMPTY) p->cfg.params.origin = now;
    atomic_init(&p->refs, 1);
    sl__decide_limit_init(&p->lim, shadow);
    sl__store_limit *l = &p->lim.store;
    l->name = p->cfg.name;
    l->params = &p->cfg.params;
    l->calendar_month = p->cfg.calendar == SL__CALENDAR_MONTH;
    int rc = SL_OK;
    if (p->cfg.ramp.duration) { /* the state in units, charged cost / factor (sluice/ramp.h) */
        rc = sl_ramp_params(&p->cfg.params, &p->unit);
        l->params = &p->unit;
        p->lim.ramp = &p->cfg.ramp;
    }
    sl_table_options o = {.params = *l->params, .max_memory = max_memory};
    sl_table *t = NULL, *fb = NULL;
    if (rc == SL_OK) rc = sl_table_create(&o, &t);
    l->table = t;
    if (rc == SL_OK && sl__topk_create(TOPK_CAPACITY, &p->lim.top) != 0) rc = SL_ENOMEM;
    if (rc == SL_OK && sl__topk_create(TOPK_CAPACITY, &p->lim.near) != 0) rc = SL_ENOMEM;
    l->on_failure = sl__config_fail_mode(cfg->on_failure, conf->redis.on_failure);
    if (rc == SL_OK && conf->store_type == SL__STORE_REDIS && l->on_failure == SL__FAIL_LOCAL) {
        sl_table_options f = {.params =
                                  fallback_params(p->cfg.params, conf->redis.expected_instances),
                              .max_memory = max_memory};
        if (p->lim.ramp) rc = sl_ramp_params(&f.params, &f.params); /* whole requests, in units */
        if (rc == SL_OK) rc = sl_table_create(&f, &fb);
        if (p->lim.ramp) p->lim.ramp_cap = sl_params_limit(&f.params); /* one fits a share */
        l->fallback = fb;
    }
    if (rc == SL_OK && cfg->calendar != SL__CALENDAR_NONE) rc = sl__store_limit_stripes(l);
    if (rc == SL_OK) rc = retry_new(p, conf);
    if (rc != SL_OK) {
        snprintf(err, errlen, "policy %s: %s", cfg->name, sl_strerror(rc));
        p->refs = 1;
        policy_release(p);
        return NULL;
    }
    return p;
}

/* Adds the policy for pc to s: the one of prev with the same name and limit
 * (keeping its state), or a new one. */
static int add_policy(sl__policy_set *s, const sl__config *cfg, sl__policy_set *prev,
                      const sl__policy_config *pc, size_t base_len, int64_t now, char *err,
                      size_t errlen) {
    bool shadow = pc->shadow || cfg->shadow;
    sl__policy *old = prev ? sl__policy_find(prev, pc->name, strlen(pc->name)) : NULL;
    bool redis = cfg->store_type == SL__STORE_REDIS;
    if (old && same_limit(&old->cfg, pc) && prev->max_memory == cfg->max_memory &&
        prev->redis == redis && prev->expected_instances == cfg->redis.expected_instances &&
        old->lim.store.on_failure == sl__config_fail_mode(pc->on_failure, cfg->redis.on_failure)) {
        /* Keep the state; only the shadow flag may change. */
        atomic_fetch_add(&old->refs, 1);
        atomic_store(&old->lim.shadow, shadow);
        s->p[s->n++] = old;
        return 0;
    }
    /* whether the store can decide pc exactly was checked with the config
       (sl__config_check_store): by the loader, and again by a reload */
    sl__policy *p = policy_new(pc, base_len, shadow, cfg, now, err, errlen);
    if (!p) return SL_EINVAL;
    s->p[s->n++] = p;
    return 0;
}

int sl__policy_set_create(const sl__config *cfg, sl__policy_set *prev, int64_t now,
                          sl__policy_set **out, char *err, size_t errlen) {
    size_t total = cfg->npolicies;
    for (size_t t = 0; t < cfg->ntiers; t++) total += cfg->tiers[t].noverrides;
    sl__policy_set *s = calloc(1, sizeof *s);
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
    if (!s || !(s->p = calloc(total ? total : 1, sizeof *s->p))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return SL_ENOMEM;
    }
    atomic_init(&s->refs, 1);
    s->max_memory = cfg->max_memory;
    s->redis = cfg->store_type == SL__STORE_REDIS;
    s->expected_instances = cfg->redis.expected_instances;
    int rc = SL_EINVAL; /* what fail returns unless a call says more */
    for (size_t i = 0; i < cfg->npolicies; i++) {
        const sl__policy_config *pc = &cfg->policies[i];
        if ((rc = add_policy(s, cfg, prev, pc, strlen(pc->name), now, err, errlen)) != 0) goto fail;
    }
    /* Tier variants: the base policy with the tier's rate, burst or limit. */
    for (size_t t = 0; t < cfg->ntiers; t++) {
        const sl__tier_config *tc = &cfg->tiers[t];
        for (size_t j = 0; j < tc->noverrides; j++) {
            const sl__tier_override *o = &tc->overrides[j];
            sl__policy_config v;
            if (sl__config_tier_variant(cfg, tc, o, &v) != 0) {
                snprintf(err, errlen, "tier %s: no policy %s, or the name %s:%s is too long",
                         tc->name, o->policy, o->policy, tc->name);
                rc = SL_EINVAL;
                goto fail;
            }
            if ((rc = add_policy(s, cfg, prev, &v, strlen(o->policy), now, err, errlen)) != 0)
                goto fail;
        }
    }
    if ((rc = sl__rules_compile(cfg, s, &s->rules, err, errlen)) != 0) goto fail;
    rc = sl__lease_set_create(cfg, prev ? prev->leases : NULL, now, &s->leases, err, errlen);
    if (rc != 0) goto fail;
    rc = shed_for(cfg, prev, now, &s->shed);
    if (rc != 0) {
        snprintf(err, errlen, "shedding: %s", sl_strerror(rc));
        goto fail;
    }
    *out = s;
    return 0;
fail:
    sl__policy_set_release(s);
    return rc < 0 ? rc : SL_EINVAL;
}

void sl__policy_set_retain(sl__policy_set *s) {
    atomic_fetch_add(&s->refs, 1);
}

void sl__policy_set_release(sl__policy_set *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    sl__rules_free(s->rules);
    sl__lease_set_free(s->leases);
    shed_release(s->shed);
    for (size_t i = 0; i < s->n; i++) policy_release(s->p[i]);
    free(s->p);
    free(s);
}

const struct sl__lease_set *sl__policy_set_leases(const sl__policy_set *s) {
    return s->leases;
}

size_t sl__policy_set_count(const sl__policy_set *s) {
    return s->n;
}

size_t sl__policy_set_ramped(const sl__policy_set *s) {
    size_t n = 0;
    for (size_t i = 0; s && i < s->n; i++) n += s->p[i]->lim.ramp != NULL;
    return n;
}

sl__policy *sl__policy_set_at(const sl__policy_set *s, size_t i) {
    return i < s->n ? s->p[i] : NULL;
}

sl__policy *sl__policy_find(const sl__policy_set *s, const char *name, size_t len) {
    if (!s || len > SL__POLICY_NAME_MAX) return NULL;
    for (size_t i = 0; i < s->n; i++) {
        const char *n = s->p[i]->cfg.name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) return s->p[i];
    }
    return NULL;
}

const sl__rules *sl__policy_set_rules(const sl__policy_set *s) {
    return s->rules;
}

/* ---- RateLimit-Policy numbers ------------------------------------------------- */

#define SF_INT_MAX INT64_C(999999999999999)

static void quota_at(const sl__policy *p, int64_t now, uint64_t *q, uint64_t *w) {
    const sl_params *pp = &p->cfg.params;
    int64_t limit = pp->rate.limit > 0 ? pp->rate.limit : 1;
    int64_t period = pp->rate.period > 0 ? pp->rate.period : 1;
    if (p->cfg.calendar == SL__CALENDAR_MONTH) {
        int64_t index, start, length;
        sl__calendar_month(now, &index, &start, &length);
        period = length;
    }
    unsigned __int128 num, den;
    int64_t qv;
    if (sl_algorithm_is_bucket(pp->algorithm)) {
        qv = pp->burst;
        num = (unsigned __int128)(uint64_t)(pp->burst > 0 ? pp->burst : 0) * (uint64_t)period;
        den = (unsigned __int128)(uint64_t)limit * (uint64_t)SL_NS_PER_SEC;
    } else {
        qv = limit;
        num = (uint64_t)period;
        den = (uint64_t)SL_NS_PER_SEC;
    }
    *q = qv < 0 ? 0 : qv > SF_INT_MAX ? (uint64_t)SF_INT_MAX : (uint64_t)qv;
    unsigned __int128 secs = num / den + (num % den != 0);
    if (secs < 1) secs = 1;
    *w = secs > (unsigned __int128)SF_INT_MAX ? (uint64_t)SF_INT_MAX : (uint64_t)secs;
}

void sl__policy_quota(const sl__policy *p, int64_t now, uint64_t *q, uint64_t *w) {
    if (p->cfg.calendar == SL__CALENDAR_MONTH || !p->quota_known) {
        quota_at(p, now, q, w);
        return;
    }
    *q = p->quota_q; /* the same at any time: quota_at at load */
    *w = p->quota_w;
}

size_t sl__policy_rate_format(const sl__policy_config *cfg, char *buf, size_t size) {
    int n = cfg->calendar == SL__CALENDAR_MONTH
                ? snprintf(buf, size, "%lld/month", (long long)cfg->params.rate.limit)
                : sl_rate_format(cfg->params.rate, buf, size);
    if (n < 0) n = 0;
    return size && (size_t)n >= size ? size - 1 : (size_t)n;
}
