/* rules.c: request rules compiled and decided (see rules.h).
 *
 * Table keys: every part of a key is a tag byte, a two-byte length and the
 * bytes ('k' API key, 'o' organisation, 'i' address prefix (16 bytes and the
 * prefix length), 'r' rule name, 'h' header value, 'g' global), so keys of
 * different sources or compositions never collide even in a shared policy.
 * Labels for /v1/top never carry an API key in clear: "key:" + its first
 * few characters + a fingerprint. */
#include "policy/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/hash.h"
#include "sluice/error.h"

#define METHOD_OTHER     0x80u
#define MAX_FWD_LINES    16 /* forwarded header lines looked at */
#define FINGERPRINT_SEED UINT64_C(0x6b65792d66707231)
#define URI_MAX          4096 /* decoded path bytes */

enum { PAT_ANY, PAT_EXACT, PAT_TREE, PAT_PREFIX };

typedef struct pattern {
    unsigned methods;
    uint8_t kind;
    size_t len;
    char path[SL__PATTERN_MAX + 1]; /* TREE and PREFIX: without the star (TREE: without "/") */
} pattern;

typedef struct limit {
    sl__policy **by_tier; /* [0]: no tier; [1 + t]: tier t (its variant, or the base) */
    uint8_t src[SL__LIMIT_MAX_SOURCES];
    unsigned nsrc;
    char header[SL__HEADER_NAME_MAX + 1];
    size_t header_len;
    int64_t cost; /* -1: the request's */
    /* decisions per tier slot (as by_tier): allowed, limited, shadow_limited */
    atomic_uint_fast64_t (*counts)[3];
} limit;

typedef struct rule {
    pattern match;
    bool shadow;
    int priority;               /* sl_priority, or -1 */
    sl__policy_graphql graphql; /* how its cost: graphql limits cost a query */
    char name[SL__POLICY_NAME_MAX + 1];
    size_t name_len;
    limit *limits;
    unsigned nlimits;
} rule;

typedef struct cost_entry {
    pattern match;
    int64_t cost;
} cost_entry;

/* What one item was built from, for its label. */
typedef struct sl__rules_meta item_meta; /* rule and lim: a rule and a limit of this file */

struct sl__rules {
    sl__cidr *trusted;
    size_t ntrusted;
    sl__fwd_kind forwarded;
    unsigned v4_bits, v6_bits;
    char client_ip_header[SL__HEADER_NAME_MAX + 1];
    char method_header[SL__HEADER_NAME_MAX + 1];
    char uri_header[SL__HEADER_NAME_MAX + 1];
    char key_header[SL__HEADER_NAME_MAX + 1];
    bool key_bearer, key_required;
    char key_query[SL__HEADER_NAME_MAX + 1];
    sl__apikeys *keys;
    pattern *exempt_paths;
    size_t nexempt_paths;
    sl__cidr *exempt_cidrs;
    size_t nexempt_cidrs;
    uint64_t exempt_tiers;
    cost_entry *costs;
    size_t ncosts;
    rule *rules;
    size_t nrules;
    char (*tier_names)[SL__POLICY_NAME_MAX + 1];
    size_t ntiers;
    atomic_uint_fast64_t refused[SL__RULES_REFUSALS]; /* sl__rules_refusal_names */
};

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

