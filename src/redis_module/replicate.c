/* replicate.c: SLUICE.DECIDE's effects as one replicated EVAL per call,
 * and whether anything listens (replicate.h has the rules). */
#include "redis_module/replicate.h"

#include <string.h>

#include "util/units.h"

/* The effects script: pairs "<value> <at_ms>" in ARGV[1], one per key;
 * value "-" deletes. Core commands only. */
#define SL__MOD_EFFECTS_LUA                                                                        \
    "local i=0 for v,t in string.gmatch(ARGV[1],'(%S+) (%S+)') do i=i+1 "                          \
    "if v=='-' then redis.call('DEL',KEYS[i]) "                                                    \
    "else redis.call('SET',KEYS[i],v,'PXAT',t) end end"

#ifndef SL__MOD_SKIP_UNHEARD
#define SL__MOD_SKIP_UNHEARD 1 /* 0: replicate every call, whoever listens */
#endif

/* A replica or a backlog exists (INFO replication); true until read. */
static bool repl_listen = true;

static void read_replication(RedisModuleCtx *ctx) {
    RedisModuleServerInfoData *info = RedisModule_GetServerInfo(ctx, "replication");
    if (!info) {
        repl_listen = true; /* unknown: replicate */
        return;
    }
    int e1 = 0, e2 = 0;
    long long slaves = RedisModule_ServerInfoGetFieldSigned(info, "connected_slaves", &e1);
    long long backlog = RedisModule_ServerInfoGetFieldSigned(info, "repl_backlog_active", &e2);
    repl_listen = e1 || e2 || slaves > 0 || backlog > 0;
    RedisModule_FreeServerInfo(ctx, info);
}

static void on_event(RedisModuleCtx *ctx, RedisModuleEvent eid, uint64_t sub, void *data) {
    (void)data;
    if (eid.id == REDISMODULE_EVENT_FORK_CHILD && sub == REDISMODULE_SUBEVENT_FORK_CHILD_BORN)
        repl_listen = true; /* whatever the child is for: writes from now on must go out */
    else
        read_replication(ctx);
}

int sl__mod_listen_init(RedisModuleCtx *ctx) {
    static const uint64_t ids[] = {REDISMODULE_EVENT_FORK_CHILD, REDISMODULE_EVENT_REPLICA_CHANGE,
                                   REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        RedisModuleEvent ev = {ids[k], 1};
        if (RedisModule_SubscribeToServerEvent(ctx, ev, on_event) != REDISMODULE_OK)
            return REDISMODULE_ERR;
    }
    read_replication(ctx);
    return REDISMODULE_OK;
}

void sl__mod_effects_begin(sl__mod_effects *e, RedisModuleCtx *ctx, RedisModuleString **keys,
                           char *buf) {
    int flags = RedisModule_GetContextFlags(ctx);
    e->listen = !SL__MOD_SKIP_UNHEARD || repl_listen || (flags & REDISMODULE_CTX_FLAGS_AOF);
    e->dirty = !e->listen && (flags & REDISMODULE_CTX_FLAGS_RDB);
    e->changed = 0;
    e->keys = keys;
    e->nkeys = 0;
    e->buf = buf;
    e->len = 0;
}

void sl__mod_effects_set(sl__mod_effects *e, RedisModuleString *key, const char *v, size_t len,
                         long long at) {
    e->changed++;
    if (!e->listen) return;
    char *p = e->buf + e->len;
    if (v) {
        /* bytes of a command, no C string */
        // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
        memcpy(p, v, len);
        p += len;
        *p++ = ' ';
        p += sl__decimal_i64(p, at);
    } else {
        // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
        memcpy(p, "- 0", 3);
        p += 3;
    }
    *p++ = ' ';
    e->len = (size_t)(p - e->buf);
    e->keys[e->nkeys++] = key;
}

void sl__mod_effects_end(sl__mod_effects *e, RedisModuleCtx *ctx) {
    if (e->listen && e->nkeys > 0)
        RedisModule_Replicate(ctx, "EVAL", "clvb", SL__MOD_EFFECTS_LUA, (long long)e->nkeys,
                              e->keys, (size_t)e->nkeys, e->buf, e->len);
    else if (e->dirty && e->changed > 0)
        RedisModule_Replicate(ctx, "PING", "");
}
