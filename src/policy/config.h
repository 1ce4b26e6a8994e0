/* config.h: the sluiced configuration model (DESIGN.md section 2) and its
 * YAML loader. Loading never aborts: every problem is reported as
 * "file:line: field: message" and the load fails as a whole. The embedded
 * default is examples/sluice.yaml, compiled in at build time. */
#ifndef SLUICE_POLICY_CONFIG_H
#define SLUICE_POLICY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/identity.h"
#include "store/redis_config.h"
#include "util/log.h"
#include "sluice/concurrency.h"
#include "sluice/limit.h"
#include "sluice/ramp.h"

#define SL__POLICY_NAME_MAX     63 /* [a-z0-9_.-]+ */
#define SL__CONFIG_MAX_POLICIES 1024
#define SL__CONFIG_MAX_ERRORS   64
#define SL__CONFIG_MAX_BYTES    (4u << 20) /* a config file larger than this is refused */

/* Settings given as words and checked once, at load; the request path
 * compares these, never strings. */
typedef enum sl__store_type { SL__STORE_MEMORY = 0, SL__STORE_REDIS = 1 } sl__store_type;
/* A policy's or lease's on_failure: not given (0: the store's
 * store.redis.on_failure), or one sl__fail_mode (sl__config_fail_mode). */
typedef enum sl__fail_setting {
    SL__FAIL_INHERIT = 0,
    SL__FAIL_SET_OPEN = 1 + SL__FAIL_OPEN,
    SL__FAIL_SET_CLOSED = 1 + SL__FAIL_CLOSED,
    SL__FAIL_SET_LOCAL = 1 + SL__FAIL_LOCAL
} sl__fail_setting;

typedef struct sl__listen_config {
    bool enabled;  /* false for "off" */
    char host[64]; /* numeric IPv4 or IPv6 address (no brackets), e.g. "127.0.0.1", "::1" */
    uint16_t port; /* 0 = any free port (tests) */
} sl__listen_config;

/* A policy's `graphql:` block (config_graphql.c, docs/graphql.md): how
 * POST /v1/graphql turns a query into points charged to the policy. */
#define SL__GQL_POINTS_MAX INT64_C(1000000000000) /* divisor and max_cost: at most 10^12 */
typedef struct sl__policy_graphql {
    bool configured;       /* the block was given (else the defaults below) */
    uint8_t scheme;        /* sl_gql_scheme: 0 objects (default), 1 github */
    uint64_t divisor;      /* 0: the scheme's default (objects 1, github 100) */
    uint64_t default_page; /* page size without first/last (default 100) */
    uint64_t max_cost;     /* points above which a query is refused (0: none) */
} sl__policy_graphql;

#define SL__HOLD_WEIGHTS_MAX 8          /* tiers a policy's hold_weights: names */
#define SL__HOLD_WEIGHT_MAX  (1u << 20) /* = SL_FAIRQ_WEIGHT_MAX */

