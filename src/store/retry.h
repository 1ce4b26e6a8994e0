/* retry.h: retry budgets as the stores see them (docs/protection.md
 * "Retry budget"): one policy's budget (sl__retry_limit: ratio, min_retries,
 * window) and one operation on it (sl__retry_call: count a first attempt of
 * a key, or decide one of its retries), behind the store interface's
 * `retry` operation (store.h), with a decision's completion contract: done
 * is called exactly once, maybe before the store returns (the memory store
 * always does), and under store.h's rule: the operation completes no call
 * but its own (its done may start the request's decision: retry_stage.c).
 *
 * - memory store and batched mode (sl__memory_retry): the limit's own
 *   sl_retry (sluice/retry.h), inline; per server in batched mode;
 * - Redis store (retry_redis.c): one retry.lua call per operation on a
 *   hash of the window's 10 slots per key, exact for a fleet, with the
 *   limit's fail mode when Redis fails: open (the retry passes), closed
 *   (refused until the breaker lets a probe through), local (the limit's
 *   fallback budget, min_retries / expected_instances). */
#ifndef SLUICE_STORE_RETRY_H
#define SLUICE_STORE_RETRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/error.h"
#include "sluice/retry.h"
#include "store/store.h"

/* One policy's budget. Built with the policy (policy.c), which keeps it
 * alive while calls use it. */
typedef struct sl__retry_limit {
    const char *name;         /* the policy's name: the Redis key namespace */
    sl_retry_options opts;    /* ratio_ppm, min_retries, window */
    sl__fail_mode on_failure; /* the Redis store */
    sl_retry *mem;            /* the memory store's (and batched mode's) budget */
    sl_retry *fallback;       /* the Redis store's local fail mode, or NULL */
    int64_t fallback_min;     /* its min_retries: min_retries / expected_instances */
    /* counters (/metrics, /v1/stats) */
    atomic_uint_fast64_t firsts, allowed, refused;
    atomic_uint_fast64_t from[SL__FROM_COUNT]; /* retries decided, by origin */
} sl__retry_limit;

typedef struct sl__retry_call sl__retry_call;
typedef void (*sl__retry_done_fn)(sl__retry_call *c);

struct sl__retry_call {
    /* in */
    sl__retry_limit *limit;
    const char *key; /* lives until done */
    size_t keylen;
    bool retry; /* false: a first attempt (always passes, counted) */
    int64_t now;
    sl__retry_done_fn done;
    void *arg;
    /* out */
    int rc;              /* 0, SL_EKEY, SL_ENOMEM */
    sl_retry_decision d; /* allowed, firsts, retries, budget, retry_after (ns, -1) */
    sl__store_from from; /* SL__FROM_REDIS (the store itself), or the fail mode that answered */
};

/* Starts c on store s (done exactly once). A store without the operation
 * admits and counts nothing (SL_EINVAL, allowed). */
static inline void sl__store_retry(sl__store *s, sl__retry_call *c) {
    if (s->ops->retry) {
        s->ops->retry(s, c);
        return;
    }
    c->rc = SL_EINVAL;
    c->d = (sl_retry_decision){.allowed = true};
    c->from = SL__FROM_REDIS;
    c->done(c);
}

/* The memory store's: c->limit->mem, inline. */
void sl__memory_retry(sl__store *s, sl__retry_call *c);

/* The Redis store's (retry_redis.c), on its worker's loop; done later, or
 * at once when Redis cannot be called (no connection, the breaker open, no
 * memory): one script call per operation that carries only c, so it is
 * only its own call that completes (store.h's rule). */
void sl__redis_retry(sl__store *s, sl__retry_call *c);

#define SL__RETRY_NS_MAX 80 /* a policy name (63) and "~retry" */

/* Counts the outcome of a finished call in its limit's counters. */
void sl__retry_count(sl__retry_call *c);

/* The Redis script, for tests: its source. Called as
 *   EVALSHA sha 1 <key> <retry 0|1> <ratio_ppm> <min_retries> <slot_us> <now_us: 0 = TIME>
 * and answers [allowed 0/1, F, R, retry_after_us (-1: never by itself)]. */
const char *sl__retry_script_source(void);

#endif
