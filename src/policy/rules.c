/* rules.c: the config's request rules compiled against a policy set into
 * an sl__rules (rules.h), freed, and its counters read for /metrics. A
 * request is then decided by rules_decide.c; what the stages share is
 * rules_internal.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/rules_internal.h"

#include "sluice/error.h"

const char *const sl__rules_refusal_names[SL__RULES_REFUSALS] = {
    "unknown_key", "missing_key", "missing_client_address", "bad_client_address",
    "missing_uri", "bad_uri",     "missing_method",         "bad_method"};

/* ---- compiling ----------------------------------------------------------------- */

static void compile_pattern(const sl__route_match *m, pattern *p) {
    memset(p, 0, sizeof *p);
    p->methods = m->methods;
    size_t n = strlen(m->path);
    if (n == 0) {
        p->kind = PAT_ANY;
        return;
    }
    if (n >= 2 && m->path[n - 1] == '*' && m->path[n - 2] == '/') {
        p->kind = PAT_TREE;
        n -= 2;
    } else if (m->path[n - 1] == '*') {
        p->kind = PAT_PREFIX;
        n -= 1;
    } else {
        p->kind = PAT_EXACT;
    }
    memcpy(p->path, m->path, n);
    p->path[n] = '\0';
    p->len = n;
}

void sl__rules_free(sl__rules *r) {
    if (!r) return;
    for (size_t i = 0; i < r->nrules; i++) {
        for (unsigned j = 0; j < r->rules[i].nlimits; j++) {
            free(r->rules[i].limits[j].by_tier);
            free(r->rules[i].limits[j].counts);
        }
        free(r->rules[i].limits);
    }
    free(r->rules);
    free(r->costs);
    free(r->exempt_paths);
    free(r->exempt_cidrs);
    free(r->trusted);
    free(r->tier_names);
    sl__apikeys_release(r->keys);
    free(r);
}

static void *dup_mem(const void *p, size_t n) {
    if (n == 0) return NULL;
    void *d = malloc(n);
    if (d) memcpy(d, p, n);
    return d;
}

/* The client identity, key and exemption settings of cfg copied into r.
 * Returns false when out of memory. */
static bool compile_identity(const sl__config *cfg, sl__rules *r) {
    const sl__identity_config *id = &cfg->identity;
    r->ntrusted = id->ntrusted;
    r->trusted = dup_mem(id->trusted, id->ntrusted * sizeof *id->trusted);
    r->forwarded = id->forwarded;
    r->v4_bits = id->ipv4_prefix ? id->ipv4_prefix : 32;
    r->v6_bits = id->ipv6_prefix ? id->ipv6_prefix : 64;
    memcpy(r->client_ip_header, id->client_ip_header, sizeof r->client_ip_header);
    memcpy(r->method_header, id->method_header, sizeof r->method_header);
    memcpy(r->uri_header, id->uri_header, sizeof r->uri_header);
    memcpy(r->key_header, id->key_header, sizeof r->key_header);
    memcpy(r->key_query, id->key_query, sizeof r->key_query);
    r->key_bearer = id->key_bearer;
    r->key_required = id->key_required;
    r->keys = id->keys;
    sl__apikeys_retain(r->keys);

    const sl__exempt_config *ex = &cfg->exempt;
    r->nexempt_paths = ex->npaths;
    if (ex->npaths && !(r->exempt_paths = calloc(ex->npaths, sizeof *r->exempt_paths)))
        return false;
    for (size_t i = 0; i < ex->npaths; i++) compile_pattern(&ex->paths[i], &r->exempt_paths[i]);
    r->nexempt_cidrs = ex->ncidrs;
    r->exempt_cidrs = dup_mem(ex->cidrs, ex->ncidrs * sizeof *ex->cidrs);
    r->exempt_tiers = ex->tiers;
    return !((id->ntrusted && !r->trusted) || (ex->ncidrs && !r->exempt_cidrs));
}

/* Limit lc of rule rc compiled into l: its policy for no tier and for each
 * tier (the tier's variant "policy:tier" where set has one). Returns 0,
 * SL_ENOMEM, or SL_EINVAL with a message in err when set has no such
 * policy. */