typedef struct sl__policy_config {
    char name[SL__POLICY_NAME_MAX + 1];
    sl_params params; /* algorithm, rate, burst, flags: SL_COUNT_REJECTED, SL_START_EMPTY.
                         Windows get burst 0 (a configured burst is ignored). With
                         "start: empty" the loader leaves params.origin 0: the server
                         sets it to the moment it creates the policy's table. */
    bool shadow;      /* decide, count and log, but always allow */
    int line;         /* line of the policy in its file (for messages) */
    sl__fail_setting on_failure; /* open, closed, local, or inherit store.redis.on_failure */
    bool quota;       /* declared under quotas: (a fixed_window of `limit` per day or month) */
    uint8_t calendar; /* SL__CALENDAR_MONTH: windows are calendar months (UTC), see policy.h */
    sl__policy_graphql graphql; /* POST /v1/graphql's cost scheme for this policy */
    /* ramp_up: (sluice/ramp.h, docs/protection.md): duration 0 = none */
    sl_ramp ramp;
    int64_t hold; /* leaky_queue: GET /v1/auth holds an allowed answer until its release time
                     when the delay is at most this (ns, 1 ms..SL__HOLD_MAX), refuses it beyond;
                     0: never holds (the delay is only told). docs/protection.md */
    int64_t hold_per_tenant; /* with hold: answers of one tenant held in one queue (its key)
                                at most, 1..SL__HOLD_PER_TENANT_MAX; 0: SL__HOLD_PER_TENANT */
    /* with hold: the fair queue's weight of a tier's tenants (by tier name, checked
       against tiers: at load); tenants of other tiers, or none, weigh 1 */
    struct sl__hold_weight {
        char tier[SL__POLICY_NAME_MAX + 1];
        uint32_t weight; /* 1..SL__HOLD_WEIGHT_MAX */
        int line;
    } hold_weights[SL__HOLD_WEIGHTS_MAX];
    uint8_t nhold_weights;
    /* retry_budget: (sluice/retry.h, docs/protection.md "Retry budget"): requests marked as
       retries by `header` (a value >= 1) pass only while R + 1 <= min_retries +
       floor(F x ratio) over the window; window 0 = none */
    struct sl__retry_budget_config {
        int64_t ratio_ppm;   /* 0..1000000; default 10 % */
        int64_t min_retries; /* default SL__RETRY_MIN_DEFAULT */
        int64_t window;      /* ns, whole ms, 10 ms..24 h; default 10 s; 0: no budget */
        char header[64];     /* default Retry-Attempt */
    } retry;
} sl__policy_config;

#define SL__RETRY_MIN_DEFAULT 10 /* retry_budget.min_retries per window */

#define SL__HOLD_MAX            (INT64_C(60) * 1000000000) /* 1 min: below the default idle_timeout */
#define SL__HOLD_PER_TENANT     100                        /* hold_per_tenant's default */
#define SL__HOLD_PER_TENANT_MAX 1000000

/* A concurrency limit (`algorithm: concurrency` under policies:,
 * docs/protection.md): at most `limit` leases per key held at once, each
 * living `lease` ns unless released or renewed. Kept apart from the rate
 * policies (a policy name is either), so nothing that decides a rate
 * (rules, tiers, /v1/check) ever sees one. */
#define SL__LEASE_DEFAULT (INT64_C(30) * 1000000000)    /* 30 s */
#define SL__LEASE_MAX     (INT64_C(86400) * 1000000000) /* 24 h = SL_CONCURRENCY_LEASE_MAX */
typedef struct sl__lease_config {
    char name[SL__POLICY_NAME_MAX + 1];
    int64_t limit;               /* 1..SL_CONCURRENCY_MAX */
    int64_t lease;               /* ns, whole ms, 1 ms..24 h; default SL__LEASE_DEFAULT */
    sl__fail_setting on_failure; /* open, closed, local, or store.redis.on_failure */
    int line;
    /* adaptive: true (sluice/adaptive.h): limit is the initial limit, which then
       follows the latencies reported at release, within [min_limit, max_limit] */
    bool adaptive;
    int64_t min_limit, max_limit;
} sl__lease_config;

/* ---- identity, rules, tiers, quotas, costs, exemptions (docs/identity.md) ---- */

#define SL__CALENDAR_NONE  0
#define SL__CALENDAR_MONTH 1

#define SL__CONFIG_MAX_CIDRS  1024 /* per list: trusted proxies, exempt.cidrs */
#define SL__CONFIG_MAX_TIERS  64
#define SL__CONFIG_MAX_RULES  256
#define SL__CONFIG_MAX_COSTS  256
#define SL__CONFIG_MAX_EXEMPT 64 /* exempt.paths */
#define SL__RULE_MAX_LIMITS   16 /* = SL_CHECK_MAX: one request checks at most this many */
#define SL__LIMIT_MAX_SOURCES 4  /* parts of one composite key (by: [api_key, route]) */
#define SL__PATTERN_MAX       255
#define SL__HEADER_NAME_MAX   63

/* Methods a rule or cost entry matches (a bit each; 0 = any method). */
#define SL__METHOD_GET     0x01u
#define SL__METHOD_HEAD    0x02u
#define SL__METHOD_POST    0x04u
#define SL__METHOD_PUT     0x08u
#define SL__METHOD_PATCH   0x10u
#define SL__METHOD_DELETE  0x20u
#define SL__METHOD_OPTIONS 0x40u

