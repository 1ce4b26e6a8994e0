/* retry.c: the retry budget (sluice/retry.h). Per key, SL_RETRY_SLOTS
 * counters of first attempts and of admitted retries, one per slot of
 * w = window / 10 ns, in a ring indexed by slot number mod 10; `base` is
 * the latest slot seen, so the ring holds slots base - 9 .. base. Keys live
 * in shards (a lock, a chained hash, a least-recently-used list each); at a
 * shard's share of max_memory, the least recently used key goes: first
 * one whose window is empty, else a live one (counted). */
#include "sluice/retry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "sluice/error.h"
#include "sluice/limit.h"
#include "sluice/table.h"

#define SHARDS      16
#define DEFAULT_MEM ((size_t)64 << 20)

typedef struct entry {
    struct entry *next;          /* hash chain */
    struct entry *older, *newer; /* the shard's use order */
    uint64_t hash;
    int64_t base;              /* the latest slot counted */
    int64_t f[SL_RETRY_SLOTS]; /* first attempts per slot */
    int64_t r[SL_RETRY_SLOTS]; /* admitted retries per slot */
    size_t keylen;
    unsigned char key[];
} entry;

typedef struct shard {
    pthread_mutex_t lock;
    entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t keys, bytes;
    entry *oldest, *newest;
    uint64_t evicted;
} shard;

struct sl_retry {
    sl_retry_options o;
    int64_t width; /* ns per slot */
    size_t cap;    /* bytes per shard */
    shard shards[SHARDS];
};

int sl_retry_validate(const sl_retry_options *o) {
    if (!o) return SL_EINVAL;
    if (o->ratio_ppm < 0 || o->ratio_ppm > SL_RETRY_PPM) return SL_EINVAL;
    if (o->min_retries < 0 || o->min_retries > SL_RETRY_MIN_MAX) return SL_EINVAL;
    if (o->window < SL_RETRY_WINDOW_MIN || o->window > SL_RETRY_WINDOW_MAX ||
        o->window % SL_RETRY_SLOTS != 0)
        return SL_EINVAL;
    return SL_OK;
}

bool sl_retry_passes(int64_t firsts, int64_t retries, int64_t ratio_ppm, int64_t min_retries) {
    __int128 budget = (__int128)firsts * ratio_ppm / SL_RETRY_PPM + min_retries;
    return (__int128)retries + 1 <= budget;
}

int sl_retry_create(const sl_retry_options *o, sl_retry **out) {
    if (!out) return SL_EINVAL;
    *out = NULL;
    int rc = sl_retry_validate(o);
    if (rc != SL_OK) return rc;
    size_t mem = o->max_memory ? o->max_memory : DEFAULT_MEM;
    size_t cap = mem / SHARDS;
    if (cap < sizeof(entry) + 64 + 16 * sizeof(entry *)) return SL_EINVAL;
    sl_retry *b = calloc(1, sizeof *b);
    if (!b) return SL_ENOMEM;
    b->o = *o;
    if (!b->o.seed) b->o.seed = sl__random_seed();
    b->width = o->window / SL_RETRY_SLOTS;
    b->cap = cap;
    for (int i = 0; i < SHARDS; i++) pthread_mutex_init(&b->shards[i].lock, NULL);
    *out = b;
    return SL_OK;
}

void sl_retry_destroy(sl_retry *b) {
    if (!b) return;
    for (int i = 0; i < SHARDS; i++) {
        shard *s = &b->shards[i];
        for (entry *e = s->oldest, *n; e; e = n) {
            n = e->newer;
            free(e);
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->lock);
    }
    free(b);
}

static size_t entry_bytes(size_t keylen) {
    return sizeof(entry) + keylen;
}

static void unlink_use(shard *s, entry *e) {
    if (e->older)
        e->older->newer = e->newer;
    else
        s->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        s->newest = e->older;
    e->older = e->newer = NULL;
}

static void link_newest(shard *s, entry *e) {
    e->older = s->newest;
    e->newer = NULL;
    if (s->newest)
        s->newest->newer = e;
    else
        s->oldest = e;
    s->newest = e;
}

static void remove_entry(shard *s, entry *e) {
    entry **pp = &s->buckets[e->hash & (s->nbuckets - 1)];
    while (*pp != e) pp = &(*pp)->next;
    *pp = e->next;
    unlink_use(s, e);
    s->keys--;
    s->bytes -= entry_bytes(e->keylen);
    free(e);
}

/* Doubles the index when it has as many keys as buckets. False: no memory
 * (the index stays as it was, still correct). */
static bool grow(shard *s) {
    size_t n = s->nbuckets ? s->nbuckets * 2 : 16;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
    entry **nb = calloc(n, sizeof *nb);
    if (!nb) return false;
    for (size_t i = 0; i < s->nbuckets; i++) {
        for (entry *e = s->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = nb[e->hash & (n - 1)];
            nb[e->hash & (n - 1)] = e;
        }
    }
    s->bytes += (n - s->nbuckets) * sizeof(entry *);
    free(s->buckets);
    s->buckets = nb;
    s->nbuckets = n;
    return true;
}

/* Moves e's ring to slot `slot` (never back): the slots that left the
 * window are emptied. */
static void advance(entry *e, int64_t slot) {
    if (slot <= e->base) return;
    int64_t gap = slot - e->base;
    if (gap >= SL_RETRY_SLOTS) {
        memset(e->f, 0, sizeof e->f);
        memset(e->r, 0, sizeof e->r);
    } else {
        for (int64_t k = e->base + 1; k <= slot; k++) {
            e->f[k % SL_RETRY_SLOTS] = 0;
            e->r[k % SL_RETRY_SLOTS] = 0;
        }
    }
    e->base = slot;
}

