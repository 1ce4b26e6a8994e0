/* rules_decide.c: one request decided by the rules (rules.h, steps 1-5):
 * its limits collected as engine items, the engine call made, and its
 * outcome turned into the answer's verdict and the rules' counters. */
#include <stdio.h>
#include <string.h>

#include "policy/rules_internal.h"
#include "sluice/error.h"

/* The method bit of a pattern's mask (METHOD_OTHER: not one of these). */
static unsigned method_bit(const char *m, size_t n) {
    static const char *const names[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    if (!m) return METHOD_OTHER;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], m, n) == 0) return 1u << i;
    return METHOD_OTHER;
}

/* Whether the request (method bit, normalized path) matches p. Kept with
 * its callers: it runs for every pattern of every request. */
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

/* The answer for a request whose key check failed (a->key_refused) and
 * that no limit refused. */
static void unauthorized(sl__rules_answer *a) {
    if (a->key_refused == SL__KEY_UNKNOWN)
        sl__rules_verdict(a, SL__VERDICT_UNAUTHORIZED, "unknown_key", "unknown API key");
    else
        sl__rules_verdict(a, SL__VERDICT_UNAUTHORIZED, "missing_key", "an API key is required");
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
    sl__rules_verdict(a, SL__VERDICT_BAD_REQUEST, rc == SL_ECOST ? "query_too_costly" : "bad_query",
                      a->query_message);
    a->n = 0;
    return -1;
}

/* a as nothing is known yet: allowed, cost 1, no key, client or items. */
static void answer_reset(sl__rules_answer *a) {
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
}

/* The request's path (normalized into path, URI_MAX bytes), query and
 * method bit. False, with a BAD_REQUEST verdict, when the proxy's URI or
 * method header is missing, came twice, or the URI is no path. */
static bool request_target(const sl__request *req, sl__rules_answer *a, char *path, size_t *plen,
                           const char **query, size_t *qlen, unsigned *method) {
    if (req->repeated & SL__REQ_URI) {
        sl__rules_verdict(a, SL__VERDICT_BAD_REQUEST, "bad_uri",
                          "the original URI header (X-Original-URI) came more than once");
        return false;
    }
    if (req->repeated & SL__REQ_METHOD) {
        sl__rules_verdict(a, SL__VERDICT_BAD_REQUEST, "bad_method",
                          "the original method header (X-Original-Method) came more than once");
        return false;
    }
    if (!req->uri) {
        sl__rules_verdict(a, SL__VERDICT_BAD_REQUEST, "missing_uri",
                          "the original URI is missing (set X-Original-URI in the auth location)");
        return false;
    }
    if (!req->method) {
        sl__rules_verdict(
            a, SL__VERDICT_BAD_REQUEST, "missing_method",
            "the original method is missing (set X-Original-Method in the auth location)");
        return false;
    }
    long pl = sl__rules_normalize_path(req->uri, req->uri_len, path, URI_MAX, query, qlen);
    if (pl < 0) {
        sl__rules_verdict(
            a, SL__VERDICT_BAD_REQUEST, "bad_uri",
            "the original URI is not a path, has a bad %-escape or an encoded control "
            "character, or is too long");
        return false;
    }
    *plen = (size_t)pl;
    *method = method_bit(req->method, req->method_len);
    return true;
}

/* Step 3: the API key into a (key, tier, tier_name, key_refused). False,
 * with an EXEMPT verdict, when it is a key of an exempt tier. */
static bool key_step(const sl__rules *r, const sl__request *req, const char *query, size_t qlen,
                     sl__rules_answer *a) {
    char qbuf[SL__APIKEY_MAX + 2];
    size_t klen = 0;
    const char *k = sl__rules_find_key(r, req, query, qlen, qbuf, sizeof qbuf, &klen);
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
                sl__rules_verdict(a, SL__VERDICT_EXEMPT, "tier", "exempt tier");
                return false;
            }
        }
    }
    return true;
}

/* Step 5 for limit l of rule ru: its item appended to a (or merged into
 * the same limit's item). False, with the verdict set and a->n = 0, when
 * the request cannot be decided. */