/* Where a limit's key comes from. */
typedef enum sl__key_source {
    SL__SRC_API_KEY = 1, /* the validated API key */
    SL__SRC_ORG,         /* the key's organisation (third column of the key file) */
    SL__SRC_IP,          /* the client address, by prefix (identity.ipv4_prefix / ipv6_prefix) */
    SL__SRC_ROUTE,       /* the rule (one counter per rule) */
    SL__SRC_HEADER,      /* the value of a request header */
    SL__SRC_GLOBAL       /* one key for everyone */
} sl__key_source;

/* A request pattern: methods and a path. The path is "" (any), exact
 * ("/login"), a subtree ("/api/" followed by a star: /api and everything
 * under it) or a prefix ("/api" followed by a star). */
typedef struct sl__route_match {
    unsigned methods;
    char path[SL__PATTERN_MAX + 1];
} sl__route_match;

typedef struct sl__limit_config {
    char policy[SL__POLICY_NAME_MAX + 1]; /* a policy or quota */
    uint8_t by[SL__LIMIT_MAX_SOURCES];    /* sl__key_source, in order */
    unsigned nby;
    char header[SL__HEADER_NAME_MAX + 1]; /* for SL__SRC_HEADER (one per limit) */
    int64_t cost; /* -1: the request's cost (costs:); SL__COST_GRAPHQL: the query's (graphql:) */
    int line;
} sl__limit_config;

/* A limit's `cost: graphql`: the points of the GraphQL query of POST
 * /v1/graphql, costed with its rule's graphql: block (docs/graphql.md). */
#define SL__COST_GRAPHQL INT64_C(-2)

typedef struct sl__rule_config {
    char name[SL__POLICY_NAME_MAX + 1];
    sl__route_match match;
    bool shadow;  /* this rule's limits decide and count, but never refuse */
    int priority; /* priority: (sluice/shed.h's sl_priority) of its requests, or -1: the
                     shedding header's (docs/protection.md) */
    sl__policy_graphql graphql; /* how its `cost: graphql` limits cost a query */
    sl__limit_config limits[SL__RULE_MAX_LIMITS];
    unsigned nlimits;
    int line;
} sl__rule_config;

typedef struct sl__cost_config {
    sl__route_match match;
    int64_t cost;
    int line;
} sl__cost_config;

/* One tier's values for one policy (rate, burst) or quota (limit). */
typedef struct sl__tier_override {
    char policy[SL__POLICY_NAME_MAX + 1];
    sl_rate rate;
    int64_t burst, limit;
    bool have_rate, have_burst, have_limit;
    int line;
} sl__tier_override;

typedef struct sl__tier_config {
    char name[SL__POLICY_NAME_MAX + 1];
    sl__tier_override *overrides;
    size_t noverrides;
    int line;
} sl__tier_config;

struct sl__apikeys;

typedef struct sl__identity_config {
    sl__cidr *trusted; /* proxies whose forwarded entries are believed */
    size_t ntrusted;
    sl__fwd_kind forwarded;            /* which header carries the chain */
    unsigned ipv4_prefix, ipv6_prefix; /* bits a client address is counted by: 32, 64 */
    char client_ip_header[SL__HEADER_NAME_MAX + 1]; /* /v1/auth: the address nginx saw */
    char method_header[SL__HEADER_NAME_MAX + 1];    /* /v1/auth: the original method */
    char uri_header[SL__HEADER_NAME_MAX + 1];       /* /v1/auth: the original URI */
    char key_header[SL__HEADER_NAME_MAX + 1];       /* "" = off */
    bool key_bearer;                                /* also Authorization: Bearer KEY */
    char key_query[SL__HEADER_NAME_MAX + 1];        /* query parameter, "" = off */
    bool key_required;                              /* no key at all: 401 */
    char key_file[512];                             /* as written ("" = no keys) */
    int key_file_line;
    struct sl__apikeys *keys; /* loaded with the config; NULL without a file */
} sl__identity_config;

