/* cell.c: redis-cell's CL.THROTTLE on libsluice (see cell.h).
 *
 * redis-cell's GCRA, in its terms: emission interval T = period / count,
 * delay variation tolerance tau = T * (max_burst + 1); a request of
 * quantity q is allowed iff max(tat, now) + q*T - now <= tau. That is
 * libsluice's SL_GCRA with rate count/period and burst max_burst + 1, so
 * each distinct (max_burst, count, period) gets one sl_table, and the reply
 * fields map one to one:
 *   limited     = !allowed
 *   limit       = burst = max_burst + 1
 *   remaining   = floor((tau - ttl) / T)                 (decision.remaining)
 *   retry_after = -1 if allowed, else the time until it would pass
 *   reset_after = ttl: time until the key is fresh again (decision.reset_after)
 * Differences, by design (docs/resp.md): T is the exact fraction
 * period/count, where redis-cell truncates it to whole nanoseconds (so for
 * 3 per second redis-cell's bucket drains a little faster than 3/s); and the
 * clock is sluiced's, read once per loop tick.
 *
 * A quantity above max_burst + 1 can never pass: like redis-cell, the reply
 * is limited with retry_after -1, and remaining / reset_after describe the
 * key as it is (a peek).
 *
 * Registry. Sets live in an open-addressing hash of atomic pointers that is
 * sized once (twice max_sets) and never shrinks, so a lookup is a few
 * acquire loads without a lock; a miss validates the parameters and inserts
 * under a mutex. Sets are freed only by sl__cell_destroy. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "policy/cell.h"
#include "sluice/sluice.h"
#include "store/store.h"

#define DEFAULT_MAX_SETS 1024u
#define MAX_MAX_SETS     (1u << 20)

typedef struct cell_set {
    int64_t max_burst, count, period;
    sl_table *table;
} cell_set;

struct sl_cell {
    size_t max_memory_per_set;
    unsigned max_sets;
    size_t mask; /* slots - 1; slots is a power of two >= 2 * max_sets */
    _Atomic(cell_set *) *slots;
    pthread_mutex_t lock; /* serialises inserts; nsets below is under it */
    unsigned nsets;
};

static const char ERR_ZERO[] = "Cell error: Zero rates are not supported";
static const char ERR_NEG_RATE[] = "Cell error: Negative rates are not supported";
static const char ERR_NEG_BURST[] = "Cell error: max_burst must not be negative";
static const char ERR_NEG_QTY[] = "Cell error: quantity must not be negative";
static const char ERR_RANGE[] = "Cell error: Parameters out of range";
static const char ERR_SETS[] = "ERR too many distinct CL.THROTTLE parameter sets";
static const char ERR_NOMEM[] = "ERR out of memory";
static const char ERR_KEY[] = "ERR key too long";
static const char ERR_CLOCK[] = "ERR clock out of range";
static const char ERR_INTERNAL[] = "ERR internal error";

int sl__cell_create(size_t max_memory_per_set, unsigned max_sets, sl_cell **out) {
    if (!out) return SL_EINVAL;
    *out = NULL;
    if (max_sets == 0) max_sets = DEFAULT_MAX_SETS;
    if (max_sets > MAX_MAX_SETS) return SL_EINVAL;
    size_t slots = 4;
    while (slots < 2 * (size_t)max_sets) slots *= 2;
    sl_cell *c = calloc(1, sizeof *c);
    if (!c) return SL_ENOMEM;
    c->slots = calloc(slots, sizeof *c->slots);
    if (!c->slots) {
        free(c);
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < slots; i++) atomic_init(&c->slots[i], NULL);
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c->slots);
        free(c);
        return SL_ENOMEM;
    }
    c->max_memory_per_set = max_memory_per_set;
    c->max_sets = max_sets;
    c->mask = slots - 1;
    *out = c;
    return SL_OK;
}

