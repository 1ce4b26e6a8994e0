/* decide.c: the one decision engine (see decide.h): calls, the grouping
 * and bookkeeping around the store's decision, and the engine's
 * constructors, the only place that knows which store a config selects. */
#include "policy/decide.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/ramp.h"
#include "sluice/clock.h"
#include "sluice/error.h"
#include "store/batch.h"
#include "store/memory.h"
#include "store/redis_store.h"
#include "util/log.h"
#include "util/units.h"

enum { STORE_MEMORY, STORE_REDIS, STORE_BATCHED };

struct sl__engine {
    int kind;
    sl__redis_config cfg;       /* store.redis */
    sl__redis_config batch_cfg; /* with the syncs' timeout */
    sl__batch *batch;           /* sync: batched */
    sl__store_stats stats[SL__ENGINE_MAX_WORKERS];
};

struct sl__decider {
    sl__engine *e;
    sl__store *store;
    sl__policy_set *const *policies;
    sl__store_stats *stats; /* this worker's */
    bool was_up, down;      /* sl__decider_recovered: up once, and down since */
};

void sl__decide_limit_init(sl__decide_limit *l, bool shadow) {
    atomic_init(&l->allowed, 0);
    atomic_init(&l->limited, 0);
    atomic_init(&l->shadow_limited, 0);
    atomic_init(&l->shadow, shadow);
    for (int i = 0; i <= SL__RATIO_BUCKETS; i++) atomic_init(&l->ratio[i], 0);
    atomic_init(&l->ratio_sum, 0);
    l->ramp = NULL; /* the owner sets them for a policy with ramp_up */
    l->ramp_cap = 0;
    for (int i = 0; i < SL__FROM_COUNT; i++) atomic_init(&l->store.from[i], 0);
}

/* ---- calls ------------------------------------------------------------------ */

#define ALIGN(n) (((n) + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1))

/* Calls of at most CACHED_BYTES are kept for reuse by the thread that freed
 * them (a worker decides one after another: no allocator on the path). */
#define CACHED_EXTRA                                                                               \
    (16 * 1024) /* keys, labels and user bytes of a cached call (a domain call: 10 KiB) */
#define CACHED_BYTES (ALIGN(sizeof(sl__decide_call)) + CACHED_EXTRA)
#define CACHE_MAX    16

typedef struct cached {
    struct cached *next;
} cached;

static _Thread_local cached *cache;
static _Thread_local unsigned ncache;
static _Thread_local bool cache_armed;
static pthread_key_t cache_key; /* its destructor frees a thread's cache when it exits */
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_drop(void *unused) {
    (void)unused;
    while (cache) {
        cached *k = cache;
        cache = k->next;
        free(k);
    }
    ncache = 0;
}

static void cache_init(void) {
    pthread_key_create(&cache_key, cache_drop);
}

static void *call_alloc(size_t bytes, size_t *cap) {
    if (bytes <= CACHED_BYTES) {
        *cap = CACHED_BYTES;
        if (cache) {
            cached *k = cache;
            cache = k->next;
            ncache--;
            return k;
        }
        return malloc(CACHED_BYTES);
    }
    *cap = bytes;
    return malloc(bytes);
}

static void call_release(sl__decide_call *c) {
    if (c->cap == CACHED_BYTES && ncache < CACHE_MAX) {
        if (!cache_armed) { /* arm the destructor of this thread's cache */
            pthread_once(&cache_once, cache_init);
            pthread_setspecific(cache_key, (void *)1);
            cache_armed = true;
        }
        cached *k = (cached *)(void *)c;
        k->next = cache;
        cache = k;
        ncache++;
        return;
    }
    free(c);
}

