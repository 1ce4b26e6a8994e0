/* batch.h: batched mode (store.redis.sync: batched), seed section 11's
 * "local first, then global". Every decision is taken locally, in the
 * policy's own in-memory table, at once. Each server records what it
 * charged per key; every sync_interval one worker pushes those counts to
 * Redis in one pipeline (INCRBY on a per-key counter of everything the
 * fleet consumed, with a TTL) and reads back the fleet's totals. What the
 * others consumed since the last sync is then charged to the local table,
 * so every server's table follows the whole fleet's use one interval late.
 * What the table cannot absorb now (it is empty) is kept as a debt: the key
 * is refused locally until later syncs have paid it from the table's
 * refill. Without the debt, N servers that each refill at the full rate
 * would admit N times the rate under sustained load.
 *
 * The price (docs/distributed.md): a server hears of the others' use up to
 * two intervals late and admits what its table allows meanwhile, so the
 * fleet may overshoot by at most (N - 1) x (burst + rate x 2 x interval) for
 * a bucket, (N - 1) x 2 x limit for a window. While Redis is unreachable
 * each server goes on alone (and its counts are pushed when Redis is back). */
#ifndef SLUICE_STORE_BATCH_H
#define SLUICE_STORE_BATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/redis_client.h"
#include "store/redis_config.h"
#include "store/store.h"

typedef struct sl__batch sl__batch;

/* What the syncs need from the server's current policies (called on the
 * syncing worker's loop): charges n units that other servers consumed to
 * (policy, key) of the local table, as far as it can absorb them now, and
 * returns the rest (the debt to carry, for every algorithm: a window's is
 * paid from the next windows). */
typedef struct sl__batch_hooks {
    int64_t (*charge)(void *ctx, const char *policy, const char *key, size_t keylen, int64_t n);
    void *ctx;
} sl__batch_hooks;

typedef struct sl__batch_counters {
    atomic_uint_fast64_t syncs, keys_synced, applied_units, failed_syncs;
} sl__batch_counters;

/* Shared by the workers; cfg must outlive it. */
sl__batch *sl__batch_new(const sl__redis_config *cfg);
void sl__batch_free(sl__batch *b);
const sl__batch_counters *sl__batch_stats(const sl__batch *b);

/* True while (policy, key) owes the fleet: it is then refused locally.
 * Thread-safe; costs nothing while no key owes anything. */
bool sl__batch_in_debt(sl__batch *b, const char *policy, const void *key, size_t keylen);

/* Records that this server charged `cost` to (policy, key). Thread-safe. */
void sl__batch_add(sl__batch *b, const char *policy, const void *key, size_t keylen, int64_t cost);

/* What this server charged to (policy, key) since the last sync (tests). */
int64_t sl__batch_pending(sl__batch *b, const char *policy, const void *key, size_t keylen);

/* Starts the syncs on one worker's loop (its Redis client: rc). */
void sl__batch_start(sl__batch *b, uv_loop_t *loop, sl__redis *rc, const sl__batch_hooks *hooks);
/* Stops the timer (the loop must run afterwards to close it). */
void sl__batch_stop(sl__batch *b);

/* A worker's batched store (store.h): the memory store (memory.h), plus
 * what batched mode adds around it: an enforced limit whose key owes the
 * fleet is refused (retry_after at least the sync interval) without
 * charging anything, and every charge is recorded in b: those of a group
 * that passed, and a refused group's count_rejected charges (an item with
 * room its cost, a refusing one what it had left). With hooks (one worker), it also runs the syncs
 * on `loop`, with a Redis client of its own (sync_cfg: the syncs' settings; stats: its counters);
 * without, it never talks to Redis and says so in stats->up. b, sync_cfg and stats must outlive it.
 * NULL: out of memory. */
sl__store *sl__batch_store_new(sl__batch *b, uv_loop_t *loop, const sl__redis_config *sync_cfg,
                               sl__redis_stats *stats, const sl__batch_hooks *hooks);

#endif
