/* domains.h: envoyproxy/ratelimit rule files (the `domains:` config key): a
 * directory or one file of YAML domains with nested descriptors, loaded
 * unchanged, compiled into a lookup structure with a table per limit. A set
 * is reference counted and swapped on reload like the policy set.
 *
 * Two stages:
 * - sl__domain_rules: the rule files as read and checked (the config loader
 *   calls sl__domain_rules_load, so `--check-config` and a reload report
 *   rule-file errors as "file:line: field: message"; the config owns them).
 * - sl__domain_set: the rules compiled for matching, with one sl_table per
 *   limit, built by the server from the config (sl__domain_set_create) and
 *   shared by the workers. Deciding a request (sl__domain_prepare) is
 *   envoyproxy/ratelimit's ShouldRateLimit in the protocol-neutral structs
 *   below; gRPC and POST /json translate their messages to and from them. */
#ifndef SLUICE_POLICY_DOMAINS_H
#define SLUICE_POLICY_DOMAINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/config.h"
#include "sluice/error.h"

/* ---- rule files ------------------------------------------------------------ */

#define SL__DOMAINS_MAX_FILES     1024
#define SL__DOMAINS_MAX_FILE_SIZE (4u << 20) /* bytes of one rule file */
#define SL__DOMAINS_MAX_RULES     100000     /* descriptors in all files together */
#define SL__DOMAINS_MAX_DEPTH     16         /* nested descriptor levels */

typedef struct sl__domain_rules sl__domain_rules;

/* Reads `path`: a directory (every *.yaml and *.yml file in it, not
 * recursive, in name order, hidden files skipped) or one file. Every problem
 * is appended to errs (errs->n counts them all) as
 * "file:line: field: message". Returns SL_OK and *out (free with
 * sl__domain_rules_free); else *out NULL and SL_ENOMEM when an allocation
 * failed, SL_EINVAL for any other problem (path missing, a file too large,
 * not YAML, not valid rules). */
int sl__domain_rules_load(const char *path, sl__domain_rules **out, sl__config_errors *errs);

/* The same for one rule file given as text (tests, fuzzing); `source` names
 * it in messages. The same codes (SL_EINVAL for text over
 * SL__DOMAINS_MAX_FILE_SIZE bytes: error.h has no code of its own for it). */
int sl__domain_rules_parse(const char *text, size_t len, const char *source, sl__domain_rules **out,
                           sl__config_errors *errs);

void sl__domain_rules_free(sl__domain_rules *r);

/* Number of domains and of descriptors with a rate_limit. */
size_t sl__domain_rules_domains(const sl__domain_rules *r);
size_t sl__domain_rules_limits(const sl__domain_rules *r);

/* ---- the running set ----------------------------------------------------------- */

typedef struct sl__domain_set sl__domain_set;

/* Builds the set for cfg (empty when cfg has no domains); reuses the state of
 * unchanged limits of prev (may be NULL): same domain, same descriptor path,
 * same algorithm, rate and burst, and each remaining domain's sketch of
 * refused descriptors. The config's top-level `shadow: true` makes every
 * limit a shadow limit (sl__domain_set_shadow). Returns SL_OK and *out;
 * else *out NULL, the reason in err: SL_EINVAL for charge_refused_hits with
 * quota_mode rules, SL_ENOMEM when an allocation failed. */
int sl__domain_set_create(const sl__config *cfg, sl__domain_set *prev, int64_t now,
                          sl__domain_set **out, char *err, size_t errlen);
/* The same from rules directly (tests, fuzzing); rules may be NULL (empty).
 * SL_OK, or SL_ENOMEM with err. */
int sl__domain_set_build(const sl__domain_rules *rules, size_t max_memory, sl__domain_set *prev,
                         int64_t now, sl__domain_set **out, char *err, size_t errlen);
/* Every limit of s decides and counts but never refuses (shadow), or only
 * those with shadow_mode (false, the default). Call before s is shared. */
void sl__domain_set_shadow(sl__domain_set *s, bool shadow);
/* quota_mode for every limit of s (the config's top-level `quota_mode:
 * true`), or only for those with the descriptor key (false, the default).
 * Kept and reported by sl__domain_set_match; deciding does not read it yet
 * (docs/envoy.md). Call before s is shared. */
