/* concurrency.c: the concurrency limiter (see sluice/concurrency.h for the
 * promises).
 *
 * Layout. SHARDS shards by key hash, each with a mutex, a chained hash
 * index and a byte budget of max_memory / SHARDS. A key is one record (the
 * key bytes inline) with an unsorted array of its leases, grown by
 * doubling up to the limit; `min_expires` is a lower bound of its leases'
 * expiries, so an operation scans for expired leases only once one may
 * have expired. A record with no lease is freed at once.
 *
 * Room. When a shard's budget cannot take a new record (or a grown lease
 * array), the whole shard is swept (expired leases dropped, empty records
 * freed); if that is not enough the acquire is refused and counted, and
 * the shard remembers the earliest expiry it saw (`full_until`): before
 * then a sweep would find nothing to drop (bytes freed by releases are
 * seen first, without a sweep), so a full shard is swept at most once per
 * expiry, not once per refused acquire. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "sluice/concurrency.h"
#include "sluice/error.h"
#include "sluice/limit.h"
#include "sluice/table.h"

#define SHARDS             16
#define DEFAULT_MAX_MEMORY ((size_t)64 << 20)
#define INITIAL_BUCKETS    16
#define INITIAL_LEASES     4

typedef struct cell {
    struct cell *next;
    uint64_t hash;
    int64_t min_expires; /* <= every lease's expiry */
    uint32_t n, cap;
    sl_lease *leases;
    size_t keylen;
    unsigned char key[];
} cell;

typedef struct shard {
    pthread_mutex_t mu;
    cell **buckets;
    size_t nbuckets, ncells, nleases;
    size_t bytes, cap;
    int64_t full_until; /* after a sweep that left no room: its earliest expiry */
    uint64_t refused_full;
} shard;

struct sl_concurrency {
    _Atomic int64_t limit, lease;
    uint64_t seed, id_key;
    atomic_uint_fast64_t counter;
    size_t max_memory;
    shard shards[SHARDS];
};

static bool bad_time(int64_t t) {
    return t < 0 || t > SL_TIME_MAX;
}

/* A fresh id (sl__fresh_id, core/hash.h): distinct while the counter does not wrap, never 0. */
static uint64_t new_id(sl_concurrency *c) {
    return sl__fresh_id(&c->counter, c->id_key);
}

static size_t cell_bytes(size_t keylen, uint32_t cap) {
    return sizeof(cell) + keylen + (size_t)cap * sizeof(sl_lease);
}

int sl_concurrency_create(const sl_concurrency_options *opts, sl_concurrency **out) {
    if (!opts || !out) return SL_EINVAL;
    if (opts->limit < 1 || opts->limit > SL_CONCURRENCY_MAX) return SL_EINVAL;
    if (opts->lease < 1 || opts->lease > SL_CONCURRENCY_LEASE_MAX) return SL_EINVAL;
    size_t max = opts->max_memory ? opts->max_memory : DEFAULT_MAX_MEMORY;
    size_t per = max / SHARDS;
    /* a shard must hold its index and one short key with a few leases */
    if (per < INITIAL_BUCKETS * sizeof(cell *) + cell_bytes(64, INITIAL_LEASES)) return SL_EINVAL;
    sl_concurrency *c = calloc(1, sizeof *c);
    if (!c) return SL_ENOMEM;
    atomic_init(&c->limit, opts->limit);
    atomic_init(&c->lease, opts->lease);
    c->seed = opts->seed ? opts->seed : sl__random_seed();
    c->id_key = sl__mix64(c->seed ^ UINT64_C(0x6c65617365696473)); /* "leaseids" */
    atomic_init(&c->counter, 0);
    c->max_memory = max;
    for (int i = 0; i < SHARDS; i++) {
        shard *s = &c->shards[i];
        pthread_mutex_init(&s->mu, NULL);
        s->cap = per;
        s->nbuckets = INITIAL_BUCKETS;
        /* an array of pointers */
        // NOLINTNEXTLINE(bugprone-sizeof-expression)
        s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
        if (!s->buckets) {
            sl_concurrency_destroy(c);
            return SL_ENOMEM;
        }
        /* an array of pointers */
        // NOLINTNEXTLINE(bugprone-sizeof-expression)
        s->bytes = s->nbuckets * sizeof *s->buckets;
    }
    *out = c;
    return SL_OK;
}

void sl_concurrency_destroy(sl_concurrency *c) {
    if (!c) return;
    for (int i = 0; i < SHARDS; i++) {
        shard *s = &c->shards[i];
        for (size_t b = 0; s->buckets && b < s->nbuckets; b++) {
            cell *e = s->buckets[b];
            while (e) {
                cell *next = e->next;
                free(e->leases);
                free(e);
                e = next;
            }
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->mu);
    }
    free(c);
}