int sl__rules_compile(const sl__config *cfg, const sl__policy_set *set, sl__rules **out, char *err,
                      size_t errlen) {
    sl__rules *r = calloc(1, sizeof *r);
    if (!r) goto oom;
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
    if (ex->npaths && !(r->exempt_paths = calloc(ex->npaths, sizeof *r->exempt_paths))) goto oom;
    for (size_t i = 0; i < ex->npaths; i++) compile_pattern(&ex->paths[i], &r->exempt_paths[i]);
    r->nexempt_cidrs = ex->ncidrs;
    r->exempt_cidrs = dup_mem(ex->cidrs, ex->ncidrs * sizeof *ex->cidrs);
    r->exempt_tiers = ex->tiers;
    if ((id->ntrusted && !r->trusted) || (ex->ncidrs && !r->exempt_cidrs)) goto oom;

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
            const sl__limit_config *lc = &rc->limits[j];
            limit *l = &ru->limits[ru->nlimits++];
            // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
            if (!(l->by_tier = calloc(cfg->ntiers + 1, sizeof *l->by_tier))) goto oom;
            if (!(l->counts = calloc(cfg->ntiers + 1, sizeof *l->counts))) goto oom;
            l->by_tier[0] = sl__policy_find(set, lc->policy, strlen(lc->policy));
            if (!l->by_tier[0]) {
                snprintf(err, errlen, "rule %s: no policy %s", rc->name, lc->policy);
                sl__rules_free(r);
                return -1;
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
        }
    }
    *out = r;
    return 0;
oom:
    sl__rules_free(r);
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* ---- request parts ----------------------------------------------------------------- */

static const sl__req_header *header(const sl__req_header *h, size_t n, const char *name) {
    size_t len = strlen(name);
    if (len == 0) return NULL;
    for (size_t i = 0; i < n; i++)
        if (h[i].name_len == len && strncasecmp(h[i].name, name, len) == 0) return &h[i];
    return NULL;
}

/* Whether the header `found` (the first named `name`) has a second one. */
static bool repeated(const sl__req_header *h, size_t n, const char *name,
                     const sl__req_header *found) {
    return found && header(found + 1, n - (size_t)(found + 1 - h), name) != NULL;
}