static inline sl__decide_call *call_new(const sl__decide_item *items, size_t n,
                                        sl__decide_label_fn label, void *ctx, size_t user_bytes,
                                        size_t own) {
    if (n > SL_CHECK_MAX || own > user_bytes) return NULL;
    char lbuf[SL_CHECK_MAX][SL__TOPK_KEY_MAX];
    size_t llen[SL_CHECK_MAX];
    size_t bytes = ALIGN(sizeof(sl__decide_call)) + ALIGN(user_bytes);
    for (size_t i = 0; i < n; i++) {
        llen[i] = label ? label(ctx, i, lbuf[i], sizeof lbuf[i]) : 0;
        bytes += items[i].keylen + llen[i] + 1;
    }
    size_t cap;
    sl__decide_call *c = call_alloc(bytes, &cap);
    if (!c) return NULL;
    c->cap = cap; /* every field is set below; items beyond n stay as they are */
    c->n = n;
    c->rc = SL_OK;
    c->refused = n;
    c->from = SL__FROM_REDIS;
    c->retry_closed = 0;
    c->done = NULL;
    c->arg = NULL;
    c->set = NULL;
    c->set_held = false;
    c->inline_mark = NULL;
    c->on_free = NULL;
    c->on_free_arg = NULL;
    c->later = NULL;
    c->later_ctx = NULL;
    c->later_labels = NULL;
    c->capacity = NULL;
    c->priority = SL_PRIORITY_DEFAULT;
    c->cap_local = c->shed = false;
    c->shed_retry = 0;
    c->user = (char *)c + ALIGN(sizeof(sl__decide_call));
    memset((char *)c->user + own, 0, user_bytes - own);
    char *p = (char *)c->user + ALIGN(user_bytes);
    for (size_t i = 0; i < n; i++) {
        c->items[i] = items[i];
        c->items[i].decided = c->items[i].shadowed = false;
        c->items[i].shadow_group = c->items[i].dropped = false;
        if (items[i].keylen) memcpy(p, items[i].key, items[i].keylen);
        c->items[i].key = p;
        p += items[i].keylen;
        c->labels[i] = NULL;
        c->label_len[i] = 0;
        if (label) {
            memcpy(p, lbuf[i], llen[i]);
            c->labels[i] = p;
            c->label_len[i] = (uint16_t)llen[i];
            p += llen[i];
        }
        *p++ = '\0';
    }
    return c;
}

sl__decide_call *sl__decide_call_new(const sl__decide_item *items, size_t n,
                                     sl__decide_label_fn label, void *ctx, size_t user_bytes) {
    return call_new(items, n, label, ctx, user_bytes, 0);
}

sl__decide_call *sl__decide_call_new_own(const sl__decide_item *items, size_t n,
                                         sl__decide_label_fn label, void *ctx, size_t user_bytes,
                                         size_t own) {
    return call_new(items, n, label, ctx, user_bytes, own);
}

void *sl__decide_call_user(sl__decide_call *c) {
    return c->user;
}

void sl__decide_call_shed(sl__decide_call *c, sl__decide_capacity *cap, sl_priority p) {
    c->capacity = cap;
    c->priority = p;
}

/* The reference is taken only when the call outlives sl__engine_decide
 * (the caller's set lives at least that long). */
void sl__decide_call_hold(sl__decide_call *c, sl__policy_set *set) {
    if (c->set_held) sl__policy_set_release(c->set);
    c->set_held = false;
    c->set = set;
}

void sl__decide_call_on_free(sl__decide_call *c, void (*fn)(void *arg), void *arg) {
    c->on_free = fn;
    c->on_free_arg = arg;
}

void sl__decide_call_label_later(sl__decide_call *c, sl__decide_label_fn fn, void *ctx) {
    c->later = fn;
    c->later_ctx = ctx;
}

/* The call goes on without its caller's frame: its labels are copied now
 * (into one heap block; out of memory, the label says so: never the key,
 * which may be an API key). */
static void labels_now(sl__decide_call *c) {
    static const char lost[] = "(no memory for the label)";
    char *p = c->later_labels = malloc(c->n * SL__TOPK_KEY_MAX);
    for (size_t i = 0; i < c->n; i++) {
        if (p) {
            c->labels[i] = p;
            c->label_len[i] = (uint16_t)c->later(c->later_ctx, i, p, SL__TOPK_KEY_MAX);
            p += SL__TOPK_KEY_MAX;
        } else {
            c->labels[i] = (char *)lost;
            c->label_len[i] = (uint16_t)(sizeof lost - 1);
        }
    }
    c->later = NULL;
    c->later_ctx = NULL;
}

