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
 * Calendar-month quotas (SL_CALENDAR_MONTH): the table is a fixed window of
 * 31 days on a calendar clock that maps month m of UTC time to
 * [m * 31d, m * 31d + length of m): a window is exactly a calendar month,
 * time inside a month runs at the real rate, and a shorter month's unused
 * days are skipped at its end (retry and reset times are corrected for
 * them). All users of such a table lock one of its key stripes, so that a
 * layered check can look at the quota, decide the other limits, and then
 * charge the quota without a race (see sl__policy_check_all). */
#ifndef SLUICE_POLICY_POLICY_H
#define SLUICE_POLICY_POLICY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/topk.h"
#include "policy/config.h"
#include "sluice/table.h"
#include "store/store.h"

#define SL_POLICY_STRIPES   64 /* key stripes of a calendar quota */
#define SL_POLICY_RATE_TEXT 48 /* "N/P" of any rate, or "N/month", and a NUL */

typedef struct sl_policy {
    sl_policy_config cfg; /* a tier variant's name is "policy:tier" */
    sl_table *table;
    sl__topk *top; /* heavy hitters among rejected keys */
    atomic_uint_fast64_t allowed, limited, shadow_limited;
    atomic_bool shadow; /* cfg.shadow or the config's global shadow, as of the latest reload
                           (may change without a new table) */
    atomic_int refs;
    size_t base_len;          /* cfg.name[0..base_len): the name as configured */
    pthread_mutex_t *stripes; /* SL_POLICY_STRIPES locks for calendar quotas, else NULL */
    /* the Redis store: what to do when Redis fails, the local fallback
       table (limit / expected_instances; NULL unless on_failure is local),
       and how often each fail mode answered */
    sl_fail_mode on_failure;
    sl_table *fallback;
    atomic_uint_fast64_t from[SL_FROM_COUNT];
    /* batched mode: told of every local charge, and asked whether a key owes
       the fleet (sl__policy_set_observe) */
    void (*charged)(void *ctx, const char *policy, const void *key, size_t keylen, int64_t cost);
    bool (*owes)(void *ctx, const char *policy, const void *key, size_t keylen);
    void *charged_ctx;
    int64_t owes_retry; /* ns: what a refusal for a debt says (the sync interval) */
    char rate_text[SL_POLICY_RATE_TEXT]; /* sl__policy_rate_format of cfg, made once */
} sl_policy;

typedef struct sl_policy_set sl_policy_set;
struct sl_rules;

/* Builds the set for cfg; reuses policies of `prev` (may be NULL) with the
 * same name and parameters. New tables of `start: empty` policies start
 * empty at `now`. Compiles the rules (rules.h) against the new policies and
 * takes a reference to cfg's API key table. Returns 0, or -1 with a message
 * in err. */
int sl__policy_set_create(const sl_config *cfg, sl_policy_set *prev, int64_t now,
                          sl_policy_set **out, char *err, size_t errlen);
void sl__policy_set_retain(sl_policy_set *s);
void sl__policy_set_release(sl_policy_set *s);

size_t sl__policy_set_count(const sl_policy_set *s);
sl_policy *sl__policy_set_at(const sl_policy_set *s, size_t i);
sl_policy *sl__policy_find(const sl_policy_set *s, const char *name, size_t len);

/* The compiled request rules (never NULL for a built set; a config without
 * rules gives rules that match nothing). Lives as long as the set. */
const struct sl_rules *sl__policy_set_rules(const sl_policy_set *s);

/* Decides one request: the table's decision, then shadow mode (a limited
 * request of a shadow policy is allowed and *shadowed set), outcome counters
 * and the rejected-keys sketch. Returns sl_table_check's code. */
int sl__policy_check(sl_policy *p, const char *key, size_t keylen, int64_t cost, int64_t now,
                     sl_decision *d, bool *shadowed);

/* One limit of a layered check. */
typedef struct sl_policy_item {
    sl_policy *policy;
    const void *key; /* table key; lives for the call */
    size_t keylen;
    int64_t cost;
    bool shadow;          /* in: a dry run for this use (a shadow rule), besides the policy's own */
    sl_decision decision; /* out (when decided) */
    bool decided;         /* out: decision is meaningful */
    bool shadowed;        /* out: refused, but allowed because shadow */
} sl_policy_item;

/* Writes a human label for item i's key (for /v1/top; no API key in clear)
 * into buf (size bytes) and returns its length. Called only for refusals. */
typedef size_t (*sl_policy_label_fn)(void *ctx, size_t i, char *buf, size_t size);