void sl__rules_from_proxy(const sl__rules *r, const sl__req_header *h, size_t n, sl__request *req) {
    memset(req, 0, sizeof *req);
    req->headers = h;
    req->nheaders = n;
    const sl__req_header *m = header(h, n, r->method_header);
    const sl__req_header *u = header(h, n, r->uri_header);
    const sl__req_header *c = header(h, n, r->client_ip_header);
    if (m) req->method = m->value, req->method_len = m->value_len;
    if (u) req->uri = u->value, req->uri_len = u->value_len;
    if (c) req->client = c->value, req->client_len = c->value_len;
    /* Two of one: which one the proxy set is not knowable (nginx's
     * proxy_set_header replaces the client's own, so a proxy sends one). */
    req->repeated = (repeated(h, n, r->method_header, m) ? SL__REQ_METHOD : 0u) |
                    (repeated(h, n, r->uri_header, u) ? SL__REQ_URI : 0u) |
                    (repeated(h, n, r->client_ip_header, c) ? SL__REQ_CLIENT : 0u);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

long sl__rules_normalize_path(const char *uri, size_t n, char *out, size_t size, const char **query,
                              size_t *qlen) {
    *query = "";
    *qlen = 0;
    if (!uri || size < 2) return -1;
    size_t i = 0;
    /* absolute form: scheme "://" authority, then the path (or none) */
    if (n >= 7 &&
        (strncasecmp(uri, "http://", 7) == 0 || (n >= 8 && strncasecmp(uri, "https://", 8) == 0))) {
        i = uri[4] == ':' ? 7 : 8;
        while (i < n && uri[i] != '/' && uri[i] != '?' && uri[i] != '#') i++;
    } else if (n == 0 || uri[0] != '/') {
        return -1;
    }
    size_t end = i;
    while (end < n && uri[end] != '?' && uri[end] != '#') end++;
    if (end < n && uri[end] == '?') {
        size_t qe = end + 1;
        while (qe < n && uri[qe] != '#') qe++;
        *query = uri + end + 1;
        *qlen = qe - end - 1;
    }
    /* Decode into `out`, resolving each segment as it completes. out is "/"
     * followed by complete segments, each ending in "/"; the end of the
     * path acts as a last separator that adds no "/". */
    size_t o = 0;
    out[o++] = '/';
    size_t seg = o;
    for (size_t k = i; k <= end; k++) {
        int c;
        bool last = k == end;
        if (last) {
            c = '/';
        } else if (uri[k] == '%') {
            if (end - k < 3 || hexval(uri[k + 1]) < 0 || hexval(uri[k + 2]) < 0) return -1;
            c = hexval(uri[k + 1]) << 4 | hexval(uri[k + 2]);
            k += 2;
            if (c < 0x20 || c == 0x7f) return -1;
        } else {
            c = (unsigned char)uri[k];
            if (c <= 0x20 || c == 0x7f) return -1;
        }
        if (c != '/') {
            if (o + 2 >= size) return -1;
            out[o++] = (char)c;
            continue;
        }
        size_t len = o - seg;
        if (len == 0) {
            /* "//" is "/" */
        } else if (len == 1 && out[seg] == '.') {
            o = seg;
        } else if (len == 2 && out[seg] == '.' && out[seg + 1] == '.') {
            o = seg > 1 ? seg - 1 : 1; /* back over the previous segment, never above "/" */
            while (o > 1 && out[o - 1] != '/') o--;
        } else if (!last) {
            out[o++] = '/';
        }
        seg = o;
    }
    out[o] = '\0';
    return (long)o;
}

const char *sl__rules_bearer(const char *v, size_t n, size_t *len) {
    if (n < 8 || strncasecmp(v, "bearer ", 7) != 0) return NULL;
    size_t i = 7;
    while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
    size_t e = n;
    while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
    if (e == i) return NULL;
    for (size_t k = i; k < e; k++)
        if (v[k] == ' ' || v[k] == '\t') return NULL;
    *len = e - i;
    return v + i;
}

/* A query parameter, percent-decoded ('+' is a space) into buf. Returns the
 * length, -1 when absent, -2 when malformed or longer than size - 1. */
static long query_param(const char *q, size_t qn, const char *name, char *buf, size_t size) {
    size_t nl = strlen(name);
    const char *s = q, *end = q + qn;
    while (s < end) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        if (!amp) amp = end;
        const char *eq = memchr(s, '=', (size_t)(amp - s));
        const char *ne = eq ? eq : amp;
        if ((size_t)(ne - s) == nl && memcmp(s, name, nl) == 0) {
            size_t o = 0;
            for (const char *v = eq ? eq + 1 : amp; v < amp; v++) {
                int c = (unsigned char)*v;
                if (c == '+') {
                    c = ' ';
                } else if (c == '%') {
                    if (amp - v < 3 || hexval(v[1]) < 0 || hexval(v[2]) < 0) return -2;
                    c = hexval(v[1]) << 4 | hexval(v[2]);
                    v += 2;
                }
                if (o + 1 >= size) return -2;
                buf[o++] = (char)c;
            }
            buf[o] = '\0';
            return (long)o;
        }
        s = amp + 1;
    }
    return -1;
}

static unsigned method_bit(const char *m, size_t n) {
    static const char *const names[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    if (!m) return METHOD_OTHER;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], m, n) == 0) return 1u << i;
    return METHOD_OTHER;
}

static bool matches(const pattern *p, unsigned method, const char *path, size_t len) {
    if (p->methods && !(p->methods & method)) return false;
    switch (p->kind) {
    case PAT_ANY:
        return true;
    case PAT_EXACT:
        return len == p->len && memcmp(path, p->path, len) == 0;
    case PAT_TREE:
        return len >= p->len && memcmp(path, p->path, p->len) == 0 &&
               (len == p->len || path[p->len] == '/');
    default: /* PAT_PREFIX */
        return len >= p->len && memcmp(path, p->path, p->len) == 0;
    }
}

/* ---- keys and labels -------------------------------------------------------------- */

static bool put_part(sl__rules_answer *a, char tag, const void *data, size_t n) {
    if (a->used + 3 + n > SL__RULES_ARENA) return false;
    char *p = a->arena + a->used;
    p[0] = tag;
    p[1] = (char)(n >> 8);
    p[2] = (char)(n & 0xff);
    if (n) memcpy(p + 3, data, n);
    a->used += 3 + n;
    return true;
}