static bool window_empty(const entry *e, int64_t slot) {
    if (slot - e->base >= SL_RETRY_SLOTS) return true;
    for (int i = 0; i < SL_RETRY_SLOTS; i++)
        if (e->f[i] || e->r[i]) return false;
    return true;
}

/* Makes room for `need` more bytes: the oldest idle keys first, then the
 * oldest live one. */
static void make_room(sl_retry *b, shard *s, size_t need, int64_t slot) {
    entry *e = s->oldest;
    while (e && s->bytes + need > b->cap) {
        entry *n = e->newer;
        if (window_empty(e, slot)) remove_entry(s, e);
        e = n;
    }
    while (s->oldest && s->bytes + need > b->cap) {
        remove_entry(s, s->oldest);
        s->evicted++;
    }
}

static entry *find_or_add(sl_retry *b, shard *s, uint64_t h, const void *key, size_t keylen,
                          int64_t slot) {
    if (s->nbuckets) {
        for (entry *e = s->buckets[h & (s->nbuckets - 1)]; e; e = e->next)
            if (e->hash == h && e->keylen == keylen && memcmp(e->key, key, keylen) == 0) {
                unlink_use(s, e);
                link_newest(s, e);
                return e;
            }
    }
    size_t need = entry_bytes(keylen);
    if (s->bytes + need > b->cap) make_room(b, s, need, slot);
    if (s->bytes + need > b->cap) return NULL;
    if (s->keys >= s->nbuckets && !grow(s) && !s->nbuckets) return NULL;
    entry *e = calloc(1, need);
    if (!e) return NULL;
    e->hash = h;
    e->keylen = keylen;
    e->base = slot;
    memcpy(e->key, key, keylen);
    size_t i = h & (s->nbuckets - 1);
    e->next = s->buckets[i];
    s->buckets[i] = e;
    link_newest(s, e);
    s->keys++;
    s->bytes += need;
    return e;
}

/* The time until old slots leaving the window let a retry pass (e at its
 * latest slot), or -1. */
static int64_t retry_after(const sl_retry *b, const entry *e, int64_t F, int64_t R, int64_t now) {
    for (int64_t j = 1; j <= SL_RETRY_SLOTS; j++) {
        int64_t gone = e->base - SL_RETRY_SLOTS + j; /* the slot that leaves at (base + j) w */
        if (gone >= 0) {                             /* a slot before 0 never counted anything */
            int i = (int)(gone % SL_RETRY_SLOTS);
            F -= e->f[i];
            R -= e->r[i];
        }
        if (sl_retry_passes(F, R, b->o.ratio_ppm, b->o.min_retries)) {
            int64_t at = (e->base + j) * b->width;
            return at > now ? at - now : 1;
        }
    }
    return -1;
}

static void decide(const sl_retry *b, entry *e, bool retry, int64_t now, sl_retry_decision *out) {
    int64_t F = 0, R = 0;
    for (int i = 0; i < SL_RETRY_SLOTS; i++) {
        F += e->f[i];
        R += e->r[i];
    }
    int cur = (int)(e->base % SL_RETRY_SLOTS);
    out->allowed = true;
    out->retry_after = 0;
    if (!retry) {
        e->f[cur]++;
        F++;
    } else if (sl_retry_passes(F, R, b->o.ratio_ppm, b->o.min_retries)) {
        e->r[cur]++;
        R++;
    } else {
        out->allowed = false;
        out->retry_after = retry_after(b, e, F, R, now);
    }
    out->firsts = F;
    out->retries = R;
    out->budget = (int64_t)((__int128)F * b->o.ratio_ppm / SL_RETRY_PPM) + b->o.min_retries;
}

int sl_retry_note(sl_retry *b, const void *key, size_t keylen, bool retry, int64_t now,
                  sl_retry_decision *out) {
    if (!b || !out || (!key && keylen)) return SL_EINVAL;
    memset(out, 0, sizeof *out);
    if (keylen == 0 || keylen > SL_KEY_MAX) return SL_EKEY;
    if (now < 0 || now > SL_TIME_MAX) return SL_EINVAL;
    int64_t slot = now / b->width;
    uint64_t h = sl__hash(key, keylen, b->o.seed);
    shard *s = &b->shards[h >> 60 & (SHARDS - 1)];
    pthread_mutex_lock(&s->lock);
    entry *e = find_or_add(b, s, h, key, keylen, slot);
    if (!e) {
        pthread_mutex_unlock(&s->lock);
        out->allowed = !retry || b->o.min_retries >= 1;
        out->budget = b->o.min_retries;
        out->retry_after = out->allowed ? 0 : -1;
        return SL_ENOMEM;
    }
    advance(e, slot);
    decide(b, e, retry, now, out);
    pthread_mutex_unlock(&s->lock);
    return SL_OK;
}

void sl_retry_stats_get(sl_retry *b, sl_retry_stats *out) {
    memset(out, 0, sizeof *out);
    if (!b) return;
    for (int i = 0; i < SHARDS; i++) {
        shard *s = &b->shards[i];
        pthread_mutex_lock(&s->lock);
        out->keys += s->keys;
        out->bytes += s->bytes;
        out->evicted += s->evicted;
        pthread_mutex_unlock(&s->lock);
    }
}