typedef struct sl__exempt_config {
    sl__route_match paths[SL__CONFIG_MAX_EXEMPT]; /* health checks: no key, no limit */
    size_t npaths;
    sl__cidr *cidrs; /* internal networks (the client address after the proxy walk) */
    size_t ncidrs;
    uint64_t tiers; /* bit i: keys of tier i skip every limit (admin keys) */
} sl__exempt_config;

typedef struct sl__limits_config {
    size_t max_header_bytes;   /* HTTP request line + headers; 431 beyond. default 8 KiB */
    size_t max_body_bytes;     /* HTTP body; 413 beyond. default 64 KiB */
    size_t max_resp_frame;     /* one RESP command (all its bytes); error beyond. default 64 KiB */
    unsigned max_connections;  /* per process; new ones are closed at once beyond. default 10000 */
    int64_t idle_timeout;      /* ns without a byte from the client; 408 / close. default 60 s */
    int64_t header_timeout;    /* ns from the first byte of an HTTP request to its last; 408.
                                  gRPC: the preface, each frame, each stream (HEADERS to
                                  END_STREAM). default 10 s */
    int64_t command_timeout;   /* ns from the first byte of a RESP command to its last; error
                                  and close. default 10 s */
    size_t max_pending_output; /* answers queued for one connection before its input is no
                                  longer read. default 1 MiB */
    uint64_t max_pending_output_total; /* the same, all connections of the process: beyond it,
                                          the connections with the most queued stop being read.
                                          default 64 MiB */
    int64_t drain_timeout; /* ns SIGTERM gives the requests in flight and the answers queued
                              before the last connections are closed. default 10 s */
    size_t max_held;       /* answers held (a policy's hold:) per worker; beyond: refused at once.
                              default 1000. Read when a worker starts */
} sl__limits_config;

/* Who may ask for a reload over HTTP (POST /v1/reload); SIGHUP always can.
 * docs/configuration.md, `admin`. */
#define SL__ADMIN_TOKEN_MAX 256
enum {
    SL__RELOAD_LOOPBACK = 0, /* default: only clients connected from 127.0.0.0/8 or ::1 */
    SL__RELOAD_OFF,          /* never: 403 */
    SL__RELOAD_TOKEN         /* any client with Authorization: Bearer <reload_token> */
};
/* Who may load the dashboard, GET /ui/ (docs/operations.md). */
enum {
    SL__UI_OFF = 0,  /* default: 404 */
    SL__UI_LOOPBACK, /* only clients connected from 127.0.0.0/8 or ::1 */
    SL__UI_ON        /* any client of the HTTP listener */
};
typedef struct sl__admin_config {
    uint8_t reload;                             /* SL__RELOAD_* */
    uint8_t ui;                                 /* SL__UI_* */
    char reload_token[SL__ADMIN_TOKEN_MAX + 1]; /* with SL__RELOAD_TOKEN, else "" */
} sl__admin_config;

struct sl__domain_rules;

/* `shedding:` (docs/protection.md): one capacity for the whole server,
 * shared by every /v1/check by priority (sluice/shed.h). */
#define SL__SHED_HEADER_MAX 64
typedef struct sl__shed_config {
    bool enabled;
    sl_rate rate;                     /* the capacity's refill */
    int64_t burst;                    /* its size */
    int64_t reserve_critical;         /* tokens only critical requests take */
    int64_t reserve_default;          /* tokens only critical and default requests take */
    char header[SL__SHED_HEADER_MAX]; /* the request header with the priority; default X-Priority */
    bool fleet;                       /* scope: fleet (one capacity in Redis); else process */
    sl__fail_setting on_failure; /* fleet, Redis failed: open | closed | local, or the store's */
    int line, scope_line;        /* of shedding: and its scope: (messages) */
} sl__shed_config;

/* A limit's on_failure, or `inherit` (the store's store.redis.on_failure)
 * when it is not set. */
sl__fail_mode sl__config_fail_mode(sl__fail_setting on_failure, sl__fail_mode inherit);

