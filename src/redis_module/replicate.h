/* replicate.h: what SLUICE.DECIDE hands to replicas and the AOF, and
 * whether anything listens at all.
 *
 * Effects, never the command (a replica or an AOF replay deciding again at
 * its own time would diverge). A call's string states go out as ONE
 * replicated command, whatever their number:
 *   EVAL <SL__MOD_EFFECTS_LUA> <k> <key_1..key_k> "<v_1> <at_1> <v_2> <at_2> ..."
 * a fixed script of core commands only (SET key v PXAT at, or DEL key for
 * v "-"), so a replica or an AOF loaded without the module applies it. A
 * sliding log's list effects (DEL, LTRIM, RPUSH, PEXPIREAT) go as they are.
 *
 * Listeners: Redis drops what a command propagates when there is no AOF,
 * no replica and no replication backlog; the module then builds nothing.
 * The AOF is read per call (RedisModule_GetContextFlags); replicas and the
 * backlog are cached (INFO replication: connected_slaves,
 * repl_backlog_active) and re-read on the server events that change them:
 * a fork turns listening on at once (a replica's full sync, an AOF
 * rewrite: every write after the fork must reach it; writes before are in
 * the snapshot), a replica attaching or leaving and a role change read
 * INFO again. A backlog outlives its replicas (a replica may come back with
 * PSYNC), so listening stays on while it exists. With RDB save points but
 * no listener, one PING is replicated per call (dropped by Redis), so that
 * rdb_changes_since_last_save still moves and save points still fire.
 *
 * Why no write a listener needs is skipped (Redis 7.0's replication.c):
 * a replica is added (syncCommand) with no event, but until its fork it
 * waits for a snapshot that will hold every write made before the fork,
 * and the fork (FORK_CHILD born) turns listening on before the next
 * command; it goes online (REPLICA_CHANGE online, also after a partial
 * resync) with a backlog that exists from its SYNC on; leaving
 * (REPLICA_CHANGE offline) or the fork's end re-read INFO, which still
 * shows the backlog; only the backlog's TTL frees it, with no event:
 * listening then stays on (costly, never lossy). A node that synced as a
 * replica creates its backlog without an event, but a replica runs no
 * SLUICE.DECIDE (it applies the master's EVALs), and its promotion fires
 * REPLICATION_ROLE_CHANGED. redis_module_integration's listener_windows
 * orders both windows (the fork delayed, a dropped replica kept stopped).
 * SL__MOD_SKIP_UNHEARD=0 at build time replicates every call. */
#ifndef SLUICE_REDIS_MODULE_REPLICATE_H
#define SLUICE_REDIS_MODULE_REPLICATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_module/decide_us.h"
#include "redis_module/module_api.h"

/* The most bytes one state adds to the packed argument: a state (at most
 * SL__MOD_STATE_MAX), a space, an absolute time in ms (at most 20), a space. */
#define SL__MOD_EFFECT_MAX (SL__MOD_STATE_MAX + 22)

/* What a call propagates: what listens (sl__mod_effects_begin), the string
 * states' keys (borrowed from the command's argv) and their packed values.
 * keys and buf are the caller's scratch: room for n keys and
 * n x SL__MOD_EFFECT_MAX bytes. */
typedef struct sl__mod_effects {
    bool listen; /* an AOF, a replica or a backlog: effects are replicated */
    bool dirty;  /* RDB save points only: one PING counts the call */
    int changed; /* keys written (whether or not anything listens) */
    RedisModuleString **keys;
    int nkeys;
    char *buf;
    size_t len;
} sl__mod_effects;

/* Subscribes to the server events above and reads INFO once; at load. */
int sl__mod_listen_init(RedisModuleCtx *ctx);

/* Starts a call's effects over the given scratch. */
void sl__mod_effects_begin(sl__mod_effects *e, RedisModuleCtx *ctx, RedisModuleString **keys,
                           char *buf);

/* Records that key now holds v[0..len) until at (ms), or, with v NULL, is
 * gone. Nothing when nothing listens. */
void sl__mod_effects_set(sl__mod_effects *e, RedisModuleString *key, const char *v, size_t len,
                         long long at);

/* Replicates what was recorded, as one EVAL (or the PING of `dirty`). */
void sl__mod_effects_end(sl__mod_effects *e, RedisModuleCtx *ctx);

#endif
