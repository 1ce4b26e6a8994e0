/* rules_internal.h (internal to src/policy/rules*.c): what the stages of the
 * request rules share. The config's rules are compiled (rules.c) into an
 * sl__rules; a request's parts are read (rules_request.c), its limits
 * collected and decided (rules_decide.c), each with a table key and, for
 * what the engine counts as refused, a label (rules_keys.c). */
#ifndef SLUICE_POLICY_RULES_INTERNAL_H
#define SLUICE_POLICY_RULES_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/rules.h"

#define METHOD_OTHER 0x80u
#define URI_MAX      4096 /* decoded path bytes */

enum { PAT_ANY, PAT_EXACT, PAT_TREE, PAT_PREFIX };

/* A route's match: methods (a mask of method bits, 0: any) and a path. */
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
typedef struct sl__rules_meta item_meta; /* rule and lim: a rule and a limit of these files */

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

/* Sets a's verdict, reason and message (both static, or NULL). */
static inline void sl__rules_verdict(sl__rules_answer *a, sl__verdict v, const char *reason,
                                     const char *message) {
    a->verdict = v;
    a->reason = reason;
    a->message = message;
}

/* ---- a request's parts (rules_request.c) ------------------------------------ */

/* The first of the n headers h named `name` (case-insensitive), or NULL
 * (always for an empty name). */
const sl__req_header *sl__rules_header(const sl__req_header *h, size_t n, const char *name);

/* The client: the proxy's peer (req->client parsed, or req->peer), then the
 * forwarded chain walked through r's trusted proxies, into a->client
 * (a->have_client). No client known is no error. Returns false, with a
 * BAD_REQUEST verdict in a, when the client header came twice or is no
 * address. */
bool sl__rules_find_client(const sl__rules *r, const sl__request *req, sl__rules_answer *a);

/* The API key of the request: r's key header, then Authorization: Bearer,
 * then r's query parameter in query[0..qlen) (percent-decoded into buf of
 * size bytes). Returns it with *len, or NULL. A query key longer than
 * size - 1 returns buf with *len = size: a key no key file holds. */
const char *sl__rules_find_key(const sl__rules *r, const sl__request *req, const char *query,
                               size_t qlen, char *buf, size_t size, size_t *len);

/* ---- table keys and labels (rules_keys.c) ----------------------------------- */

typedef enum sl__rules_keyed {
    SL__KEYED_OK,       /* the key is a->arena[start..a->used) */
    SL__KEYED_SKIP,     /* a source the request lacks (no key, org, header): a->used is start */
    SL__KEYED_FULL,     /* the arena is full (SL__RULES_ARENA) */
    SL__KEYED_NO_CLIENT /* by: ip and no client address: a->used is start */
} sl__rules_keyed;

/* Appends limit l's table key (of rule ru, for the request req answered in
 * a: its key, client) to a->arena, starting at a->used (the format: the top
 * of rules_keys.c). *hval / *hlen get the header value it counts by (NULL,
 * 0 when it does not). */
sl__rules_keyed sl__rules_limit_key(const sl__rules *r, const sl__request *req, const rule *ru,
                                    const limit *l, sl__rules_answer *a, const char **hval,
                                    size_t *hlen);

/* The label of item i of the answer ctx (an sl__rules_answer: its metas,
 * key, client and rules) into buf (size bytes, NUL-terminated when it
 * fits, printable ASCII): an sl__decide_label_fn. Returns its length. */
size_t sl__rules_label(void *ctx, size_t i, char *buf, size_t size);

#endif
