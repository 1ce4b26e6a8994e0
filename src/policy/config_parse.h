/* config_parse.h: what the files of the config loader share (internal to
 * config*.c). config.c reads the document and calls one function per
 * top-level key; each section lives in its own file:
 *
 *   config_server.c    listen, store (and store.redis), limits, admin
 *   config_policies.c  policies, quotas, tier variants, the Redis store check
 *   config_identity.c  identity (and api_keys, the key file), exempt, the
 *                      checks across sections
 *   config_rules.c     tiers, costs, rules (and their limits)
 *   config_graphql.c   a policy's graphql: block (POST /v1/graphql's costs)
 *   config_ramp.c      a policy's ramp_up: block (ramp-up after recovery)
 *
 * A section function gets the value of its key as the reader's current
 * event and consumes it (yaml_reader.h); it reports every problem and
 * returns nothing. */
#ifndef SLUICE_POLICY_CONFIG_PARSE_H
#define SLUICE_POLICY_CONFIG_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/config.h"
#include "policy/yaml_reader.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

#define NS_MS  SL_NS_PER_MS
#define NS_SEC SL_NS_PER_SEC
#define NS_DAY (86400 * SL_NS_PER_SEC)

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define QUOTA_MAX     (INT64_C(1) << 61) /* a quota's limit, in a quota or a tier */
#define MAX_TIER_REFS SL__CONFIG_MAX_TIERS

/* What the identity sections keep until the whole file is read: exempt.tiers
 * names can only be resolved once tiers: is known, wherever it is. */
typedef struct sl__config_ident {
    char tier_names[MAX_TIER_REFS][SL__POLICY_NAME_MAX + 1];
    int tier_lines[MAX_TIER_REFS];
    size_t ntier_names;
    size_t rules_cap, costs_cap, tiers_cap;
    int required_line;
} sl__config_ident;

/* One load: the reader, the config being filled, and what the checks at
 * the end need to know. */
typedef struct sl__config_parser {
    sl__yaml y; /* the reader; y.user is this parser */
    sl__config *cfg;
    size_t policies_cap;
    int listen_line[3];                /* where each listener was set (0: default) */
    bool listen_bad[3];                /* its value was refused: no clash check */
    int store_type_line, redis_line;   /* of store.type and store.redis (0: not given) */
    int admin_line, reload_token_line; /* of admin: and admin.reload_token (0: not given) */
    sl__config_ident *ident;           /* identity sections (see there) */
} sl__config_parser;

/* "open", "closed", "local": store.redis.on_failure and a policy's (= sl__fail_mode) */
extern const char *const sl__config_failure_modes[3];

/* ---- config_server.c ---- */
void sl__config_listen(sl__config_parser *p, const char *path);
void sl__config_store(sl__config_parser *p, const char *path);
void sl__config_limits(sl__config_parser *p, const char *path);
void sl__config_admin(sl__config_parser *p, const char *path);
/* `shedding:` (config_shedding.c). */
void sl__config_shedding(sl__config_parser *p, const char *path);
/* scope: fleet against the store (after every section is read). */
void sl__config_check_shedding(sl__config_parser *p);
/* At the end: two enabled listeners on one port of one (or every) address. */
void sl__config_check_listeners(sl__config_parser *p);

/* ---- config_policies.c ---- */
void sl__config_policies(sl__config_parser *p, const char *path);
void sl__config_quotas(sl__config_parser *p, const char *path);
/* At the end: every policy and tier variant fits the Redis store, if used. */
void sl__config_check_redis_limits(sl__config_parser *p);

/* ---- config_graphql.c ---- */
/* A policy's graphql: block into *g (defaults first). */
void sl__config_policy_graphql(sl__config_parser *p, const char *path, sl__policy_graphql *g);

/* ---- config_ramp.c ---- */
/* A policy's ramp_up: block into *r (zeroed first; duration 0 after errors). */
void sl__config_policy_ramp(sl__config_parser *p, const char *path, sl_ramp *r);
/* Whether pc's ramp can scale its limit (sliding_log cannot; the limit and
 * burst must fit in thousandths of a request): NULL, or why not. */
const char *sl__config_ramp_problem(const sl__policy_config *pc);

/* "10%", "2.5%": a percentage with up to four decimals into parts per
 * million; false if not one (config_ramp.c). */
bool sl__config_percent(const char *s, size_t n, int64_t *ppm);
/* The current node as such a percentage in [min, max] ppm into *ppm; false
 * after reporting "Q: expected `what`" (config_ramp.c). */
bool sl__config_percent_value(sl__yaml *y, const char *path, const char *what, int64_t min,
                              int64_t max, int64_t *ppm);

/* A header name (an HTTP token shorter than max); config_shedding.c. */
bool sl__config_header_name(const char *s, size_t n, size_t max);

/* ---- config_retry.c ---- */
/* A policy's retry_budget: block into *r (defaults first; window 0 after
 * errors). */
void sl__config_policy_retry(sl__config_parser *p, const char *path,
                             struct sl__retry_budget_config *r);

/* A policy with algorithm: concurrency, read into pc by the policies
 * section (its keys[0..nkeys) and the lines they were seen at; in lc the
 * limit, lease, adaptive, min_limit and max_limit as read, 0 when absent):
 * checks it and moves it from cfg->policies (it must be the last one) to
 * cfg->leases (config_leases.c). */
void sl__config_lease_finish(sl__config_parser *p, sl__policy_config *pc, const int *seen,
                             const char *const *keys, size_t nkeys, const sl__lease_config *lc,
                             const char *path, int line, size_t errors_before);

/* ---- config_identity.c ---- */
void sl__config_identity(sl__config_parser *p, const char *path);
void sl__config_exempt(sl__config_parser *p, const char *path);
/* At the end: names across sections (rules -> policies, tiers, exempt.tiers),
 * then the key file (only when nothing else is wrong). */
void sl__config_check_identity(sl__config_parser *p);
/* Frees what the identity sections own in c (not c). */
void sl__config_free_identity(sl__config *c);
/* A name as policies have them: [a-z0-9_.-], 1 to 63 bytes. False after
 * reporting at line/path. */
bool sl__config_check_name(sl__config_parser *p, int line, const char *path, const char *s,
                           size_t n);
/* A method or a list of methods, OR-ed into *mask. */
void sl__config_methods(sl__config_parser *p, const char *path, unsigned *mask);
/* A path pattern into out (SL__PATTERN_MAX + 1 bytes; unchanged when refused). */
void sl__config_pattern(sl__config_parser *p, const char *path, char *out);

/* ---- config_rules.c ---- */
void sl__config_tiers(sl__config_parser *p, const char *path);
void sl__config_costs(sl__config_parser *p, const char *path);
void sl__config_rules(sl__config_parser *p, const char *path);

#endif
