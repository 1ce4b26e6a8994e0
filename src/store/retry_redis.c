/* retry_redis.c: the Redis store's retry operation (store/retry.h): one
 * call of retry.lua (its top comment has the layout and the reply) per
 * first attempt or retry, through redis_small.h (the key, EVALSHA and one
 * EVAL with the source on NOSCRIPT, the reply, on the worker's
 * connections), and the limit's fail mode when Redis does not answer: open
 * admits the retry, closed refuses it (until Redis is tried again), local
 * decides it on the fallback budget. A first attempt that Redis did not
 * count is counted by the local fallback (local) or not at all (open,
 * closed). */
#include <stdio.h>

#include "sluice/error.h"
#include "store/redis_small.h"
#include "store/retry.h"
#include "util/buf.h"

extern const char sl__retry_lua_text[], sl__retry_lua_text_sha1[];

const char *sl__retry_script_source(void) {
    return sl__retry_lua_text;
}

static void retry_args(sl__small_call *sc, sl__buf *b) {
    sl__retry_call *c = sc->call;
    const sl_retry_options *o = &c->limit->opts;
    sl__buf_bulk(b, c->retry ? "1" : "0", 1);
    sl__buf_bulk_i64(b, (int64_t)o->ratio_ppm);
    sl__buf_bulk_i64(b, (int64_t)o->min_retries);
    sl__buf_bulk_i64(b, (int64_t)(o->window / SL_RETRY_SLOTS / 1000)); /* whole us: window in ms */
    sl__buf_bulk_i64(b, sc->cfg->script_now ? c->now / 1000 : 0);
}

/* Redis did not answer: the limit's fail mode decides. */
static void without_redis(const sl__small_call *sc) {
    sl__retry_call *c = sc->call;
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
    c->d.retry_after = sl__small_call_retry_after(sc);
}

static void retry_reply(sl__small_call *sc, bool good, const long long v[4]) {
    sl__retry_call *c = sc->call;
    long long ok = v[0], F = v[1], R = v[2], after = v[3];
    if (!good) {
        without_redis(sc);
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
    c->done(c);
}

static const sl__small_script retry_script = {.source = sl__retry_lua_text,
                                              .sha1 = sl__retry_lua_text_sha1,
                                              .nargs = 9,
                                              .args = retry_args,
                                              .reply = retry_reply};

void sl__redis_retry(sl__store *s, sl__retry_call *c) {
    char ns[SL__RETRY_NS_MAX];
    snprintf(ns, sizeof ns, "%s~retry", c->limit->name); /* '~' is in no policy name */
    sl__small_call *sc = sl__small_call_new(s, &retry_script, c, ns, c->key, c->keylen);
    if (!sc) {
        c->rc = SL_ENOMEM;
        c->d = (sl_retry_decision){.allowed = !c->retry};
        c->from = SL__FROM_REDIS;
        c->done(c);
        return;
    }
    sl__small_call_send(sc);
}
