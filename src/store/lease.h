/* lease.h: concurrency limits as the stores see them (docs/protection.md):
 * one configured limit (sl__lease_limit: at most `limit` leases per key,
 * each living `lease` ns) and one operation on it (sl__lease_call: acquire,
 * release or renew a lease of one key), decided by the store behind the
 * store interface's `lease` operation (store.h) with the same completion
 * contract as a decision: done is called exactly once, maybe before the
 * store returns (the memory store always does).
 *
 * - memory store (lease_memory.c): the limit's own sl_concurrency
 *   (sluice/concurrency.h), inline;
 * - Redis store (lease_redis.c): one script call per operation on a sorted
 *   set of lease ids by expiry per key (Stripe's concurrent-requests
 *   limiter), with the limit's fail mode when Redis fails: open (acquired,
 *   a lease Redis never knew), closed (refused until the breaker lets a
 *   probe through), local (the limit's fallback limiter, at limit /
 *   expected_instances).
 * Batched mode has no lease operation (the config refuses concurrency
 * limits with it: every server would hold the whole limit). */
#ifndef SLUICE_STORE_LEASE_H
#define SLUICE_STORE_LEASE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/concurrency.h"
#include "sluice/error.h"
#include "store/redis_config.h"
#include "store/store.h"

/* One concurrency limit. Built by its owner (policy/lease_set.h), which
 * keeps it alive while calls use it; limit, lease and on_failure may change
 * at a reload (atomics), the state stays. */
typedef struct sl__lease_limit {
    char name[64];                /* the policy's name: the Redis key namespace */
    _Atomic int64_t limit;        /* leases per key at once */
    _Atomic int64_t lease;        /* ns */
    _Atomic int on_failure;       /* sl__fail_mode */
    sl_concurrency *conc;         /* the memory store's leases */
    sl_concurrency *fallback;     /* the Redis store's local fail mode (limit / instances) */
    unsigned instances;           /* expected_instances, for the fallback's limit */
    struct sl_adaptive *adaptive; /* adaptive: true: moves `limit` (policy/lease_set.c), or NULL */
    /* counters (/metrics) */
    atomic_uint_fast64_t acquired, refused, released, unknown;
    atomic_uint_fast64_t from[SL__FROM_COUNT]; /* acquires by origin */
} sl__lease_limit;

typedef enum sl__lease_op { SL__LEASE_ACQUIRE, SL__LEASE_RELEASE, SL__LEASE_RENEW } sl__lease_op;

typedef struct sl__lease_call sl__lease_call;
typedef void (*sl__lease_done_fn)(sl__lease_call *c);

struct sl__lease_call {
    /* in */
    sl__lease_op op;
    sl__lease_limit *limit;
    const char *key; /* lives until done */
    size_t keylen;
    uint64_t id;     /* release, renew: the lease */
    int64_t latency; /* release: how long the work took (ns; 0: not said), for adaptive limits */
    int64_t now;     /* the worker's clock */
    sl__lease_done_fn done;
    void *arg;
    /* out */
    int rc;            /* 0; SL_ELEASE (release, renew: no such lease held); SL_ENOMEM; SL_EINVAL */
    sl_acquire acq;    /* acquire: the answer (times in the worker's clock) */
    sl_lease lease;    /* renew: the lease as extended */
    int64_t in_flight; /* release: leases the key holds after it (-1: unknown) */
    sl__store_from from;  /* SL__FROM_REDIS (the store itself), or the fail mode that answered */
    int64_t retry_closed; /* SL__FROM_CLOSED: ns until Redis is tried again */
    /* the store's own, while deciding */
    void *state;
};

/* Starts c on store s (done exactly once; SL_EINVAL at once when s has
 * no lease operation). */
static inline void sl__store_lease(sl__store *s, sl__lease_call *c) {
    if (s->ops->lease) {
        s->ops->lease(s, c);
        return;
    }
    c->rc = SL_EINVAL;
    c->from = SL__FROM_REDIS;
    c->done(c);
}

/* The memory store's lease operation (lease_memory.c): decides c on
 * c->limit->conc and calls done before it returns. */
void sl__memory_lease(sl__store *s, sl__lease_call *c);

/* The Redis store's (lease_redis.c), on its worker's loop; done later, or
 * at once when Redis cannot be called (no connection, the breaker open):
 * one script call per operation, so only its own call (store.h's rule). */
void sl__redis_lease(sl__store *s, sl__lease_call *c);

/* The Redis script, for tests (lease_redis.c): its source. Called as
 *   EVALSHA sha 1 <key> <op a|r|n> <limit> <lease_us> <id> <now_us: 0 = TIME>
 * and answers [ok(0/1), in_flight, ttl_us, retry_after_us]: acquire ok 1
 * with the lease's ttl, or 0 with the time until the earliest held lease
 * expires; release ok 1 when the lease was held; renew ok 1 with the new
 * ttl. */
const char *sl__lease_script_source(void);

#endif
