/* module_api.h: the part of the Redis modules API that sluice-redis.so uses,
 * declared here because Debian does not package Redis's redismodule.h (and
 * a copy of it would be 1,500 lines of someone else's header for the 33
 * functions below). Only what the module calls is declared.
 *
 * The ABI, as the Redis modules API reference and redis-server 7.0.15 give
 * it (checked with `redis-server --loadmodule`):
 * - the entry point is int RedisModule_OnLoad(ctx, argv, argc);
 * - the first word of that ctx is a function int GetApi(const char *name,
 *   void *fnptr) that stores the address of the API function named name
 *   ("RedisModule_CreateCommand", ...) in *fnptr and returns
 *   REDISMODULE_OK, or REDISMODULE_ERR for a name that server lacks;
 * - void RedisModule_SetModuleAttribs(ctx, name, version, apiver 1) names
 *   the module before it registers anything;
 * - REDISMODULE_OK 0 / ERR 1; key modes READ 1, WRITE 2; key types EMPTY 0,
 *   STRING 1, LIST 2; list ends HEAD 0, TAIL 1.
 * - context flags AOF 1<<6, RDB 1<<7; events are {id, dataver} passed by
 *   value: REPLICATION_ROLE_CHANGED 0, REPLICA_CHANGE 6, FORK_CHILD 13
 *   (subevent BORN 0, fired in the parent right after fork()).
 * Every handle type is opaque. sl__module_api_init fetches every function;
 * a missing one fails the load (the module needs Redis 7.0: ListGet and
 * SetAbsExpire). */
#ifndef SLUICE_REDIS_MODULE_API_H
#define SLUICE_REDIS_MODULE_API_H

#include <stddef.h>
#include <stdint.h>

#define REDISMODULE_OK             0
#define REDISMODULE_ERR            1
#define REDISMODULE_APIVER_1       1
#define REDISMODULE_READ           (1 << 0)
#define REDISMODULE_WRITE          (1 << 1)
#define REDISMODULE_KEYTYPE_EMPTY  0
#define REDISMODULE_KEYTYPE_STRING 1
#define REDISMODULE_KEYTYPE_LIST   2
#define REDISMODULE_LIST_HEAD      0
#define REDISMODULE_LIST_TAIL      1
#define REDISMODULE_CTX_FLAGS_AOF  (1 << 6)
#define REDISMODULE_CTX_FLAGS_RDB  (1 << 7)
/* server events (id, data version 1) and the subevents used */
#define REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED 0
#define REDISMODULE_EVENT_REPLICA_CHANGE           6
#define REDISMODULE_EVENT_FORK_CHILD               13
#define REDISMODULE_SUBEVENT_FORK_CHILD_BORN       0

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleServerInfoData RedisModuleServerInfoData;
typedef long long mstime_t;
typedef int (*RedisModuleCmdFunc)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
typedef struct RedisModuleEvent {
    uint64_t id;      /* REDISMODULE_EVENT_... */
    uint64_t dataver; /* 1 for every event used here */
} RedisModuleEvent;
typedef void (*RedisModuleEventCallback)(RedisModuleCtx *ctx, RedisModuleEvent eid,
                                         uint64_t subevent, void *data);

/* X(return type, name, parameters): every function the module uses. */
#define SL__MODULE_API(X)                                                                          \
    X(void, SetModuleAttribs, (RedisModuleCtx * ctx, const char *name, int ver, int apiver))       \
    X(int, CreateCommand,                                                                          \
      (RedisModuleCtx * ctx, const char *name, RedisModuleCmdFunc f, const char *flags, int first, \
       int last, int step))                                                                        \
    X(int, IsKeysPositionRequest, (RedisModuleCtx * ctx))                                          \
    X(void, KeyAtPos, (RedisModuleCtx * ctx, int pos))                                             \
    X(int, WrongArity, (RedisModuleCtx * ctx))                                                     \
    X(int, ReplyWithError, (RedisModuleCtx * ctx, const char *err))                                \
    X(int, ReplyWithArray, (RedisModuleCtx * ctx, long len))                                       \
    X(int, ReplyWithLongLong, (RedisModuleCtx * ctx, long long v))                                 \
    X(int, ReplyWithStringBuffer, (RedisModuleCtx * ctx, const char *buf, size_t len))             \
    X(const char *, StringPtrLen, (const RedisModuleString *s, size_t *len))                       \
    X(RedisModuleString *, CreateString, (RedisModuleCtx * ctx, const char *p, size_t len))        \
    X(void, FreeString, (RedisModuleCtx * ctx, RedisModuleString * s))                             \
    X(RedisModuleKey *, OpenKey, (RedisModuleCtx * ctx, RedisModuleString * name, int mode))       \
    X(void, CloseKey, (RedisModuleKey * key))                                                      \
    X(int, KeyType, (RedisModuleKey * key))                                                        \
    X(size_t, ValueLength, (RedisModuleKey * key))                                                 \
    X(int, DeleteKey, (RedisModuleKey * key))                                                      \
    X(char *, StringDMA, (RedisModuleKey * key, size_t * len, int mode))                           \
    X(int, StringSet, (RedisModuleKey * key, RedisModuleString * s))                               \
    X(int, SetAbsExpire, (RedisModuleKey * key, mstime_t at))                                      \
    X(int, ListPush, (RedisModuleKey * key, int where, RedisModuleString *s))                      \
    X(RedisModuleString *, ListPop, (RedisModuleKey * key, int where))                             \
    X(RedisModuleString *, ListGet, (RedisModuleKey * key, long index))                            \
    X(int, Replicate, (RedisModuleCtx * ctx, const char *cmd, const char *fmt, ...))               \
    X(long long, Milliseconds, (void))                                                             \
    X(int, GetContextFlags, (RedisModuleCtx * ctx))                                                \
    X(int, SubscribeToServerEvent,                                                                 \
      (RedisModuleCtx * ctx, RedisModuleEvent event, RedisModuleEventCallback cb))                 \
    X(RedisModuleServerInfoData *, GetServerInfo, (RedisModuleCtx * ctx, const char *section))     \
    X(void, FreeServerInfo, (RedisModuleCtx * ctx, RedisModuleServerInfoData * data))              \
    X(long long, ServerInfoGetFieldSigned,                                                         \
      (RedisModuleServerInfoData * data, const char *field, int *out_err))                         \
    X(void *, Alloc, (size_t bytes))                                                               \
    X(void *, Realloc, (void *p, size_t bytes))                                                    \
    X(void, Free, (void *p))

// NOLINTNEXTLINE(bugprone-macro-parentheses): a declarator
#define SL__MODULE_DECLARE(ret, name, params) extern ret(*RedisModule_##name) params;
SL__MODULE_API(SL__MODULE_DECLARE)
#undef SL__MODULE_DECLARE

/* Fetches every function of SL__MODULE_API through ctx's GetApi and sets
 * the module's name and version. Returns REDISMODULE_OK, or
 * REDISMODULE_ERR when a function is missing (the load fails). */
int sl__module_api_init(RedisModuleCtx *ctx, const char *name, int version);

#endif
