/* config_rules.c: the tiers:, costs: and rules: sections (docs/identity.md):
 * a tier's overrides of policies and quotas, what a request costs, and the
 * rules that say which limits a request must pass, counted by what. Names
 * they refer to are checked at the end (config_identity.c). */
#include "policy/config_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

enum { CO_METHOD, CO_PATH, CO_COST };

static const char *const cost_keys[] = {"method", "path", "cost"};

enum { RU_NAME, RU_METHOD, RU_PATH, RU_SHADOW, RU_LIMITS, RU_GRAPHQL, RU_PRIORITY, RU_NKEYS };

static const char *const rule_keys[] = {"name",   "method",  "path",    "shadow",
                                        "limits", "graphql", "priority"};

static const char *const priority_names[] = {"critical", "default", "sheddable"};

enum { LI_POLICY, LI_BY, LI_COST, LI_NKEYS };

static const char *const limit_keys[] = {"policy", "by", "cost"};

enum { TO_RATE, TO_BURST, TO_LIMIT };

static const char *const override_keys[] = {"rate", "burst", "limit"};

static const char *const source_names[] = {"api_key", "org", "ip", "route", "global"};

static const uint8_t source_values[] = {SL__SRC_API_KEY, SL__SRC_ORG, SL__SRC_IP, SL__SRC_ROUTE,
                                        SL__SRC_GLOBAL};

#define COST_MAX INT64_C(1000000000000) /* as /v1/check's cost */

static void override_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    sl__tier_override *o = obj;
    uint64_t u;
    switch (key) {
    case TO_RATE: {
        const char *s = sl__yaml_scalar(&p->y, path, "a rate such as 50/s");
        if (!s) break;
        int rc = sl_rate_parse(s, &o->rate);
        if (rc != SL_OK) {
            char q[64];
            sl__yaml_quote(q, sizeof q, s, sl__yaml_len(&p->y));
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                           "cannot parse %s (expected N/s, N/m, N/h, N/d or N/<duration> such as "
                           "100/10s)",
                           q);
        } else {
            o->have_rate = true;
        }
        break;
    }
    case TO_BURST:
        if (sl__yaml_uint(&p->y, path, "a whole number of requests", 1, INT64_MAX, &u)) {
            o->burst = (int64_t)u;
            o->have_burst = true;
        }
        break;
    case TO_LIMIT:
        if (sl__yaml_uint(&p->y, path, "a whole number of requests", 1, (uint64_t)QUOTA_MAX, &u)) {
            o->limit = (int64_t)u;
            o->have_limit = true;
        }
        break;
    }
}

static void tier_policy(sl__yaml *y, void *obj, const char *key, size_t len, int line,
                        const char *path) {
    sl__config_parser *p = y->user;
    sl__tier_config *t = obj;
    if (!sl__config_check_name(p, line, path, key, len)) {
        sl__yaml_skip(&p->y);
        return;
    }
    for (size_t i = 0; i < t->noverrides; i++) {
        if (strcmp(t->overrides[i].policy, key) == 0) {
            sl__yaml_error(&p->y, line, path, "duplicate key (first at line %d)",
                           t->overrides[i].line);
            sl__yaml_skip(&p->y);
            return;
        }
    }
    if (!sl__yaml_is_map(&p->y)) {
        sl__yaml_expected(&p->y, path, "a mapping of rate and burst (a policy) or limit (a quota)");
        return;
    }
    sl__tier_override *o = sl__yaml_push(&p->y, &t->overrides, NULL, &t->noverrides,
                                         sizeof *t->overrides, 1, line, path);
    if (!o) return;
    memcpy(o->policy, key, len + 1);
    o->line = line;
    int seen[COUNT(override_keys)] = {0};
    sl__yaml_each_key(&p->y, path, override_keys, COUNT(override_keys), override_value, o, seen);
}

