/* batch.c: batched mode (see batch.h). The workers record local charges in
 * a striped hash of (policy, key) -> count; one worker's timer pushes them
 * every sync_interval through its Redis client (one script call per chunk
 * of keys of one cluster slot; hiredis sends what one loop tick issues in
 * one write), and charges what the rest of the fleet consumed to the local
 * tables when the answers come back. */
#include "store/batch.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "store/memory.h"
#include "store/retry.h"
#include "store/redis_cluster.h"
#include "store/redis_store.h"
#include "store/redis_script.h"
#include "util/buf.h"
#include "util/log.h"

#define STRIPES     64
#define BUCKETS     1024       /* per stripe */
#define MAX_ENTRIES (1u << 20) /* keys remembered at once; beyond, charges are not shared */
#define KEEP_ROUNDS 20         /* syncs without local use before a key is forgotten */
#define CHUNK       256        /* keys per script call */
#define SYNC_KEYS                                                                                  \
    4096                 /* keys pushed per sync at most (10 to 25 ms of Redis time);              \
                            the others keep their counts for the next syncs */
#define MIN_TTL_MS 60000 /* of the fleet's counters (refreshed by every sync) */

/* KEYS: the counters; ARGV[1]: their TTL in ms; ARGV[1 + i]: what to add to
 * KEYS[i]. Returns the totals. */
static const char sync_script[] = "local t = {}\n"
                                  "for i = 1, #KEYS do\n"
                                  "  t[i] = redis.call('INCRBY', KEYS[i], ARGV[i + 1])\n"
                                  "  redis.call('PEXPIRE', KEYS[i], ARGV[1])\n"
                                  "end\n"
                                  "return t\n";

typedef struct entry {
    struct entry *next;
    uint64_t hash;
    int64_t delta;     /* charged here since the last push */
    int64_t in_flight; /* pushed, not answered yet */
    int64_t last_seen; /* the fleet's total at the last answer */
    int64_t debt;      /* what the fleet consumed beyond what the local table could take */
    bool have_last, sending;
    unsigned idle; /* syncs without local use */
    size_t plen, klen;
    char text[]; /* policy NUL key NUL */
} entry;

typedef struct stripe {
    pthread_mutex_t mu;
    entry *b[BUCKETS];
} stripe;

struct sl__batch {
    const sl__redis_config *cfg;
    uint64_t seed;
    stripe s[STRIPES];
    atomic_size_t entries;
    atomic_int debtors; /* entries with a debt */
    atomic_uint_fast64_t dropped;
    sl__batch_counters stats;
    /* the syncing worker's side */
    uv_loop_t *loop;
    sl__redis *rc;
    sl__batch_hooks hooks;
    uv_timer_t timer;
    bool started;
    int in_flight;        /* script calls of the current sync not answered yet */
    unsigned next_stripe; /* where the next sync starts (syncs that hit SYNC_KEYS rotate) */
    sl__buf cmd;
};

/* One script call: up to CHUNK entries of one slot. */
typedef struct push {
    sl__batch *b;
    unsigned slot;
    size_t n;
    entry *e[CHUNK];
    stripe *st[CHUNK];
    int64_t cost[CHUNK];
} push;

static void add(atomic_uint_fast64_t *c, uint64_t n) {
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

sl__batch *sl__batch_new(const sl__redis_config *cfg) {
    sl__batch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->cfg = cfg;
    b->seed = sl__random_seed();
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&b->s[i].mu, NULL);
    sl__buf_init(&b->cmd);
    return b;
}