void sl__decide_call_free(sl__decide_call *c) {
    if (!c) return;
    free(c->later_labels);
    if (c->on_free) c->on_free(c->on_free_arg);
    if (c->set_held) sl__policy_set_release(c->set);
    call_release(c);
}

/* ---- bookkeeping -------------------------------------------------------------- */

/* Shadow mode says in the log what it would have refused: the key as in
 * the sketch (a rule's label, never an API key in clear), printable ASCII,
 * at most SL__TOPK_KEY_MAX bytes, through sl__log_limited's budget. */
static void log_shadow(const sl__decide_limit *l, const char *key, size_t keylen,
                       const sl_decision *d, int64_t now) {
    if (l->log_shadow) {
        l->log_shadow(l, key, keylen, d, now);
        return;
    }
    char text[SL__TOPK_KEY_MAX + 1];
    size_t n = keylen < SL__TOPK_KEY_MAX ? keylen : SL__TOPK_KEY_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        text[i] = (char)(c >= 0x20 && c < 0x7f ? c : '?');
    }
    text[n] = '\0';
    int64_t ms = d->retry_after < 0 ? -1 : sl__ceil_ms(d->retry_after);
    if (ms < 0)
        sl__log_limited(now, SL__LOG_INFO,
                        "shadow: policy %s would have refused %s (its cost can never pass)",
                        l->store.name, text);
    else
        sl__log_limited(now, SL__LOG_INFO,
                        "shadow: policy %s would have refused %s (retry after %lld ms)",
                        l->store.name, text, (long long)ms);
}

/* The near-limit histogram: remaining / limit of one decision, in integers
 * (128-bit products: limits go up to 2^61). Two relaxed atomic adds. */
static void observe_ratio(sl__decide_limit *l, const sl_decision *d) {
    if (d->limit <= 0) return;
    static const unsigned bound[SL__RATIO_BUCKETS] = SL__RATIO_BOUNDS;
    unsigned __int128 rem = d->remaining > 0 ? (unsigned __int128)d->remaining : 0;
    unsigned __int128 lim = (unsigned __int128)d->limit;
    int b = 0;
    if (rem * 2 > lim) /* the common case, more than half left: the two last buckets */
        b = rem > lim ? SL__RATIO_BUCKETS : SL__RATIO_BUCKETS - 1;
    else
        while (b < SL__RATIO_BUCKETS && rem * 100 > lim * bound[b]) b++;
    atomic_fetch_add_explicit(&l->ratio[b], 1, memory_order_relaxed);
    if (!rem) return;
    /* 64-bit division when the product fits (any remaining below 2^44) */
    uint64_t millionths = rem < ((unsigned __int128)1 << 44)
                              ? (uint64_t)rem * 1000000u / (uint64_t)d->limit
                              : (uint64_t)(rem * 1000000u / lim);
    atomic_fetch_add_explicit(&l->ratio_sum, millionths, memory_order_relaxed);
}

/* Item i's label for the sketches and the shadow log: the call's copy, or
 * made now by the caller's function (inside sl__engine_decide, while the
 * caller's context lives), or the key. */
static const char *label_of(sl__decide_call *c, size_t i, char buf[SL__TOPK_KEY_MAX], size_t *len) {
    if (c->labels[i]) {
        *len = c->label_len[i];
        return c->labels[i];
    }
    if (c->later) {
        *len = c->later(c->later_ctx, i, buf, SL__TOPK_KEY_MAX);
        return buf;
    }
    *len = c->items[i].keylen;
    return c->items[i].key;
}

/* Counts the items idx[0..n) of one group: every one as allowed when the
 * group passed; else only those that said no (as limited, or as
 * shadow_limited for the shadow group, which then reports them allowed). */
