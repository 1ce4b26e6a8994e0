/* redis_small.c: one call of a small one-key script (redis_small.h). */
#include "store/redis_small.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis_cluster.h"
#include "store/redis_script.h"
#include "store/redis_store.h"

sl__small_call *sl__small_call_new(sl__store *s, const sl__small_script *script, void *call,
                                   const char *ns, const char *key, size_t keylen) {
    uv_loop_t *loop;
    const sl__redis_config *cfg;
    sl__redis *redis;
    sl__redis_store_parts(s, &loop, &cfg, &redis);
    sl__buf k;
    sl__buf_init(&k);
    sl__redis_key(&k, cfg->prefix, ns, key, keylen);
    sl__small_call *sc = k.failed ? NULL : malloc(sizeof *sc + k.len + 1);
    if (!sc) {
        sl__buf_free(&k);
        return NULL;
    }
    memset(sc, 0, sizeof *sc);
    memcpy(sc->rkey, k.data, k.len);
    sc->rkeylen = k.len;
    sc->script = script;
    sc->call = call;
    sc->redis = redis;
    sc->loop = loop;
    sc->cfg = cfg;
    sc->slot = sl__cluster_keyslot(k.data, k.len);
    sl__buf_free(&k);
    return sc;
}

static void on_reply(void *arg, const redisReply *r, int status) {
    sl__small_call *sc = arg;
    if (!sc->with_source && sl__redis_reply_noscript(r, status)) {
        sc->with_source = true;
        sl__small_call_send(sc);
        return;
    }
    long long v[4];
    bool good = sl__redis_reply_ints(r, status, v, 4);
    sc->script->reply(sc, good, v);
    free(sc);
}

void sl__small_call_send(sl__small_call *sc) {
    const sl__small_script *sp = sc->script;
    sl__buf b;
    sl__buf_init(&b);
    sl__redis_small_script_head(&b, sp->nargs, sc->with_source, sp->source, sp->sha1);
    sl__buf_bulk(&b, "1", 1);
    sl__buf_bulk(&b, sc->rkey, sc->rkeylen);
    sp->args(sc, &b);
    if (b.failed) {
        sl__buf_free(&b);
        on_reply(sc, NULL, SL__REDIS_EIO);
        return;
    }
    sl__redis_call(sc->redis, sc->slot, b.data, b.len, on_reply, sc);
    sl__buf_free(&b);
}

int64_t sl__small_call_retry_after(const sl__small_call *sc) {
    uint64_t at = sl__redis_retry_at(sc->redis, sc->slot), now = uv_now(sc->loop);
    int64_t retry = at > now ? (int64_t)(at - now) * 1000000 : sc->cfg->breaker_cooldown;
    return retry < 1000000 ? 1000000 : retry;
}
