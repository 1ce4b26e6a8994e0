/* policy.h: the running policies. A policy set is built from a config; a
 * reload builds a new set that reuses the policy objects (and so the table
 * state) of every policy whose parameters did not change. Sets and policies
 * are reference counted so a worker can finish a request on the old set
 * while a reload swaps in the new one.
 *
 * Besides the configured policies and quotas, a set holds one policy per
 * tier override ("api:pro": the policy `api` with the rate and burst of tier
 * `pro`, its own table), the compiled request rules (rules.h) and the API key
 * table they use.
 *
 * Calendar-month quotas (SL__CALENDAR_MONTH): the table is a fixed window of
 * 31 days on a calendar clock that maps month m of UTC time to
 * [m * 31d, m * 31d + length of m): a window is exactly a calendar month,
 * time inside a month runs at the real rate, and a shorter month's unused
 * days are skipped at its end (retry and reset times are corrected for
 * them); store/memory.h decides them.
 *
 * Deciding is the engine's (decide.h): a request's uses of policies
 * (sl__policy_use) go into one call. */
#ifndef SLUICE_POLICY_POLICY_H
#define SLUICE_POLICY_POLICY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/topk.h"
#include "policy/config.h"
#include "policy/decide.h"
#include "sluice/shed.h"
#include "sluice/table.h"
#include "store/memory.h"

#define SL__POLICY_RATE_TEXT 48 /* "N/P" of any rate, or "N/month", and a NUL */

typedef struct sl__policy {
    /* first: the policy as the decision engine sees it (decide.h): its
       table, its sketch of rejected keys, its counters, its shadow flag (cfg.shadow
       or the config's global shadow, as of the latest reload: may change
       without a new table), and for the Redis store its fail mode, local
       fallback table (limit / expected_instances; NULL unless on_failure
       is local) and how often each fail mode answered */
    sl__decide_limit lim;
    sl__policy_config cfg; /* a tier variant's name is "policy:tier" */
    atomic_int refs;
    size_t base_len;                      /* cfg.name[0..base_len): the name as configured */
    char rate_text[SL__POLICY_RATE_TEXT]; /* sl__policy_rate_format of cfg, made once */
    /* made by sl__policy_set_create for every answer (a policy made by hand,
       zeroed, has neither): strlen of cfg.name and rate_text, and whether
       both are plain text (text_plain: bytes 0x20-0x7e but '"' and '\\',
       written as they are in quoted strings, HTTP's RateLimit fields); and
       sl__policy_quota's q and w, the same at any time but in calendar months */
    size_t name_len, rate_len;
    bool text_plain, quota_known;
    uint64_t quota_q, quota_w;
    /* POST /v1/graphql's outcomes for this policy (SL__GQL_RESULT_*) and the
       points its allowed queries were charged (/metrics) */
    atomic_uint_fast64_t gql[5];
    atomic_uint_fast64_t gql_points;
    /* /v1/check requests shed by the server's capacity (shedding:), by
       priority (sluice/shed.h: SL_PRIORITY_*) */
    atomic_uint_fast64_t shed[SL_PRIORITIES];
    /* ramp_up: cfg.params in units (sluice/ramp.h), the store's params */
    sl_params unit;
    /* retry_budget: (store/retry.h), or NULL */
    struct sl__retry_limit *retry;
} sl__policy;

enum {
    SL__GQL_RESULT_ALLOWED,
    SL__GQL_RESULT_LIMITED,
    SL__GQL_RESULT_BAD_QUERY,
    SL__GQL_RESULT_TOO_COSTLY,
    SL__GQL_RESULT_TOO_LARGE,
    SL__GQL_RESULTS
};

typedef struct sl__policy_set sl__policy_set;
struct sl__rules;

/* Builds the set for cfg; reuses policies of `prev` (may be NULL) with the
 * same name and parameters. New tables of `start: empty` policies start
 * empty at `now`. Compiles the rules (rules.h) against the new policies and
 * takes a reference to cfg's API key table. Returns 0, or a negative SL_E*
 * code (SL_ENOMEM, SL_EINVAL, or what a policy's limit says) with a message
 * in err. */
int sl__policy_set_create(const sl__config *cfg, sl__policy_set *prev, int64_t now,
                          sl__policy_set **out, char *err, size_t errlen);
void sl__policy_set_retain(sl__policy_set *s);
void sl__policy_set_release(sl__policy_set *s);

size_t sl__policy_set_count(const sl__policy_set *s);
sl__policy *sl__policy_set_at(const sl__policy_set *s, size_t i);
sl__policy *sl__policy_find(const sl__policy_set *s, const char *name, size_t len);

/* How many of s's policies (tier variants included) have ramp_up. */
size_t sl__policy_set_ramped(const sl__policy_set *s);
/* The compiled request rules (never NULL for a built set; a config without
 * rules gives rules that match nothing). Lives as long as the set. */
const struct sl__rules *sl__policy_set_rules(const sl__policy_set *s);
/* The server's load-shedding capacity (the config's shedding:;
 * sluice/shed.h; a call takes it with sl__decide_call_shed) and the header a
 * request names its priority in, or NULL when shedding is off. Lives as
 * long as s. */
sl__decide_capacity *sl__policy_set_shed(const sl__policy_set *s, const char **header);
/* The concurrency limits (lease_set.h; never NULL for a built set). Live
 * as long as the set. */
const struct sl__lease_set *sl__policy_set_leases(const sl__policy_set *s);

/* One use of a policy in a rules answer (rules.h): the limit, its key and
 * cost, and what the engine said (sl__decide_item's fields of that name). */
typedef struct sl__policy_item {
    sl__policy *policy;
    const void *key; /* table key; lives for the call */
    size_t keylen;
    int64_t cost;
    bool shadow;          /* in: a dry run for this use (a shadow rule), besides the policy's own */
    sl_decision decision; /* out (when decided) */
    bool decided;         /* out: decision is meaningful */
    bool shadowed;        /* out: refused, but allowed because shadow */
} sl__policy_item;

typedef sl__decide_label_fn sl__policy_label_fn;

/* The policy a limit of the engine belongs to (for limits that are a
 * policy's lim). */
static inline sl__policy *sl__policy_of(sl__decide_limit *l) {
    return (sl__policy *)(void *)l; /* lim is the first member */
}

/* The engine's item for one use of p (decide.h). */
static inline sl__decide_item sl__policy_use(sl__policy *p, const void *key, size_t keylen,
                                             int64_t cost, bool shadow) {
    return (sl__decide_item){
        .limit = &p->lim, .key = key, .keylen = keylen, .cost = cost, .shadow = shadow};
}

/* What a policy says of itself in a RateLimit-Policy field, the same for
 * every protocol that writes one (/v1/check, /v1/auth): the one
 * implementation of these numbers and of this text.
 *
 * The `q` (quota units) and `w` (window, whole seconds, at least 1) of p
 * at `now`: windows N and P; buckets B and the time to refill B; calendar
 * months the length of the current month. */
void sl__policy_quota(const sl__policy *p, int64_t now, uint64_t *q, uint64_t *w);
/* The sluice-rate text of a policy config: the rate in sl_rate_format's
 * notation ("5/s", "100/10s", "3/500ms"), or "N/month" for a calendar-month
 * quota. Writes at most size - 1 bytes and a NUL (SL__POLICY_RATE_TEXT is
 * always enough); returns the length. A policy keeps its own in rate_text. */
size_t sl__policy_rate_format(const sl__policy_config *cfg, char *buf, size_t size);

/* sl__calendar_month (the calendar arithmetic): store/memory.h. */

#endif
