/* lease_redis.c: the Redis store's lease operation (store/lease.h): one
 * call of lease.lua (its top comment has the layout and the replies) per
 * operation, through redis_small.h (the key, EVALSHA and EVAL, the reply,
 * on the worker's connections), and the limit's fail mode when Redis does
 * not answer.
 *
 * Lease ids are made here, not in Redis: a bijective mix of a per-process
 * random key and a process-wide counter, so ids never repeat within one
 * sluiced and two sluiced collide with probability about 2^-64 per pair
 * of leases of one key (an id only matters within its key's set). The
 * script is called with EVALSHA; a connection whose Redis does not have it
 * yet (NOSCRIPT) gets one EVAL with the source, which caches it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "core/hash.h"
#include "sluice/error.h"
#include "store/lease.h"
#include "store/redis_small.h"
#include "util/buf.h"

extern const char sl__lease_lua_text[], sl__lease_lua_text_sha1[];

const char *sl__lease_script_source(void) {
    return sl__lease_lua_text;
}

/* ---- lease ids ------------------------------------------------------------------- */

static pthread_once_t id_once = PTHREAD_ONCE_INIT;
static uint64_t id_key;
static atomic_uint_fast64_t id_counter;

static void id_init(void) {
    id_key = sl__random_seed();
}

static uint64_t new_id(void) {
    pthread_once(&id_once, id_init);
    return sl__fresh_id(&id_counter, id_key);
}

/* ---- a call ---------------------------------------------------------------------- */

static void lease_args(sl__small_call *sc, sl__buf *b) {
    sl__lease_call *c = sc->call;
    static const char ops[] = {
        [SL__LEASE_ACQUIRE] = 'a', [SL__LEASE_RELEASE] = 'r', [SL__LEASE_RENEW] = 'n'};
    char id[17];
    snprintf(id, sizeof id, "%016llx", (unsigned long long)c->id);
    sl__buf_bulk(b, &ops[c->op], 1);
    sl__buf_bulk_i64(b, (int64_t)atomic_load_explicit(&c->limit->limit, memory_order_relaxed));
    sl__buf_bulk_i64(
        b, (int64_t)(atomic_load_explicit(&c->limit->lease, memory_order_relaxed) / 1000));
    sl__buf_bulk(b, id, 16);
    sl__buf_bulk_i64(b, sc->cfg->script_now ? c->now / 1000 : 0);
}

/* Redis did not answer: the limit's fail mode decides. */
static void without_redis(const sl__small_call *sc) {
    sl__lease_call *c = sc->call;
    sl__lease_limit *l = c->limit;
    int mode = atomic_load_explicit(&l->on_failure, memory_order_relaxed);
    int64_t limit = atomic_load_explicit(&l->limit, memory_order_relaxed);
    int64_t lease = atomic_load_explicit(&l->lease, memory_order_relaxed);
    if (mode == SL__FAIL_LOCAL) {
        c->from = SL__FROM_LOCAL;
        if (c->op == SL__LEASE_ACQUIRE)
            c->rc = sl_concurrency_acquire(l->fallback, c->key, c->keylen, c->now, &c->acq);
        else if (c->op == SL__LEASE_RELEASE)
            c->rc = sl_concurrency_release(l->fallback, c->key, c->keylen, c->id, c->now,
                                           &c->in_flight);
        else
            c->rc = sl_concurrency_renew(l->fallback, c->key, c->keylen, c->id, c->now, &c->lease);
        return;
    }
    c->from = mode == SL__FAIL_CLOSED ? SL__FROM_CLOSED : SL__FROM_OPEN;
    if (c->op != SL__LEASE_ACQUIRE) {
        c->rc = SL_ELEASE; /* not known: the lease expires in Redis by itself */
        return;
    }
    c->rc = SL_OK;
    if (mode == SL__FAIL_CLOSED) {
        int64_t retry = sl__small_call_retry_after(sc);
        c->acq = (sl_acquire){.limit = limit, .in_flight = limit, .retry_after = retry};
        c->retry_closed = retry;
        return;
    }
    /* open: a lease Redis never knew (its release answers "not held") */
    c->acq = (sl_acquire){.acquired = true,
                          .lease = {.id = c->id, .expires = c->now + lease},
                          .limit = limit,
                          .in_flight = 1,
                          .remaining = limit - 1};
}

static void lease_reply(sl__small_call *sc, bool good, const long long v[4]) {
    sl__lease_call *c = sc->call;
    long long ok = v[0], n = v[1], ttl = v[2], retry = v[3];
    if (!good) {
        without_redis(sc);
    } else {
        int64_t limit = atomic_load_explicit(&c->limit->limit, memory_order_relaxed);
        c->from = SL__FROM_REDIS;
        c->rc = SL_OK;
        c->in_flight = n;
        switch (c->op) {
        case SL__LEASE_ACQUIRE:
            c->acq = (sl_acquire){.acquired = ok == 1,
                                  .limit = limit,
                                  .in_flight = n,
                                  .remaining = limit > n ? limit - n : 0};
            if (ok == 1)
                c->acq.lease = (sl_lease){.id = c->id, .expires = c->now + (int64_t)ttl * 1000};
            else
                c->acq.retry_after = retry > 0 ? (int64_t)retry * 1000 : 1000;
            break;
        case SL__LEASE_RELEASE:
            c->rc = ok == 1 ? SL_OK : SL_ELEASE;
            break;
        default:
            c->rc = ok == 1 ? SL_OK : SL_ELEASE;
            if (ok == 1)
                c->lease = (sl_lease){.id = c->id, .expires = c->now + (int64_t)ttl * 1000};
        }
    }
    c->done(c);
}

static const sl__small_script lease_script = {.source = sl__lease_lua_text,
                                              .sha1 = sl__lease_lua_text_sha1,
                                              .nargs = 9,
                                              .args = lease_args,
                                              .reply = lease_reply};

void sl__redis_lease(sl__store *s, sl__lease_call *c) {
    char ns[sizeof c->limit->name + 8];
    snprintf(ns, sizeof ns, "%s~lease", c->limit->name); /* '~' is in no policy name */
    sl__small_call *sc = sl__small_call_new(s, &lease_script, c, ns, c->key, c->keylen);
    if (!sc) {
        c->rc = SL_ENOMEM;
        c->done(c);
        return;
    }
    if (c->op == SL__LEASE_ACQUIRE) c->id = new_id();
    sl__small_call_send(sc);
}