void sl__domain_set_quota_mode(sl__domain_set *s, bool quota_mode);

/* The rule a descriptor of domain matches (upstream's GetLimit, without
 * limit overrides): true and *out filled, or false when no rule applies
 * (unknown domain, no match, or a match at another depth). Strings live as
 * long as the set. */
typedef struct sl__domain_match {
    const char *rule;     /* upstream's stats key below the domain, as in sl__domain_rule_stats */
    const char *name;     /* rate_limit.name, or NULL */
    const char *metadata; /* the descriptor's metadata as a JSON object, or NULL */
    uint32_t requests_per_unit;
    int unit; /* SL__RLS_UNIT_*; UNKNOWN when unlimited */
    bool unlimited, shadow, quota_mode;
    bool shared; /* an entry matched a share_threshold wildcard: one counter for its values */
} sl__domain_match;
struct sl__rls_descriptor;
bool sl__domain_set_match(const sl__domain_set *s, const char *domain, size_t dlen,
                          const struct sl__rls_descriptor *q, sl__domain_match *out);

void sl__domain_set_retain(sl__domain_set *s);
void sl__domain_set_release(sl__domain_set *s);

/* ---- deciding (envoyproxy/ratelimit's ShouldRateLimit) ------------------------ */

#define SL__RLS_MAX_DESCRIPTORS   64  /* per request */
#define SL__RLS_MAX_ENTRIES       32  /* per descriptor */
#define SL__RLS_MAX_OVERRIDES     256 /* distinct (domain, limit override) tables per set */
#define SL__RLS_METADATA_MAX_KEYS 256 /* top-level keys of one answer's dynamic_metadata */

/* Response codes and units use the protobuf numbering of rls.proto. */
enum { SL__RLS_UNKNOWN = 0, SL__RLS_OK = 1, SL__RLS_OVER_LIMIT = 2 };
enum {
    SL__RLS_UNIT_UNKNOWN = 0,
    SL__RLS_UNIT_SECOND = 1,
    SL__RLS_UNIT_MINUTE = 2,
    SL__RLS_UNIT_HOUR = 3,
    SL__RLS_UNIT_DAY = 4,
    SL__RLS_UNIT_MONTH = 5,
    SL__RLS_UNIT_YEAR = 6,
    SL__RLS_UNIT_WEEK = 7
};

typedef struct sl__rls_entry {
    const char *key, *value; /* not NUL-terminated */
    size_t key_len, value_len;
} sl__rls_entry;

typedef struct sl__rls_descriptor {
    const sl__rls_entry *entries;
    size_t nentries;
    bool has_limit; /* RateLimitOverride present */
    uint32_t limit_requests_per_unit;
    int limit_unit; /* envoy.type.v3.RateLimitUnit: 1..6 */
    bool has_hits;  /* hits_addend (UInt64Value) present: it replaces the request's */
    uint64_t hits;
} sl__rls_descriptor;

typedef struct sl__rls_request {
    const char *domain;
    size_t domain_len;
    const sl__rls_descriptor *descriptors;
    size_t ndescriptors;
    uint32_t hits_addend; /* 0 means 1 */
} sl__rls_request;

/* One DescriptorStatus. has_limit: current_limit and duration_until_reset are
 * set (a rule or override matched and was checked). */
typedef struct sl__rls_status {
    int code; /* SL__RLS_OK or SL__RLS_OVER_LIMIT */
    bool has_limit;
    uint32_t requests_per_unit;
    int unit;         /* SL__RLS_UNIT_* */
    const char *name; /* rate_limit.name, NUL-terminated, or NULL; lives as long as the set */
    uint32_t limit_remaining;
    int64_t reset_seconds; /* duration_until_reset, whole seconds (rounded up) */
    /* the rule's `metadata` (a JSON object; lives as long as the set) when the
       descriptor is under its limit, else NULL: the answer's dynamic_metadata */
    const char *metadata;
    bool quota_over; /* a quota_mode descriptor over its limit in a request that passed */
} sl__rls_status;