static size_t append(char *buf, size_t size, size_t o, const char *s, size_t n) {
    for (size_t i = 0; i < n && o + 1 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[o++] = (char)(c >= 0x20 && c < 0x7f ? c : '?');
    }
    if (o < size) buf[o] = '\0';
    return o;
}

/* The label of item i: a is the answer being decided (its metas and rules);
 * it lives in the caller's frame while sl__engine_decide runs. */
static size_t label_fn(void *ctx, size_t i, char *buf, size_t size) {
    const sl__rules_answer *a = ctx;
    const item_meta *m = &a->meta[i];
    const limit *lim = m->lim;
    const rule *ru = m->rule;
    size_t o = 0;
    if (i >= a->n || !lim || size == 0) return 0;
    for (unsigned k = 0; k < lim->nsrc; k++) {
        if (k) o = append(buf, size, o, " ", 1);
        switch (lim->src[k]) {
        case SL__SRC_API_KEY: {
            const sl__apikey *key = a->key;
            size_t show = key->keylen / 3 < 6 ? key->keylen / 3 : 6;
            char fp[24];
            snprintf(fp, sizeof fp, "~%08llx",
                     (unsigned long long)(sl__hash(key->key, key->keylen, FINGERPRINT_SEED) >> 32));
            o = append(buf, size, o, "key:", 4);
            o = append(buf, size, o, key->key, show);
            o = append(buf, size, o, fp, strlen(fp));
            break;
        }
        case SL__SRC_ORG:
            o = append(buf, size, o, "org:", 4);
            o = append(buf, size, o, a->key->org, a->key->orglen);
            break;
        case SL__SRC_IP: {
            sl__addr pre;
            unsigned bits;
            sl__addr_prefix(&a->client, a->rules->v4_bits, a->rules->v6_bits, &pre, &bits);
            char t[SL__ADDR_FORMAT_MAX + 8];
            size_t tn = sl__addr_format(&pre, t);
            tn += (size_t)snprintf(t + tn, sizeof t - tn, "/%u",
                                   sl__addr_is_v4(&pre) ? bits - 96 : bits);
            o = append(buf, size, o, "ip:", 3);
            o = append(buf, size, o, t, tn);
            break;
        }
        case SL__SRC_ROUTE:
            o = append(buf, size, o, "route:", 6);
            o = append(buf, size, o, ru->name, ru->name_len);
            break;
        case SL__SRC_HEADER:
            o = append(buf, size, o, lim->header, lim->header_len);
            o = append(buf, size, o, ":", 1);
            o = append(buf, size, o, m->hval, m->hlen);
            break;
        default:
            o = append(buf, size, o, "global", 6);
            break;
        }
    }
    return o;
}

/* ---- deciding ---------------------------------------------------------------------- */

static void verdict(sl__rules_answer *a, sl__verdict v, const char *reason, const char *message) {
    a->verdict = v;
    a->reason = reason;
    a->message = message;
}

/* The answer for a request whose key check failed (a->key_refused) and
 * that no limit refused. */
static void unauthorized(sl__rules_answer *a) {
    if (a->key_refused == SL__KEY_UNKNOWN)
        verdict(a, SL__VERDICT_UNAUTHORIZED, "unknown_key", "unknown API key");
    else
        verdict(a, SL__VERDICT_UNAUTHORIZED, "missing_key", "an API key is required");
}

/* The client: the proxy's peer, then the forwarded chain through trusted
 * proxies. False (with the verdict set) when the address is malformed. */
