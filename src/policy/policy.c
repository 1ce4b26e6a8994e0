/* policy.c: the running policy set (see policy.h). A set is an immutable
 * array of reference-counted policies; a reload builds a new array that
 * shares every unchanged policy (same name and limit; the shadow flag may
 * change, it is a view, not state) with the old one. Tier variants are
 * policies like the others, named "policy:tier", so they keep their state
 * across reloads, show in /metrics and /v1/top, and can be checked by name.
 * The layered check (sl__policy_check_all) is sl_table_check_all plus
 * shadow mode, calendar quotas, counters and the rejected-keys sketch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "policy/policy.h"
#include "policy/rules.h"
#include "sluice/error.h"
#include "util/log.h"

#define TOPK_CAPACITY 64
#define NS_DAY        (86400 * SL_NS_PER_SEC)
#define MONTH_PERIOD  (31 * NS_DAY) /* the calendar clock's month (config.c makes the tables) */
#define STRIPE_SEED   UINT64_C(0x736c7569636571)
#define NONE          SIZE_MAX

struct sl_policy_set {
    atomic_int refs;
    size_t n;
    sl_policy **p;
    size_t max_memory;
    bool redis;                  /* store.type: redis */
    unsigned expected_instances; /* of the local fallback tables */
    sl_rules *rules;
};

static void policy_release(sl_policy *p) {
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
    sl_table_destroy(p->table);
    sl_table_destroy(p->fallback);
    sl__topk_destroy(p->top);
    if (p->stripes) {
        for (int i = 0; i < SL_POLICY_STRIPES; i++) pthread_mutex_destroy(&p->stripes[i]);
        free(p->stripes);
    }
    free(p);
}

/* Same limit, so the state can be kept: algorithm, rate, burst, flags. */
static bool same_limit(const sl_policy_config *a, const sl_policy_config *b) {
    return a->params.algorithm == b->params.algorithm &&
           a->params.rate.limit == b->params.rate.limit &&
           a->params.rate.period == b->params.rate.period && a->params.burst == b->params.burst &&
           a->params.flags == b->params.flags && a->calendar == b->calendar;
}

/* The local fallback of a limit shared by `instances` servers: its rate
 * and size divided among them (at least 1 each). */
static sl_params fallback_params(sl_params p, unsigned instances) {
    if (instances <= 1) return p;
    p.rate.limit = p.rate.limit / instances > 0 ? p.rate.limit / instances : 1;
    if (p.burst > 0) p.burst = p.burst / instances > 0 ? p.burst / instances : 1;
    return p;
}

/* The policy's own on_failure, else store.redis.on_failure. */
static sl_fail_mode fail_mode(const sl_policy_config *pc, const sl_config *conf) {
    if (strcmp(pc->on_failure, "open") == 0) return SL_FAIL_OPEN;
    if (strcmp(pc->on_failure, "closed") == 0) return SL_FAIL_CLOSED;
    if (strcmp(pc->on_failure, "local") == 0) return SL_FAIL_LOCAL;
    return conf->redis.on_failure;
}