/* Deciding a request is two steps around the decision engine (decide.h),
 * the same for every store. sl__domain_prepare validates, matches and builds
 * the keys, writing statuses[i] for descriptors[i] (the caller provides
 * ndescriptors of them) and *overall (SL__RLS_OK or SL__RLS_OVER_LIMIT). When
 * table limits apply it returns SL_OK with *call set: the engine call
 * deciding them all at once (enforced limits all or nothing: if one
 * refuses, nothing is consumed from any; shadow limits as their own group;
 * each limit's table is also its local fallback in Redis), holding the set,
 * with user_bytes for the caller (sl__domain_user). The caller sets done,
 * starts it (sl__engine_decide), and in done calls sl__domain_finish, which
 * writes every status (*n of them) and *overall, then frees the call.
 * Without *call the statuses are final. On an error (the request is
 * malformed: SL_EINVAL, gRPC INVALID_ARGUMENT; a bound was reached:
 * SL_ETOOMANY, or SL_ENOMEM, RESOURCE_EXHAUSTED; sluice/error.h) nothing
 * is consumed and *message says why (static text). `s` may be NULL (no
 * rules). Every decision is counted per limit (sl__domain_rule_stats) and
 * its refusals go to the domain's sketch. */
struct sl__decide_call;
int sl__domain_prepare(sl__domain_set *s, const sl__rls_request *req, int64_t now,
                       sl__rls_status *statuses, int *overall, const char **message,
                       size_t user_bytes, struct sl__decide_call **call);
void *sl__domain_user(struct sl__decide_call *c);
int sl__domain_finish(struct sl__decide_call *c, sl__rls_status *statuses, size_t *n, int *overall,
                      const char **message);

/* The answer's dynamic_metadata (a google.protobuf.Struct) as the JSON text
 * of one object, from the statuses written by sl__domain_prepare /
 * sl__domain_finish: "quotaModeViolations", the indexes of the quota_mode
 * descriptors over their limits in a request that passed (only when there
 * are some), then the members of each status's metadata (descriptors under
 * their limits), in descriptor order, a key already written skipped (the
 * first descriptor naming it wins; at most SL__RLS_METADATA_MAX_KEYS of
 * them, the rest left out). Returns its length with *out malloc'd
 * (free it), or 0 and *out NULL: nothing to send (or out of memory). */
size_t sl__domain_dynamic_metadata(const sl__rls_status *st, size_t n, char **out);

/* Unit names as rls.proto spells them ("SECOND", ...), or "UNKNOWN". */
const char *sl__rls_unit_name(int unit);

/* Per-limit counters, for the metrics page: every rule limit of the set,
 * then every limit override in use. i from 0 to sl__domain_set_rule_count()
 * - 1; false when i is beyond. Strings live as long as the set. */
typedef struct sl__domain_rule_stats {
    const char *domain;
    const char *rule; /* upstream's stats key below the domain: "key_value.key2" */
    uint64_t allowed, limited, shadow_limited;
    uint64_t keys; /* states held by the limit's table */
} sl__domain_rule_stats;
size_t sl__domain_set_rule_count(const sl__domain_set *s);
bool sl__domain_set_rule_stats(const sl__domain_set *s, size_t i, sl__domain_rule_stats *out);

/* The descriptors refused most often in a domain (shadow refusals
 * included), from a bounded heavy-hitters sketch per domain (64 counters,
 * kept across reloads while the domain remains): of every rule, or only of
 * the rule whose stats key (as in sl__domain_rule_stats) is `rule` (NULL:
 * all). Heaviest first, at most max. Returns how many, or SL_EINVAL (-1)
 * when s has no such domain. Rule and key are printable ASCII (other bytes shown as '?'),
 * truncated so that both fit in one sketch key. */
#define SL__DOMAIN_TOP_TEXT 128
typedef struct sl__domain_top_item {
    char rule[SL__DOMAIN_TOP_TEXT + 1]; /* NUL-terminated */
    char key[SL__DOMAIN_TOP_TEXT + 1];  /* the entries: "key=value,key=value" */
    uint64_t count, error;              /* as in core/topk.h */
} sl__domain_top_item;
long sl__domain_set_top(const sl__domain_set *s, const char *domain, size_t dlen, const char *rule,
                        size_t rlen, sl__domain_top_item *out, size_t max);

#endif
