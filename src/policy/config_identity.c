/* config_identity.c: who is counted (docs/identity.md): the identity:
 * section (trusted proxies, forwarded header, prefixes, auth_request
 * headers, api_keys), exempt:, the value types the identity sections share
 * (names, header names, CIDR lists, methods, path patterns), and the checks
 * that can only run once the whole file is read: rules and tiers name
 * declared policies, exempt.tiers declared tiers, then the key file loads. */
#include "policy/config_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/apikeys.h"
#include "sluice/error.h"

enum {
    ID_TRUSTED,
    ID_FORWARDED,
    ID_V4,
    ID_V6,
    ID_CLIENT_IP_HEADER,
    ID_METHOD_HEADER,
    ID_URI_HEADER,
    ID_API_KEYS
};

static const char *const identity_keys[] = {"trusted_proxies", "forwarded_header", "ipv4_prefix",
                                            "ipv6_prefix",     "client_ip_header", "method_header",
                                            "uri_header",      "api_keys"};

enum { AK_FILE, AK_HEADER, AK_BEARER, AK_QUERY, AK_REQUIRED };

static const char *const api_keys_keys[] = {"file", "header", "bearer", "query", "required"};

enum { EX_PATHS, EX_CIDRS, EX_TIERS };

static const char *const exempt_keys[] = {"paths", "cidrs", "tiers"};

static const char *const method_names[] = {"GET",   "HEAD",   "POST",   "PUT",
                                           "PATCH", "DELETE", "OPTIONS"};

static bool name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
           ch == '-';
}

/* A name as policies have them: [a-z0-9_.-], 1 to 63 bytes. False after
 * reporting. */
bool sl__config_check_name(sl__config_parser *p, int line, const char *path, const char *s,
                           size_t n) {
    char q[64];
    sl__yaml_quote(q, sizeof q, s, n);
    if (n == 0) return sl__yaml_error(&p->y, line, path, "the name is empty"), false;
    if (n > SL__POLICY_NAME_MAX)
        return sl__yaml_error(&p->y, line, path, "%s is longer than %d characters", q,
                              SL__POLICY_NAME_MAX),
               false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return sl__yaml_error(&p->y, line, path,
                                  "%s: a name uses only lower-case letters, digits, _ . and -", q),
                   false;
    return true;
}

/* A header field name (RFC 9110 token), into out. */
static void get_header_name(sl__config_parser *p, const char *path, char *out, bool may_be_off) {
    const char *s = sl__yaml_scalar(&p->y, path,
                                    may_be_off ? "a header name such as X-API-Key, or off"
                                               : "a header name such as X-Real-IP");
    if (!s) return;
    size_t n = sl__yaml_len(&p->y);
    if (may_be_off && strcmp(s, "off") == 0) {
        out[0] = '\0';
        return;
    }
    char q[64];
    sl__yaml_quote(q, sizeof q, s, n);
    bool ok = n > 0 && n <= SL__HEADER_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             strchr("!#$%&'*+-.^_`|~", c) != NULL;
    }
    if (!ok) {
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                       "%s is not a header name (1 to %d letters, digits or - _ .)", q,
                       SL__HEADER_NAME_MAX);
        return;
    }
    memcpy(out, s, n + 1);
}

typedef struct cidr_build {
    sl__cidr **arr;
    size_t *n, cap;
} cidr_build;

static void cidr_item(sl__yaml *y, void *obj, size_t i, const char *item) {
    cidr_build *b = obj;
    (void)i;
    const char *s = sl__yaml_scalar(y, item, "a CIDR block such as 10.0.0.0/8");
    if (!s) return;
    sl__cidr c;
    const char *why = "";
    if (sl__cidr_parse(s, sl__yaml_len(y), &c, &why) != 0) {
        char q[64];
        sl__yaml_quote(q, sizeof q, s, sl__yaml_len(y));
        sl__yaml_error(y, sl__yaml_line(y), item, "cannot use %s: %s", q, why);
        return;
    }
    sl__cidr *e =
        sl__yaml_push(y, b->arr, &b->cap, b->n, sizeof **b->arr, 8, sl__yaml_line(y), item);
    if (e) *e = c;
}

