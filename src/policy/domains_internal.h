/* domains_internal.h (internal to src/policy/domains*.c): what the stages
 * of the rule files share. The rules as read (domains_read.c) are compiled
 * into a set (domains_set.c), which requests are matched and decided
 * against (domains.c). */
#ifndef SLUICE_POLICY_DOMAINS_INTERNAL_H
#define SLUICE_POLICY_DOMAINS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/topk.h"
#include "policy/decide.h"
#include "policy/domains.h"
#include "sluice/table.h"

#define COUNT(a)        (sizeof(a) / sizeof((a)[0]))
#define YAML_MAX_DEPTH  (2 * SL__DOMAINS_MAX_DEPTH + 8)
#define YAML_MAX_NODES  (1u << 21) /* nodes of one file */
#define FIELD_MAX       160
#define SHOW_MAX        40
#define NS_SEC          SL_NS_PER_SEC
#define KEY_STACK_BYTES 4096
#define TOP_CAPACITY    64     /* counters of a domain's refused-descriptors sketch */
#define TOP_SEP         '\x1f' /* between the rule and the descriptor in a sketch key */

/* Envoy's units (SL__RLS_UNIT_*): names, and seconds (a month is 30 days, a
 * year 365, as upstream). */
extern const char *const sl__rls_unit_names[8];
extern const int64_t sl__rls_unit_seconds[8];

/* A growable byte string. */
typedef struct str {
    char *p;
    size_t len, cap;
    bool failed;
} str;

/* Appends p[0..n) and keeps a NUL after it (on allocation failure: failed,
 * and nothing more is added). */
void sl__dstr_add(str *s, const char *p, size_t n);

/* ---- the rules as read (domains_read.c) ------------------------------------ */

typedef struct rlimit {
    bool unlimited;
    uint32_t rpu;
    int unit;   /* SL__RLS_UNIT_*; UNKNOWN when unlimited */
    char *name; /* NULL: none */
    char **replaces;
    size_t nreplaces;
    sl_algorithm algorithm; /* sluice extension; fixed_window as upstream */
    int64_t burst;          /* sluice extension; 0: requests_per_unit */
} rlimit;

typedef struct rdesc {
    char *key, *value; /* value NULL when absent or empty */
    size_t klen, vlen;
    rlimit *limit;
    bool shadow_mode, detailed_metric, value_to_metric, share_threshold;
    bool quota_mode; /* upstream's soft limit, loaded and kept (docs/envoy.md) */
    char *metadata;  /* the descriptor's `metadata` as a JSON object, or NULL */
    struct rdesc *kids;
    size_t nkids;
    int line;
} rdesc;

typedef struct rdomain {
    char *name;
    size_t len;
    char *file;
    int line;
    rdesc *descs;
    size_t n;
} rdomain;

struct sl__domain_rules {
    rdomain *d;
    size_t n, cap;
    size_t nlimits, ndescs;
};

/* ---- the compiled set (domains_set.c) -------------------------------------- */

/* The state of one limit: the engine's limit (its table, counters, fail
 * mode; decide.h). Shared by the sets of successive reloads while the limit
 * does not change. */
typedef struct lstate {
    sl__decide_limit lim; /* first */
    atomic_int refs;
    char *id; /* domain NUL rule-path NUL */
    size_t idlen;
    sl_params params; /* algorithm 0: no table (unlimited, or 0 requests per unit) */
    size_t max_memory;
    uint32_t rpu; /* for the shadow log */
    int unit;
    char rname[96]; /* the Redis keys' namespace: "rls:<domain>:<rule>" */
} lstate;

typedef struct climit {
    lstate *st;
    uint32_t rpu;
    int unit;
    int64_t period; /* ns */
    bool unlimited, shadow;
    bool quota;           /* quota_mode: kept, not yet decided on (docs/envoy.md) */
    const char *metadata; /* the descriptor's metadata as JSON, or NULL */
    const char *name;
    int name_id; /* -1: no name */
    int *replaces;
    size_t nreplaces;
} climit;

struct clevel;

typedef struct cnode {
    const char *key, *value; /* value NULL: key only */
    size_t klen, vlen;       /* a wildcard's vlen excludes a trailing '*' (its share key) */
    size_t plen;             /* a wildcard's whole pattern, '*'s included */
    bool wildcard, share;
    climit *limit;
    struct clevel *kids;
} cnode;

typedef struct clevel {
    cnode *nodes;
    size_t n;
    uint32_t *slots; /* index + 1 of non-wildcard nodes; 0 = empty */
    uint32_t mask;
    uint32_t *wild; /* wildcard nodes, in file order */
    size_t nwild;
} clevel;

/* A domain's sketch of refused descriptors, shared by successive sets. */
typedef struct dtop {
    atomic_int refs;
    sl__topk *top;
} dtop;

typedef struct cdomain {
    const char *name;
    size_t len;
    clevel top;
    dtop *refused; /* never NULL in a built set */
} cdomain;

typedef struct override {
    size_t domain;
    uint32_t rpu;
    int unit;
    lstate *st;
} override;

/* Bump allocator for everything immutable in a set. */
typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_block;

struct sl__domain_set {
    atomic_int refs;
    uint64_t seed;
    size_t max_memory;
    bool shadow;              /* the config's top-level shadow: every limit is a shadow limit */
    bool quota;               /* the config's top-level quota_mode: every limit is in quota mode */
    sl__fail_mode on_failure; /* the Redis store's, for every limit */
    unsigned limit_flags;     /* SL_COUNT_REJECTED with charge_refused_hits, else 0 */
    cdomain *domains;
    size_t ndomains;
    uint32_t *dslots;
    uint32_t dmask;
    lstate **states; /* one per rule limit */
    size_t nstates;
    arena_block *arena;
    pthread_mutex_t ov_lock;
    atomic_size_t nov;
    override ov[SL__RLS_MAX_OVERRIDES];
};

static inline uint64_t pair_hash(uint64_t seed, const char *k, size_t kl, const char *v, size_t vl,
                                 bool keyonly) {
    uint64_t h = sl__hash(k, kl, seed + keyonly);
    return keyonly ? h : sl__hash(v, vl, h);
}

/* The domain `name` of s (NULL: none, or s NULL). */
const cdomain *sl__dset_find(const sl__domain_set *s, const char *name, size_t len);

/* A limit's state (one reference), or NULL; `top` is its domain's sketch of
 * refused descriptors. */
lstate *sl__dset_lstate_new(const char *id, size_t idlen, const sl_params *p, size_t max_memory,
                            sl__fail_mode on_failure, sl__topk *top, uint32_t rpu, int unit);

/* The limit's table, created on first use (NULL: no table, or out of
 * memory). */
sl_table *sl__dset_table(lstate *st);

/* A domain limit's shadow log line (domains.c). */
void sl__dset_log_shadow(const sl__decide_limit *l, const char *label, size_t n,
                         const sl_decision *d, int64_t now);

#endif