static bool find_client(const sl__rules *r, const sl__request *req, sl__rules_answer *a) {
    sl__addr peer;
    if (req->repeated & SL__REQ_CLIENT) {
        verdict(a, SL__VERDICT_BAD_REQUEST, "bad_client_address",
                "the client address header (X-Real-IP) came more than once: the proxy must set "
                "it, replacing the client's own");
        return false;
    }
    if (req->client) {
        if (sl__addr_parse_node(req->client, req->client_len, &peer) != 0) {
            verdict(a, SL__VERDICT_BAD_REQUEST, "bad_client_address",
                    "the client address header is not an IP address");
            return false;
        }
    } else if (req->peer) {
        peer = *req->peer;
    } else {
        return true; /* unknown: only limits by ip need it */
    }
    const char *vals[MAX_FWD_LINES];
    size_t lens[MAX_FWD_LINES], nv = 0;
    if (r->ntrusted) {
        const char *name = r->forwarded == SL__FWD_FORWARDED ? "Forwarded" : "X-Forwarded-For";
        size_t nl = strlen(name);
        for (size_t i = 0; i < req->nheaders; i++) {
            const sl__req_header *h = &req->headers[i];
            if (h->name_len != nl || strncasecmp(h->name, name, nl) != 0) continue;
            if (nv == MAX_FWD_LINES) { /* keep the rightmost lines */
                memmove(vals, vals + 1, (MAX_FWD_LINES - 1) * sizeof *vals);
                memmove(lens, lens + 1, (MAX_FWD_LINES - 1) * sizeof *lens);
                nv--;
            }
            vals[nv] = h->value;
            lens[nv++] = h->value_len;
        }
    }
    sl__fwd_result fr;
    sl__forwarded_client(r->forwarded, &peer, r->trusted, r->ntrusted, vals, lens, nv, &fr);
    a->client = fr.client;
    a->have_client = true;
    return true;
}

/* The API key of the request (header, bearer, query), or NULL. */
static const char *find_key(const sl__rules *r, const sl__request *req, const char *query,
                            size_t qlen, char *buf, size_t size, size_t *len) {
    if (r->key_header[0]) {
        const sl__req_header *h = header(req->headers, req->nheaders, r->key_header);
        if (h && h->value_len) return *len = h->value_len, h->value;
    }
    if (r->key_bearer) {
        const sl__req_header *h = header(req->headers, req->nheaders, "Authorization");
        const char *k = h ? sl__rules_bearer(h->value, h->value_len, len) : NULL;
        if (k) return k;
    }
    if (r->key_query[0]) {
        long n = query_param(query, qlen, r->key_query, buf, size);
        if (n > 0) return *len = (size_t)n, buf;
        if (n == -2) return *len = size, buf; /* too long: unknown */
    }
    return NULL;
}

/* The points of the request's GraphQL query under rule ru's graphql:
 * block, or -1 with a BAD_REQUEST verdict (the first costing is kept in
 * a->query_cost for the answer). */
static int64_t query_points(const rule *ru, const sl__rules_query *q, sl__rules_answer *a) {
    sl_gql_options o;
    sl_gql_options_init(&o);
    if (ru->graphql.configured) {
        o.scheme = (sl_gql_scheme)ru->graphql.scheme;
        o.divisor = ru->graphql.divisor;
        o.default_page = ru->graphql.default_page;
        o.max_cost = ru->graphql.max_cost;
    }
    o.operation = q->operation;
    o.vars = q->vars;
    o.nvars = q->nvars;
    sl_gql_cost_result res;
    sl_gql_error err = {0};
    int rc = sl_gql_cost(q->doc, &o, &res, &err);
    if (rc == SL_OK && res.points > (uint64_t)SL__GQL_POINTS_MAX) {
        rc = SL_ECOST;
        snprintf(err.message, sizeof err.message,
                 "The query costs %llu points, more than any budget (10^12).",
                 (unsigned long long)res.points);
    }
    if (rc == SL_OK || rc == SL_ECOST) {
        if (!a->query_costed) a->query_cost = res;
        a->query_costed = true;
    }
    if (rc == SL_OK) return (int64_t)res.points;
    snprintf(a->query_message, sizeof a->query_message, "%s", err.message);
    verdict(a, SL__VERDICT_BAD_REQUEST, rc == SL_ECOST ? "query_too_costly" : "bad_query",
            a->query_message);
    a->n = 0;
    return -1;
}

/* Steps 1-5 up to deciding the limits. Returns true when a->items[0..n)
 * are to be decided (metas[i] says what built item i, for labels). */