typedef struct sl__config {
    char source[256]; /* the file name, or "<embedded default>" */
    sl__listen_config http, grpc, resp;
    unsigned workers;          /* 0 = "auto": one per core */
    sl__store_type store_type; /* store.type: memory (default) or redis */
    size_t max_memory;         /* store.max_memory: cap of each policy's table, bytes */
    sl__redis_config redis;    /* used when store_type is SL__STORE_REDIS */
    sl__limits_config limits;
    sl__log_level log_level; /* log_level (default info) */
    /* `domains:` (envoyproxy/ratelimit rule files, policy/domains.h): the path as resolved
       against the config file's directory ("" = none), and the rules loaded and checked
       with the config (NULL = none; freed by sl__config_free) */
    char domains[1024];
    int domains_line; /* of the domains: key, for messages */
    struct sl__domain_rules *domain_rules;
    sl__policy_config *policies; /* quotas: included, with quota = true */
    size_t npolicies;
    sl__lease_config *leases; /* concurrency limits (policies with algorithm: concurrency) */
    size_t nleases;
    /* who is counted, and by which limits (docs/identity.md) */
    sl__identity_config identity;
    sl__tier_config *tiers;
    size_t ntiers;
    sl__rule_config *rules;
    size_t nrules;
    sl__cost_config *costs;
    size_t ncosts;
    sl__exempt_config exempt;
    bool shadow;              /* every policy decides, counts and logs, but allows */
    bool quota_mode;          /* every Envoy rule limit is in quota mode (docs/envoy.md) */
    bool charge_refused_hits; /* Envoy rules charge refused hits as the peer (envoy.md) */
    sl__shed_config shedding; /* load shedding by priority; enabled false: none */
    sl__admin_config admin;
} sl__config;

typedef struct sl__config_errors {
    size_t n;                             /* errors found (may exceed the stored ones) */
    char msg[SL__CONFIG_MAX_ERRORS][256]; /* "file:line: field: message" */
} sl__config_errors;

/* Parses YAML text. `source` names it in messages. Returns 0 and *out (free
 * with sl__config_free), or with errs filled (*out NULL) SL_EPARSE (the text
 * has errors), SL_ENOMEM, or SL_EINVAL (no text, no out, or over
 * SL__CONFIG_MAX_BYTES; a file that cannot be read, for sl__config_load). */
int sl__config_parse(const char *text, size_t len, const char *source, sl__config **out,
                     sl__config_errors *errs);

/* Reads and parses a file (at most SL__CONFIG_MAX_BYTES). Same contract. */
int sl__config_load(const char *path, sl__config **out, sl__config_errors *errs);

/* The embedded default config (the text of examples/sluice.yaml). */
int sl__config_load_default(sl__config **out, sl__config_errors *errs);
extern const char sl__default_config_text[];

void sl__config_free(sl__config *c);

/* The policy named `name` (len bytes), or NULL. */
const sl__policy_config *sl__config_policy(const sl__config *c, const char *name, size_t len);
/* The concurrency limit named `name` (len bytes), or NULL (config_leases.c). */
const sl__lease_config *sl__config_lease(const sl__config *c, const char *name, size_t len);

/* Tier variant `o` of tier t: the base policy o->policy with the tier's
 * rate, burst (buckets only) or limit, named "policy:tier", at o's line.
 * Returns 0, or -1 if there is no such policy or the name is too long (the
 * loader refuses both). */
int sl__config_tier_variant(const sl__config *c, const sl__tier_config *t,
                            const sl__tier_override *o, sl__policy_config *out);

/* Whether the store of c->store_type can decide every policy and tier
 * variant (the Redis store: whole microseconds, exact doubles). Appends
 * "file:line: ..." to errs (not reset) and returns -1 if not, else 0. The
 * loader runs it; a reload runs it again after putting the running store's
 * type in place (the store is fixed at start). */
int sl__config_check_store(const sl__config *c, sl__config_errors *errs);

/* The index of the tier named `name` (len bytes) in c->tiers, or -1. */
int sl__config_tier(const sl__config *c, const char *name, size_t len);

#endif