void sl__batch_free(sl__batch *b) {
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

const sl__batch_counters *sl__batch_stats(const sl__batch *b) {
    return &b->stats;
}

static uint64_t hash_of(const sl__batch *b, const char *policy, size_t plen, const void *key,
                        size_t keylen) {
    return sl__hash(key, keylen, b->seed) ^ sl__hash(policy, plen, b->seed + 1);
}

/* The entry of (policy, key) in the stripe of h (locked by the caller). */
static entry *find(sl__batch *b, uint64_t h, const char *policy, size_t plen, const void *key,
                   size_t keylen, entry ***head) {
    stripe *st = &b->s[h % STRIPES];
    *head = &st->b[(h / STRIPES) % BUCKETS];
    entry *e = **head;
    while (e && !(e->hash == h && e->plen == plen && e->klen == keylen &&
                  memcmp(e->text, policy, plen) == 0 &&
                  (keylen == 0 || memcmp(e->text + plen + 1, key, keylen) == 0)))
        e = e->next;
    return e;
}

/* Where (policy, key) is or goes: its hash, stripe and bucket. */
typedef struct place {
    size_t plen;
    uint64_t h;
    stripe *st;
    entry **head;
} place;

/* Locks the stripe of (policy, key) and returns its entry (NULL if none),
 * with *p where it is or goes; the caller unlocks p->st->mu. */
static entry *lock_find(sl__batch *b, const char *policy, const void *key, size_t keylen,
                        place *p) {
    p->plen = strlen(policy);
    p->h = hash_of(b, policy, p->plen, key, keylen);
    p->st = &b->s[p->h % STRIPES];
    pthread_mutex_lock(&p->st->mu);
    return find(b, p->h, policy, p->plen, key, keylen, &p->head);
}

bool sl__batch_in_debt(sl__batch *b, const char *policy, const void *key, size_t keylen) {
    if (atomic_load_explicit(&b->debtors, memory_order_relaxed) == 0) return false;
    place p;
    entry *e = lock_find(b, policy, key, keylen, &p);
    bool owes = e && e->debt > 0;
    pthread_mutex_unlock(&p.st->mu);
    return owes;
}

void sl__batch_add(sl__batch *b, const char *policy, const void *key, size_t keylen, int64_t cost) {
    if (cost <= 0) return;
    place p;
    entry *e = lock_find(b, policy, key, keylen, &p);
    if (!e) {
        if (atomic_load_explicit(&b->entries, memory_order_relaxed) >= MAX_ENTRIES ||
            !(e = calloc(1, sizeof *e + p.plen + keylen + 2))) {
            pthread_mutex_unlock(&p.st->mu);
            add(&b->dropped, 1);
            return;
        }
        e->hash = p.h;
        e->plen = p.plen;
        e->klen = keylen;
        memcpy(e->text, policy, p.plen + 1);
        memcpy(e->text + p.plen + 1, key, keylen);
        e->next = *p.head;
        *p.head = e;
        atomic_fetch_add_explicit(&b->entries, 1, memory_order_relaxed);
    }
    e->delta = e->delta > INT64_MAX - cost ? INT64_MAX : e->delta + cost;
    pthread_mutex_unlock(&p.st->mu);
}

int64_t sl__batch_pending(sl__batch *b, const char *policy, const void *key, size_t keylen) {
    place p;
    entry *e = lock_find(b, policy, key, keylen, &p);
    int64_t n = e ? e->delta : 0;
    pthread_mutex_unlock(&p.st->mu);
    return n;
}

/* ---- syncing (on the syncing worker's loop) ---------------------------------- */

static void set_debt(sl__batch *b, entry *e, int64_t debt) {
    if ((e->debt > 0) != (debt > 0)) atomic_fetch_add(&b->debtors, debt > 0 ? 1 : -1);
    e->debt = debt;
}

static void on_push(void *arg, const redisReply *reply, int status) {
    push *p = arg;
    sl__batch *b = p->b;
    bool ok = status == SL__REDIS_OK && reply->type == REDIS_REPLY_ARRAY && reply->elements == p->n;
    for (size_t i = 0; ok && i < p->n; i++) ok = reply->element[i]->type == REDIS_REPLY_INTEGER;
    if (!ok) add(&b->stats.failed_syncs, p->n);
    for (size_t i = 0; i < p->n; i++) {
        entry *e = p->e[i];
        stripe *st = p->st[i];
        int64_t others = 0, owed = 0;
        pthread_mutex_lock(&st->mu);
        if (ok) {
            int64_t total = reply->element[i]->integer;
            if (e->have_last) {
                others = total - e->last_seen - e->in_flight;
                if (others < 0) /* the counter expired meanwhile and started again */
                    others = total - e->in_flight > 0 ? total - e->in_flight : 0;
            }
            /* the first answer for a key only says where the fleet's count is */
            e->last_seen = total;
            e->have_last = true;
            owed = others + e->debt;
        } else if (status != SL__REDIS_ETIMEOUT) {
            /* not counted by the fleet: push it again next time. A call that
             * timed out may have been counted all the same, so it is not
             * pushed again (the fleet may miss it; pushing it twice would
             * count it twice). */
            e->delta = e->delta > INT64_MAX - e->in_flight ? INT64_MAX : e->delta + e->in_flight;
        }
        e->in_flight = 0;
        e->sending = false;
        pthread_mutex_unlock(&st->mu);
        if (!ok || owed <= 0) continue;
        /* charge the table (outside the stripe lock: the table has its own) */
        int64_t left = b->hooks.charge(b->hooks.ctx, e->text, e->text + e->plen + 1, e->klen, owed);
        add(&b->stats.applied_units, (uint64_t)(owed - left));
        pthread_mutex_lock(&st->mu);
        set_debt(b, e, left > 0 ? left : 0);
        pthread_mutex_unlock(&st->mu);
    }
    if (ok) add(&b->stats.keys_synced, p->n);
    if (--b->in_flight == 0) add(&b->stats.syncs, 1);
    free(p);
}

static void send_push(sl__batch *b, push *p) {
    const int64_t *cost = p->cost;
    sl__buf *c = &b->cmd;
    sl__buf_reset(c);
    sl__buf_printf(c, "*%zu\r\n$4\r\nEVAL\r\n$%zu\r\n", 4 + 2 * p->n, sizeof sync_script - 1);
    sl__buf_append(c, sync_script, sizeof sync_script - 1);
    char num[24];
    int k = snprintf(num, sizeof num, "%zu", p->n);
    sl__buf_printf(c, "\r\n$%d\r\n%s\r\n", k, num);
    sl__buf key;
    sl__buf_init(&key);
    for (size_t i = 0; i < p->n; i++) {
        entry *e = p->e[i];
        sl__buf_reset(&key);
        sl__redis_key(&key, b->cfg->prefix, e->text, e->text + e->plen + 1, e->klen);
        sl__buf_append(&key, ":n", 2);
        sl__buf_bulk(c, key.data, key.len);
    }
    sl__buf_free(&key);
    int64_t ttl = b->cfg->sync_interval / 1000000 * 100;
    if (ttl < MIN_TTL_MS) ttl = MIN_TTL_MS;
    k = snprintf(num, sizeof num, "%lld", (long long)ttl);
    sl__buf_printf(c, "$%d\r\n%s\r\n", k, num);
    for (size_t i = 0; i < p->n; i++) {
        k = snprintf(num, sizeof num, "%lld", (long long)cost[i]);
        sl__buf_printf(c, "$%d\r\n%s\r\n", k, num);
    }
    b->in_flight++;
    if (c->failed) {
        sl__buf_free(c);
        sl__buf_init(c);
        on_push(p, NULL, SL__REDIS_EIO);
        return;
    }
    sl__redis_call(b->rc, p->slot, c->data, c->len, on_push, p);
}

static unsigned slot_of(sl__batch *b, const entry *e) {
    if (!b->cfg->cluster) return 0;
    sl__buf key;
    sl__buf_init(&key);
    sl__redis_key(&key, b->cfg->prefix, e->text, e->text + e->plen + 1, e->klen);
    unsigned s = key.failed ? 0 : sl__cluster_keyslot(key.data, key.len);
    sl__buf_free(&key);
    return s;
}

#define MAX_OPEN 64 /* pushes being filled at once (one per cluster slot seen) */

static void on_sync(uv_timer_t *t) {
    sl__batch *b = t->data;
    if (b->in_flight) return; /* the last sync is not answered yet */
    b->in_flight = 1;         /* held while pushing */
    push *open[MAX_OPEN];
    push *ready[MAX_OPEN]; /* full ones, sent once the stripe is unlocked */
    size_t nopen = 0, pushed = 0;
    unsigned first = b->next_stripe;
    int hit = -1; /* the stripe where SYNC_KEYS was reached: the next sync starts there */
    for (unsigned si = 0; si < STRIPES; si++) {
        unsigned i = (first + si) % STRIPES;
        stripe *st = &b->s[i];
        size_t nready = 0;
        pthread_mutex_lock(&st->mu);
        for (int k = 0; k < BUCKETS; k++) {
            for (entry **pe = &st->b[k]; *pe;) {
                entry *e = *pe;
                if (e->delta == 0 && e->debt == 0 && !e->sending && ++e->idle > KEEP_ROUNDS) {
                    *pe = e->next; /* forgotten: unused for a while */
                    free(e);
                    atomic_fetch_sub_explicit(&b->entries, 1, memory_order_relaxed);
                    continue;
                }
                if (e->delta > 0) e->idle = 0;
                pe = &e->next;
                /* pushed: what was used here, and what owes (its sync pays the debt).
                 * A key unused here is not asked about: when it is used again, the
                 * push reads what the others used meanwhile. */
                if (e->sending || nready == MAX_OPEN || (e->delta == 0 && e->debt == 0) ||
                    pushed >= SYNC_KEYS)
                    continue; /* (or the next sync takes it) */
                if (++pushed == SYNC_KEYS) hit = (int)i;
                unsigned slot = slot_of(b, e);
                size_t j = 0;
                while (j < nopen && open[j]->slot != slot) j++;
                if (j == nopen) {
                    if (nopen == MAX_OPEN) continue; /* the next sync takes it */
                    push *p = calloc(1, sizeof *p);
                    if (!p) continue;
                    p->b = b;
                    p->slot = slot;
                    open[nopen++] = p;
                }
                push *p = open[j];
                e->in_flight = e->delta;
                e->delta = 0;
                e->sending = true;
                p->cost[p->n] = e->in_flight;
                p->e[p->n] = e;
                p->st[p->n++] = st;
                if (p->n == CHUNK) { /* full: goes out after the unlock */
                    ready[nready++] = p;
                    open[j] = open[--nopen];
                }
            }
        }
        pthread_mutex_unlock(&st->mu);
        for (size_t j = 0; j < nready; j++) send_push(b, ready[j]);
    }
    for (size_t j = 0; j < nopen; j++) send_push(b, open[j]);
    if (hit >= 0) b->next_stripe = (unsigned)hit;
    if (--b->in_flight == 0) add(&b->stats.syncs, 1);
}

void sl__batch_start(sl__batch *b, uv_loop_t *loop, sl__redis *rc, const sl__batch_hooks *hooks) {
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

void sl__batch_stop(sl__batch *b) {
    if (!b || !b->started) return;
    b->started = false;
    uv_close((uv_handle_t *)&b->timer, NULL);
}

/* ---- the batched store ------------------------------------------------------- */

typedef struct batch_store {
    sl__store base; /* first: the store interface */
    sl__batch *b;
    int64_t owes_retry; /* what a refusal for a debt says (the sync interval) */
    sl__redis *rc;      /* the syncer's client, or NULL */
} batch_store;

static void done_nothing(sl__store_call *c) {
    (void)c;
}

/* Did the items idx[0..n) pass (as their group)? */
static bool passed(const sl__store_call *c, const size_t *idx, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!c->items[idx[k]].decided || !c->items[idx[k]].decision.allowed) return false;
    return true;
}

static void record(sl__batch *b, const sl__store_call *c, const size_t *idx, size_t n) {
    for (size_t k = 0; k < n; k++) {
        const sl__store_item *it = &c->items[idx[k]];
        if (it->cost > 0) sl__batch_add(b, it->limit->name, it->key, it->keylen, it->cost);
    }
}

/* The charges of a refused group idx[0..n) (nothing but its count_rejected
 * items are charged, as a rejection: an item that had room its cost, the
 * refusing ones what they had left, never beyond empty; before[] is what
 * each had left before the call; nothing at all when a cost can never
 * pass). */
static void record_rejected(sl__batch *b, const sl__store_call *c, const size_t *idx, size_t n,
                            const int64_t *before) {
    for (size_t k = 0; k < n; k++)
        if (c->items[idx[k]].decided && c->items[idx[k]].decision.retry_after < 0) return;
    for (size_t k = 0; k < n; k++) {
        const sl__store_item *it = &c->items[idx[k]];
        if (it->cost <= 0 || before[idx[k]] < 0 || !it->decided) continue;
        int64_t charged = it->decision.allowed        ? it->cost
                          : it->cost < before[idx[k]] ? it->cost
                                                      : before[idx[k]];
        if (charged > 0) sl__batch_add(b, it->limit->name, it->key, it->keylen, charged);
    }
}

static bool counts_rejected(const sl__store_item *it) {
    const sl_params *p = it->params ? it->params : it->limit->params;
    return it->cost > 0 && p && (p->flags & SL_COUNT_REJECTED);
}

static void batch_decide(sl__store *s, sl__store_call *c) {
    batch_store *bs = (batch_store *)s;
    size_t g0[SL__STORE_MAX_ITEMS] = {0}, g1[SL__STORE_MAX_ITEMS] = {0}, n0 = 0, n1 = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->items[i].group)
            g1[n1++] = i;
        else
            g0[n0++] = i;
    }
    /* a limit whose key owes the fleet refuses, its table untouched (looked at) */
    for (size_t k = 0; k < n0; k++) {
        sl__store_item *it = &c->items[g0[k]];
        if (it->cost <= 0 || !sl__batch_in_debt(bs->b, it->limit->name, it->key, it->keylen))
            continue;
        c->from = SL__FROM_REDIS;
        c->rc = 0;
        c->rc_item = c->n;
        for (size_t i = 0; i < c->n; i++) {
            sl__store_item *x = &c->items[i];
            x->decided = sl__memory_peek(x->limit, x->key, x->keylen, c->now, &x->decision) == 0;
        }
        sl_decision *d = &it->decision;
        if (!it->decided) *d = (sl_decision){0};
        it->decided = true;
        d->allowed = false;
        d->remaining = 0;
        if (d->retry_after < bs->owes_retry) d->retry_after = bs->owes_retry;
        if (d->reset_after < d->retry_after) d->reset_after = d->retry_after;
        c->done(c);
        return;
    }
    /* what count_rejected items have left before (their charge when refused) */
    int64_t before[SL__STORE_MAX_ITEMS];
    for (size_t i = 0; i < c->n; i++) {
        sl__store_item *x = &c->items[i];
        sl_decision d;
        before[i] =
            counts_rejected(x) && sl__memory_peek(x->limit, x->key, x->keylen, c->now, &d) == 0
                ? d.remaining
                : -1;
    }
    /* the memory store decides (inline); then the charges are recorded */
    sl__store_done_fn done = c->done;
    c->done = done_nothing;
    sl__memory_decide(c);
    c->done = done;
    if (c->rc == 0 && passed(c, g0, n0)) {
        record(bs->b, c, g0, n0);
        if (passed(c, g1, n1))
            record(bs->b, c, g1, n1);
        else
            record_rejected(bs->b, c, g1, n1, before);
    } else if (c->rc == 0) {
        record_rejected(bs->b, c, g0, n0, before); /* group 1 was only looked at */
    }
    c->done(c);
}

