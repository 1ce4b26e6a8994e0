/* retry_redis.c: the Redis store's retry operation (store/retry.h): one
 * call of retry.lua (its top comment has the layout and the reply) per
 * first attempt or retry, on the worker's connections (redis_client.h:
 * pipelining, timeouts, breaker, cluster routing), and the limit's fail
 * mode when Redis does not answer: open admits the retry, closed refuses it
 * (until Redis is tried again), local decides it on the fallback budget. A
 * first attempt that Redis did not count is counted by the local fallback
 * (local) or not at all (open, closed). EVALSHA, and one EVAL with the
 * source on NOSCRIPT. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"
#include "store/redis_client.h"
#include "store/redis_cluster.h"
#include "store/redis_script.h"
#include "store/redis_store.h"
#include "store/retry.h"
#include "util/buf.h"

extern const char sl__retry_lua_text[], sl__retry_lua_text_sha1[];

const char *sl__retry_script_source(void) {
    return sl__retry_lua_text;
}

typedef struct rstate {
    sl__retry_call *c;
    sl__redis *redis;
    uv_loop_t *loop;
    const sl__redis_config *cfg;
    unsigned slot;
    bool with_source;
    size_t rkeylen;
    char rkey[]; /* any bytes: the client key's included */
} rstate;

static void on_reply(void *arg, const redisReply *r, int status);

static void send_call(rstate *st) {
    sl__retry_call *c = st->c;
    const sl_retry_options *o = &c->limit->opts;
    sl__buf b;
    sl__buf_init(&b);
    sl__redis_small_script_head(&b, 9, st->with_source, sl__retry_lua_text,
                                sl__retry_lua_text_sha1);
    sl__buf_bulk(&b, "1", 1);
    sl__buf_bulk(&b, st->rkey, st->rkeylen);
    sl__buf_bulk(&b, c->retry ? "1" : "0", 1);
    sl__buf_bulk_i64(&b, (int64_t)o->ratio_ppm);
    sl__buf_bulk_i64(&b, (int64_t)o->min_retries);
    sl__buf_bulk_i64(&b, (int64_t)(o->window / SL_RETRY_SLOTS / 1000)); /* whole us: window in ms */
    sl__buf_bulk_i64(&b, st->cfg->script_now ? c->now / 1000 : 0);
    if (b.failed) {
        sl__buf_free(&b);
        on_reply(st, NULL, SL__REDIS_EIO);
        return;
    }
    sl__redis_call(st->redis, st->slot, b.data, b.len, on_reply, st);
    sl__buf_free(&b);
}

/* Redis did not answer: the limit's fail mode decides. */
static void without_redis(rstate *st) {
    sl__retry_call *c = st->c;
    sl__retry_limit *l = c->limit;
    c->rc = SL_OK;
    if (l->on_failure == SL__FAIL_LOCAL && l->fallback) {
        c->from = SL__FROM_LOCAL;
        c->rc = sl_retry_note(l->fallback, c->key, c->keylen, c->retry, c->now, &c->d);
        return;
    }
    bool closed = l->on_failure == SL__FAIL_CLOSED;
    c->from = closed ? SL__FROM_CLOSED : SL__FROM_OPEN;
    c->d = (sl_retry_decision){.allowed = !c->retry || !closed, .budget = l->opts.min_retries};
    if (c->d.allowed) return;
    uint64_t at = sl__redis_retry_at(st->redis, st->slot), now = uv_now(st->loop);
    int64_t retry = at > now ? (int64_t)(at - now) * 1000000 : st->cfg->breaker_cooldown;
    c->d.retry_after = retry < 1000000 ? 1000000 : retry;
}

static void on_reply(void *arg, const redisReply *r, int status) {
    rstate *st = arg;
    sl__retry_call *c = st->c;
    if (!st->with_source && sl__redis_reply_noscript(r, status)) {
        st->with_source = true;
        send_call(st);
        return;
    }
    long long v[4];
    bool good = sl__redis_reply_ints(r, status, v, 4);
    long long ok = v[0], F = v[1], R = v[2], after = v[3];
    if (!good) {
        without_redis(st);
    } else {
        const sl_retry_options *o = &c->limit->opts;
        c->from = SL__FROM_REDIS;
        c->rc = SL_OK;
        c->d = (sl_retry_decision){.allowed = ok == 1,
                                   .firsts = F,
                                   .retries = R,
                                   .budget = (int64_t)((__int128)F * o->ratio_ppm / SL_RETRY_PPM) +
                                             o->min_retries,
                                   .retry_after = ok == 1     ? 0
                                                  : after < 0 ? -1
                                                              : (int64_t)after * 1000};
    }
    free(st);
    c->done(c);
}

void sl__redis_retry(sl__store *s, sl__retry_call *c) {
    uv_loop_t *loop;
    const sl__redis_config *cfg;
    sl__redis *redis;
    sl__redis_store_parts(s, &loop, &cfg, &redis);
    char ns[SL__RETRY_NS_MAX];
    snprintf(ns, sizeof ns, "%s~retry", c->limit->name); /* '~' is in no policy name */
    sl__buf k;
    sl__buf_init(&k);
    sl__redis_key(&k, cfg->prefix, ns, c->key, c->keylen);
    rstate *st = k.failed ? NULL : malloc(sizeof *st + k.len + 1);
    if (!st) {
        sl__buf_free(&k);
        c->rc = SL_ENOMEM;
        c->d = (sl_retry_decision){.allowed = !c->retry};
        c->from = SL__FROM_REDIS;
        c->done(c);
        return;
    }
    memset(st, 0, sizeof *st);
    memcpy(st->rkey, k.data, k.len);
    st->rkeylen = k.len;
    st->c = c;
    st->redis = redis;
    st->loop = loop;
    st->cfg = cfg;
    st->slot = sl__cluster_keyslot(k.data, k.len);
    sl__buf_free(&k);
    send_call(st);
}