static sl_policy *policy_new(const sl_policy_config *cfg, size_t base_len, bool shadow,
                             const sl_config *conf, int64_t now, char *err, size_t errlen) {
    size_t max_memory = conf->max_memory;
    sl_policy *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->cfg = *cfg;
    p->base_len = base_len;
    sl__policy_rate_format(&p->cfg, p->rate_text, sizeof p->rate_text);
    if (p->cfg.params.flags & SL_START_EMPTY) p->cfg.params.origin = now;
    atomic_init(&p->shadow, shadow);
    atomic_init(&p->refs, 1);
    atomic_init(&p->allowed, 0);
    atomic_init(&p->limited, 0);
    atomic_init(&p->shadow_limited, 0);
    sl_table_options o = {.params = p->cfg.params, .max_memory = max_memory};
    int rc = sl_table_create(&o, &p->table);
    if (rc == SL_OK && sl__topk_create(TOPK_CAPACITY, &p->top) != 0) rc = SL_ENOMEM;
    p->on_failure = fail_mode(cfg, conf);
    if (rc == SL_OK && strcmp(conf->store_type, "redis") == 0 && p->on_failure == SL_FAIL_LOCAL) {
        sl_table_options f = {.params =
                                  fallback_params(p->cfg.params, conf->redis.expected_instances),
                              .max_memory = max_memory};
        rc = sl_table_create(&f, &p->fallback);
    }
    if (rc == SL_OK && cfg->calendar != SL_CALENDAR_NONE) {
        p->stripes = malloc(SL_POLICY_STRIPES * sizeof *p->stripes);
        if (!p->stripes) rc = SL_ENOMEM;
        for (int i = 0; p->stripes && i < SL_POLICY_STRIPES; i++)
            pthread_mutex_init(&p->stripes[i], NULL);
    }
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
static int add_policy(sl_policy_set *s, const sl_config *cfg, sl_policy_set *prev,
                      const sl_policy_config *pc, size_t base_len, int64_t now, char *err,
                      size_t errlen) {
    bool shadow = pc->shadow || cfg->shadow;
    sl_policy *old = prev ? sl__policy_find(prev, pc->name, strlen(pc->name)) : NULL;
    bool redis = strcmp(cfg->store_type, "redis") == 0;
    if (old && same_limit(&old->cfg, pc) && prev->max_memory == cfg->max_memory &&
        prev->redis == redis && prev->expected_instances == cfg->redis.expected_instances &&
        old->on_failure == fail_mode(pc, cfg)) {
        /* Keep the state; only the shadow flag may change. */
        atomic_fetch_add(&old->refs, 1);
        atomic_store(&old->shadow, shadow);
        s->p[s->n++] = old;
        return 0;
    }
    /* whether the store can decide pc exactly was checked with the config
       (sl__config_check_store): by the loader, and again by a reload */
    sl_policy *p = policy_new(pc, base_len, shadow, cfg, now, err, errlen);
    if (!p) return -1;
    s->p[s->n++] = p;
    return 0;
}

int sl__policy_set_create(const sl_config *cfg, sl_policy_set *prev, int64_t now,
                          sl_policy_set **out, char *err, size_t errlen) {
    size_t total = cfg->npolicies;
    for (size_t t = 0; t < cfg->ntiers; t++) total += cfg->tiers[t].noverrides;
    sl_policy_set *s = calloc(1, sizeof *s);
    if (!s || !(s->p = calloc(total ? total : 1, sizeof *s->p))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    atomic_init(&s->refs, 1);
    s->max_memory = cfg->max_memory;
    s->redis = strcmp(cfg->store_type, "redis") == 0;
    s->expected_instances = cfg->redis.expected_instances;
    for (size_t i = 0; i < cfg->npolicies; i++) {
        const sl_policy_config *pc = &cfg->policies[i];
        if (add_policy(s, cfg, prev, pc, strlen(pc->name), now, err, errlen) != 0) goto fail;
    }
    /* Tier variants: the base policy with the tier's rate, burst or limit. */
    for (size_t t = 0; t < cfg->ntiers; t++) {
        const sl_tier_config *tc = &cfg->tiers[t];
        for (size_t j = 0; j < tc->noverrides; j++) {
            const sl_tier_override *o = &tc->overrides[j];
            sl_policy_config v;
            if (sl__config_tier_variant(cfg, tc, o, &v) != 0) {
                snprintf(err, errlen, "tier %s: no policy %s, or the name %s:%s is too long",
                         tc->name, o->policy, o->policy, tc->name);
                goto fail;
            }
            if (add_policy(s, cfg, prev, &v, strlen(o->policy), now, err, errlen) != 0) goto fail;
        }
    }
    if (sl__rules_compile(cfg, s, &s->rules, err, errlen) != 0) goto fail;
    *out = s;
    return 0;
fail:
    sl__policy_set_release(s);
    return -1;
}

void sl__policy_set_retain(sl_policy_set *s) {
    atomic_fetch_add(&s->refs, 1);
}

void sl__policy_set_release(sl_policy_set *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    sl__rules_free(s->rules);
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

const sl_rules *sl__policy_set_rules(const sl_policy_set *s) {
    return s->rules;
}

/* ---- calendar months -------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (H. Hinnant's
 * algorithms, integer only). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void sl__calendar_month(int64_t now, int64_t *index, int64_t *start, int64_t *length) {
    int64_t days = now >= 0 ? now / NS_DAY : -1 - (-(now + 1) / NS_DAY); /* floor */
    int64_t y;
    unsigned m;
    civil_from_days(days, &y, &m);
    int64_t first = days_from_civil(y, m, 1);
    int64_t next = m == 12 ? days_from_civil(y + 1, 1, 1) : days_from_civil(y, m + 1, 1);
    *index = (y - 1970) * 12 + (int64_t)m - 1;
    *start = first * NS_DAY;
    *length = (next - first) * NS_DAY;
}

/* The calendar clock at `now`, and the days it skips at the end of this
 * month (31 days minus its length). */
static int64_t calendar_now(int64_t now, int64_t *slack) {
    int64_t index, start, length;
    sl__calendar_month(now, &index, &start, &length);
    *slack = MONTH_PERIOD - length;
    if (index < 0) return -1; /* before 1970: refused by the table as SL_EINVAL */
    return index * MONTH_PERIOD + (now - start);
}

/* Turns durations on the calendar clock into real ones: the end of a
 * window is `slack` nearer in real time. */
static void calendar_fix(sl_decision *d, int64_t slack) {
    if (d->retry_after > slack) d->retry_after -= slack;
    if (d->reset_after > slack) d->reset_after -= slack;
}

static pthread_mutex_t *stripe(const sl_policy *p, const void *key, size_t keylen) {
    return &p->stripes[sl__hash(key, keylen, STRIPE_SEED) & (SL_POLICY_STRIPES - 1)];
}

/* sl_table_check with the calendar clock for calendar quotas. */
static int table_check(sl_policy *p, const void *key, size_t keylen, int64_t cost, int64_t now,
                       sl_decision *d) {
    if (!p->stripes) return sl_table_check(p->table, key, keylen, cost, now, d);
    pthread_mutex_t *m = stripe(p, key, keylen);
    int64_t slack;
    int64_t cnow = calendar_now(now, &slack);
    pthread_mutex_lock(m);
    int rc = sl_table_check(p->table, key, keylen, cost, cnow, d);
    pthread_mutex_unlock(m);
    calendar_fix(d, slack);
    return rc;
}

/* ---- single and layered checks ------------------------------------------------ */

/* Shadow mode says in the log what it would have refused: the key as in
 * /v1/top (a rule's label, never an API key in clear), printable ASCII, at
 * most SL_TOPK_KEY_MAX bytes, through sl__log_limited's budget. */
static void log_shadow(const sl_policy *p, const char *key, size_t keylen, const sl_decision *d,
                       int64_t now) {
    char text[SL_TOPK_KEY_MAX + 1];
    size_t n = keylen < SL_TOPK_KEY_MAX ? keylen : SL_TOPK_KEY_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        text[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    text[n] = '\0';
    int64_t ms = d->retry_after < 0 ? -1 : (d->retry_after + SL_NS_PER_MS - 1) / SL_NS_PER_MS;
    if (ms < 0)
        sl__log_limited(now, SL_LOG_INFO,
                        "shadow: policy %s would have refused %s (its cost can never pass)",
                        p->cfg.name, text);
    else
        sl__log_limited(now, SL_LOG_INFO,
                        "shadow: policy %s would have refused %s (retry after %lld ms)",
                        p->cfg.name, text, (long long)ms);
}

static void count_refusal(sl_policy *p, const void *key, size_t keylen, const char *label,
                          size_t label_len, bool shadow, const sl_decision *d, int64_t now) {
    if (label)
        sl__topk_add(p->top, label, label_len, 1);
    else
        sl__topk_add(p->top, key, keylen, 1);
    if (shadow) {
        atomic_fetch_add_explicit(&p->shadow_limited, 1, memory_order_relaxed);
        log_shadow(p, label ? label : key, label ? label_len : keylen, d, now);
    } else {
        atomic_fetch_add_explicit(&p->limited, 1, memory_order_relaxed);
    }
}

/* Batched mode: a key that owes the fleet is refused, its table untouched
 * (looked at for the other fields). */
static bool owes(sl_policy *p, const void *key, size_t keylen, int64_t cost, int64_t now,
                 sl_decision *d) {
    if (!p->owes || cost <= 0 || !p->owes(p->charged_ctx, p->cfg.name, key, keylen)) return false;
    if (table_check(p, key, keylen, 0, now, d) != SL_OK) *d = (sl_decision){0};
    d->allowed = false;
    d->remaining = 0;
    if (d->retry_after < p->owes_retry) d->retry_after = p->owes_retry;
    if (d->reset_after < d->retry_after) d->reset_after = d->retry_after;
    return true;
}

int sl__policy_check(sl_policy *p, const char *key, size_t keylen, int64_t cost, int64_t now,
                     sl_decision *d, bool *shadowed) {
    *shadowed = false;
    int rc = owes(p, key, keylen, cost, now, d) ? SL_OK : table_check(p, key, keylen, cost, now, d);
    if (rc != SL_OK) return rc;
    if (d->allowed) {
        atomic_fetch_add_explicit(&p->allowed, 1, memory_order_relaxed);
        if (p->charged && cost > 0) p->charged(p->charged_ctx, p->cfg.name, key, keylen, cost);
        return SL_OK;
    }
    bool shadow = atomic_load_explicit(&p->shadow, memory_order_relaxed);
    count_refusal(p, key, keylen, NULL, 0, shadow, d, now);
    if (shadow) {
        *shadowed = true;
        d->allowed = true;
        d->retry_after = 0;
    }
    return SL_OK;
}

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (pthread_mutex_t *const *)a;
    uintptr_t y = (uintptr_t) * (pthread_mutex_t *const *)b;
    return x < y ? -1 : x > y;
}

static bool same_key(const sl_policy_item *a, const sl_policy_item *b) {
    return a->policy == b->policy && a->keylen == b->keylen &&
           memcmp(a->key, b->key, a->keylen) == 0;
}

static void fill(sl_check *c, const sl_policy_item *it, int64_t cost) {
    *c = (sl_check){.table = it->policy->table, .key = it->key, .keylen = it->keylen, .cost = cost};
}

/* Copies sl_table_check_all's decisions. When the group was refused, an
 * allowed decision describes the state after a charge that did not happen:
 * its remaining gets the cost back (exact: remaining is the floor of what is
 * left, and costs are whole), so that it says what the limit has now. */
static void copy_decisions(sl_policy_item *items, const size_t *idx, const sl_check *checks,
                           size_t n, bool refused) {
    for (size_t k = 0; k < n; k++) {
        sl_policy_item *it = &items[idx[k]];
        it->decision = checks[k].decision;
        it->decided = true;
        if (refused && it->decision.allowed && it->decision.remaining <= INT64_MAX - it->cost)
            it->decision.remaining += it->cost;
    }
}

/* Decides the items idx[0..n) as one all-or-nothing group. *refused gets the
 * item index of the refusal, or NONE. With calendar quotas in the group, their
 * stripes are locked first (in address order), the quotas are looked at
 * (cost 0), the other limits decided and charged, and only then the quotas
 * charged: holding the stripes, nobody else can have used them up. */
static int check_group(sl_policy_item *items, const size_t *idx, size_t n, int64_t now,
                       size_t *refused) {
    sl_check checks[SL_CHECK_MAX];
    size_t plain[SL_CHECK_MAX], cal[SL_CHECK_MAX], np = 0, nc = 0;
    *refused = NONE;
    for (size_t k = 0; k < n; k++) {
        if (items[idx[k]].policy->stripes)
            cal[nc++] = idx[k];
        else
            plain[np++] = idx[k];
    }
    size_t r = 0;
    int rc;
    if (nc == 0) {
        for (size_t k = 0; k < np; k++) fill(&checks[k], &items[plain[k]], items[plain[k]].cost);
        rc = sl_table_check_all(checks, np, now, &r);
        copy_decisions(items, plain, checks, np, r < np);
        if (r < np) *refused = plain[r];
        return rc;
    }

    pthread_mutex_t *locks[SL_CHECK_MAX];
    size_t nl = 0;
    for (size_t k = 0; k < nc; k++) {
        const sl_policy_item *it = &items[cal[k]];
        locks[nl++] = stripe(it->policy, it->key, it->keylen);
    }
    qsort(locks, nl, sizeof *locks, cmp_ptr);
    size_t u = 0;
    for (size_t k = 0; k < nl; k++)
        if (k == 0 || locks[k] != locks[u - 1]) locks[u++] = locks[k];
    nl = u;
    for (size_t k = 0; k < nl; k++) pthread_mutex_lock(locks[k]);

    int64_t slack;
    int64_t cnow = calendar_now(now, &slack);
    rc = SL_OK;
    /* 1. the quotas, looked at (the same key twice adds up its costs) */
    for (size_t k = 0; k < nc && rc == SL_OK; k++) {
        sl_policy_item *it = &items[cal[k]];
        sl_decision d;
        rc = sl_table_check(it->policy->table, it->key, it->keylen, 0, cnow, &d);
        if (rc != SL_OK) {
            *refused = cal[k];
            break;
        }
        int64_t want = it->cost;
        for (size_t j = 0; j < k; j++)
            if (same_key(&items[cal[j]], it)) want += items[cal[j]].cost;
        if (it->cost > d.limit) {
            d.allowed = false;
            d.retry_after = -1;
            rc = SL_ECOST;
            *refused = cal[k];
        } else if (want > d.remaining) {
            d.allowed = false;
            d.retry_after = d.reset_after; /* the window's end: then it is empty */
            if (*refused == NONE) *refused = cal[k];
        }
        calendar_fix(&d, slack);
        it->decision = d;
        it->decided = true;
    }
    if (rc != SL_OK || *refused != NONE) {
        /* the other limits' state, nothing charged */
        for (size_t k = 0; k < np; k++) {
            sl_policy_item *it = &items[plain[k]];
            it->decided = sl_table_check(it->policy->table, it->key, it->keylen, 0, now,
                                         &it->decision) == SL_OK;
        }
        goto unlock;
    }
    /* 2. the other limits, decided and charged together */
    for (size_t k = 0; k < np; k++) fill(&checks[k], &items[plain[k]], items[plain[k]].cost);
    rc = sl_table_check_all(checks, np, now, &r);
    copy_decisions(items, plain, checks, np, r < np);
    if (r < np) *refused = plain[r];
    if (rc != SL_OK || *refused != NONE) goto unlock;
    /* 3. the quotas, charged: they pass, their stripes were held throughout */
    for (size_t k = 0; k < nc; k++) fill(&checks[k], &items[cal[k]], items[cal[k]].cost);
    rc = sl_table_check_all(checks, nc, cnow, &r);
    for (size_t k = 0; k < nc; k++) {
        calendar_fix(&checks[k].decision, slack);
        items[cal[k]].decision = checks[k].decision;
    }
    if (r < nc) *refused = cal[r];
unlock:
    for (size_t k = nl; k-- > 0;) pthread_mutex_unlock(locks[k]);
    return rc;
}

static void count(sl_policy_item *items, const size_t *idx, size_t n, sl_policy_label_fn label,
                  void *ctx, bool shadow, int64_t now) {
    for (size_t k = 0; k < n; k++) {
        sl_policy_item *it = &items[idx[k]];
        if (!it->decided) continue;
        if (it->decision.allowed) {
            atomic_fetch_add_explicit(&it->policy->allowed, 1, memory_order_relaxed);
            continue;
        }
        char buf[SL_TOPK_KEY_MAX];
        size_t len = label ? label(ctx, idx[k], buf, sizeof buf) : 0;
        count_refusal(it->policy, it->key, it->keylen, label ? buf : NULL, len, shadow,
                      &it->decision, now);
        if (shadow) {
            it->shadowed = true;
            it->decision.allowed = true;
            it->decision.retry_after = 0;
        }
    }
}

/* Counts one group's outcome: when it refused, only the limits that said
 * no (as limited, or as shadow_limited for the shadow group; the others were
 * not charged and did not decide); else every limit, as allowed. */
static void count_group(sl_policy_item *items, const size_t *idx, size_t n, bool refused,
                        sl_policy_label_fn label, void *ctx, bool shadow, int64_t now) {
    if (!refused) {
        count(items, idx, n, label, ctx, false, now);
        return;
    }
    size_t no[SL_CHECK_MAX], nn = 0;
    for (size_t k = 0; k < n; k++)
        if (items[idx[k]].decided && !items[idx[k]].decision.allowed) no[nn++] = idx[k];
    count(items, no, nn, label, ctx, shadow, now);
}

/* Batched mode: tells the observers what a passed request charged. */
static void report_charges(const sl_policy_item *items, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const sl_policy_item *it = &items[i];
        if (it->decided && it->decision.allowed && !it->shadowed && it->cost > 0 &&
            it->policy->charged)
            it->policy->charged(it->policy->charged_ctx, it->policy->cfg.name, it->key, it->keylen,
                                it->cost);
    }
}

int sl__policy_check_all(sl_policy_item *items, size_t n, int64_t now, sl_policy_label_fn label,
                         void *ctx, size_t *refused) {
    *refused = n;
    if (n > SL_CHECK_MAX) return SL_ETOOMANY;
    size_t enf[SL_CHECK_MAX], sha[SL_CHECK_MAX], ne = 0, ns = 0;
    for (size_t i = 0; i < n; i++) {
        items[i].decided = items[i].shadowed = false;
        bool sh =
            items[i].shadow || atomic_load_explicit(&items[i].policy->shadow, memory_order_relaxed);
        if (sh)
            sha[ns++] = i;
        else
            enf[ne++] = i;
    }
    size_t r;
    int rc = SL_OK;
    /* batched mode: a limit whose key owes the fleet refuses, nothing charged */
    for (size_t k = 0; k < ne; k++) {
        sl_policy_item *it = &items[enf[k]];
        if (!owes(it->policy, it->key, it->keylen, it->cost, now, &it->decision)) continue;
        it->decided = true;
        for (size_t j = 0; j < n; j++)
            if (j != enf[k])
                items[j].decided = table_check(items[j].policy, items[j].key, items[j].keylen, 0,
                                               now, &items[j].decision) == SL_OK;
        count(items, &enf[k], 1, label, ctx, false, now);
        *refused = enf[k];
        return SL_OK;
    }
    rc = check_group(items, enf, ne, now, &r);
    if (rc != SL_OK) {
        *refused = r == NONE ? n : r;
        return rc;
    }
    if (r != NONE) {
        count_group(items, enf, ne, true, label, ctx, false, now);
        for (size_t k = 0; k < ns; k++) {
            sl_policy_item *it = &items[sha[k]];
            it->decided =
                table_check(it->policy, it->key, it->keylen, 0, now, &it->decision) == SL_OK;
        }
        *refused = r;
        return SL_OK;
    }
    count_group(items, enf, ne, false, label, ctx, false, now);
    if (ns == 0) {
        report_charges(items, n);
        return SL_OK;
    }
    rc = check_group(items, sha, ns, now, &r);
    if (rc != SL_OK && r != NONE) {
        /* a shadow limit that can never pass (cost): counted, never refused */
        items[r].decided = true;
        items[r].decision.allowed = false;
    }
    count_group(items, sha, ns, rc != SL_OK || r != NONE, label, ctx, true, now);
    if (rc != SL_OK || r != NONE) { /* the shadow group was not charged */
        for (size_t k = 0; k < ne; k++) report_charges(&items[enf[k]], 1);
        return SL_OK;
    }
    report_charges(items, n);
    return SL_OK;
}

void sl__policy_set_observe(sl_policy_set *s,
                            void (*charged)(void *ctx, const char *policy, const void *key,
                                            size_t keylen, int64_t cost),
                            bool (*owes_fn)(void *ctx, const char *policy, const void *key,
                                            size_t keylen),
                            void *ctx, int64_t retry) {
    for (size_t i = 0; i < s->n; i++) {
        s->p[i]->charged = charged;
        s->p[i]->owes = owes_fn;
        s->p[i]->charged_ctx = ctx;
        s->p[i]->owes_retry = retry;
    }
}

int64_t sl__policy_charge_shared(sl_policy *p, const char *key, size_t keylen, int64_t n,
                                 int64_t now, unsigned others) {
    sl_decision d;
    if (n <= 0 || table_check(p, key, keylen, 0, now, &d) != SL_OK) return 0;
    int64_t take = n < d.remaining ? n : d.remaining;
    if (take > 0 && table_check(p, key, keylen, take, now, &d) == SL_OK && !d.allowed) take = 0;
    int64_t left = n - take;
    int64_t limit = d.limit > 0 ? d.limit : 1;
    int64_t cap =
        limit > INT64_MAX / (others ? others : 1) ? INT64_MAX : limit * (others ? others : 1);
    return left < cap ? left : cap;
}

/* ---- deciding in Redis ----------------------------------------------------------- */

sl_policy_call *sl__policy_call_new(sl_policy_set *set, const sl_policy_item *items, size_t n,
                                    sl_policy_label_fn label, void *ctx) {
    if (n > SL_CHECK_MAX) return NULL;
    size_t key_bytes = 0;
    for (size_t i = 0; i < n; i++) key_bytes += items[i].keylen;
    sl_policy_call *pc = calloc(1, sizeof *pc);
    sl_store_call *sc = pc ? sl__store_call_new(n, key_bytes) : NULL;
    if (!sc) {
        free(pc);
        return NULL;
    }
    pc->sc = sc;
    pc->n = n;
    pc->set = set;
    sl__policy_set_retain(set);
    for (size_t i = 0; i < n; i++) {
        pc->items[i] = items[i];
        pc->items[i].key = sl__store_call_key(sc, items[i].key, items[i].keylen);
        if (label) {
            char buf[SL_TOPK_KEY_MAX];
            size_t len = label(ctx, i, buf, sizeof buf);
            pc->labels[i] = malloc(len + 1);
            if (pc->labels[i]) {
                memcpy(pc->labels[i], buf, len);
                pc->label_len[i] = len;
            }
        }
    }
    return pc;
}

void sl__policy_call_free(sl_policy_call *pc) {
    if (!pc) return;
    for (size_t i = 0; i < pc->n; i++) free(pc->labels[i]);
    sl__store_call_free(pc->sc);
    sl__policy_set_release(pc->set);
    free(pc);
}

static size_t call_label(void *ctx, size_t i, char *buf, size_t size) {
    sl_policy_call *pc = ctx;
    size_t len = pc->label_len[i] < size ? pc->label_len[i] : size;
    memcpy(buf, pc->labels[i], len);
    return len;
}

/* The store decided: counters, the sketch and shadow mode, as
 * sl__policy_check_all does after its table checks. */
static void call_decided(sl_store_call *sc) {
    sl_policy_call *pc = sc->arg;
    size_t n = pc->n;
    sl_policy_label_fn label = pc->labels[0] ? call_label : NULL;
    size_t enf[SL_CHECK_MAX] = {0}, sha[SL_CHECK_MAX] = {0}, ne = 0, ns = 0;
    pc->from = sc->from;
    pc->retry_closed = sc->retry_closed;
    pc->rc = SL_OK;
    pc->refused = n;
    for (size_t i = 0; i < n; i++) {
        sl_policy_item *it = &pc->items[i];
        it->decision = sc->items[i].decision;
        it->decided = sc->items[i].decided;
        it->shadowed = false;
        if (sc->items[i].group)
            sha[ns++] = i;
        else
            enf[ne++] = i;
    }
    if (sc->from >= SL_FROM_OPEN)
        for (size_t k = 0; k < ne; k++)
            atomic_fetch_add_explicit(&pc->items[enf[k]].policy->from[sc->from], 1,
                                      memory_order_relaxed);
    for (size_t k = 0; k < ne; k++) {
        sl_policy_item *it = &pc->items[enf[k]];
        if (!it->decided || it->decision.allowed) continue;
        if (pc->refused == n) pc->refused = enf[k];
        if (it->decision.retry_after < 0) { /* its cost can never pass */
            pc->rc = SL_ECOST;
            pc->refused = enf[k];
            break;
        }
    }
    if (pc->rc != SL_OK) {
        pc->done(pc);
        return;
    }
    count_group(pc->items, enf, ne, pc->refused != n, label, pc, false, sc->now);
    if (pc->refused == n) { /* the shadow group, decided by the store after the enforced one */
        bool no = false;
        for (size_t k = 0; k < ns; k++)
            no |= pc->items[sha[k]].decided && !pc->items[sha[k]].decision.allowed;
        count_group(pc->items, sha, ns, no, label, pc, true, sc->now);
    }
    pc->done(pc);
}

void sl__policy_call_start(sl_store_worker *sw, sl_policy_call *pc, int64_t now) {
    sl_store_call *sc = pc->sc;
    sc->now = now;
    sc->done = call_decided;
    sc->arg = pc;
    for (size_t i = 0; i < pc->n; i++) {
        const sl_policy_item *it = &pc->items[i];
        sl_policy *p = it->policy;
        bool shadow = it->shadow || atomic_load_explicit(&p->shadow, memory_order_relaxed);
        sc->items[i] = (sl_store_item){.params = &p->cfg.params,
                                       .calendar_month = p->cfg.calendar == SL_CALENDAR_MONTH,
                                       .policy = p->cfg.name,
                                       .local = p->fallback,
                                       .on_failure = p->on_failure,
                                       .key = it->key,
                                       .keylen = it->keylen,
                                       .cost = it->cost,
                                       .group = shadow ? 1 : 0};
    }
    sl__store_decide(sw, sc);
}

/* ---- RateLimit-Policy numbers ------------------------------------------------- */

#define SF_INT_MAX INT64_C(999999999999999)

static bool is_bucket(sl_algorithm a) {
    return a == SL_TOKEN_BUCKET || a == SL_GCRA || a == SL_LEAKY_QUEUE;
}

void sl__policy_quota(const sl_policy *p, int64_t now, uint64_t *q, uint64_t *w) {
    const sl_params *pp = &p->cfg.params;
    int64_t limit = pp->rate.limit > 0 ? pp->rate.limit : 1;
    int64_t period = pp->rate.period > 0 ? pp->rate.period : 1;
    if (p->cfg.calendar == SL_CALENDAR_MONTH) {
        int64_t index, start, length;
        sl__calendar_month(now, &index, &start, &length);
        period = length;
    }
    unsigned __int128 num, den;
    int64_t qv;
    if (is_bucket(pp->algorithm)) {
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

size_t sl__policy_rate_format(const sl_policy_config *cfg, char *buf, size_t size) {
    int n = cfg->calendar == SL_CALENDAR_MONTH
                ? snprintf(buf, size, "%lld/month", (long long)cfg->params.rate.limit)
                : sl_rate_format(cfg->params.rate, buf, size);
    if (n < 0) n = 0;
    return size && (size_t)n >= size ? size - 1 : (size_t)n;
}