static void tier_entry(sl__yaml *y, void *obj, const char *key, size_t len, int line,
                       const char *path) {
    sl__config_parser *p = y->user;
    sl__config_ident *ip = obj;
    sl__config *c = p->cfg;
    if (!sl__config_check_name(p, line, path, key, len)) {
        sl__yaml_skip(&p->y);
        return;
    }
    for (size_t i = 0; i < c->ntiers; i++) {
        if (strcmp(c->tiers[i].name, key) == 0) {
            sl__yaml_error(&p->y, line, path, "duplicate tier (first at line %d)",
                           c->tiers[i].line);
            sl__yaml_skip(&p->y);
            return;
        }
    }
    if (c->ntiers == SL__CONFIG_MAX_TIERS) {
        sl__yaml_error(&p->y, line, path, "too many tiers (at most %d)", SL__CONFIG_MAX_TIERS);
        sl__yaml_skip(&p->y);
        return;
    }
    sl__tier_config *t = sl__yaml_push(&p->y, &c->tiers, &ip->tiers_cap, &c->ntiers,
                                       sizeof *c->tiers, 4, line, path);
    if (!t) return;
    memcpy(t->name, key, len + 1);
    t->line = line;
    if (sl__yaml_is_null(&p->y)) return; /* a tier without overrides (admin: ~) */
    if (!sl__yaml_is_map(&p->y)) {
        sl__yaml_expected(&p->y, path, "a mapping of policy names to their rate, burst or limit");
        return;
    }
    sl__yaml_each_named(&p->y, path, tier_policy, t);
}

void sl__config_tiers(sl__config_parser *p, const char *path) {
    if (sl__yaml_is_null(&p->y)) return;
    if (!sl__yaml_is_map(&p->y)) {
        sl__yaml_expected(&p->y, path, "a mapping of tier names (free: {api: {rate: 5/s}}, ...)");
        return;
    }
    sl__yaml_each_named(&p->y, path, tier_entry, p->ident);
}

static void cost_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    sl__cost_config *c = obj;
    uint64_t u;
    switch (key) {
    case CO_METHOD:
        sl__config_methods(p, path, &c->match.methods);
        break;
    case CO_PATH:
        sl__config_pattern(p, path, c->match.path);
        break;
    case CO_COST:
        if (sl__yaml_uint(&p->y, path, "a cost from 0 to 10^12", 0, (uint64_t)COST_MAX, &u))
            c->cost = (int64_t)u;
        break;
    }
}

static void cost_item(sl__yaml *y, void *obj, size_t i, const char *item) {
    sl__config_parser *p = y->user;
    sl__config *cfg = p->cfg;
    (void)obj, (void)i;
    int line = sl__yaml_line(y);
    sl__cost_config *c = sl__yaml_push(y, &cfg->costs, &p->ident->costs_cap, &cfg->ncosts,
                                       sizeof *cfg->costs, 8, line, item);
    if (!c) return;
    c->line = line;
    int seen[COUNT(cost_keys)] = {0};
    sl__yaml_each_key(y, item, cost_keys, COUNT(cost_keys), cost_value, c, seen);
    static const sl__yaml_required required[] = {{CO_COST, "what a matching request costs"}};
    sl__yaml_missing(y, line, item, cost_keys, seen, required, COUNT(required));
}

void sl__config_costs(sl__config_parser *p, const char *path) {
    static const sl__yaml_list list = {
        .what = "a list of costs (- {method: POST, path: /exports, cost: 50})",
        .item = "a cost (a mapping of method, path and cost)",
        .max = SL__CONFIG_MAX_COSTS,
        .many = "costs",
    };
    sl__yaml_each_item(&p->y, path, &list, cost_item, NULL);
}

typedef struct rule_build {
    sl__rule_config *r;
    size_t index;
} rule_build;

#define SOURCE_LIST "api_key, org, ip, route, header:NAME or global"

/* "header:NAME" into l (its header, once per limit): SL__SRC_HEADER, or 0
 * after reporting at item (q: s quoted). */