static int compile_limit(const sl__config *cfg, const sl__policy_set *set,
                         const sl__rule_config *rc, const sl__limit_config *lc, limit *l, char *err,
                         size_t errlen) {
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
    if (!(l->by_tier = calloc(cfg->ntiers + 1, sizeof *l->by_tier))) return SL_ENOMEM;
    if (!(l->counts = calloc(cfg->ntiers + 1, sizeof *l->counts))) return SL_ENOMEM;
    l->by_tier[0] = sl__policy_find(set, lc->policy, strlen(lc->policy));
    if (!l->by_tier[0]) {
        snprintf(err, errlen, "rule %s: no policy %s", rc->name, lc->policy);
        return SL_EINVAL;
    }
    for (size_t t = 0; t < cfg->ntiers; t++) {
        char name[2 * SL__POLICY_NAME_MAX + 2];
        int k = snprintf(name, sizeof name, "%s:%s", lc->policy, cfg->tiers[t].name);
        sl__policy *v = k > 0 ? sl__policy_find(set, name, (size_t)k) : NULL;
        l->by_tier[1 + t] = v ? v : l->by_tier[0];
    }
    memcpy(l->src, lc->by, sizeof l->src);
    l->nsrc = lc->nby;
    memcpy(l->header, lc->header, sizeof l->header);
    l->header_len = strlen(l->header);
    l->cost = lc->cost;
    return 0;
}

int sl__rules_compile(const sl__config *cfg, const sl__policy_set *set, sl__rules **out, char *err,
                      size_t errlen) {
    sl__rules *r = calloc(1, sizeof *r);
    if (!r || !compile_identity(cfg, r)) goto oom;

    r->ntiers = cfg->ntiers;
    if (cfg->ntiers && !(r->tier_names = calloc(cfg->ntiers, sizeof *r->tier_names))) goto oom;
    for (size_t t = 0; t < cfg->ntiers; t++)
        memcpy(r->tier_names[t], cfg->tiers[t].name, sizeof r->tier_names[t]);

    r->ncosts = cfg->ncosts;
    if (cfg->ncosts && !(r->costs = calloc(cfg->ncosts, sizeof *r->costs))) goto oom;
    for (size_t i = 0; i < cfg->ncosts; i++) {
        compile_pattern(&cfg->costs[i].match, &r->costs[i].match);
        r->costs[i].cost = cfg->costs[i].cost;
    }

    if (cfg->nrules && !(r->rules = calloc(cfg->nrules, sizeof *r->rules))) goto oom;
    for (size_t i = 0; i < cfg->nrules; i++) {
        const sl__rule_config *rc = &cfg->rules[i];
        rule *ru = &r->rules[r->nrules++];
        compile_pattern(&rc->match, &ru->match);
        ru->shadow = rc->shadow;
        ru->priority = rc->priority;
        ru->graphql = rc->graphql;
        memcpy(ru->name, rc->name, sizeof ru->name);
        ru->name_len = strlen(ru->name);
        if (rc->nlimits && !(ru->limits = calloc(rc->nlimits, sizeof *ru->limits))) goto oom;
        for (unsigned j = 0; j < rc->nlimits; j++) {
            int e = compile_limit(cfg, set, rc, &rc->limits[j], &ru->limits[ru->nlimits++], err,
                                  errlen);
            if (e == SL_ENOMEM) goto oom;
            if (e < 0) {
                sl__rules_free(r);
                return SL_EINVAL;
            }
        }
    }
    *out = r;
    return 0;
oom:
    sl__rules_free(r);
    snprintf(err, errlen, "out of memory");
    return SL_ENOMEM;
}

/* ---- what /metrics prints ------------------------------------------------------ */

void sl__rules_each_stat(const sl__rules *r, void (*fn)(void *ctx, const sl__rule_stats *st),
                         void *ctx) {
    for (size_t i = 0; r && i < r->nrules; i++) {
        const rule *ru = &r->rules[i];
        for (unsigned j = 0; j < ru->nlimits; j++) {
            const limit *l = &ru->limits[j];
            for (size_t t = 0; t <= r->ntiers; t++) {
                sl__rule_stats st = {
                    .rule = ru->name,
                    .policy = l->by_tier[t]->cfg.name,
                    .tier = t ? r->tier_names[t - 1] : NULL,
                    .allowed = atomic_load_explicit(&l->counts[t][0], memory_order_relaxed),
                    .limited = atomic_load_explicit(&l->counts[t][1], memory_order_relaxed),
                    .shadow_limited = atomic_load_explicit(&l->counts[t][2], memory_order_relaxed)};
                if (st.allowed + st.limited + st.shadow_limited) fn(ctx, &st);
            }
        }
    }
}

void sl__rules_refusals(const sl__rules *r, uint64_t out[SL__RULES_REFUSALS]) {
    for (size_t i = 0; i < SL__RULES_REFUSALS; i++)
        out[i] = r ? atomic_load_explicit(&r->refused[i], memory_order_relaxed) : 0;
}