/* Decides n (at most SL_CHECK_MAX) limits as one request: it passes only if
 * every enforced limit passes, and then all of them are charged; if one
 * refuses, none is charged (tables counting rejections excepted). Shadow
 * limits (the item's or the policy's flag) are decided after the enforced
 * ones passed, as their own all-or-nothing group, and never refuse: a
 * refusal among them is counted as shadow_limited, and nothing of that group
 * is charged. When the enforced group refuses, shadow limits are only looked
 * at (cost 0) for their state. Counters and the rejected-keys sketch are
 * updated as in sl__policy_check (label gives the sketch's key; NULL: the
 * table key).
 *
 * When the request is refused, an allowed decision of another limit says
 * what that limit has now (nothing was charged).
 *
 * *refused is the index of the limit that refused (the first one), or n.
 * Returns 0, or an error (SL_ECOST: that item's cost can never pass; others:
 * a table error), with *refused naming the item; nothing is charged then. */
int sl__policy_check_all(sl_policy_item *items, size_t n, int64_t now, sl_policy_label_fn label,
                         void *ctx, size_t *refused);

/* ---- batched mode (store.redis.sync: batched, store/batch.h) ------------------ */

/* Every charge the set's policies make from now on (a request allowed with
 * cost > 0, by sl__policy_check or sl__policy_check_all) is reported to
 * `charged`; and a key for which `owes` says true is refused (retry_after
 * `retry`) without looking at its table. Call before the set is handed to
 * the workers. */
void sl__policy_set_observe(sl_policy_set *s,
                            void (*charged)(void *ctx, const char *policy, const void *key,
                                            size_t keylen, int64_t cost),
                            bool (*owes_fn)(void *ctx, const char *policy, const void *key,
                                            size_t keylen),
                            void *ctx, int64_t retry);

/* Charges n units that other servers consumed to p's state of key, as far
 * as the state can take them now (never beyond empty). Returns the rest:
 * the debt to carry, for every algorithm (a window's debt is paid from the
 * next windows, as a bucket's from its refill), at most `others` x the
 * limit (others: the other servers there may be, at least 1), so that a
 * wrong count cannot lock a key for long. */
int64_t sl__policy_charge_shared(sl_policy *p, const char *key, size_t keylen, int64_t n,
                                 int64_t now, unsigned others);

/* ---- deciding in Redis (store.type: redis) ------------------------------------

 * The same layered check as sl__policy_check_all, decided by the store
 * asynchronously: a call copies the items' keys (and their /v1/top labels),
 * holds a reference to the policy set, and calls `done` exactly once, maybe
 * before sl__policy_call_start returns. The outcome fields mean what
 * sl__policy_check_all's do. */
typedef struct sl_policy_call sl_policy_call;
typedef void (*sl_policy_call_fn)(sl_policy_call *pc);

struct sl_policy_call {
    sl_policy_item items[SL_CHECK_MAX]; /* keys point into the call */
    size_t n;
    int rc;               /* out */
    size_t refused;       /* out: the refusing item, or n */
    sl_store_from from;   /* out: where the decision came from */
    int64_t retry_closed; /* out, SL_FROM_CLOSED: ns until Redis is tried again */
    sl_policy_call_fn done;
    void *arg;
    /* internal */
    sl_policy_set *set;
    sl_store_call *sc;
    char *labels[SL_CHECK_MAX];
    size_t label_len[SL_CHECK_MAX];
};

/* Copies items[0..n) (their keys, and their labels when label is given).
 * NULL: out of memory or n > SL_CHECK_MAX. */
sl_policy_call *sl__policy_call_new(sl_policy_set *set, const sl_policy_item *items, size_t n,
                                    sl_policy_label_fn label, void *ctx);
void sl__policy_call_start(sl_store_worker *sw, sl_policy_call *pc, int64_t now);
void sl__policy_call_free(sl_policy_call *pc);

/* What a policy says of itself in a RateLimit-Policy field, the same for
 * every protocol that writes one (/v1/check, /v1/auth): the one
 * implementation of these numbers and of this text.
 *
 * The `q` (quota units) and `w` (window, whole seconds, at least 1) of p
 * at `now`: windows N and P; buckets B and the time to refill B; calendar
 * months the length of the current month. */
void sl__policy_quota(const sl_policy *p, int64_t now, uint64_t *q, uint64_t *w);
/* The sluice-rate text of a policy config: the rate in sl_rate_format's
 * notation ("5/s", "100/10s", "3/500ms"), or "N/month" for a calendar-month
 * quota. Writes at most size - 1 bytes and a NUL (SL_POLICY_RATE_TEXT is
 * always enough); returns the length. A policy keeps its own in rate_text. */
size_t sl__policy_rate_format(const sl_policy_config *cfg, char *buf, size_t size);

/* Calendar arithmetic (UTC, proleptic Gregorian), exposed for tests:
 * the month containing `now` (ns since the Unix epoch): its index (months
 * since January 1970), its start and its length in ns. */
void sl__calendar_month(int64_t now, int64_t *index, int64_t *start, int64_t *length);

#endif
