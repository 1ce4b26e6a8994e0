/* forget_redis.c: the Redis store's forget operation (store.h): one DEL
 * per item of the key the decisions use (redis_script.h's sl__redis_key),
 * on the worker's connections (redis_client.h: pipelining, timeouts,
 * breaker, cluster routing: each key to its slot's node), and the key out
 * of the limit's local fallback table as well, so that a fail mode
 * `local` does not bring back what was reset. The DELs keep their place
 * among the worker's decision calls (sl__redis_store_after), so that a DEL
 * pipelined after a CL.THROTTLE of the same key runs after it in Redis, and
 * one before it before. A DEL that fails leaves
 * nothing known: the item is not counted and c->from says SL__FROM_OPEN. */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"
#include "store/memory.h"
#include "store/redis_client.h"
#include "store/redis_cluster.h"
#include "store/redis_script.h"
#include "store/redis_store.h"
#include "util/buf.h"

typedef struct fstate {
    sl__redis_queued q; /* first */
    sl__store_call *c;
    sl__redis *redis;
    const sl__redis_config *cfg;
    size_t left; /* DELs not answered yet */
    bool failed;
} fstate;

typedef struct fone {
    fstate *st;
    size_t i;
} fone;

static void finish(fstate *st) {
    sl__store_call *c = st->c;
    for (size_t i = 0; i < c->n; i++) { /* the local fallback: forgotten too, not counted */
        sl_table *fb = atomic_load_explicit(&c->items[i].limit->fallback, memory_order_acquire);
        if (fb) sl_table_forget(fb, c->items[i].key, c->items[i].keylen);
    }
    c->from = st->failed ? SL__FROM_OPEN : SL__FROM_REDIS;
    c->rc = SL_OK;
    c->rc_item = c->n;
    free(st);
    c->done(c);
}

static void on_del(void *arg, const redisReply *r, int status) {
    fone *one = arg;
    fstate *st = one->st;
    if (status != 0 || !r || r->type != REDIS_REPLY_INTEGER)
        st->failed = true;
    else
        st->c->items[one->i].decided = r->integer > 0;
    if (--st->left == 0) finish(st);
}

/* Sends the DELs (send), or answers without Redis. */
static void run(sl__redis_queued *q, bool send) {
    fstate *st = (fstate *)(void *)q;
    sl__store_call *c = st->c;
    if (!send) {
        st->failed = true;
        finish(st);
        return;
    }
    fone *ones = (fone *)(st + 1);
    st->left = c->n + 1; /* + 1: held until every DEL is sent */
    for (size_t i = 0; i < c->n; i++) {
        sl__store_item *it = &c->items[i];
        /* st->left holds st until every DEL is sent */
        // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
        ones[i] = (fone){.st = st, .i = i};
        sl__buf k, cmd;
        sl__buf_init(&k);
        sl__buf_init(&cmd);
        sl__redis_key(&k, st->cfg->prefix, it->limit->name, it->key, it->keylen);
        sl__buf_puts(&cmd, "*2\r\n$3\r\nDEL\r\n");
        sl__buf_bulk(&cmd, k.data, k.len);
        if (k.failed || cmd.failed)
            on_del(&ones[i], NULL, SL__REDIS_EIO);
        else
            sl__redis_call(st->redis, sl__cluster_keyslot(k.data, k.len), cmd.data, cmd.len, on_del,
                           &ones[i]);
        sl__buf_free(&k);
        sl__buf_free(&cmd);
    }
    /* st->left holds st until every DEL is sent */
    // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
    if (--st->left == 0) finish(st);
}

void sl__redis_forget(sl__store *s, sl__store_call *c) {
    uv_loop_t *loop;
    const sl__redis_config *cfg;
    sl__redis *redis;
    sl__redis_store_parts(s, &loop, &cfg, &redis);
    fstate *st = malloc(sizeof *st + c->n * sizeof(fone));
    if (!st) {
        c->rc = SL_ENOMEM;
        c->rc_item = 0;
        c->done(c);
        return;
    }
    *st = (fstate){.q = {.run = run}, .c = c, .redis = redis, .cfg = cfg};
    for (size_t i = 0; i < c->n; i++) c->items[i].decided = false;
    sl__redis_store_after(s, &st->q);
}