static shard *shard_of(sl_concurrency *c, uint64_t h) {
    return &c->shards[h >> 60]; /* SHARDS = 16: the top 4 bits; the index uses the low ones */
}

static cell **find(shard *s, uint64_t h, const void *key, size_t keylen) {
    cell **pp = &s->buckets[h & (s->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && (*pp)->keylen == keylen &&
            (keylen == 0 || memcmp((*pp)->key, key, keylen) == 0)) /* key may be NULL when 0 */
            return pp;
    return pp;
}

/* Drops e's leases that expired at now (when one may have). */
static void purge(shard *s, cell *e, int64_t now) {
    if (now < e->min_expires) return;
    int64_t min = INT64_MAX;
    uint32_t j = 0;
    for (uint32_t i = 0; i < e->n; i++) {
        if (e->leases[i].expires <= now) continue;
        if (e->leases[i].expires < min) min = e->leases[i].expires;
        e->leases[j++] = e->leases[i];
    }
    s->nleases -= e->n - j;
    e->n = j;
    e->min_expires = min;
}

static void unlink_free(shard *s, cell **pp) {
    cell *e = *pp;
    *pp = e->next;
    s->bytes -= cell_bytes(e->keylen, e->cap);
    s->nleases -= e->n;
    s->ncells--;
    free(e->leases);
    free(e);
}

/* Sweeps the shard at now; returns the records freed and sets *earliest
 * to the earliest expiry left (INT64_MAX if none). */
static size_t sweep_shard(shard *s, int64_t now, int64_t *earliest) {
    size_t freed = 0;
    int64_t min = INT64_MAX;
    for (size_t b = 0; b < s->nbuckets; b++) {
        cell **pp = &s->buckets[b];
        while (*pp) {
            purge(s, *pp, now);
            if ((*pp)->n == 0) {
                unlink_free(s, pp);
                freed++;
                continue;
            }
            if ((*pp)->min_expires < min) min = (*pp)->min_expires;
            pp = &(*pp)->next;
        }
    }
    *earliest = min;
    return freed;
}

/* Room for `need` more bytes in s at now, sweeping once if that helps. */
static bool room(shard *s, size_t need, int64_t now) {
    if (s->bytes + need <= s->cap) return true;
    if (now < s->full_until) return false; /* nothing has expired since the last sweep */
    int64_t earliest;
    sweep_shard(s, now, &earliest);
    if (s->bytes + need <= s->cap) return true;
    s->full_until = earliest;
    return false;
}

/* Doubles the index when it holds more records than buckets (best effort:
 * a failed or unaffordable grow leaves longer chains, never a wrong answer). */
static void maybe_grow_index(shard *s) {
    if (s->ncells <= s->nbuckets) return;
    size_t nb = s->nbuckets * 2, extra = s->nbuckets * sizeof(cell *);
    if (s->bytes + extra > s->cap) return;
    /* an array of pointers */
    // NOLINTNEXTLINE(bugprone-sizeof-expression)
    cell **nbk = calloc(nb, sizeof *nbk);
    if (!nbk) return;
    for (size_t b = 0; b < s->nbuckets; b++) {
        cell *e = s->buckets[b];
        while (e) {
            cell *next = e->next;
            cell **slot = &nbk[e->hash & (nb - 1)];
            e->next = *slot;
            *slot = e;
            e = next;
        }
    }
    free(s->buckets);
    s->buckets = nbk;
    s->nbuckets = nb;
    s->bytes += extra;
}

static void refuse_full(shard *s, const sl_concurrency *c, int64_t now, int64_t limit,
                        sl_acquire *out) {
    s->refused_full++;
    out->limit = limit;
    int64_t lease = atomic_load_explicit(&c->lease, memory_order_relaxed);
    out->retry_after =
        s->full_until > now && s->full_until != INT64_MAX ? s->full_until - now : lease;
}

/* The refusal of a key at its limit: retry_after until its earliest lease
 * expires. */
static void refuse_limit(cell *e, int64_t limit, int64_t now, sl_acquire *out) {
    /* the exact earliest expiry (min_expires may be below it after releases) */
    int64_t min = INT64_MAX;
    for (uint32_t i = 0; i < e->n; i++)
        if (e->leases[i].expires < min) min = e->leases[i].expires;
    e->min_expires = min;
    out->limit = limit;
    out->in_flight = e->n;
    out->retry_after = min - now;
}

/* A record without leases for key (hash h, not in s), linked into its chain:
 * SL_OK with *ep, or SL_ENOMEM with *out refused (the cap, or malloc). */
static int new_cell(shard *s, const sl_concurrency *c, uint64_t h, const void *key, size_t keylen,
                    int64_t limit, int64_t now, sl_acquire *out, cell **ep) {
    uint32_t cap = limit < INITIAL_LEASES ? (uint32_t)limit : INITIAL_LEASES;
    size_t need = cell_bytes(keylen, cap);
    if (!room(s, need, now)) {
        refuse_full(s, c, now, limit, out);
        return SL_ENOMEM;
    }
    cell *e = malloc(sizeof *e + keylen);
    sl_lease *ls = malloc(cap * sizeof *ls);
    if (!e || !ls) {
        free(e);
        free(ls);
        refuse_full(s, c, now, limit, out);
        return SL_ENOMEM;
    }
    e->hash = h;
    e->min_expires = INT64_MAX;
    e->n = 0;
    e->cap = cap;
    e->leases = ls;
    e->keylen = keylen;
    if (keylen) memcpy(e->key, key, keylen);
    cell **pp = find(s, h, key, keylen); /* the sweep may have changed the chain */
    e->next = NULL;
    *pp = e;
    s->ncells++;
    s->bytes += need;
    maybe_grow_index(s);
    *ep = e;
    return SL_OK;
}

/* Room for one more lease in e, whose array is full: doubled, up to the
 * limit. SL_OK, or SL_ENOMEM with *out refused. */
static int grow_leases(shard *s, const sl_concurrency *c, cell *e, int64_t limit, int64_t now,
                       sl_acquire *out) {
    uint32_t ncap = e->cap * 2 > (uint32_t)limit ? (uint32_t)limit : e->cap * 2;
    size_t extra = (size_t)(ncap - e->cap) * sizeof(sl_lease);
    sl_lease *ls = NULL;
    /* the sweep frees only records without leases: e has some, so it survives */
    if (room(s, extra, now)) ls = realloc(e->leases, ncap * sizeof *ls);
    if (!ls) {
        refuse_full(s, c, now, limit, out);
        out->in_flight = e->n;
        return SL_ENOMEM;
    }
    e->leases = ls;
    e->cap = ncap;
    s->bytes += extra;
    return SL_OK;
}

int sl_concurrency_acquire(sl_concurrency *c, const void *key, size_t keylen, int64_t now,
                           sl_acquire *out) {
    if (!c || !out || (!key && keylen) || bad_time(now)) return SL_EINVAL;
    memset(out, 0, sizeof *out);
    if (keylen > SL_KEY_MAX) return SL_EKEY;
    int64_t limit = atomic_load_explicit(&c->limit, memory_order_relaxed);
    int64_t lease = atomic_load_explicit(&c->lease, memory_order_relaxed);
    uint64_t h = sl__hash(key, keylen, c->seed);
    shard *s = shard_of(c, h);
    int rc = SL_OK;
    pthread_mutex_lock(&s->mu);
    cell *e = *find(s, h, key, keylen);
    if (e) purge(s, e, now);
    if (e && e->n >= limit) {
        refuse_limit(e, limit, now, out);
        goto done;
    }
    if (!e)
        rc = new_cell(s, c, h, key, keylen, limit, now, out, &e);
    else if (e->n == e->cap)
        rc = grow_leases(s, c, e, limit, now, out);
    if (rc) goto done;
    sl_lease l = {.id = new_id(c), .expires = now + lease};
    e->leases[e->n++] = l;
    s->nleases++;
    if (l.expires < e->min_expires) e->min_expires = l.expires;
    out->acquired = true;
    out->lease = l;
    out->limit = limit;
    out->in_flight = e->n;
done:
    out->remaining = out->limit > out->in_flight ? out->limit - out->in_flight : 0;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Where locate found a lease: its shard (locked), the link to its record
 * and the lease's index there. */
typedef struct located {
    shard *s;
    cell **pp;
    uint32_t i;
} located;

/* Finds lease id of key held at now into *at; the shard stays locked on
 * success and on SL_ELEASE (at->s), not on argument errors. */
static int locate(sl_concurrency *c, const void *key, size_t keylen, uint64_t id, int64_t now,
                  located *at) {
    if (!c || (!key && keylen) || bad_time(now)) return SL_EINVAL;
    if (keylen > SL_KEY_MAX) return SL_EKEY;
    uint64_t h = sl__hash(key, keylen, c->seed);
    shard *s = shard_of(c, h);
    pthread_mutex_lock(&s->mu);
    at->s = s;
    cell **pp = find(s, h, key, keylen);
    at->pp = pp;
    cell *e = *pp;
    if (!e) return SL_ELEASE;
    purge(s, e, now);
    for (uint32_t i = 0; id && i < e->n; i++)
        if (e->leases[i].id == id) {
            at->i = i;
            return SL_OK;
        }
    return SL_ELEASE;
}

/* The end of an operation on what locate found: the record is freed when
 * it holds no lease, the shard unlocked; returns rc. */
static int unlock_located(const located *at, int rc) {
    cell *e = *at->pp;
    if (e && e->n == 0) unlink_free(at->s, at->pp);
    pthread_mutex_unlock(&at->s->mu);
    return rc;
}

int sl_concurrency_release(sl_concurrency *c, const void *key, size_t keylen, uint64_t id,
                           int64_t now, int64_t *in_flight) {
    located at;
    int rc = locate(c, key, keylen, id, now, &at);
    if (rc == SL_EINVAL || rc == SL_EKEY) return rc;
    cell *e = *at.pp;
    if (rc == SL_OK) {
        e->leases[at.i] = e->leases[--e->n];
        at.s->nleases--;
        /* min_expires stays a lower bound */
    }
    if (in_flight) *in_flight = e ? e->n : 0;
    return unlock_located(&at, rc);
}

int sl_concurrency_renew(sl_concurrency *c, const void *key, size_t keylen, uint64_t id,
                         int64_t now, sl_lease *out) {
    located at;
    int rc = locate(c, key, keylen, id, now, &at);
    if (rc == SL_EINVAL || rc == SL_EKEY) return rc;
    cell *e = *at.pp;
    if (rc == SL_OK) {
        int64_t lease = atomic_load_explicit(&c->lease, memory_order_relaxed);
        if (now + lease > e->leases[at.i].expires) e->leases[at.i].expires = now + lease;
        if (out) *out = e->leases[at.i];
    }
    return unlock_located(&at, rc);
}

int64_t sl_concurrency_in_flight(sl_concurrency *c, const void *key, size_t keylen, int64_t now) {
    if (!c || (!key && keylen) || bad_time(now)) return SL_EINVAL;
    if (keylen > SL_KEY_MAX) return SL_EKEY;
    uint64_t h = sl__hash(key, keylen, c->seed);
    shard *s = shard_of(c, h);
    pthread_mutex_lock(&s->mu);
    cell *e = *find(s, h, key, keylen);
    int64_t n = 0;
    for (uint32_t i = 0; e && i < e->n; i++)
        if (e->leases[i].expires > now) n++;
    pthread_mutex_unlock(&s->mu);
    return n;
}

int sl_concurrency_set_limit(sl_concurrency *c, int64_t limit) {
    if (!c || limit < 1 || limit > SL_CONCURRENCY_MAX) return SL_EINVAL;
    atomic_store(&c->limit, limit);
    return SL_OK;
}

int sl_concurrency_set_lease(sl_concurrency *c, int64_t lease) {
    if (!c || lease < 1 || lease > SL_CONCURRENCY_LEASE_MAX) return SL_EINVAL;
    atomic_store(&c->lease, lease);
    return SL_OK;
}

int64_t sl_concurrency_limit(const sl_concurrency *c) {
    return atomic_load(&((sl_concurrency *)c)->limit);
}

int64_t sl_concurrency_lease(const sl_concurrency *c) {
    return atomic_load(&((sl_concurrency *)c)->lease);
}

size_t sl_concurrency_sweep(sl_concurrency *c, int64_t now) {
    if (!c || bad_time(now)) return 0;
    size_t freed = 0;
    for (int i = 0; i < SHARDS; i++) {
        shard *s = &c->shards[i];
        int64_t earliest;
        pthread_mutex_lock(&s->mu);
        freed += sweep_shard(s, now, &earliest);
        pthread_mutex_unlock(&s->mu);
    }
    return freed;
}

void sl_concurrency_stats_get(sl_concurrency *c, sl_concurrency_stats *out) {
    memset(out, 0, sizeof *out);
    if (!c) return;
    out->max_bytes = c->max_memory;
    for (int i = 0; i < SHARDS; i++) {
        shard *s = &c->shards[i];
        pthread_mutex_lock(&s->mu);
        out->keys += s->ncells;
        out->leases += s->nleases;
        out->bytes += s->bytes;
        out->refused_full += s->refused_full;
        pthread_mutex_unlock(&s->mu);
    }
}