static void count_group(sl__decide_call *c, const size_t *idx, size_t n, bool refused, bool shadow,
                        int64_t now) {
    for (size_t k = 0; k < n; k++) {
        sl__decide_item *it = &c->items[idx[k]];
        if (!it->decided) continue;
        sl__decide_limit *l = it->limit;
        observe_ratio(l, &it->decision);
        char lbuf[SL__TOPK_KEY_MAX];
        size_t len;
        if (!refused && !it->dropped) {
            atomic_fetch_add_explicit(&l->allowed, 1, memory_order_relaxed);
            /* near its limit: at most a tenth left (remaining <= limit / 10) */
            if (l->near && it->decision.remaining <= it->decision.limit / SL__NEAR_DIVISOR &&
                it->decision.limit > 0) {
                const char *label = label_of(c, idx[k], lbuf, &len);
                sl__topk_add(l->near, label, len, 1);
            }
            continue;
        }
        if (it->decision.allowed) continue;
        const char *label = label_of(c, idx[k], lbuf, &len);
        if (l->top) sl__topk_add(l->top, label, len, 1);
        if (shadow) {
            atomic_fetch_add_explicit(&l->shadow_limited, 1, memory_order_relaxed);
            log_shadow(l, label, len, &it->decision, now);
            it->shadowed = true;
            it->decision.allowed = true;
            it->decision.retry_after = 0;
        } else {
            atomic_fetch_add_explicit(&l->limited, 1, memory_order_relaxed);
        }
    }
}

static void store_try(sl__decide_call *c);

/* The store decided a fleet capacity: its fail mode counted; true when it
 * shed the call (done has run). */
static bool cap_shed(sl__decide_call *c, const sl__store_call *sc) {
    if (sc->cap_from >= SL__FROM_OPEN)
        atomic_fetch_add_explicit(&sc->cap->from[sc->cap_from], 1, memory_order_relaxed);
    if (!sc->cap_refused) return false;
    c->shed = true;
    c->shed_retry = sc->cap_retry;
    if (c->inline_mark) *c->inline_mark = true;
    c->done(c);
    return true;
}

/* The call refused (or failed): the token of the local shedder it took goes
 * back (refused requests do not use up the capacity). */
static void cap_give_back(sl__decide_call *c, int64_t now) {
    if (!c->cap_local || (c->rc == SL_OK && c->refused == c->n)) return;
    sl_shed_refund(c->capacity->local, 1, now);
    c->cap_local = false;
}

/* The store refused item r (a call item) of an "any" group: true when
 * another group is left, after dropping r's group (its items keep the
 * decisions of this try) and asking the store again without it. */
static bool try_without(sl__decide_call *c, size_t r) {
    uint8_t g = c->items[r].any_group;
    if (!g || c->items[r].shadow_group) return false;
    bool other = false;
    for (size_t i = 0; i < c->n; i++)
        other |= !c->items[i].dropped && !c->items[i].shadow_group && c->items[i].any_group &&
                 c->items[i].any_group != g;
    if (!other) return false;
    for (size_t i = 0; i < c->n; i++)
        if (c->items[i].any_group == g && !c->items[i].shadow_group) c->items[i].dropped = true;
    store_try(c);
    return true;
}

/* The store decided: counters, the sketch, shadow mode, rc and refused
 * (or, an "any" group refusing, another try). */