static bool collect(const sl__rules *r, const sl__request *req, sl__rules_answer *a,
                    item_meta *metas) {
    a->verdict = SL__VERDICT_ALLOW;
    a->reason = a->message = NULL;
    a->n = a->refused = 0;
    a->cost = 1;
    a->priority = -1;
    a->tier = -1;
    a->tier_name = NULL;
    a->have_client = false;
    a->key = NULL;
    a->key_refused = SL__KEY_ACCEPTED;
    a->used = 0;
    a->query_costed = false;
    a->query_message[0] = '\0';

    char path[URI_MAX];
    const char *query;
    size_t qlen;
    if (req->repeated & SL__REQ_URI) {
        verdict(a, SL__VERDICT_BAD_REQUEST, "bad_uri",
                "the original URI header (X-Original-URI) came more than once");
        return false;
    }
    if (req->repeated & SL__REQ_METHOD) {
        verdict(a, SL__VERDICT_BAD_REQUEST, "bad_method",
                "the original method header (X-Original-Method) came more than once");
        return false;
    }
    if (!req->uri) {
        verdict(a, SL__VERDICT_BAD_REQUEST, "missing_uri",
                "the original URI is missing (set X-Original-URI in the auth location)");
        return false;
    }
    if (!req->method) {
        verdict(a, SL__VERDICT_BAD_REQUEST, "missing_method",
                "the original method is missing (set X-Original-Method in the auth location)");
        return false;
    }
    long pl = sl__rules_normalize_path(req->uri, req->uri_len, path, sizeof path, &query, &qlen);
    if (pl < 0) {
        verdict(a, SL__VERDICT_BAD_REQUEST, "bad_uri",
                "the original URI is not a path, has a bad %-escape or an encoded control "
                "character, or is too long");
        return false;
    }
    size_t plen = (size_t)pl;
    unsigned method = method_bit(req->method, req->method_len);

    /* 1. exempt paths: health checks need no key and count nowhere */
    for (size_t i = 0; i < r->nexempt_paths; i++) {
        if (matches(&r->exempt_paths[i], method, path, plen)) {
            verdict(a, SL__VERDICT_EXEMPT, "path", "exempt path");
            return false;
        }
    }
    /* 2. the client, and internal networks */
    if (!find_client(r, req, a)) return false;
    if (a->have_client && sl__cidr_set_contains(r->exempt_cidrs, r->nexempt_cidrs, &a->client)) {
        verdict(a, SL__VERDICT_EXEMPT, "cidr", "exempt network");
        return false;
    }
    /* 3. the API key. An unknown key (or none where one is required) is
     * refused after the limits that need no key (the per-IP fence) have
     * decided, as for an anonymous request: a flood of random keys is
     * throttled like any other flood, and no state is keyed by them. */
    if (r->keys || r->key_required) {
        char qbuf[SL__APIKEY_MAX + 2];
        size_t klen = 0;
        const char *k = find_key(r, req, query, qlen, qbuf, sizeof qbuf, &klen);
        if (k) {
            a->key = sl__apikeys_find(r->keys, k, klen);
            if (!a->key) a->key_refused = SL__KEY_UNKNOWN;
        } else if (r->key_required) {
            a->key_refused = SL__KEY_MISSING;
        }
        if (a->key) {
            a->tier = a->key->tier;
            if (a->tier >= 0 && (size_t)a->tier < r->ntiers) {
                a->tier_name = r->tier_names[a->tier];
                if (r->exempt_tiers & (UINT64_C(1) << a->tier)) {
                    verdict(a, SL__VERDICT_EXEMPT, "tier", "exempt tier");
                    return false;
                }
            }
        }
    }
    /* 4. the cost */
    for (size_t i = 0; i < r->ncosts; i++) {
        if (matches(&r->costs[i].match, method, path, plen)) {
            a->cost = r->costs[i].cost;
            break;
        }
    }
    /* 5. the limits of every matching rule */
    size_t tier_slot = a->tier >= 0 && (size_t)a->tier < r->ntiers ? (size_t)a->tier + 1 : 0;
    for (size_t i = 0; i < r->nrules; i++) {
        const rule *ru = &r->rules[i];
        if (!matches(&ru->match, method, path, plen)) continue;
        if (a->priority < 0) a->priority = ru->priority; /* the first matching rule's */
        for (unsigned j = 0; j < ru->nlimits; j++) {
            const limit *l = &ru->limits[j];
            size_t start = a->used;
            const char *hval = NULL;
            size_t hlen = 0;
            bool skip = false, full = false;
            for (unsigned k = 0; k < l->nsrc && !skip && !full; k++) {
                switch (l->src[k]) {
                case SL__SRC_API_KEY:
                    if (!a->key)
                        skip = true;
                    else
                        full = !put_part(a, 'k', a->key->key, a->key->keylen);
                    break;
                case SL__SRC_ORG:
                    if (!a->key || !a->key->org)
                        skip = true;
                    else
                        full = !put_part(a, 'o', a->key->org, a->key->orglen);
                    break;
                case SL__SRC_IP: {
                    if (!a->have_client) {
                        a->used = start;
                        verdict(a, SL__VERDICT_BAD_REQUEST, "missing_client_address",
                                "a limit counts by client address, and the request has none "
                                "(set X-Real-IP in the auth location)");
                        a->n = 0;
                        return false;
                    }
                    sl__addr pre;
                    unsigned bits;
                    sl__addr_prefix(&a->client, r->v4_bits, r->v6_bits, &pre, &bits);
                    uint8_t b[17];
                    memcpy(b, pre.b, 16);
                    b[16] = (uint8_t)bits;
                    full = !put_part(a, 'i', b, sizeof b);
                    break;
                }
                case SL__SRC_ROUTE:
                    full = !put_part(a, 'r', ru->name, ru->name_len);
                    break;
                case SL__SRC_HEADER: {
                    const sl__req_header *h = header(req->headers, req->nheaders, l->header);
                    if (!h || h->value_len == 0) {
                        skip = true;
                        break;
                    }
                    hval = h->value;
                    hlen = h->value_len > SL__HEADER_KEY_MAX ? SL__HEADER_KEY_MAX : h->value_len;
                    full = !put_part(a, 'h', hval, hlen);
                    break;
                }
                default:
                    full = !put_part(a, 'g', NULL, 0);
                    break;
                }
            }
            if (full) {
                verdict(a, SL__VERDICT_ERROR, "internal", "the keys of this request do not fit");
                a->n = 0;
                return false;
            }
            if (skip) {
                a->used = start;
                continue;
            }
            sl__policy *pol = l->by_tier[tier_slot];
            const char *key = a->arena + start;
            size_t keylen = a->used - start;
            int64_t cost = l->cost >= 0 ? l->cost : a->cost;
            if (l->cost == SL__COST_GRAPHQL && req->query &&
                (cost = query_points(ru, req->query, a)) < 0)
                return false;
            size_t d = 0;
            while (d < a->n && !(a->items[d].policy == pol && a->items[d].keylen == keylen &&
                                 memcmp(a->items[d].key, key, keylen) == 0))
                d++;
            if (d < a->n) { /* the same limit twice: counted once, enforced wins */
                if (cost > a->items[d].cost) a->items[d].cost = cost;
                a->items[d].shadow = a->items[d].shadow && ru->shadow;
                a->used = start;
                continue;
            }
            if (a->n == SL_CHECK_MAX) {
                verdict(a, SL__VERDICT_ERROR, "too_many_limits",
                        "more than 16 limits apply to this request: split the rules");
                a->n = 0;
                return false;
            }
            metas[a->n] = (item_meta){ru, l, hval, hlen};
            a->counts[a->n] = l->counts[tier_slot];
            a->items[a->n] = (sl__policy_item){
                .policy = pol, .key = key, .keylen = keylen, .cost = cost, .shadow = ru->shadow};
            a->n++;
        }
    }
    if (a->n == 0 && a->key_refused != SL__KEY_ACCEPTED) unauthorized(a);
    return a->n > 0;
}