/* A list of CIDR blocks, appended to *arr. */
static void cidr_list(sl__config_parser *p, const char *path, sl__cidr **arr, size_t *n) {
    static const sl__yaml_list list = {
        .what = "a list of CIDR blocks such as [10.0.0.0/8, \"2001:db8::/32\"]",
        .max = SL__CONFIG_MAX_CIDRS,
        .many = "blocks",
    };
    cidr_build b = {.arr = arr, .n = n, .cap = *n};
    sl__yaml_each_item(&p->y, path, &list, cidr_item, &b);
}

/* One method of a method: value, OR-ed into the mask at obj. */
static void method_item(sl__yaml *y, void *obj, const char *item) {
    unsigned *mask = obj;
    int k = sl__yaml_enum(y, item, "method", method_names, COUNT(method_names));
    if (k >= 0) *mask |= 1u << k;
}

/* A method or a list of methods, as a mask. */
void sl__config_methods(sl__config_parser *p, const char *path, unsigned *mask) {
    sl__yaml_each_scalar(&p->y, path, method_item, mask);
}

/* A path pattern: a star (any), "/exact", a subtree "/tree/" + star, or a
 * prefix "/prefix" + star (docs/identity.md). */
void sl__config_pattern(sl__config_parser *p, const char *path, char *out) {
    const char *s = sl__yaml_scalar(&p->y, path, "a path such as /login, /api/* or *");
    if (!s) return;
    size_t n = sl__yaml_len(&p->y);
    char q[64];
    sl__yaml_quote(q, sizeof q, s, n);
    if (n == 1 && s[0] == '*') {
        out[0] = '\0';
        return;
    }
    const char *why = NULL;
    if (n == 0 || s[0] != '/')
        why = "a path starts with / (or is * for every path)";
    else if (n > SL__PATTERN_MAX)
        why = "longer than 255 bytes";
    for (size_t i = 0; !why && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#')
            why = "a path has no spaces, control characters, ? or #";
        else if (c == '*' && i + 1 != n)
            why = "* may only end a path (/api/* or /api*)";
    }
    if (why) {
        sl__yaml_error(&p->y, sl__yaml_line(&p->y), path, "cannot use %s: %s", q, why);
        return;
    }
    memcpy(out, s, n + 1);
}

static void api_keys_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    (void)obj;
    sl__identity_config *id = &p->cfg->identity;
    bool flag;
    switch (key) {
    case AK_FILE: {
        const char *s = sl__yaml_scalar(&p->y, path, "the path of a key file");
        if (!s) break;
        if (sl__yaml_len(&p->y) >= sizeof id->key_file) {
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path, "the path is longer than %zu bytes",
                           sizeof id->key_file - 1);
            break;
        }
        memcpy(id->key_file, s, sl__yaml_len(&p->y) + 1);
        id->key_file_line = sl__yaml_line(&p->y);
        break;
    }
    case AK_HEADER:
        get_header_name(p, path, id->key_header, true);
        break;
    case AK_BEARER:
        if (sl__yaml_bool(&p->y, path, &flag)) id->key_bearer = flag;
        break;
    case AK_QUERY: {
        const char *s =
            sl__yaml_scalar(&p->y, path, "a query parameter name such as api_key, or off");
        if (!s) break;
        size_t n = sl__yaml_len(&p->y);
        bool ok = n > 0 && n <= SL__HEADER_NAME_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = name_char((char)(s[i] | ((s[i] >= 'A' && s[i] <= 'Z') ? 0x20 : 0)));
        if (strcmp(s, "off") == 0) {
            id->key_query[0] = '\0';
        } else if (!ok) {
            char q[64];
            sl__yaml_quote(q, sizeof q, s, n);
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                           "%s is not a parameter name (1 to %d letters, digits or _ . -)", q,
                           SL__HEADER_NAME_MAX);
        } else {
            memcpy(id->key_query, s, n + 1);
        }
        break;
    }
    case AK_REQUIRED:
        if (sl__yaml_bool(&p->y, path, &flag)) id->key_required = flag;
        p->ident->required_line = p->y.key_line;
        break;
    }
}

