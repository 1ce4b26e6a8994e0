/* redis_client.h: one worker's asynchronous connections to Redis (one node,
 * or every master of a Redis Cluster), on the worker's libuv loop through
 * hiredis's async API and its libuv adapter.
 *
 * - Pipelining: hiredis buffers every command and writes when the socket is
 *   writable, so everything issued during one loop tick leaves in one write.
 * - Per-call timeout: each call is answered exactly once, by its reply or
 *   by a failure at its deadline at the latest (a hung Redis never holds a
 *   request longer than the timeout). Replies already in the socket are
 *   read before a deadline counts as missed.
 * - Startup: every node is connected at once, and the decision script
 *   loaded (the preamble); until a node's first connection has answered
 *   it, calls for it wait for it (up to 2 s, or the timeout if longer)
 *   rather than time out. `up` is 0 until then.
 * - Circuit breaker per node, on sustained failure: after at least
 *   `breaker_failures` failures without a success, spanning at least
 *   `breaker_window`, the node is not called for `breaker_cooldown`; then
 *   one probe call goes through, and its success closes the breaker again.
 *   While the breaker is open, calls fail at once (SL__REDIS_EOPEN) without
 *   waiting. One stall that times out every call in flight does not open it.
 * - Cluster: the slot map comes from CLUSTER SLOTS (any reachable node),
 *   MOVED updates the map and resends, ASK sends ASKING + the call to the
 *   node named, and a failure refreshes the map (after a failover the
 *   promoted replica shows up there). Only the nodes that serve slots in
 *   the current map count for `up` and `breaker_open`. */
#ifndef SLUICE_STORE_REDIS_CLIENT_H
#define SLUICE_STORE_REDIS_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/redis_config.h"

struct redisReply;

/* Why a call failed (status of sl__redis_reply_fn; 0 = a reply): negative,
 * as every internal error (sluice/error.h's convention), and below the
 * SL_E* codes so that the two never mean the same number. */
#define SL__REDIS_OK       0
#define SL__REDIS_ETIMEOUT (-101) /* no reply within the timeout */
#define SL__REDIS_EIO      (-102) /* connection lost or refused */
#define SL__REDIS_EOPEN    (-103) /* the breaker is open: not called */
#define SL__REDIS_ENOSLOT  (-104) /* cluster: no node known for the slot */

/* Counters of one worker's client (written by it, read by /metrics). */
typedef struct sl__redis_stats {
    atomic_uint_fast64_t ok, errors, timeouts, rejected_open; /* calls by outcome */
    atomic_uint_fast64_t moved, ask, reconnects, slot_refreshes;
    atomic_uint_fast64_t latency_sum_us; /* of answered calls */
    atomic_int up;                       /* 1: every known node connected, no breaker open */
    atomic_int breaker_open;             /* nodes whose breaker is open now */
} sl__redis_stats;

typedef struct sl__redis sl__redis;

/* Called exactly once per call: with the reply (status 0; the reply may
 * be an error reply, which counts as an answer) or a failure status
 * (reply NULL). The reply is valid only during the call. */
typedef void (*sl__redis_reply_fn)(void *arg, const struct redisReply *reply, int status);

/* Starts connecting. cfg must outlive the client. */
sl__redis *sl__redis_new(uv_loop_t *loop, const sl__redis_config *cfg, sl__redis_stats *stats);

/* A command sent first on every new connection, its answer ignored (the
 * store loads its script with it: SCRIPT LOAD, so that EVALSHA finds it).
 * Copied. */
void sl__redis_set_preamble(sl__redis *r, const char *cmd, size_t len);

/* Asks every new connection, after the preamble and before it counts as
 * ready, COMMAND INFO <name> (the Redis store: the module's
 * SLUICE.DECIDE), so that sl__redis_has_command can say whether its node
 * has that command. Set before the first call. */
void sl__redis_probe_command(sl__redis *r, const char *name);

/* Whether the node for `slot` has the probed command, as its latest
 * connection answered: 1 yes, 0 no, -1 not known (yet). */
int sl__redis_has_command(sl__redis *r, unsigned slot);

/* Fails every call in flight (SL__REDIS_EIO) and closes the connections.
 * The loop must run afterwards for their handles to close. */
void sl__redis_free(sl__redis *r);

/* Sends one RESP-formatted command for the cluster slot `slot` (ignored on
 * a single node). fn is always called exactly once, possibly before this
 * returns (breaker open, no connection). */
void sl__redis_call(sl__redis *r, unsigned slot, const char *cmd, size_t len, sl__redis_reply_fn fn,
                    void *arg);

/* True when the node for `slot` would be called now (breaker closed). */
bool sl__redis_available(sl__redis *r, unsigned slot);

/* When the breaker of the node for `slot` lets the next probe through
 * (uv_now ms), or 0 when it is closed. */
uint64_t sl__redis_retry_at(sl__redis *r, unsigned slot);

#endif