/* A refusal of the request itself (a 400 or 401 verdict), by reason. */
static void count_refusal(const sl__rules *r, const sl__rules_answer *a) {
    if (!r || !a->reason ||
        (a->verdict != SL__VERDICT_BAD_REQUEST && a->verdict != SL__VERDICT_UNAUTHORIZED))
        return;
    for (size_t i = 0; i < SL__RULES_REFUSALS; i++)
        if (strcmp(a->reason, sl__rules_refusal_names[i]) == 0) {
            atomic_fetch_add_explicit((atomic_uint_fast64_t *)&r->refused[i], 1,
                                      memory_order_relaxed);
            return;
        }
}

/* Each item's rule counters, counted as the engine counts its limits
 * (decide.c count_group): a group that passed counts every item allowed; a
 * refused group only its refusers (limited, or shadow_limited in the shadow
 * group, decided only when the enforced group passed). */
static void count_rules(const sl__rules_answer *a, const sl__decide_call *c) {
    size_t n = a->n < c->n ? a->n : c->n;
    bool shadow_refused = false;
    for (size_t i = 0; i < n; i++) shadow_refused |= c->items[i].shadowed;
    for (size_t i = 0; i < n; i++) {
        atomic_uint_fast64_t *k = a->counts[i];
        const sl__decide_item *it = &c->items[i];
        if (!k || !it->decided) continue;
        int slot = -1;
        if (!c->items[i].shadow_group) {
            if (c->refused == c->n)
                slot = 0;
            else if (!it->decision.allowed)
                slot = 1;
        } else if (c->refused == c->n) {
            slot = it->shadowed ? 2 : shadow_refused ? -1 : 0;
        }
        if (slot >= 0) atomic_fetch_add_explicit(&k[slot], 1, memory_order_relaxed);
    }
}

