/* module_api.c: fetches the Redis modules API functions that
 * sluice-redis.so uses (module_api.h) through the GetApi function at the
 * start of the load context, as redismodule.h's RedisModule_Init does. */
#include "redis_module/module_api.h"

// NOLINTNEXTLINE(bugprone-macro-parentheses): a declarator
#define SL__MODULE_DEFINE(ret, name, params) ret(*RedisModule_##name) params;
SL__MODULE_API(SL__MODULE_DEFINE)
#undef SL__MODULE_DEFINE

int sl__module_api_init(RedisModuleCtx *ctx, const char *name, int version) {
    /* the ctx's first word is int GetApi(const char *name, void *fnptr) */
    int (*get_api)(const char *, void *);
    void *first = *(void **)ctx;
    *(void **)&get_api = first;
#define SL__MODULE_FETCH(ret, fname, params)                                                       \
    if (get_api("RedisModule_" #fname, (void *)&RedisModule_##fname) != REDISMODULE_OK)            \
        return REDISMODULE_ERR;
    SL__MODULE_API(SL__MODULE_FETCH)
#undef SL__MODULE_FETCH
    RedisModule_SetModuleAttribs(ctx, name, version, REDISMODULE_APIVER_1);
    return REDISMODULE_OK;
}
