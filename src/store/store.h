/* store.h: deciding limits in Redis (store.type: redis), asynchronously on
 * a worker's loop, with what a user expects around it:
 *
 * - exact mode: every decision is one script call (redis_script.h) through
 *   the worker's connections (redis_client.h);
 * - the deny cache: once Redis refuses a key until T, the worker refuses it
 *   locally until T without asking (bounded, counted);
 * - fail modes, decided in advance per limit: open (allow), closed (refuse),
 *   local (an in-memory table at limit / expected_instances), used when
 *   Redis fails, times out, or its circuit breaker is open.
 *
 * The memory store needs none of this: the policy layer decides in its
 * tables synchronously. Batched mode (batch.h) decides locally too. */
#ifndef SLUICE_STORE_STORE_H
#define SLUICE_STORE_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/redis_config.h"
#include "sluice/table.h"
#include "store/redis_client.h"

#define SL_STORE_MAX_ITEMS 16 /* = SL_CHECK_MAX */

/* Where a decision came from. */
typedef enum sl_store_from {
    SL_FROM_REDIS = 0,
    SL_FROM_DENY_CACHE,
    SL_FROM_OPEN,   /* Redis failed: allowed (fail open) */
    SL_FROM_CLOSED, /* Redis failed: refused (fail closed) */
    SL_FROM_LOCAL,  /* Redis failed: decided by the local fallback table */
    SL_FROM_COUNT
} sl_store_from;

/* One limit of a call. */
typedef struct sl_store_item {
    /* in */
    const sl_params *params;
    bool calendar_month;
    bool any_rate;      /* GCRA whose state is read under any parameters (CL.THROTTLE) */
    const char *policy; /* name: part of the Redis key */
    sl_table *local;    /* fail mode local: the fallback table (limit / expected_instances) */
    const struct sl__plan *local_plan; /* NULL, or the plan `local` decides with (any-rate) */
    sl_fail_mode on_failure;
    const char *key; /* owned by the call */
    size_t keylen;
    int64_t cost;
    unsigned group; /* 0 enforced, 1 shadow (see redis_script.h) */
    /* out */
    sl_decision decision;
    bool decided;
} sl_store_item;

typedef struct sl_store_call sl_store_call;
typedef void (*sl_store_done_fn)(sl_store_call *c);

struct sl_store_call {
    sl_store_item items[SL_STORE_MAX_ITEMS];
    size_t n;
    int64_t now;          /* the worker's clock (deny cache, local fallback) */
    sl_store_from from;   /* out */
    int64_t retry_closed; /* out, SL_FROM_CLOSED: ns until Redis is tried again */
    sl_store_done_fn done;
    void *arg;
    /* internal */
    struct sl_store_worker *sw;
    void *state;    /* the script calls in flight */
    int parts_left; /* how many */
    bool failed;
    size_t keys_len, keys_cap;
    char keys[]; /* the items' keys */
};

/* Per-worker counters (written by the worker, read by /metrics). */
typedef struct sl_store_stats {
    atomic_uint_fast64_t deny_hits, deny_inserts;
    atomic_uint_fast64_t script_errors;
    atomic_uint_fast64_t noscript_reloads;
} sl_store_stats;

typedef struct sl_store_worker sl_store_worker;

/* A worker's store: its Redis connections and deny cache. cfg and the
 * counters (kept by the worker, so /metrics can read them at any time) must
 * outlive it. Returns NULL on allocation failure. */
sl_store_worker *sl__store_worker_new(uv_loop_t *loop, const sl_redis_config *cfg,
                                      sl_store_stats *stats, sl_redis_stats *rstats);
/* Fails calls in flight (through their fail modes) and closes connections;
 * the loop must run afterwards. */
void sl__store_worker_free(sl_store_worker *sw);

/* Makes r load the decision script on every new connection (SCRIPT LOAD),
 * so that EVALSHA finds it without a NOSCRIPT round trip. */
void sl__store_preamble(sl_redis *r);

/* A call for n items whose keys take key_bytes in all; keys are copied in
 * with sl__store_call_key. NULL: out of memory or n too large. */
sl_store_call *sl__store_call_new(size_t n, size_t key_bytes);
/* Copies a key into the call and returns the copy (NULL: beyond key_bytes). */
const char *sl__store_call_key(sl_store_call *c, const void *key, size_t len);
void sl__store_call_free(sl_store_call *c);

/* Decides the call's items (group semantics of redis_script.h) and calls
 * c->done exactly once, possibly before returning (deny cache, breaker
 * open). Items' decisions are filled when decided. */
void sl__store_decide(sl_store_worker *sw, sl_store_call *c);

#endif
