/* batch.h: batched mode (store.redis.sync: batched), seed section 11's
 * "local first, then global". Every decision is taken locally, in the
 * policy's own in-memory table, at once. Each server records what it
 * charged per key; every sync_interval one worker pushes those counts to
 * Redis in one pipeline (INCRBY on a per-key counter of everything the fleet
 * consumed) and reads back the fleet's state. Concretely each push is the
 * exact mode's script call for that key with the local count as its cost
 * and count_rejected set (charged, never beyond empty), and its answer is
 * what the fleet has left; the local table is then lowered to that (less
 * what was charged locally since the push), so every server's table follows
 * the fleet's use one interval late.
 *
 * The price (docs/distributed.md): during one interval each of N servers
 * can admit what its table allows before it hears of the others, so the
 * fleet may overshoot by at most (N - 1) x (burst + rate x interval) for a
 * bucket (the window's limit for windows). While Redis is unreachable each
 * server goes on alone (and its counts are pushed when Redis is back). */
#ifndef SLUICE_STORE_BATCH_H
#define SLUICE_STORE_BATCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "policy/config.h"
#include "store/redis_client.h"

typedef struct sl_batch sl_batch;

/* What the syncs need from the server's current policies (called on the
 * syncing worker's loop). */
typedef struct sl_batch_hooks {
    /* The policy's parameters now; false when it is gone. */
    bool (*params)(void *ctx, const char *policy, sl_params *out, bool *calendar_month);
    /* Lowers the local table's state of (policy, key) so that at most
     * `remaining` are left (charges the difference; never credits). */
    void (*apply)(void *ctx, const char *policy, const char *key, size_t keylen,
                  int64_t remaining);
    void *ctx;
} sl_batch_hooks;

typedef struct sl_batch_stats {
    atomic_uint_fast64_t syncs, keys_synced, applied_units, failed_syncs;
} sl_batch_stats;

/* Shared by the workers; cfg must outlive it. */
sl_batch *sl__batch_new(const sl_redis_config *cfg);
void sl__batch_free(sl_batch *b);
const sl_batch_stats *sl__batch_stats(const sl_batch *b);

/* Records that this server charged `cost` to (policy, key). Thread-safe. */
void sl__batch_add(sl_batch *b, const char *policy, const void *key, size_t keylen,
                   int64_t cost);

/* Starts the syncs on one worker's loop (its Redis client: rc). */
void sl__batch_start(sl_batch *b, uv_loop_t *loop, sl_redis *rc, const sl_batch_hooks *hooks);
/* Stops the timer (the loop must run afterwards to close it). */
void sl__batch_stop(sl_batch *b);

#endif