static void decided(sl__store_call *sc) {
    sl__decide_call *c = sc->arg;
    size_t n = c->n;
    size_t enf[SL_CHECK_MAX], sha[SL_CHECK_MAX], ne = 0, ns = 0;
    c->from = sc->from;
    c->retry_closed = sc->retry_closed;
    c->rc = SL_OK;
    c->refused = n;
    if (sc->cap && cap_shed(c, sc)) return;
    for (size_t j = 0; j < sc->n; j++) {
        sl__decide_item *it = &c->items[c->map[j]];
        it->decision = sc->items[j].decision;
        it->decided = sc->items[j].decided;
        if (it->limit->ramp) /* units back into requests (sluice/ramp.h) */
            sl_ramp_decision(it->limit->store.params, it->ramp_factor, it->limit->ramp_cap,
                             &it->decision);
        it->shadowed = false;
    }
    for (size_t i = 0; i < n; i++) {
        if (c->items[i].shadow_group)
            sha[ns++] = i;
        else
            enf[ne++] = i;
    }
    if (sc->rc == SL_OK)
        for (size_t j = 0; j < sc->n; j++) { /* the first refusal, in the store's order */
            const sl__decide_item *it = &c->items[c->map[j]];
            if (sc->items[j].group || !it->decided || it->decision.allowed) continue;
            if (try_without(c, c->map[j])) return; /* the next try answers */
            break;
        }
    if (c->inline_mark) *c->inline_mark = true; /* done runs inside sl__engine_decide_on */
    if (sc->rc != SL_OK) { /* a table error: nothing charged, nothing counted */
        c->rc = sc->rc;
        c->refused = sc->rc_item < sc->n ? c->map[sc->rc_item] : n;
        cap_give_back(c, sc->now);
        c->done(c);
        return;
    }
    if (sc->from >= SL__FROM_OPEN)
        for (size_t k = 0; k < ne; k++)
            atomic_fetch_add_explicit(&c->items[enf[k]].limit->store.from[sc->from], 1,
                                      memory_order_relaxed);
    for (size_t j = 0; j < sc->n; j++) {
        sl__decide_item *it = &c->items[c->map[j]];
        if (it->shadow_group || !it->decided || it->decision.allowed) continue;
        if (c->refused == n) c->refused = c->map[j];
        if (it->decision.retry_after < 0) { /* its cost can never pass */
            c->rc = SL_ECOST;
            c->refused = c->map[j];
            break;
        }
    }
    if (c->rc != SL_OK) {
        cap_give_back(c, sc->now);
        c->done(c);
        return;
    }
    cap_give_back(c, sc->now);
    count_group(c, enf, ne, c->refused != n, false, sc->now);
    if (c->refused == n) { /* the shadow group, decided after the enforced one passed */
        bool no = false;
        for (size_t k = 0; k < ns; k++)
            no |= c->items[sha[k]].decided && !c->items[sha[k]].decision.allowed;
        count_group(c, sha, ns, no, true, sc->now);
    }
    c->done(c);
}

/* Hands the items not dropped to the store (one try). */
static void store_try(sl__decide_call *c) {
    sl__store_call *sc = &c->sc;
    sc->from = SL__FROM_REDIS;
    sc->retry_closed = 0;
    sc->rc = SL_OK;
    sc->done = decided;
    sc->arg = c;
    sc->store = NULL;
    sc->state = NULL;
    sc->parts_left = 0;
    sc->failed = false;
    sc->cap_refused = false;
    sc->cap_retry = 0;
    sc->cap_from = SL__FROM_REDIS;
    size_t m = 0;
    for (size_t i = 0; i < c->n; i++) {
        const sl__decide_item *it = &c->items[i];
        if (it->dropped) continue;
        int64_t cost = it->cost;
        if (it->limit->ramp && cost > 0) /* charged cost / factor in units (sluice/ramp.h) */
            cost =
                sl_ramp_cost(it->limit->store.params, cost, it->ramp_factor, it->limit->ramp_cap);
        c->map[m] = (uint8_t)i;
        sc->items[m++] = (sl__store_item){.limit = &it->limit->store,
                                          .params = it->params,
                                          .plan = it->plan,
                                          .key = it->key,
                                          .keylen = it->keylen,
                                          .cost = cost,
                                          .group = it->shadow_group ? 1 : 0};
    }
    sc->n = m;
    sc->rc_item = m;
    sl__store_decide(c->store, sc);
}

void sl__engine_decide(sl__decider *d, sl__decide_call *c, int64_t now) {
    sl__engine_decide_on(d ? d->store : sl__memory_store(), c, now);
}

/* The store has not answered inline: the call outlives the caller's frame
 * (its labels are made now, its policy set held). */
static void goes_on(sl__decide_call *c);

void sl__decide_call_detach(sl__decide_call *c) {
    goes_on(c);
}

static void goes_on(sl__decide_call *c) {
    c->inline_mark = NULL;
    if (c->later) labels_now(c);  /* the caller's label context ends with this call */
    if (c->set && !c->set_held) { /* hold its set */
        sl__policy_set_retain(c->set);
        c->set_held = true;
    }
}

/* Load shedding before the store: a fleet capacity goes to a store that
 * decides it; else this server's shedder (the capacity, or a fleet's local
 * share) takes a token now. False when it refused (done has run). */