static uint8_t limit_header(sl__yaml *y, sl__limit_config *l, const char *s, size_t n,
                            const char *item, const char *q) {
    const char *h = s + 7;
    size_t hn = n - 7;
    if (!sl__config_header_name(h, hn, SL__HEADER_NAME_MAX + 1)) {
        sl__yaml_error(y, sl__yaml_line(y), item, "%s: expected header:NAME with a header name", q);
        return 0;
    }
    if (l->header[0]) {
        sl__yaml_error(y, sl__yaml_line(y), item, "%s: one header per limit", q);
        return 0;
    }
    memcpy(l->header, h, hn + 1);
    return SL__SRC_HEADER;
}

/* One key source of a limit's by: into the limit at obj. */
static void limit_source(sl__yaml *y, void *obj, const char *item) {
    sl__limit_config *l = obj;
    const char *s = sl__yaml_scalar(y, item, SOURCE_LIST);
    if (!s) return;
    size_t n = sl__yaml_len(y);
    char q[64];
    sl__yaml_quote(q, sizeof q, s, n);
    uint8_t src = 0;
    for (size_t k = 0; k < COUNT(source_names); k++)
        if (strcmp(s, source_names[k]) == 0) src = source_values[k];
    if (!src && strncmp(s, "header:", 7) == 0) {
        src = limit_header(y, l, s, n, item, q);
        if (!src) return;
    }
    if (!src) {
        const char *near = sl__yaml_suggest(s, n, source_names, COUNT(source_names));
        if (near)
            sl__yaml_error(y, sl__yaml_line(y), item, "unknown key source %s (did you mean %s?)", q,
                           near);
        else
            sl__yaml_error(y, sl__yaml_line(y), item, "unknown key source %s (expected %s)", q,
                           SOURCE_LIST);
    } else if (l->nby == SL__LIMIT_MAX_SOURCES) {
        sl__yaml_error(y, sl__yaml_line(y), item, "at most %d key sources per limit",
                       SL__LIMIT_MAX_SOURCES);
    } else {
        bool dup = false;
        for (unsigned k = 0; k < l->nby; k++) dup |= l->by[k] == src;
        if (dup && src != SL__SRC_HEADER)
            sl__yaml_error(y, sl__yaml_line(y), item, "%s is listed twice", q);
        else
            l->by[l->nby++] = src;
    }
}

static void limit_by(sl__config_parser *p, sl__limit_config *l, const char *path) {
    sl__yaml_each_scalar(&p->y, path, limit_source, l);
    if (l->nby == 0 && !p->y.fatal) return;
    /* global with anything else is the other thing alone: refuse the confusion */
    for (unsigned k = 0; k < l->nby; k++)
        if (l->by[k] == SL__SRC_GLOBAL && l->nby > 1)
            sl__yaml_error(&p->y, p->y.key_line, path,
                           "global is one key for everyone: use it alone");
}

static void limit_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    sl__limit_config *l = obj;
    uint64_t u;
    switch (key) {
    case LI_POLICY: {
        const char *s = sl__yaml_scalar(&p->y, path, "the name of a policy or quota");
        if (s && sl__config_check_name(p, sl__yaml_line(&p->y), path, s, sl__yaml_len(&p->y)))
            memcpy(l->policy, s, sl__yaml_len(&p->y) + 1);
        break;
    }
    case LI_BY:
        limit_by(p, l, path);
        break;
    case LI_COST:
        if (sl__yaml_is_plain(&p->y) && sl__yaml_len(&p->y) == 7 &&
            memcmp(sl__yaml_text(&p->y), "graphql", 7) == 0) {
            l->cost = SL__COST_GRAPHQL; /* the query's points (POST /v1/graphql) */
            break;
        }
        if (sl__yaml_uint(&p->y, path, "a cost from 0 to 10^12, or graphql (the query's points)", 0,
                          (uint64_t)COST_MAX, &u))
            l->cost = (int64_t)u;
        break;
    }
}