static void batch_store_free(sl__store *s) {
    batch_store *bs = (batch_store *)s;
    if (bs->rc) {
        sl__batch_stop(bs->b);
        sl__redis_free(bs->rc);
    }
    free(bs);
}

/* Batched mode forgets this server's state only: the fleet's counts in
 * Redis are the syncs' (docs/resp.md). */
static void batch_forget(sl__store *s, sl__store_call *c) {
    (void)s;
    sl__memory_forget(c, false);
}

static const sl__store_ops batch_ops = {.decide = batch_decide,
                                        .free = batch_store_free,
                                        .forget = batch_forget,
                                        .retry = sl__memory_retry}; /* per server */

sl__store *sl__batch_store_new(sl__batch *b, uv_loop_t *loop, const sl__redis_config *sync_cfg,
                               sl__redis_stats *stats, const sl__batch_hooks *hooks) {
    batch_store *bs = calloc(1, sizeof *bs);
    if (!bs) return NULL;
    bs->base.ops = &batch_ops;
    bs->b = b;
    bs->owes_retry = b->cfg->sync_interval;
    if (!hooks) { /* not the syncer: it never talks to Redis */
        atomic_store(&stats->up, 1);
        return &bs->base;
    }
    bs->rc = sl__redis_new(loop, sync_cfg, stats);
    if (!bs->rc) {
        free(bs);
        return NULL;
    }
    sl__store_preamble(bs->rc);
    sl__batch_start(b, loop, bs->rc, hooks);
    return &bs->base;
}