static bool shed_start(sl__decide_call *c, sl__store *store, int64_t now) {
    c->shed = c->cap_local = false;
    if (c->capacity->fleet && store->ops->capacity) {
        c->sc.cap = c->capacity;
        c->sc.cap_priority = c->priority;
        return true;
    }
    sl_shed_decision d;
    int rc = sl_shed_admit(c->capacity->local, c->priority, 1, now, &d);
    if (rc == SL_OK && d.admitted) {
        c->cap_local = true;
        return true;
    }
    c->shed = true;
    c->shed_retry = d.retry_after;
    c->inline_mark = NULL;
    c->done(c);
    return false;
}

void sl__engine_decide_on(sl__store *store, sl__decide_call *c, int64_t now) {
    c->sc.now = now;
    c->store = store;
    int64_t ramp_start = -1; /* read once per call, when a limit ramps */
    for (size_t i = 0; i < c->n; i++) {
        sl__decide_item *it = &c->items[i];
        it->dropped = false;
        if (it->limit->ramp) {
            if (ramp_start < 0) ramp_start = sl__ramp_started();
            it->ramp_factor = sl_ramp_factor(it->limit->ramp, ramp_start, now);
        }
        /* the group is fixed for every try of the call */
        it->shadow_group =
            it->shadow || atomic_load_explicit(&it->limit->shadow, memory_order_relaxed);
    }
    bool done_inline = false;
    c->inline_mark = &done_inline;
    c->sc.cap = NULL;
    if (c->capacity && !shed_start(c, store, now)) return; /* shed: done has run */
    store_try(c);
    if (!done_inline) goes_on(c); /* else c may be gone */
}

/* The store forgot: what it said, for the caller. */
static void forgotten(sl__store_call *sc) {
    sl__decide_call *c = sc->arg;
    for (size_t i = 0; i < c->n; i++) c->items[i].decided = sc->items[i].decided;
    c->from = sc->from;
    c->rc = sc->rc;
    c->refused = sc->rc != SL_OK && sc->rc_item < c->n ? sc->rc_item : c->n;
    if (c->inline_mark) *c->inline_mark = true;
    c->done(c);
}

void sl__engine_forget(sl__decider *d, sl__decide_call *c, int64_t now) {
    sl__store_call *sc = &c->sc;
    *sc = (sl__store_call){.n = c->n, .now = now, .rc_item = c->n, .done = forgotten, .arg = c};
    for (size_t i = 0; i < c->n; i++) {
        c->map[i] = (uint8_t)i;
        sc->items[i] = (sl__store_item){.limit = &c->items[i].limit->store,
                                        .key = c->items[i].key,
                                        .keylen = c->items[i].keylen};
    }
    bool done_inline = false;
    c->inline_mark = &done_inline;
    sl__store_forget(d ? d->store : sl__memory_store(), sc);
    if (!done_inline) goes_on(c); /* else c may be gone */
}

/* ---- the engine ----------------------------------------------------------------- */

static sl__decider memory_decider;
static pthread_once_t memory_once = PTHREAD_ONCE_INIT;

static void memory_init(void) {
    memory_decider.store = sl__memory_store();
}

sl__decider *sl__decider_memory(void) {
    pthread_once(&memory_once, memory_init);
    return &memory_decider;
}

sl__engine *sl__engine_new(const sl__config *cfg) {
    sl__engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->cfg = cfg->redis;
    e->kind = cfg->store_type != SL__STORE_REDIS ? STORE_MEMORY
              : cfg->redis.batched               ? STORE_BATCHED
                                                 : STORE_REDIS;
    if (e->kind == STORE_BATCHED) {
        /* A sync is not on any request's path, and the next one waits for it:
         * it may take a few intervals before it counts as failed. */
        e->batch_cfg = e->cfg;
        if (e->batch_cfg.timeout < 4 * e->batch_cfg.sync_interval)
            e->batch_cfg.timeout = 4 * e->batch_cfg.sync_interval;
        if (!(e->batch = sl__batch_new(&e->cfg))) {
            free(e);
            return NULL;
        }
    }
    return e;
}

void sl__engine_free(sl__engine *e) {
    if (!e) return;
    sl__batch_free(e->batch);
    free(e);
}

/* Batched mode: charges what the rest of the fleet consumed to this
 * worker's (the server's) tables; returns the debt to carry. */