static bool limit_item(const sl__rules *r, const sl__request *req, const rule *ru, const limit *l,
                       size_t tier_slot, sl__rules_answer *a, item_meta *metas) {
    size_t start = a->used;
    const char *hval;
    size_t hlen;
    switch (sl__rules_limit_key(r, req, ru, l, a, &hval, &hlen)) {
    case SL__KEYED_SKIP:
        return true;
    case SL__KEYED_NO_CLIENT:
        sl__rules_verdict(a, SL__VERDICT_BAD_REQUEST, "missing_client_address",
                          "a limit counts by client address, and the request has none "
                          "(set X-Real-IP in the auth location)");
        a->n = 0;
        return false;
    case SL__KEYED_FULL:
        sl__rules_verdict(a, SL__VERDICT_ERROR, "internal", "the keys of this request do not fit");
        a->n = 0;
        return false;
    case SL__KEYED_OK:
        break;
    }
    sl__policy *pol = l->by_tier[tier_slot];
    const char *key = a->arena + start;
    size_t keylen = a->used - start;
    int64_t cost = l->cost >= 0 ? l->cost : a->cost;
    if (l->cost == SL__COST_GRAPHQL && req->query && (cost = query_points(ru, req->query, a)) < 0)
        return false;
    size_t d = 0;
    while (d < a->n && !(a->items[d].policy == pol && a->items[d].keylen == keylen &&
                         memcmp(a->items[d].key, key, keylen) == 0))
        d++;
    if (d < a->n) { /* the same limit twice: counted once, enforced wins */
        if (cost > a->items[d].cost) a->items[d].cost = cost;
        a->items[d].shadow = a->items[d].shadow && ru->shadow;
        a->used = start;
        return true;
    }
    if (a->n == SL_CHECK_MAX) {
        sl__rules_verdict(a, SL__VERDICT_ERROR, "too_many_limits",
                          "more than 16 limits apply to this request: split the rules");
        a->n = 0;
        return false;
    }
    metas[a->n] = (item_meta){ru, l, hval, hlen};
    a->counts[a->n] = l->counts[tier_slot];
    a->items[a->n] = (sl__policy_item){
        .policy = pol, .key = key, .keylen = keylen, .cost = cost, .shadow = ru->shadow};
    a->n++;
    return true;
}

/* Steps 1-5 up to deciding the limits. Returns true when a->items[0..n)
 * are to be decided (metas[i] says what built item i, for labels). */
static bool collect(const sl__rules *r, const sl__request *req, sl__rules_answer *a,
                    item_meta *metas) {
    answer_reset(a);
    char path[URI_MAX];
    const char *query;
    size_t plen, qlen;
    unsigned method;
    if (!request_target(req, a, path, &plen, &query, &qlen, &method)) return false;

    /* 1. exempt paths: health checks need no key and count nowhere */
    for (size_t i = 0; i < r->nexempt_paths; i++) {
        if (matches(&r->exempt_paths[i], method, path, plen)) {
            sl__rules_verdict(a, SL__VERDICT_EXEMPT, "path", "exempt path");
            return false;
        }
    }
    /* 2. the client, and internal networks */
    if (!sl__rules_find_client(r, req, a)) return false;
    if (a->have_client && sl__cidr_set_contains(r->exempt_cidrs, r->nexempt_cidrs, &a->client)) {
        sl__rules_verdict(a, SL__VERDICT_EXEMPT, "cidr", "exempt network");
        return false;
    }
    /* 3. the API key. An unknown key (or none where one is required) is
     * refused after the limits that need no key (the per-IP fence) have
     * decided, as for an anonymous request: a flood of random keys is
     * throttled like any other flood, and no state is keyed by them. */
    if ((r->keys || r->key_required) && !key_step(r, req, query, qlen, a)) return false;
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
        for (unsigned j = 0; j < ru->nlimits; j++)
            if (!limit_item(r, req, ru, &ru->limits[j], tier_slot, a, metas)) return false;
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
            sl__rules_verdict(a, SL__VERDICT_LIMITED, "rate_limited", "rate limit exceeded");
        else if (a->key_refused != SL__KEY_ACCEPTED) {
            unauthorized(a); /* the fence passed (and was charged): now the key's 401 */
            count_refusal(a->rules, a);
        }
        return;
    }
    if (rc == SL_ECOST && refused < a->n) {
        sl__rules_verdict(
            a, SL__VERDICT_LIMITED, "cost_exceeds_limit",
            "this request costs more than the limit allows at once: it can never pass");
        return;
    }
    a->refused = a->n;
    sl__rules_verdict(a, SL__VERDICT_ERROR, "internal", sl_strerror(rc));
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
    if (c) sl__decide_call_label_later(c, sl__rules_label, a);
    if (!c) {
        sl__rules_verdict(a, SL__VERDICT_ERROR, "internal", "out of memory");
        a->n = 0;
        return NULL;
    }
    sl__decide_call_hold(c, set);
    return c;
}