static void identity_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    (void)obj;
    sl__identity_config *id = &p->cfg->identity;
    uint64_t u;
    switch (key) {
    case ID_TRUSTED:
        cidr_list(p, path, &id->trusted, &id->ntrusted);
        break;
    case ID_FORWARDED: {
        const char *s = sl__yaml_scalar(&p->y, path, "X-Forwarded-For or Forwarded");
        if (!s) break;
        if (strcasecmp(s, "x-forwarded-for") == 0) {
            id->forwarded = SL__FWD_XFF;
        } else if (strcasecmp(s, "forwarded") == 0) {
            id->forwarded = SL__FWD_FORWARDED;
        } else {
            char q[64];
            sl__yaml_quote(q, sizeof q, s, sl__yaml_len(&p->y));
            sl__yaml_error(&p->y, sl__yaml_line(&p->y), path,
                           "unknown header %s (expected X-Forwarded-For or Forwarded, RFC 7239)",
                           q);
        }
        break;
    }
    case ID_V4:
        if (sl__yaml_uint(&p->y, path, "a prefix length from 1 to 32", 1, 32, &u))
            id->ipv4_prefix = (unsigned)u;
        break;
    case ID_V6:
        if (sl__yaml_uint(&p->y, path, "a prefix length from 1 to 128", 1, 128, &u))
            id->ipv6_prefix = (unsigned)u;
        break;
    case ID_CLIENT_IP_HEADER:
        get_header_name(p, path, id->client_ip_header, false);
        break;
    case ID_METHOD_HEADER:
        get_header_name(p, path, id->method_header, false);
        break;
    case ID_URI_HEADER:
        get_header_name(p, path, id->uri_header, false);
        break;
    case ID_API_KEYS: {
        int seen[COUNT(api_keys_keys)] = {0};
        sl__yaml_section(&p->y, path, api_keys_keys, COUNT(api_keys_keys), api_keys_value, NULL,
                         seen, "a mapping of file, header, bearer, query, required");
        break;
    }
    }
}

static void exempt_path(sl__yaml *y, void *obj, size_t i, const char *item) {
    sl__config_parser *p = y->user;
    sl__exempt_config *ex = obj;
    (void)i;
    sl__route_match *m = &ex->paths[ex->npaths];
    memset(m, 0, sizeof *m);
    m->path[0] = '\x01'; /* unset until sl__config_pattern succeeds */
    sl__config_pattern(p, item, m->path);
    if (m->path[0] != '\x01') ex->npaths++;
}

static void exempt_tier(sl__yaml *y, void *obj, size_t i, const char *item) {
    sl__config_parser *p = y->user;
    sl__config_ident *ip = obj;
    (void)i;
    const char *s = sl__yaml_scalar(y, item, "a tier name");
    if (!s || !sl__config_check_name(p, sl__yaml_line(y), item, s, sl__yaml_len(y))) return;
    memcpy(ip->tier_names[ip->ntier_names], s, sl__yaml_len(y) + 1);
    ip->tier_lines[ip->ntier_names++] = sl__yaml_line(y);
}

static void exempt_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__config_parser *p = y->user;
    (void)obj;
    sl__exempt_config *ex = &p->cfg->exempt;
    static const sl__yaml_list paths = {
        .what = "a list of paths such as [/healthz, /readyz]",
        .max = SL__CONFIG_MAX_EXEMPT,
        .many = "entries",
    };
    static const sl__yaml_list tiers = {
        .what = "a list of tier names such as [admin]",
        .max = MAX_TIER_REFS,
        .many = "entries",
    };
    if (key == EX_CIDRS)
        cidr_list(p, path, &ex->cidrs, &ex->ncidrs);
    else if (key == EX_PATHS)
        sl__yaml_each_item(y, path, &paths, exempt_path, ex);
    else
        sl__yaml_each_item(y, path, &tiers, exempt_tier, p->ident);
}

