/* rules.h: from a real HTTP request to the limits it must pass. The config's
 * identity:, tiers:, quotas:, costs:, exempt: and rules: sections are
 * compiled against a policy set (policy.h) into an immutable sl__rules that
 * lives as long as the set; sl__rules_prepare() then answers one request
 * (its limits decided by the engine, decide.h, and sl__rules_finish()):
 *
 *   1. the path: health checks and other exempt paths skip everything;
 *   2. the client: the address the proxy saw, then X-Forwarded-For or
 *      Forwarded walked from the right through trusted proxies only
 *      (identity.h); exempt CIDRs skip everything;
 *   3. the API key (header, Authorization: Bearer, or a query parameter):
 *      keys of an exempt tier skip everything; an unknown key (or none,
 *      where one is required) is refused, but only after the limits that do
 *      not need a key (by ip, route, header, global: the per-IP fence) have
 *      been decided and charged as for an anonymous request, so that a flood
 *      of random keys is throttled like any other flood; no limiter state is
 *      ever keyed by an unknown key;
 *   4. the cost (costs: first match, else 1);
 *   5. the limits of every rule that matches (method and path), each with
 *      its key (API key, organisation, client prefix, rule, a header value,
 *      or global) and the table of the key's tier, checked all at once
 *      (sl__engine_decide: all pass or none is charged; shadow rules and
 *      policies decide and count but never refuse).
 *
 * Preparing allocates one engine call: keys are built in the answer's arena
 * and copied into the call. */
#ifndef SLUICE_POLICY_RULES_H
#define SLUICE_POLICY_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/apikeys.h"
#include "policy/config.h"
#include "policy/identity.h"
#include "policy/policy.h"
#include "sluice/graphql.h"

typedef struct sl__rules sl__rules;

/* Compiles cfg's rules against the policies of `set` (every policy a rule
 * names must be in it). Takes a reference to cfg->identity.keys. Returns 0
 * and *out (free with sl__rules_free), or SL_EINVAL (a rule names no policy) or
 * SL_ENOMEM with a message in err. */
int sl__rules_compile(const sl__config *cfg, const sl__policy_set *set, sl__rules **out, char *err,
                      size_t errlen);
void sl__rules_free(sl__rules *r);

/* One request header (the layout of the HTTP layer's, copied by the caller). */
typedef struct sl__req_header {
    const char *name, *value;
    size_t name_len, value_len;
} sl__req_header;

/* The GraphQL query of a request (POST /v1/graphql decided by rules):
 * what the limits with `cost: graphql` are charged, costed with their
 * rule's graphql: block. */
typedef struct sl__rules_query {
    const sl_gql_doc *doc;
    const char *operation; /* or NULL */
    const sl_gql_var *vars;
    size_t nvars;
} sl__rules_query;

/* What is known about a request. Pointers live for the call. */
typedef struct sl__request {
    const char *method; /* "GET", ... (NULL: unknown) */
    size_t method_len;
    const char *uri; /* the request target as the client sent it: path?query */
    size_t uri_len;
    const char *client; /* the address of the peer the proxy saw, as text (X-Real-IP) */
    size_t client_len;
    const sl__addr *peer;          /* or that address already parsed (when client is NULL) */
    const sl__req_header *headers; /* the original request's headers (API key, forwarded, ...) */
    size_t nheaders;
    unsigned repeated; /* SL__REQ_* of the proxy's headers that came twice: refused (400) */
    /* the GraphQL query, or NULL (/v1/auth: limits with cost: graphql are then
       charged the request's cost, as if they said nothing) */
    const sl__rules_query *query;
} sl__request;

#define SL__REQ_METHOD 1u
#define SL__REQ_URI    2u
#define SL__REQ_CLIENT 4u

/* Fills method, uri and client from the headers a proxy sets on an
 * auth_request subrequest (identity.method_header, uri_header,
 * client_ip_header: X-Original-Method, X-Original-URI, X-Real-IP by default),
 * and headers from h. Absent headers leave NULL; one of these that comes
 * twice is marked in req->repeated, and the request is refused (400
 * bad_method, bad_uri, bad_client_address). */
void sl__rules_from_proxy(const sl__rules *r, const sl__req_header *h, size_t n, sl__request *req);

typedef enum sl__verdict {
    SL__VERDICT_ALLOW = 0,    /* every limit passed, or none applies */
    SL__VERDICT_LIMITED,      /* a limit refused: items[refused] */
    SL__VERDICT_EXEMPT,       /* exempt (reason: "path", "cidr" or "tier"): nothing counted */
    SL__VERDICT_UNAUTHORIZED, /* reason "unknown_key" or "missing_key" (key_refused); the
                                limits without a key passed and were charged */
    SL__VERDICT_BAD_REQUEST,  /* the request cannot be decided (reason, message) */
    SL__VERDICT_ERROR         /* internal (reason, message) */
} sl__verdict;

/* Why the API key check failed (sl__rules_answer.key_refused). */
typedef enum sl__key_refusal {
    SL__KEY_ACCEPTED = 0, /* a valid key, or none where none is required */
    SL__KEY_UNKNOWN,      /* not in the key file */
    SL__KEY_MISSING       /* none, and identity.api_keys.required */
} sl__key_refusal;