void sl__rules_finish(sl__rules_answer *a, const sl__decide_call *c) {
    for (size_t i = 0; i < a->n && i < c->n; i++) {
        a->items[i].decision = c->items[i].decision;
        a->items[i].decided = c->items[i].decided;
        a->items[i].shadowed = c->items[i].shadowed;
    }
    int rc = c->rc;
    size_t refused = c->refused;
    a->refused = refused;
    if (rc == SL_OK) {
        count_rules(a, c);
        if (refused < a->n)
            verdict(a, SL__VERDICT_LIMITED, "rate_limited", "rate limit exceeded");
        else if (a->key_refused != SL__KEY_ACCEPTED) {
            unauthorized(a); /* the fence passed (and was charged): now the key's 401 */
            count_refusal(a->rules, a);
        }
        return;
    }
    if (rc == SL_ECOST && refused < a->n) {
        verdict(a, SL__VERDICT_LIMITED, "cost_exceeds_limit",
                "this request costs more than the limit allows at once: it can never pass");
        return;
    }
    a->refused = a->n;
    verdict(a, SL__VERDICT_ERROR, "internal", sl_strerror(rc));
}

sl__decide_call *sl__rules_prepare(const sl__rules *r, const sl__request *req, sl__policy_set *set,
                                   sl__rules_answer *a, size_t user_bytes) {
    a->rules = r;
    if (!collect(r, req, a, a->meta)) {
        count_refusal(r, a);
        return NULL;
    }
    sl__decide_item items[SL_CHECK_MAX];
    for (size_t i = 0; i < a->n; i++)
        items[i] = sl__policy_use(a->items[i].policy, a->items[i].key, a->items[i].keylen,
                                  a->items[i].cost, a->items[i].shadow);
    sl__decide_call *c = sl__decide_call_new(items, a->n, NULL, NULL, user_bytes);
    /* labels only for what is refused, from a while the engine decides */
    if (c) sl__decide_call_label_later(c, label_fn, a);
    if (!c) {
        verdict(a, SL__VERDICT_ERROR, "internal", "out of memory");
        a->n = 0;
        return NULL;
    }
    sl__decide_call_hold(c, set);
    return c;
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
