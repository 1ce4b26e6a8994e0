/* batch.c: batched mode (see batch.h). The workers record local charges in
 * a striped hash of (policy, key) -> count; one worker's timer pushes them
 * every sync_interval through its Redis client (every push of one interval
 * leaves in one write: hiredis pipelines what a loop tick issues) and lowers
 * the local tables to the fleet's state when the answers come back. */
#include "store/batch.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "server/buf.h"
#include "server/log.h"
#include "store/redis_cluster.h"
#include "store/redis_script.h"

#define STRIPES      64
#define BUCKETS      1024        /* per stripe */
#define MAX_ENTRIES  (1u << 20)  /* keys remembered at once; beyond, charges are not shared */
#define KEEP_ROUNDS  20          /* syncs without local use before a key is forgotten */

typedef struct entry {
    struct entry *next;
    uint64_t hash;
    int64_t delta;     /* charged here since the last push */
    int64_t in_flight; /* pushed, not answered yet */
    bool sending;
    unsigned idle; /* syncs without local use */
    size_t plen, klen;
    char text[]; /* policy NUL key NUL */
} entry;

typedef struct stripe {
    pthread_mutex_t mu;
    entry *b[BUCKETS];
} stripe;

struct sl_batch {
    const sl_redis_config *cfg;
    uint64_t seed;
    stripe s[STRIPES];
    atomic_size_t entries;
    atomic_uint_fast64_t dropped;
    sl_batch_stats stats;
    /* the syncing worker's side */
    uv_loop_t *loop;
    sl_redis *rc;
    sl_batch_hooks hooks;
    uv_timer_t timer;
    bool started;
    int in_flight; /* pushes of the current sync not answered yet */
    sl_buf cmd;
};

typedef struct push {
    sl_batch *b;
    entry *e;
    stripe *st;
    sl_params params;
    bool calendar, with_source;
    int64_t cost;
} push;

static void send_push(sl_batch *b, push *p);

static void add(atomic_uint_fast64_t *c, uint64_t n) {
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

sl_batch *sl__batch_new(const sl_redis_config *cfg) {
    sl_batch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->cfg = cfg;
    b->seed = sl__random_seed();
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&b->s[i].mu, NULL);
    sl__buf_init(&b->cmd);
    return b;
}

void sl__batch_free(sl_batch *b) {
    if (!b) return;
    for (int i = 0; i < STRIPES; i++) {
        for (int k = 0; k < BUCKETS; k++)
            for (entry *e = b->s[i].b[k], *n; e; e = n) {
                n = e->next;
                free(e);
            }
        pthread_mutex_destroy(&b->s[i].mu);
    }
    sl__buf_free(&b->cmd);
    free(b);
}

const sl_batch_stats *sl__batch_stats(const sl_batch *b) {
    return &b->stats;
}

void sl__batch_add(sl_batch *b, const char *policy, const void *key, size_t keylen,
                   int64_t cost) {
    if (cost <= 0) return;
    size_t plen = strlen(policy);
    uint64_t h = sl__hash(key, keylen, b->seed) ^ sl__hash(policy, plen, b->seed + 1);
    stripe *st = &b->s[h % STRIPES];
    size_t bucket = (h / STRIPES) % BUCKETS;
    pthread_mutex_lock(&st->mu);
    entry *e = st->b[bucket];
    while (e && !(e->hash == h && e->plen == plen && e->klen == keylen &&
                  memcmp(e->text, policy, plen) == 0 &&
                  memcmp(e->text + plen + 1, key, keylen) == 0))
        e = e->next;
    if (!e) {
        if (atomic_load_explicit(&b->entries, memory_order_relaxed) >= MAX_ENTRIES ||
            !(e = calloc(1, sizeof *e + plen + keylen + 2))) {
            pthread_mutex_unlock(&st->mu);
            add(&b->dropped, 1);
            return;
        }
        e->hash = h;
        e->plen = plen;
        e->klen = keylen;
        memcpy(e->text, policy, plen + 1);
        memcpy(e->text + plen + 1, key, keylen);
        e->next = st->b[bucket];
        st->b[bucket] = e;
        atomic_fetch_add_explicit(&b->entries, 1, memory_order_relaxed);
    }
    e->delta = e->delta > INT64_MAX - cost ? INT64_MAX : e->delta + cost;
    pthread_mutex_unlock(&st->mu);
}

/* ---- syncing (on the syncing worker's loop) ---------------------------------- */

static int64_t limit_of(const sl_params *p) {
    bool bucket = p->algorithm == SL_TOKEN_BUCKET || p->algorithm == SL_GCRA ||
                  p->algorithm == SL_LEAKY_QUEUE;
    return bucket ? p->burst : p->rate.limit;
}