static void limit_item(sl__yaml *y, void *obj, size_t i, const char *item) {
    sl__rule_config *r = obj;
    (void)i;
    int line = sl__yaml_line(y);
    sl__limit_config *l = &r->limits[r->nlimits++];
    memset(l, 0, sizeof *l);
    l->line = line;
    l->cost = -1;
    int seen[LI_NKEYS] = {0};
    sl__yaml_each_key(y, item, limit_keys, COUNT(limit_keys), limit_value, l, seen);
    if (y->fatal) return;
    static const sl__yaml_required required[] = {
        {LI_POLICY, "the policy or quota this limit checks"},
        {LI_BY, "what the limit counts by: api_key, org, ip, route, header:NAME or global"}};
    sl__yaml_missing(y, line, item, limit_keys, seen, required, COUNT(required));
}

static void rule_limits(sl__config_parser *p, sl__rule_config *r, const char *path) {
    static const sl__yaml_list list = {
        .what = "a list of limits (- {policy: api, by: api_key})",
        .item = "a limit (a mapping of policy, by and cost)",
        .max = SL__RULE_MAX_LIMITS,
        .many = "limits",
        .why = ": one request checks at most that many",
    };
    sl__yaml_each_item(&p->y, path, &list, limit_item, r);
}

static void rule_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    rule_build *b = obj;
    sl__rule_config *r = b->r;
    bool flag;
    switch (key) {
    case RU_NAME: {
        const char *s = sl__yaml_scalar(&p->y, path, "a name such as api ([a-z0-9_.-]+)");
        if (!s || !sl__config_check_name(p, sl__yaml_line(&p->y), path, s, sl__yaml_len(&p->y)))
            break;
        for (size_t i = 0; i < b->index; i++) {
            if (strcmp(p->cfg->rules[i].name, s) == 0) {
                char q[64];
                sl__yaml_quote(q, sizeof q, s, sl__yaml_len(&p->y));
                sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                               "duplicate rule name %s (first at line %d)", q,
                               p->cfg->rules[i].line);
                return;
            }
        }
        memcpy(r->name, s, sl__yaml_len(&p->y) + 1);
        break;
    }
    case RU_METHOD:
        sl__config_methods(p, path, &r->match.methods);
        break;
    case RU_PATH:
        sl__config_pattern(p, path, r->match.path);
        break;
    case RU_SHADOW:
        if (sl__yaml_bool(&p->y, path, &flag)) r->shadow = flag;
        break;
    case RU_LIMITS:
        rule_limits(p, r, path);
        break;
    case RU_GRAPHQL:
        sl__config_policy_graphql(p, path, &r->graphql);
        break;
    case RU_PRIORITY: /* sl_priority's order */
        r->priority = sl__yaml_enum(&p->y, path, "priority", priority_names, COUNT(priority_names));
        break;
    }
}

static void rule_item(sl__yaml *y, void *obj, size_t i, const char *item) {
    sl__config_parser *p = y->user;
    sl__config *cfg = p->cfg;
    (void)obj, (void)i;
    int line = sl__yaml_line(y);
    rule_build b = {.index = cfg->nrules};
    b.r = sl__yaml_push(y, &cfg->rules, &p->ident->rules_cap, &cfg->nrules, sizeof *cfg->rules, 4,
                        line, item);
    if (!b.r) return;
    b.r->line = line;
    b.r->priority = -1;
    int seen[RU_NKEYS] = {0};
    sl__yaml_each_key(y, item, rule_keys, COUNT(rule_keys), rule_value, &b, seen);
    if (y->fatal) return;
    static const sl__yaml_required required[] = {
        {RU_NAME, "every rule needs a name"},
        {RU_LIMITS, "the limits a matching request must pass"}};
    sl__yaml_missing(y, line, item, rule_keys, seen, required, COUNT(required));
}

void sl__config_rules(sl__config_parser *p, const char *path) {
    static const sl__yaml_list list = {
        .what = "a list of rules (- name: ..., path: ..., limits: [...])",
        .item = "a rule (a mapping of name, method, path, limits, shadow)",
        .max = SL__CONFIG_MAX_RULES,
        .many = "rules",
    };
    sl__yaml_each_item(&p->y, path, &list, rule_item, NULL);
}