void sl__cell_destroy(sl_cell *c) {
    if (!c) return;
    for (size_t i = 0; i <= c->mask; i++) {
        cell_set *s = atomic_load_explicit(&c->slots[i], memory_order_relaxed);
        if (!s) continue;
        sl_table_destroy(s->table);
        free(s);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    free(c);
}

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static size_t home(const sl_cell *c, int64_t b, int64_t n, int64_t p) {
    uint64_t h = mix((uint64_t)b);
    h = mix(h ^ (uint64_t)n);
    h = mix(h ^ (uint64_t)p);
    return (size_t)h & c->mask;
}

static bool same(const cell_set *s, int64_t b, int64_t n, int64_t p) {
    return s->max_burst == b && s->count == n && s->period == p;
}

/* The set for (b, n, p), or NULL: lock-free. */
static sl_table *lookup(const sl_cell *c, int64_t b, int64_t n, int64_t p) {
    for (size_t i = home(c, b, n, p);; i = (i + 1) & c->mask) {
        cell_set *s = atomic_load_explicit(&c->slots[i], memory_order_acquire);
        if (!s) return NULL; /* the table is never full: at most half its slots are used */
        if (same(s, b, n, p)) return s->table;
    }
}

/* Creates the set for validated params under the lock (or finds the one
 * another thread just made). Returns the table or NULL with *err. */
static sl_table *insert(sl_cell *c, int64_t b, int64_t n, int64_t p, const sl_params *params,
                        const char **err) {
    pthread_mutex_lock(&c->lock);
    size_t i = home(c, b, n, p);
    for (;; i = (i + 1) & c->mask) {
        cell_set *s = atomic_load_explicit(&c->slots[i], memory_order_relaxed);
        if (!s) break;
        if (same(s, b, n, p)) {
            pthread_mutex_unlock(&c->lock);
            return s->table;
        }
    }
    if (c->nsets >= c->max_sets) {
        pthread_mutex_unlock(&c->lock);
        *err = ERR_SETS;
        return NULL;
    }
    cell_set *s = malloc(sizeof *s);
    sl_table_options o = {.params = *params, .max_memory = c->max_memory_per_set};
    int rc = s ? sl_table_create(&o, &s->table) : SL_ENOMEM;
    if (rc != SL_OK) {
        pthread_mutex_unlock(&c->lock);
        free(s);
        *err = rc == SL_ENOMEM ? ERR_NOMEM : ERR_RANGE;
        return NULL;
    }
    s->max_burst = b;
    s->count = n;
    s->period = p;
    c->nsets++;
    atomic_store_explicit(&c->slots[i], s, memory_order_release);
    pthread_mutex_unlock(&c->lock);
    return s->table;
}

/* redis-cell's rounding of a duration to seconds: truncate, then +1 if the
 * part below the second has whole milliseconds (0.0005 s rounds to 0). */
static int64_t cell_seconds(int64_t ns) {
    int64_t s = ns / SL_NS_PER_SEC;
    if ((ns % SL_NS_PER_SEC) / SL_NS_PER_MS > 0) s++;
    return s;
}

static sl_table *cell_table(sl_cell *c, int64_t max_burst, int64_t count, int64_t period,
                            int64_t quantity, sl_params *params, const char **err) {
    static const char *unused;
    if (!err) err = &unused;
    if (count == 0 || period == 0) {
        *err = ERR_ZERO;
        return NULL;
    }
    if (count < 0 || period < 0) {
        *err = ERR_NEG_RATE;
        return NULL;
    }
    if (max_burst < 0) {
        *err = ERR_NEG_BURST;
        return NULL;
    }
    if (quantity < 0) {
        *err = ERR_NEG_QTY;
        return NULL;
    }
    sl_table *t = lookup(c, max_burst, count, period);
    if (!t) {
        /* validated only on a miss: a valid set is found without this work */
        if (max_burst == INT64_MAX || period > INT64_MAX / SL_NS_PER_SEC) {
            *err = ERR_RANGE;
            return NULL;
        }
        sl_params p = {.algorithm = SL_GCRA,
                       .rate = {.limit = count, .period = period * SL_NS_PER_SEC},
                       .burst = max_burst + 1};
        if (sl_params_validate(&p) != SL_OK) {
            *err = ERR_RANGE;
            return NULL;
        }
        t = insert(c, max_burst, count, period, &p, err);
        if (!t) return NULL;
    }
    if (params)
        *params = (sl_params){.algorithm = SL_GCRA,
                              .rate = {.limit = count, .period = period * SL_NS_PER_SEC},
                              .burst = max_burst + 1};
    return t;
}

static void cell_reply(int64_t max_burst, const sl_decision *d, bool never, int64_t reply[5]) {
    bool limited = never || !d->allowed;
    reply[0] = limited;
    reply[1] = max_burst + 1;
    reply[2] = d->remaining;
    reply[3] = limited && !never ? cell_seconds(d->retry_after) : -1;
    reply[4] = cell_seconds(d->reset_after);
}

int sl__cell_throttle(sl_cell *c, const char *key, size_t keylen, int64_t max_burst, int64_t count,
                      int64_t period, int64_t quantity, int64_t now, int64_t reply[5],
                      const char **err) {
    static const char *unused;
    if (!err) err = &unused;
    sl_table *t = cell_table(c, max_burst, count, period, quantity, NULL, err);
    if (!t) return -1;
    sl_decision d;
    int rc = sl_table_check(t, key, keylen, quantity, now, &d);
    bool never = false;
    if (rc == SL_ECOST) { /* quantity > max_burst + 1: describe the key as it is */
        never = true;
        rc = sl_table_check(t, key, keylen, 0, now, &d);
    }
    switch (rc) {
    case SL_OK:
        break;
    case SL_EKEY:
        *err = ERR_KEY;
        return -1;
    case SL_EINVAL:
        *err = ERR_CLOCK;
        return -1;
    case SL_ENOMEM:
        *err = ERR_NOMEM;
        return -1;
    default:
        *err = ERR_INTERNAL;
        return -1;
    }
    cell_reply(max_burst, &d, never, reply);
    return 0;
}

/* ---- in the Redis store ------------------------------------------------------ */

typedef struct store_throttle {
    sl_params params; /* the call points at it */
    int64_t max_burst;
    char name[80]; /* "cell:<max_burst>:<count>:<period>": the Redis keys' namespace */
    sl_cell_done_fn done;
    void *arg;
} store_throttle;

static void store_throttle_done(sl_store_call *sc) {
    store_throttle *t = sc->arg;
    const sl_store_item *it = &sc->items[0];
    int64_t reply[5];
    if (it->decided) cell_reply(t->max_burst, &it->decision, it->decision.retry_after < 0, reply);
    t->done(t->arg, reply, it->decided ? NULL : ERR_INTERNAL);
    sl__store_call_free(sc);
    free(t);
}

void sl__cell_throttle_store(sl_cell *c, sl_store_worker *sw, sl_fail_mode on_failure,
                             const char *key, size_t keylen, int64_t max_burst, int64_t count,
                             int64_t period, int64_t quantity, int64_t now, sl_cell_done_fn done,
                             void *arg) {
    const char *err = NULL;
    sl_params params;
    sl_table *local = cell_table(c, max_burst, count, period, quantity, &params, &err);
    if (!local) {
        done(arg, NULL, err ? err : ERR_INTERNAL);
        return;
    }
    store_throttle *t = malloc(sizeof *t);
    sl_store_call *sc = t ? sl__store_call_new(1, keylen) : NULL;
    if (!sc) {
        free(t);
        done(arg, NULL, ERR_NOMEM);
        return;
    }
    *t = (store_throttle){.params = params, .max_burst = max_burst, .done = done, .arg = arg};
    snprintf(t->name, sizeof t->name, "cell:%lld:%lld:%lld", (long long)max_burst, (long long)count,
             (long long)period);
    sc->items[0] = (sl_store_item){.params = &t->params,
                                   .policy = t->name,
                                   .local = local,
                                   .on_failure = on_failure,
                                   .key = sl__store_call_key(sc, key, keylen),
                                   .keylen = keylen,
                                   .cost = quantity};
    sc->now = now;
    sc->done = store_throttle_done;
    sc->arg = t;
    sl__store_decide(sw, sc);
}

void sl__cell_stats(sl_cell *c, uint64_t *keys, uint64_t *bytes, uint64_t *evicted_live) {
    uint64_t k = 0, b = 0, e = 0;
    for (size_t i = 0; i <= c->mask; i++) {
        cell_set *s = atomic_load_explicit(&c->slots[i], memory_order_acquire);
        if (!s) continue;
        sl_table_stats st;
        sl_table_stats_get(s->table, &st);
        k += st.keys;
        b += st.bytes;
        e += st.evicted_live;
    }
    if (keys) *keys = k;
    if (bytes) *bytes = b;
    if (evicted_live) *evicted_live = e;
}

unsigned sl__cell_sets(sl_cell *c) {
    pthread_mutex_lock(&c->lock);
    unsigned n = c->nsets;
    pthread_mutex_unlock(&c->lock);
    return n;
}

size_t sl__cell_sweep(sl_cell *c, int64_t now, size_t max_visits) {
    size_t dropped = 0;
    for (size_t i = 0; i <= c->mask; i++) {
        cell_set *s = atomic_load_explicit(&c->slots[i], memory_order_acquire);
        if (s) dropped += sl_table_sweep(s->table, now, max_visits);
    }
    return dropped;
}