static void on_push(void *arg, const redisReply *reply, int status) {
    push *p = arg;
    sl_batch *b = p->b;
    entry *e = p->e;
    sl_decision d = {0};
    bool ok = false;
    if (status == SL_REDIS_OK && reply->type == REDIS_REPLY_ERROR && !p->with_source &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        p->with_source = true; /* Redis lost the script: EVAL loads it again */
        send_push(b, p);
        return;
    }
    if (status == SL_REDIS_OK) {
        sl_script_item si = {.params = &p->params,
                             .rkey = "",
                             .cost = p->cost,
                             .group = 0};
        char err[160];
        ok = sl__redis_script_parse(reply, &si, 1, err, sizeof err) == 0 && si.decided;
        d = si.decision;
    }
    pthread_mutex_lock(&p->st->mu);
    int64_t since = e->delta; /* charged locally after the push: not in the fleet's answer */
    /* Not counted by the fleet: push it again next time. A call that timed
     * out may have been counted all the same, so it is not pushed again
     * (the fleet may miss it; pushing it twice would count it twice). */
    if (!ok && status != SL_REDIS_ETIMEOUT)
        e->delta = e->delta > INT64_MAX - e->in_flight ? INT64_MAX : e->delta + e->in_flight;
    e->in_flight = 0;
    e->sending = false;
    pthread_mutex_unlock(&p->st->mu);
    if (ok) {
        int64_t target = d.remaining - since;
        b->hooks.apply(b->hooks.ctx, e->text, e->text + e->plen + 1, e->klen,
                       target > 0 ? target : 0);
        add(&b->stats.keys_synced, 1);
    }
    if (!ok) add(&b->stats.failed_syncs, 1);
    if (--b->in_flight == 0) add(&b->stats.syncs, 1);
    free(p);
}

static void send_push(sl_batch *b, push *p) {
    entry *e = p->e;
    sl_buf key;
    sl__buf_init(&key);
    sl__redis_key(&key, b->cfg->prefix, e->text, e->text + e->plen + 1, e->klen);
    sl_script_item si = {.params = &p->params,
                         .calendar_month = p->calendar,
                         .rkey = key.data,
                         .rkeylen = key.len,
                         .cost = p->cost,
                         .group = 0};
    sl__buf_reset(&b->cmd);
    sl__redis_script_format(&b->cmd, p->with_source, &si, 1, 0);
    unsigned slot = b->cfg->cluster ? sl__cluster_keyslot(key.data, key.len) : 0;
    sl__buf_free(&key);
    sl__redis_call(b->rc, slot, b->cmd.data, b->cmd.len, on_push, p);
}

static void push_entry(sl_batch *b, stripe *st, entry *e, int64_t cost) {
    push *p = malloc(sizeof *p);
    if (!p || !b->hooks.params(b->hooks.ctx, e->text, &p->params, &p->calendar)) {
        free(p);
        pthread_mutex_lock(&st->mu);
        e->sending = false;
        e->in_flight = 0;
        pthread_mutex_unlock(&st->mu);
        return;
    }
    p->b = b;
    p->e = e;
    p->st = st;
    p->with_source = false;
    /* the script refuses a cost above the limit outright; a larger count
     * empties the state all the same */
    int64_t lim = limit_of(&p->params);
    p->cost = cost < lim ? cost : lim;
    p->params.flags |= SL_COUNT_REJECTED;
    b->in_flight++;
    send_push(b, p);
}

static void on_sync(uv_timer_t *t) {
    sl_batch *b = t->data;
    if (b->in_flight) return; /* the last sync is not answered yet */
    b->in_flight = 1;         /* held while pushing */
    size_t cap = 256;
    entry **todo = malloc(cap * sizeof *todo);
    int64_t *cost = malloc(cap * sizeof *cost);
    for (int i = 0; i < STRIPES && todo && cost; i++) {
        stripe *st = &b->s[i];
        size_t n = 0;
        /* collect under the lock, push after it (a push may answer at once) */
        pthread_mutex_lock(&st->mu);
        for (int k = 0; k < BUCKETS; k++) {
            for (entry **pe = &st->b[k]; *pe;) {
                entry *e = *pe;
                if (e->delta == 0 && !e->sending && ++e->idle > KEEP_ROUNDS) {
                    *pe = e->next; /* forgotten: unused for a while */
                    free(e);
                    atomic_fetch_sub_explicit(&b->entries, 1, memory_order_relaxed);
                    continue;
                }
                if (e->delta > 0) e->idle = 0;
                if (!e->sending) {
                    if (n == cap) {
                        entry **t2 = realloc(todo, 2 * cap * sizeof *todo);
                        if (t2) todo = t2;
                        int64_t *c2 = t2 ? realloc(cost, 2 * cap * sizeof *cost) : NULL;
                        if (c2) cost = c2;
                        if (!t2 || !c2) break;
                        cap *= 2;
                    }
                    e->in_flight = e->delta;
                    e->delta = 0;
                    e->sending = true;
                    todo[n] = e;
                    cost[n++] = e->in_flight;
                }
                pe = &e->next;
            }
        }
        pthread_mutex_unlock(&st->mu);
        for (size_t j = 0; j < n; j++) push_entry(b, st, todo[j], cost[j]);
    }
    free(todo);
    free(cost);
    if (--b->in_flight == 0) add(&b->stats.syncs, 1);
}
void sl__batch_start(sl_batch *b, uv_loop_t *loop, sl_redis *rc, const sl_batch_hooks *hooks) {
    b->loop = loop;
    b->rc = rc;
    b->hooks = *hooks;
    uv_timer_init(loop, &b->timer);
    b->timer.data = b;
    uint64_t ms = (uint64_t)(b->cfg->sync_interval / 1000000);
    if (ms == 0) ms = 1;
    uv_timer_start(&b->timer, on_sync, ms, ms);
    b->started = true;
}

void sl__batch_stop(sl_batch *b) {
    if (!b || !b->started) return;
    b->started = false;
    uv_close((uv_handle_t *)&b->timer, NULL);
}