static int64_t batch_charge(void *ctx, const char *policy, const char *key, size_t keylen,
                            int64_t n) {
    sl__decider *d = ctx;
    sl__policy_set *set = *d->policies;
    sl__policy *p = set ? sl__policy_find(set, policy, strlen(policy)) : NULL;
    unsigned n_inst = d->e->cfg.expected_instances;
    /* the worker's clock is not at hand here: the real one, as the sync's */
    return p ? sl__memory_charge_shared(&p->lim.store, key, keylen, n, sl_now(),
                                        n_inst > 1 ? n_inst - 1 : 1)
             : 0;
}

sl__decider *sl__engine_worker_new(sl__engine *e, uv_loop_t *loop, unsigned id,
                                   sl__policy_set *const *policies) {
    if (id >= SL__ENGINE_MAX_WORKERS) return NULL;
    sl__decider *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->e = e;
    d->policies = policies;
    sl__store_stats *st = &e->stats[id];
    d->stats = st;
    switch (e->kind) {
    case STORE_MEMORY:
        atomic_store(&st->redis.up, 1);
        d->store = sl__memory_store();
        break;
    case STORE_REDIS:
        d->store = sl__redis_store_new(loop, &e->cfg, st);
        break;
    default: {
        sl__batch_hooks hooks = {.charge = batch_charge, .ctx = d};
        d->store =
            sl__batch_store_new(e->batch, loop, &e->batch_cfg, &st->redis, id == 0 ? &hooks : NULL);
        break;
    }
    }
    if (!d->store) {
        free(d);
        return NULL;
    }
    return d;
}

bool sl__decider_recovered(sl__decider *d) {
    if (!d || d->e->kind == STORE_MEMORY) return false;
    bool up = atomic_load_explicit(&d->stats->redis.up, memory_order_relaxed) != 0;
    if (!up) {
        d->down = d->was_up;
        return false;
    }
    bool back = d->down;
    d->was_up = true;
    d->down = false;
    return back;
}

sl__store *sl__decider_store(sl__decider *d) {
    return d ? d->store : sl__memory_store();
}

void sl__decider_free(sl__decider *d) {
    if (!d) return;
    sl__store_free(d->store);
    free(d);
}

void sl__engine_stats(const sl__engine *e, unsigned nworkers, sl__engine_report *out) {
    memset(out, 0, sizeof *out);
    out->redis = e->kind != STORE_MEMORY;
    out->batched = e->kind == STORE_BATCHED;
    out->up = 1;
    if (nworkers > SL__ENGINE_MAX_WORKERS) nworkers = SL__ENGINE_MAX_WORKERS;
    for (unsigned i = 0; i < nworkers; i++) {
        const sl__store_stats *s = &e->stats[i];
        out->up &= atomic_load(&s->redis.up);
        out->breakers_open += atomic_load(&s->redis.breaker_open);
        out->ok += atomic_load(&s->redis.ok);
        out->errors += atomic_load(&s->redis.errors);
        out->timeouts += atomic_load(&s->redis.timeouts);
        out->rejected_open += atomic_load(&s->redis.rejected_open);
        out->latency_sum_us += atomic_load(&s->redis.latency_sum_us);
        out->moved += atomic_load(&s->redis.moved);
        out->ask += atomic_load(&s->redis.ask);
        out->reconnects += atomic_load(&s->redis.reconnects);
        out->slot_refreshes += atomic_load(&s->redis.slot_refreshes);
        out->noscript_reloads += atomic_load(&s->noscript_reloads);
        out->script_errors += atomic_load(&s->script_errors);
        out->module_calls += atomic_load(&s->module_calls);
        out->script_calls += atomic_load(&s->script_calls);
        out->module_missing += atomic_load(&s->module_missing);
        out->module_workers += atomic_load(&s->module_now);
        out->workers++;
        out->deny_hits += atomic_load(&s->deny_hits);
        out->deny_inserts += atomic_load(&s->deny_inserts);
    }
    if (e->batch) {
        const sl__batch_counters *bs = sl__batch_stats(e->batch);
        out->syncs = atomic_load(&bs->syncs);
        out->keys_synced = atomic_load(&bs->keys_synced);
        out->failed_syncs = atomic_load(&bs->failed_syncs);
    }
}