int sl__config_tier(const sl__config *c, const char *name, size_t len) {
    for (size_t i = 0; c && i < c->ntiers; i++)
        if (strlen(c->tiers[i].name) == len && memcmp(c->tiers[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

typedef struct keyfile_ctx {
    sl__config_parser *p;
    char names[200];
} keyfile_ctx;

static int keyfile_tier(void *ctx, const char *name, size_t len, const char **names) {
    keyfile_ctx *k = ctx;
    *names = k->names;
    return sl__config_tier(k->p->cfg, name, len);
}

static void keyfile_error(void *ctx, int line, const char *msg) {
    keyfile_ctx *k = ctx;
    sl__config_parser *p = k->p;
    const char *file = p->cfg->identity.key_file;
    if (line > 0)
        sl__yaml_error(&p->y, p->cfg->identity.key_file_line, "identity.api_keys.file", "%s:%d: %s",
                       file, line, msg);
    else
        sl__yaml_error(&p->y, p->cfg->identity.key_file_line, "identity.api_keys.file", "%s: %s",
                       file, msg);
}

static void load_key_file(sl__config_parser *p) {
    sl__identity_config *id = &p->cfg->identity;
    char path[1024];
    const char *slash = strrchr(p->y.source, '/');
    if (id->key_file[0] == '/' || !slash)
        snprintf(path, sizeof path, "%s", id->key_file);
    else
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - p->y.source), p->y.source,
                 id->key_file);
    keyfile_ctx k = {.p = p};
    const char *names[SL__CONFIG_MAX_TIERS];
    for (size_t i = 0; i < p->cfg->ntiers; i++) names[i] = p->cfg->tiers[i].name;
    sl__yaml_join_names(k.names, sizeof k.names, names, p->cfg->ntiers);
    sl__apikeys_load(path, keyfile_tier, &k, keyfile_error, &k, &id->keys);
}

static const sl__policy_config *find_policy(const sl__config *c, const char *name) {
    return sl__config_policy(c, name, strlen(name));
}

/* Every limit of every rule names a policy or quota, and counts by a key
 * only where there are API keys. */
static void check_rule_names(sl__config_parser *p) {
    sl__config *c = p->cfg;
    char field[SL__YAML_PATH_SIZE + 64];
    for (size_t i = 0; i < c->nrules; i++) {
        const sl__rule_config *r = &c->rules[i];
        for (unsigned j = 0; j < r->nlimits; j++) {
            const sl__limit_config *l = &r->limits[j];
            snprintf(field, sizeof field, "rules[%zu].limits[%u].policy", i, j);
            if (l->policy[0] && !find_policy(c, l->policy))
                sl__yaml_error(&p->y, l->line, field, "no policy or quota named \"%s\"", l->policy);
            for (unsigned k = 0; k < l->nby; k++) {
                if ((l->by[k] == SL__SRC_API_KEY || l->by[k] == SL__SRC_ORG) &&
                    !c->identity.key_file[0]) {
                    snprintf(field, sizeof field, "rules[%zu].limits[%u].by", i, j);
                    sl__yaml_error(&p->y, l->line, field,
                                   "%s needs API keys: set identity.api_keys.file",
                                   l->by[k] == SL__SRC_API_KEY ? "api_key" : "org");
                    break;
                }
            }
        }
    }
}

/* Tier t's override o: of a policy or quota there is, with a table name
 * that fits, the keys of its kind, and valid parameters once applied. */
static void check_override(sl__config_parser *p, const sl__tier_config *t,
                           const sl__tier_override *o) {
    sl__config *c = p->cfg;
    char field[SL__YAML_PATH_SIZE + 64];
    snprintf(field, sizeof field, "tiers.%s.%s", t->name, o->policy);
    const sl__policy_config *pc = find_policy(c, o->policy);
    if (!pc) {
        sl__yaml_error(&p->y, o->line, field, "no policy or quota named \"%s\"", o->policy);
        return;
    }
    if (strlen(pc->name) + 1 + strlen(t->name) > SL__POLICY_NAME_MAX) {
        sl__yaml_error(&p->y, o->line, field,
                       "%s:%s is longer than %d characters (its table's name): use a shorter "
                       "tier or policy name",
                       pc->name, t->name, SL__POLICY_NAME_MAX);
        return;
    }
    if (pc->quota && (o->have_rate || o->have_burst)) {
        sl__yaml_error(&p->y, o->line, field, "%s is a quota: a tier sets its limit", pc->name);
        return;
    }
    if (!pc->quota && o->have_limit) {
        sl__yaml_error(&p->y, o->line, field, "%s is a policy: a tier sets its rate and burst",
                       pc->name);
        return;
    }
    if (!o->have_rate && !o->have_burst && !o->have_limit) {
        sl__yaml_error(&p->y, o->line, field, "empty: set %s",
                       pc->quota ? "limit" : "rate or burst");
        return;
    }
    sl_params pp = pc->params;
    if (o->have_rate) pp.rate = o->rate;
    if (o->have_burst) pp.burst = sl_algorithm_is_bucket(pp.algorithm) ? o->burst : 0;
    if (o->have_limit) pp.rate.limit = o->limit;
    int rc = sl_params_validate(&pp);
    if (rc != SL_OK) sl__yaml_error(&p->y, o->line, field, "%s", sl_strerror(rc));
}

/* Tier names given before tiers: was known (hold_weights, exempt.tiers)
 * resolved; exempt.tiers into its mask. */
static void check_tier_names(sl__config_parser *p) {
    sl__config *c = p->cfg;
    char field[SL__YAML_PATH_SIZE + 64];
    for (size_t i = 0; i < c->npolicies; i++) { /* hold_weights: name declared tiers */
        const sl__policy_config *pc = &c->policies[i];
        for (unsigned j = 0; j < pc->nhold_weights; j++) {
            const struct sl__hold_weight *w = &pc->hold_weights[j];
            if (sl__config_tier(c, w->tier, strlen(w->tier)) >= 0) continue;
            snprintf(field, sizeof field, "policies.%s.hold_weights.%s", pc->name, w->tier);
            sl__yaml_error(&p->y, w->line, field, "no tier named \"%s\" (declare it under tiers:)",
                           w->tier);
        }
    }
    sl__config_ident *ip = p->ident;
    for (size_t i = 0; i < ip->ntier_names; i++) {
        int t = sl__config_tier(c, ip->tier_names[i], strlen(ip->tier_names[i]));
        snprintf(field, sizeof field, "exempt.tiers[%zu]", i);
        if (t < 0)
            sl__yaml_error(&p->y, ip->tier_lines[i], field,
                           "no tier named \"%s\" (declare it under tiers:)", ip->tier_names[i]);
        else
            c->exempt.tiers |= UINT64_C(1) << t;
    }
}

void sl__config_check_identity(sl__config_parser *p) {
    sl__config *c = p->cfg;
    check_rule_names(p);
    for (size_t i = 0; i < c->ntiers; i++)
        for (size_t j = 0; j < c->tiers[i].noverrides; j++)
            check_override(p, &c->tiers[i], &c->tiers[i].overrides[j]);
    check_tier_names(p);
    if (c->identity.key_required && !c->identity.key_file[0])
        sl__yaml_error(&p->y, p->ident->required_line, "identity.api_keys.required",
                       "every key would be unknown: set identity.api_keys.file");
    if (c->identity.key_file[0] && p->y.errs->n == 0) load_key_file(p);
}

void sl__config_free_identity(sl__config *c) {
    free(c->identity.trusted);
    sl__apikeys_release(c->identity.keys);
    for (size_t i = 0; i < c->ntiers; i++) free(c->tiers[i].overrides);
    free(c->tiers);
    free(c->rules);
    free(c->costs);
    free(c->exempt.cidrs);
}

void sl__config_identity(sl__config_parser *p, const char *path) {
    int seen[COUNT(identity_keys)] = {0};
    sl__yaml_section(&p->y, path, identity_keys, COUNT(identity_keys), identity_value, NULL, seen,
                     "a mapping of trusted_proxies, api_keys, ...");
}

void sl__config_exempt(sl__config_parser *p, const char *path) {
    int seen[COUNT(exempt_keys)] = {0};
    sl__yaml_section(&p->y, path, exempt_keys, COUNT(exempt_keys), exempt_value, NULL, seen,
                     "a mapping of paths, cidrs and tiers");
}