#define SL__RULES_ARENA    12288 /* bytes for the table keys of one request */
#define SL__HEADER_KEY_MAX 256   /* a header value counts by its first 256 bytes */

typedef struct sl__rules_answer {
    sl__verdict verdict;
    const char *reason;                  /* a stable code for programs (static), or NULL */
    const char *message;                 /* for humans (static), or NULL */
    sl__policy_item items[SL_CHECK_MAX]; /* the limits that applied, in rule order */
    size_t n;
    size_t refused;        /* index of the limit that refused, or n */
    int64_t cost;          /* the request's cost (costs:), before per-limit overrides */
    int priority;          /* the first matching rule's priority: (sl_priority), or -1: none says */
    int tier;              /* the key's tier (index into the config's tiers), or -1 */
    const char *tier_name; /* or NULL */
    sl__key_refusal key_refused; /* not SL__KEY_ACCEPTED: the verdict is UNAUTHORIZED unless a
                                   limit refused first (LIMITED) or the request failed */
    sl__addr client;             /* who the request was counted as (when have_client) */
    bool have_client;
    /* with a query: its cost by the first rule whose `cost: graphql` limit
       applied (query_costed), and a costing refusal's text (the verdict's
       message points here: reason "bad_query" or "query_too_costly") */
    bool query_costed;
    sl_gql_cost_result query_cost;
    char query_message[160];
    /* private to rules*.c: what built each item, and the rules, for the labels
       of the keys the engine counts as refused (/v1/top, the shadow log);
       read while sl__engine_decide runs (decide.h: sl__decide_call_label_later);
       and the counters of the rule, limit and tier each item counts in (for
       sl__rules_finish's counts) */
    struct sl__rules_meta {
        const void *rule, *lim; /* rules_internal.h's rule and limit */
        const char *hval;       /* the header value (by: header), in the request */
        size_t hlen;
    } meta[SL_CHECK_MAX];
    void *counts[SL_CHECK_MAX];
    const struct sl__rules *rules;
    const sl__apikey *key;
    /* the table keys of the request (items[].key point into it): the caller's
       SL__RULES_ARENA bytes, set before sl__rules_prepare and needed only until
       the engine call holds its copies of the keys, so that an answer that
       waits (held, or decided later) keeps the rest alone (about 2.4 KiB) */
    char *arena;
    size_t used;
} sl__rules_answer;

/* Deciding req (see the top of this file) is two steps around the engine
 * (decide.h): sl__rules_prepare does steps 1-5 and, when limits apply,
 * returns the engine call for them (holding `set`; the caller sets done,
 * starts it with sl__engine_decide, and frees it after); NULL otherwise: a is then
 * final (no limit applies, an unknown key, or an error verdict). From the
 * call's done, sl__rules_finish copies the items' outcome into a and sets
 * the verdict. */
sl__decide_call *sl__rules_prepare(const sl__rules *r, const sl__request *req, sl__policy_set *set,
                                   sl__rules_answer *a, size_t user_bytes);
void sl__rules_finish(sl__rules_answer *a, const sl__decide_call *c);

/* ---- what /metrics prints of the rules (issue 17) ----
 * Counted by sl__rules_prepare / sl__rules_finish, in the compiled rules:
 * they start at 0 when a reload compiles new ones. */

/* Decisions of one limit of one rule, for keys of one tier, as the engine
 * counts them (sl__decide_limit's allowed / limited / shadow_limited). */
typedef struct sl__rule_stats {
    const char *rule;   /* the rule's name (the route) */
    const char *policy; /* the policy that decided (a tier variant "api:pro" for its tier) */
    const char *tier;   /* the key's tier, or NULL (no key, or a key without a tier) */
    uint64_t allowed, limited, shadow_limited;
} sl__rule_stats;
/* Calls fn for each (rule, limit, tier) that has decided at least once, in
 * rule order. */
void sl__rules_each_stat(const sl__rules *r, void (*fn)(void *ctx, const sl__rule_stats *st),
                         void *ctx);

/* Requests refused because who or what they are could not be established:
 * 401s (unknown_key, missing_key) and 400s (missing_client_address,
 * bad_client_address, missing_uri, bad_uri, missing_method, bad_method). */
#define SL__RULES_REFUSALS 8
extern const char *const sl__rules_refusal_names[SL__RULES_REFUSALS];
void sl__rules_refusals(const sl__rules *r, uint64_t out[SL__RULES_REFUSALS]);

/* Pure helpers, exposed for tests and the fuzz target. */

/* Percent-decodes and normalizes the path of a request target (absolute
 * form accepted: the scheme and authority are dropped; the query and
 * fragment are not part of it): "//" is "/", "." and ".." segments are
 * resolved (never above the root), a trailing "/" is kept. Writes at most
 * size - 1 bytes and a NUL. Returns the length, or -1 (a bad escape, an
 * encoded control character or NUL, not a path, too long). *query / *qlen
 * get the query (may be empty). */
long sl__rules_normalize_path(const char *uri, size_t n, char *out, size_t size, const char **query,
                              size_t *qlen);

/* The API key of "Authorization: Bearer KEY" (scheme case-insensitive), or
 * NULL. */
const char *sl__rules_bearer(const char *value, size_t n, size_t *len);

#endif
