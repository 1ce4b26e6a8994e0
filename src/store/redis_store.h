/* redis_store.h: the Redis store (store.type: redis, exact mode) behind the
 * store interface (store.h), asynchronously on a worker's loop, with what a
 * user expects around it:
 *
 * - every decision is one script call (redis_script.h) through the
 *   worker's connections (redis_client.h); the decisions of one loop
 *   iteration go out together, one script call per cluster slot;
 * - the deny cache: once Redis refuses a key until T, the worker refuses it
 *   locally until T without asking (bounded, counted);
 * - fail modes, bound per limit (sl__store_limit.on_failure): open (allow),
 *   closed (refuse), local (the limit's fallback table at limit /
 *   expected_instances), used when Redis fails, times out, or its circuit
 *   breaker is open. */
#ifndef SLUICE_STORE_REDIS_STORE_H
#define SLUICE_STORE_REDIS_STORE_H

#include <uv.h>

#include "store/redis_client.h"
#include "store/redis_config.h"
#include "store/store.h"

/* A worker's Redis store: its connections and deny cache. cfg and stats
 * (kept by the engine, so /metrics can read them at any time) must outlive
 * it. Returns NULL on allocation failure. */
sl__store *sl__redis_store_new(uv_loop_t *loop, const sl__redis_config *cfg,
                               sl__store_stats *stats);

/* What the lease operation (store/lease.h) uses of a worker's Redis store
 * s: its loop, store.redis config and client. */
void sl__redis_store_parts(sl__store *s, uv_loop_t **loop, const sl__redis_config **cfg,
                           sl__redis **redis);

/* Makes r load the decision script on every new connection (SCRIPT LOAD),
 * so that EVALSHA finds it without a NOSCRIPT round trip. */
void sl__store_preamble(sl__redis *r);

/* Something to send on the worker's connections in the order it was asked
 * among the decision calls (a forget: forget_redis.c). run(q, true) sends
 * it; run(q, false) answers it without Redis (the store is freed). */
typedef struct sl__redis_queued {
    struct sl__redis_queued *next;
    void (*run)(struct sl__redis_queued *q, bool send);
} sl__redis_queued;

/* Runs q after everything this worker was asked before it: at once when no
 * decision call waits for the end of the loop iteration; else those calls
 * are closed (later decisions start new ones) and q goes out after them,
 * at the end of the iteration (one connection per node keeps the order, so
 * Redis runs them in that order). Behind a decision call that failed before
 * it was sent (answered from the loop, store.h), q waits for it there. */
void sl__redis_store_after(sl__store *s, sl__redis_queued *q);

/* The Redis store's forget (store.h; forget_redis.c): a DEL of each item's
 * key, and the key out of its limit's local fallback table. */
void sl__redis_forget(sl__store *s, sl__store_call *c);

#endif
