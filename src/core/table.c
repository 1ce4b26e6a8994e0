/* table.c: the keyed table (see sluice/table.h for the promises).
 *
 * Layout. The table is split into shards by key hash; each shard has its
 * own lock, hash index and slab. A shard's entries live in fixed-size slots
 * carved from chunks (so an entry never moves), found through an array of
 * 32-bit chain heads. One slot is 32 bytes of header and inline key plus
 * the algorithm's state: 48 bytes for token bucket, GCRA and leaky queue
 * (56 for an any-rate GCRA, core/table_any.h, decided with each call's own
 * plan), and the index adds about 4 bytes per key. Keys longer than 24
 * bytes are stored out of line and counted against the cap: slots may take
 * 7/8 of a shard's cap, the rest is for the index and long keys.
 *
 * Eviction. A CLOCK hand (approximate LRU, one "referenced" bit per entry)
 * runs only when a shard is at its memory cap and needs a slot; it drops
 * fresh states first (lossless, counted as idle) and otherwise the first
 * live state not used since the hand last passed (counted as live). A
 * second hand walks two slots per insert, and sl_table_sweep() walks on
 * demand, dropping only fresh states, so idle keys vanish without timers.
 *
 * Locking. A shard lock is a test-and-test-and-set spinlock that yields the
 * CPU after a short spin: the critical section is a lookup and a few integer
 * operations, far shorter than a futex round trip. Multi-key checks lock
 * their shards in address order (no deadlock) and pin their entries so that
 * inserting one key cannot evict another of the same request. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/algorithm.h"
#include "core/hash.h"
#include "core/table_any.h"
#include "sluice/error.h"
#include "sluice/table.h"

#define KEY_INLINE   24
#define NIL          UINT32_MAX
#define HEADER_BYTES 32

/* tagmeta: high 24 bits hash tag, low 8 bits meta */
#define META_LEN  0x1fu /* inline key length 0..24, or META_LONG */
#define META_LONG 0x1fu
#define META_REF  0x20u /* used since the clock hand last passed */
#define META_USED 0x40u /* slot holds a key */
#define META_PIN  0x80u /* part of a running multi-key check: not evictable */
#define TAG_MASK  0xffffff00u

#define DEFAULT_MAX_MEMORY      ((size_t)64 << 20)
#define DEFAULT_SHARDS          64
#define MAX_SHARDS              1024
#define MAX_CHUNK_SLOTS         512
#define INITIAL_BUCKETS         16
#define IDLE_VISITS_PER_INSERT  2
#define DEFAULT_CLOCK_TOLERANCE SL_NS_PER_SEC

typedef struct entry {
    uint32_t next;
    uint32_t tagmeta;
    union {
        uint8_t bytes[KEY_INLINE];
        struct {
            uint8_t *ptr;
            uint32_t len;
        } big;
    } key;
    /* the algorithm's state follows, at offset HEADER_BYTES */
} entry;

_Static_assert(sizeof(entry) == HEADER_BYTES, "entry header must be 32 bytes");

typedef struct shard {
    _Alignas(64) atomic_int lock;
    uint32_t *buckets;
    uint32_t bmask;
    uint32_t slots;     /* slots handed out so far (all chunks before are full) */
    uint32_t free_head; /* free slots, linked through next */
    uint32_t count;     /* keys held */
    uint32_t hand;      /* CLOCK hand (eviction at the cap) */
    uint32_t idle_hand; /* idle sweeper */
    uint8_t **chunks;
    uint32_t nchunks, chunks_cap;
    size_t bytes, cap;
    size_t long_bytes; /* of bytes: keys stored out of line */
    uint64_t evicted_idle, evicted_live;
} shard;

struct sl_table {
    sl__plan plan;
    uint64_t seed;
    size_t entry_size;
    uint32_t chunk_shift, chunk_mask;
    unsigned nshards;
    size_t max_memory;
    int64_t tolerance; /* see sl_table_options.clock_tolerance */
    atomic_uint sweep_cursor;
    shard *shards;
};

/* ---- locking -------------------------------------------------------------- */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void lock_slow(shard *s) {
    unsigned spins = 0;
    for (;;) {
        while (atomic_load_explicit(&s->lock, memory_order_relaxed)) {
            if (++spins < 128) {
                cpu_relax();
            } else {
                sched_yield(); /* the holder may be descheduled: let it run */
                spins = 0;
            }
        }
        if (!atomic_exchange_explicit(&s->lock, 1, memory_order_acquire)) return;
    }
}

static inline void shard_lock(shard *s) {
    if (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire)) lock_slow(s);
}

static inline void shard_unlock(shard *s) {
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

/* ---- entries -------------------------------------------------------------- */

static inline entry *slot(const sl_table *t, const shard *s, uint32_t i) {
    return (entry *)(s->chunks[i >> t->chunk_shift] + (size_t)(i & t->chunk_mask) * t->entry_size);
}

static inline void *state_of(entry *e) {
    return (uint8_t *)e + HEADER_BYTES;
}

static inline const uint8_t *key_bytes(const entry *e, size_t *len) {
    if ((e->tagmeta & META_LEN) == META_LONG) {
        *len = e->key.big.len;
        return e->key.big.ptr;
    }
    *len = e->tagmeta & META_LEN;
    return e->key.bytes;
}

/* Short keys compared 8 bytes at a time, without a call into libc. */
static inline bool bytes_eq(const uint8_t *a, const uint8_t *b, size_t n) {
    for (; n >= 8; a += 8, b += 8, n -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return false;
    }
    while (n--)
        if (*a++ != *b++) return false;
    return true;
}

static inline bool key_eq(const entry *e, const void *key, size_t len) {
    uint32_t m = e->tagmeta & META_LEN;
    if (m != META_LONG) return m == len && bytes_eq(e->key.bytes, key, len);
    return e->key.big.len == len && memcmp(e->key.big.ptr, key, len) == 0;
}

static inline shard *shard_for(const sl_table *t, uint64_t h) {
    return &t->shards[(h >> 32) & (t->nshards - 1)];
}

static inline uint32_t tag_of(uint64_t h) {
    return (uint32_t)(h >> 40) << 8;
}

static uint32_t find(const sl_table *t, const shard *s, uint64_t h, const void *key, size_t len) {
    uint32_t tag = tag_of(h);
    for (uint32_t i = s->buckets[(uint32_t)h & s->bmask]; i != NIL;) {
        entry *e = slot(t, s, i);
        if ((e->tagmeta & TAG_MASK) == tag && key_eq(e, key, len)) return i;
        i = e->next;
    }
    return NIL;
}

/* Unlinks slot i from its chain and returns it to the free list. */
static void remove_slot(const sl_table *t, shard *s, uint32_t i) {
    entry *e = slot(t, s, i);
    size_t len;
    const uint8_t *k = key_bytes(e, &len);
    uint64_t h = sl__hash(k, len, t->seed);
    uint32_t *link = &s->buckets[(uint32_t)h & s->bmask];
    while (*link != i) link = &slot(t, s, *link)->next;
    *link = e->next;
    if ((e->tagmeta & META_LEN) == META_LONG) {
        s->bytes -= e->key.big.len;
        s->long_bytes -= e->key.big.len;
        free(e->key.big.ptr);
    }
    e->tagmeta = 0;
    e->next = s->free_head;
    s->free_head = i;
    s->count--;
}

/* True if forgetting the state cannot change a decision at any time from
 * now - tolerance on. */
static inline bool forgettable(const sl_table *t, entry *e, int64_t now) {
    int64_t past = now - t->tolerance;
    return sl__state_forgettable(&t->plan, state_of(e), past > 0 ? past : 0);
}

/* Drops fresh states under the idle hand; visits at most `visits` slots. */
static size_t sweep_idle(const sl_table *t, shard *s, int64_t now, size_t visits) {
    size_t dropped = 0;
    for (size_t v = 0; v < visits && s->slots; v++) {
        if (s->idle_hand >= s->slots) s->idle_hand = 0;
        uint32_t i = s->idle_hand++;
        entry *e = slot(t, s, i);
        if ((e->tagmeta & (META_USED | META_PIN)) == META_USED && forgettable(t, e, now)) {
            remove_slot(t, s, i);
            s->evicted_idle++;
            dropped++;
        }
    }
    return dropped;
}

/* CLOCK: frees one slot, preferring fresh states; with long_only, only a
 * state whose key is stored out of line. false if none can be evicted. */
static bool evict_one(const sl_table *t, shard *s, int64_t now, bool long_only) {
    if (s->slots == 0) return false;
    for (uint64_t step = 0; step < 2 * (uint64_t)s->slots + 2; step++) {
        if (s->hand >= s->slots) s->hand = 0;
        uint32_t i = s->hand++;
        entry *e = slot(t, s, i);
        uint32_t m = e->tagmeta;
        if (!(m & META_USED) || (m & META_PIN)) continue;
        if (long_only && (m & META_LEN) != META_LONG) continue;
        if (forgettable(t, e, now)) {
            remove_slot(t, s, i);
            s->evicted_idle++;
            return true;
        }
        if (m & META_REF) {
            e->tagmeta = m & ~META_REF;
            continue;
        }
        remove_slot(t, s, i);
        s->evicted_live++;
        return true;
    }
    return false;
}

static size_t chunk_bytes(const sl_table *t) {
    return t->entry_size << t->chunk_shift;
}

/* A free slot: from the free list, the current chunk, a new chunk if the
 * cap allows, or by eviction. */
static int alloc_slot(const sl_table *t, shard *s, int64_t now, uint32_t *out) {
    if (s->free_head == NIL && s->slots == (s->nchunks << t->chunk_shift)) {
        size_t need = chunk_bytes(t);
        bool grow_array = s->nchunks == s->chunks_cap;
        uint32_t new_cap = s->chunks_cap ? s->chunks_cap * 2 : 8;
        size_t array_bytes = grow_array ? (new_cap - s->chunks_cap) * sizeof(uint8_t *) : 0;
        uint64_t max_slots = (uint64_t)(s->nchunks + 1) << t->chunk_shift;
        /* Slots may use 7/8 of the cap; the rest is headroom for the index
         * and for keys too long to be stored inline. */
        if (s->bytes + need + array_bytes <= s->cap - s->cap / 8 && max_slots < NIL) {
            if (grow_array) {
                uint8_t **a = realloc(s->chunks, new_cap * sizeof *a);
                if (!a) goto evict;
                s->bytes += array_bytes;
                s->chunks = a;
                s->chunks_cap = new_cap;
            }
            uint8_t *c = calloc(1, need);
            if (!c) goto evict;
            s->chunks[s->nchunks++] = c;
            s->bytes += need;
        }
    }
evict:
    if (s->free_head == NIL && s->slots == (s->nchunks << t->chunk_shift)) {
        if (!evict_one(t, s, now, false)) return SL_ENOMEM;
    }
    if (s->free_head != NIL) {
        *out = s->free_head;
        s->free_head = slot(t, s, *out)->next;
    } else {
        *out = s->slots++;
    }
    return SL_OK;
}

/* Doubles the index when keys outnumber chain heads, if the cap allows. */
static void maybe_grow_index(const sl_table *t, shard *s) {
    size_t nb = (size_t)s->bmask + 1;
    if (s->count <= nb || nb >= ((size_t)1 << 31)) return;
    size_t extra = nb * sizeof(uint32_t);
    if (s->bytes + extra > s->cap) return; /* longer chains rather than more memory */
    uint32_t *b = malloc(2 * nb * sizeof *b);
    if (!b) return;
    memset(b, 0xff, 2 * nb * sizeof *b);
    uint32_t mask = (uint32_t)(2 * nb - 1);
    for (uint32_t i = 0; i < s->slots; i++) {
        entry *e = slot(t, s, i);
        if (!(e->tagmeta & META_USED)) continue;
        size_t len;
        const uint8_t *k = key_bytes(e, &len);
        uint32_t bi = (uint32_t)sl__hash(k, len, t->seed) & mask;
        e->next = b[bi];
        b[bi] = i;
    }
    free(s->buckets);
    s->buckets = b;
    s->bmask = mask;
    s->bytes += extra;
}

/* Creates the state for a new key; *out is its slot. */
static int insert(const sl_table *t, shard *s, uint64_t h, const void *key, size_t len, int64_t now,
                  uint32_t *out) {
    sweep_idle(t, s, now, IDLE_VISITS_PER_INSERT);
    /* Only evicting other long keys frees the memory a long key needs (slots
     * stay allocated): give up before evicting anything if even that cannot
     * make room. */
    if (len > KEY_INLINE && s->bytes - s->long_bytes + len > s->cap) return SL_ENOMEM;
    uint32_t i;
    int rc = alloc_slot(t, s, now, &i);
    if (rc) return rc;
    entry *e = slot(t, s, i);
    while (len > KEY_INLINE && s->bytes + len > s->cap) {
        if (!evict_one(t, s, now, true)) { /* the rest are pinned */
            e->next = s->free_head;
            s->free_head = i;
            return SL_ENOMEM;
        }
    }
    uint32_t meta;
    if (len <= KEY_INLINE) {
        memcpy(e->key.bytes, key, len);
        meta = (uint32_t)len;
    } else {
        uint8_t *p = malloc(len);
        if (!p) {
            e->tagmeta = 0;
            e->next = s->free_head;
            s->free_head = i;
            return SL_ENOMEM;
        }
        memcpy(p, key, len);
        e->key.big.ptr = p;
        e->key.big.len = (uint32_t)len;
        s->bytes += len;
        s->long_bytes += len;
        meta = META_LONG;
    }
    e->tagmeta = tag_of(h) | META_USED | meta; /* referenced only once used again */
    sl__state_init(&t->plan, state_of(e), now);
    uint32_t *head = &s->buckets[(uint32_t)h & s->bmask];
    e->next = *head;
    *head = i;
    s->count++;
    maybe_grow_index(t, s);
    *out = i;
    return SL_OK;
}

/* ---- public API --------------------------------------------------------- */

static int create(const sl_table_options *opts, const sl__plan *planp, sl_table **out) {
    const sl__plan plan = *planp;
    unsigned nshards = opts->shards ? opts->shards : DEFAULT_SHARDS;
    if (nshards > MAX_SHARDS || (nshards & (nshards - 1))) return SL_EINVAL;
    if (opts->clock_tolerance < 0 || opts->clock_tolerance > SL_TIME_MAX) return SL_EINVAL;
    size_t max_memory = opts->max_memory ? opts->max_memory : DEFAULT_MAX_MEMORY;
    size_t entry_size = HEADER_BYTES + plan.state_size;
    size_t index_bytes = INITIAL_BUCKETS * sizeof(uint32_t) + 8 * sizeof(uint8_t *);

    /* Smallest useful shard: one slot plus its index. Fewer shards (and
     * smaller chunks) when the cap is tiny. */
    while (!opts->shards && nshards > 1 && max_memory / nshards < 64 * entry_size + index_bytes)
        nshards /= 2;
    size_t cap = max_memory / nshards;
    uint32_t chunk_slots = MAX_CHUNK_SLOTS;
    while (chunk_slots > 1 && chunk_slots * entry_size * 4 + index_bytes > cap) chunk_slots /= 2;
    /* the first chunk must fit in the part of the cap slots may use */
    if (cap - cap / 8 < index_bytes + chunk_slots * entry_size) return SL_EINVAL;

    sl_table *t = calloc(1, sizeof *t);
    if (!t) return SL_ENOMEM;
    t->plan = plan;
    atomic_init(&t->sweep_cursor, 0);
    t->seed = opts->seed ? opts->seed : sl__random_seed();
    t->entry_size = entry_size;
    t->chunk_shift = (uint32_t)__builtin_ctz(chunk_slots);
    t->chunk_mask = chunk_slots - 1;
    t->nshards = nshards;
    t->max_memory = max_memory;
    t->tolerance = opts->clock_tolerance ? opts->clock_tolerance : DEFAULT_CLOCK_TOLERANCE;
    t->shards = aligned_alloc(64, nshards * sizeof(shard));
    if (!t->shards) {
        free(t);
        return SL_ENOMEM;
    }
    memset(t->shards, 0, nshards * sizeof(shard));
    for (unsigned i = 0; i < nshards; i++) {
        shard *s = &t->shards[i];
        atomic_init(&s->lock, 0);
        s->free_head = NIL;
        s->cap = cap;
        s->buckets = malloc(INITIAL_BUCKETS * sizeof(uint32_t));
        if (!s->buckets) {
            sl_table_destroy(t);
            return SL_ENOMEM;
        }
        memset(s->buckets, 0xff, INITIAL_BUCKETS * sizeof(uint32_t));
        s->bmask = INITIAL_BUCKETS - 1;
        s->bytes = INITIAL_BUCKETS * sizeof(uint32_t);
    }
    *out = t;
    return SL_OK;
}

int sl_table_create(const sl_table_options *opts, sl_table **out) {
    if (!opts || !out) return SL_EINVAL;
    sl__plan plan;
    int rc = sl__plan_init(&plan, &opts->params);
    return rc ? rc : create(opts, &plan, out);
}

int sl__table_create_any_rate(const sl_table_options *opts, sl_table **out) {
    if (!opts || !out) return SL_EINVAL;
    sl__plan plan;
    int rc = sl__plan_any_rate(&plan, &opts->params);
    return rc ? rc : create(opts, &plan, out);
}

void sl_table_destroy(sl_table *t) {
    if (!t) return;
    for (unsigned i = 0; i < t->nshards; i++) {
        shard *s = &t->shards[i];
        for (uint32_t j = 0; j < s->slots; j++) {
            entry *e = slot(t, s, j);
            if ((e->tagmeta & META_USED) && (e->tagmeta & META_LEN) == META_LONG)
                free(e->key.big.ptr);
        }
        for (uint32_t c = 0; c < s->nchunks; c++) free(s->chunks[c]);
        free(s->chunks);
        free(s->buckets);
    }
    free(t->shards);
    free(t);
}

const sl_params *sl_table_params(const sl_table *t) {
    return &t->plan.params;
}

static void deny(sl_decision *d, const sl__plan *plan) {
    memset(d, 0, sizeof *d);
    d->allowed = false;
    d->limit = sl_params_limit(&plan->params);
    d->retry_after = -1;
}

/* The decision of a cost-0 peek for a key the table does not hold. */
static int peek_fresh(const sl__plan *plan, int64_t now, sl_decision *out) {
    _Alignas(16) uint8_t small[64];
    void *st = plan->state_size <= sizeof small ? small : malloc(plan->state_size);
    if (!st) {
        deny(out, plan);
        return SL_ENOMEM;
    }
    sl__state_init(plan, st, now);
    sl__decide(plan, st, 0, now, SL__PEEK, out);
    if (st != small) free(st);
    return SL_OK;
}

static int check_args(const sl__plan *plan, size_t keylen, int64_t cost, int64_t now) {
    if (keylen > SL_KEY_MAX) return SL_EKEY;
    if (now > SL_TIME_MAX || now < 0) return SL_EINVAL;
    if (cost < 0 || cost > plan->max_cost) return SL_ECOST;
    return SL_OK;
}

/* A plan a call may decide table t's states with: t's own, or, for an
 * any-rate table, any any-rate plan (their states have one layout). */
static bool plan_fits(const sl_table *t, const sl__plan *plan) {
    return plan == &t->plan || (plan->any_rate && t->plan.any_rate);
}

static int check_plan(sl_table *t, const sl__plan *plan, const void *key, size_t keylen,
                      int64_t cost, int64_t now, sl_decision *out) {
    int rc = check_args(plan, keylen, cost, now);
    if (rc) {
        deny(out, plan);
        return rc;
    }
    uint64_t h = sl__hash(key, keylen, t->seed);
    shard *s = shard_for(t, h);
    shard_lock(s);
    uint32_t i = find(t, s, h, key, keylen);
    if (i != NIL) {
        entry *e = slot(t, s, i);
        e->tagmeta |= META_REF;
        sl__decide(plan, state_of(e), cost, now, SL__APPLY, out);
        shard_unlock(s);
        return SL_OK;
    }
    if (cost == 0) { /* a peek at an unknown key: answer from a fresh state, store nothing */
        shard_unlock(s);
        return peek_fresh(plan, now, out);
    }
    rc = insert(t, s, h, key, keylen, now, &i);
    if (rc) {
        shard_unlock(s);
        deny(out, plan);
        return rc;
    }
    sl__decide(plan, state_of(slot(t, s, i)), cost, now, SL__APPLY, out);
    shard_unlock(s);
    return SL_OK;
}

int sl_table_check(sl_table *t, const void *key, size_t keylen, int64_t cost, int64_t now,
                   sl_decision *out) {
    return check_plan(t, &t->plan, key, keylen, cost, now, out);
}

int sl__table_check_with(sl_table *t, const sl__plan *plan, const void *key, size_t keylen,
                         int64_t cost, int64_t now, sl_decision *out) {
    if (!plan_fits(t, plan)) {
        deny(out, plan);
        return SL_EINVAL;
    }
    return check_plan(t, plan, key, keylen, cost, now, out);
}

/* ---- multi-key checks ------------------------------------------------------ */

typedef struct held {
    shard *s;
    const sl_table *t;
    entry *e;
} held;

static int cmp_shard(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (shard *const *)a, y = (uintptr_t) * (shard *const *)b;
    return (x > y) - (x < y);
}

/* How check_all decides: sl_table_check_all's way, or the store contract's
 * (sl__table_check_group: a time per check, the others of a cost that can
 * never pass looked at, count_rejected charges reported). */
typedef struct check_opts {
    const sl__plan *const *plans; /* NULL, or per check (NULL: its table's plan) */
    const int64_t *nows;          /* NULL, or per check: its time */
    bool contract;
} check_opts;

/* A look at check i: its decision at its cost with nothing charged; when
 * allowed, its remaining gets the cost back (remaining is the floor of what
 * is left and costs are whole: exact), so that it says what the limit has. */
static void look(const sl__plan *plan, void *st, sl_check *c, int64_t now) {
    sl__decide(plan, st, c->cost, now, SL__PEEK, &c->decision);
    if (c->decision.allowed && c->decision.remaining <= INT64_MAX - c->cost)
        c->decision.remaining += c->cost;
}

static int check_all(sl_check *c, const check_opts *o, size_t n, int64_t now, size_t *refused) {
    size_t dummy;
    if (!refused) refused = &dummy;
    *refused = n;
    if (n > SL_CHECK_MAX) return SL_ETOOMANY;
    if (n == 0) return SL_OK;

    held h[SL_CHECK_MAX];
    const sl__plan *pl[SL_CHECK_MAX]; /* the plan each check is decided with */
    int64_t at[SL_CHECK_MAX];         /* and its time */
    for (size_t i = 0; i < n; i++) {
        pl[i] = o->plans && o->plans[i] ? o->plans[i] : &c[i].table->plan;
        at[i] = o->nows ? o->nows[i] : now;
        if (!plan_fits(c[i].table, pl[i])) {
            for (size_t j = 0; j < n; j++) deny(&c[j].decision, &c[j].table->plan);
            *refused = i;
            return SL_EINVAL;
        }
    }
    shard *order[SL_CHECK_MAX];
    uint64_t hash[SL_CHECK_MAX];
    size_t save_bytes = 0;
    size_t never = n; /* contract: the first check whose cost can never pass */
    bool bad[SL_CHECK_MAX] = {0};
    for (size_t i = 0; i < n; i++) {
        int rc = check_args(pl[i], c[i].keylen, c[i].cost, at[i]);
        if (rc == SL_ECOST && o->contract) {
            bad[i] = true;
            if (never == n) never = i;
        } else if (rc) {
            for (size_t j = 0; j < n; j++) deny(&c[j].decision, pl[j]);
            *refused = i;
            return rc;
        }
        hash[i] = sl__hash(c[i].key, c[i].keylen, c[i].table->seed);
        h[i].t = c[i].table;
        h[i].s = order[i] = shard_for(c[i].table, hash[i]);
        save_bytes += pl[i]->state_size;
    }

    /* Undo log: each state as it was before this request touched it. */
    _Alignas(16) uint8_t small[SL_CHECK_MAX * 24];
    uint8_t *saved = small;
    if (save_bytes > sizeof small) {
        saved = malloc(save_bytes);
        if (!saved) return SL_ENOMEM;
    }

    qsort(order, n, sizeof order[0], cmp_shard);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || order[i] != order[i - 1]) shard_lock(order[i]);

    int rc = SL_OK;
    size_t pinned = 0;
    for (; pinned < n; pinned++) {
        size_t i = pinned;
        uint32_t idx = find(h[i].t, h[i].s, hash[i], c[i].key, c[i].keylen);
        uint32_t used = META_REF;
        if (idx == NIL) {
            rc = insert(h[i].t, h[i].s, hash[i], c[i].key, c[i].keylen, at[i], &idx);
            used = 0;
        }
        if (rc) {
            *refused = i;
            break;
        }
        h[i].e = slot(h[i].t, h[i].s, idx);
        h[i].e->tagmeta |= META_PIN | used;
    }

    if (rc == SL_OK && never < n) {
        /* contract: a cost that can never pass refuses the group, nothing
           charged; every other check is looked at */
        for (size_t i = 0; i < n; i++) {
            if (bad[i])
                deny(&c[i].decision, pl[i]);
            else
                look(pl[i], state_of(h[i].e), &c[i], at[i]);
        }
        *refused = never;
        rc = SL_ECOST;
    } else if (rc == SL_OK) {
        size_t off = 0, first = n;
        size_t offs[SL_CHECK_MAX];
        for (size_t i = 0; i < n; i++) {
            const sl__plan *plan = pl[i];
            offs[i] = off;
            memcpy(saved + off, state_of(h[i].e), plan->state_size);
            off += plan->state_size;
            /* record only if allowed; rejections are charged below, once */
            sl__plan strict = *plan;
            strict.count_rejected = false;
            sl__decide(&strict, state_of(h[i].e), c[i].cost, at[i], SL__APPLY, &c[i].decision);
            if (!c[i].decision.allowed) {
                first = i;
                break;
            }
        }
        if (first < n) {
            for (size_t i = first + 1; i-- > 0;)
                memcpy(state_of(h[i].e), saved + offs[i], pl[i]->state_size);
            for (size_t i = 0; i < n; i++) {
                if (i == first) continue;
                if (o->contract)
                    look(pl[i], state_of(h[i].e), &c[i], at[i]);
                else
                    sl__decide(pl[i], state_of(h[i].e), c[i].cost, at[i], SL__PEEK, &c[i].decision);
            }
            for (size_t i = 0; i < n; i++) {
                if (!pl[i]->count_rejected) continue;
                sl_decision charged;
                sl__decide(pl[i], state_of(h[i].e), c[i].cost, at[i], SL__CHARGE, &charged);
                if (o->contract) c[i].decision = charged; /* the state it is left in */
            }
            *refused = first;
        }
    } else {
        for (size_t j = 0; j < n; j++) deny(&c[j].decision, pl[j]);
    }

    for (size_t i = 0; i < pinned; i++) h[i].e->tagmeta &= ~META_PIN;
    for (size_t i = n; i-- > 0;)
        if (i == 0 || order[i] != order[i - 1]) shard_unlock(order[i]);
    if (saved != small) free(saved);
    return rc;
}

int sl_table_check_all(sl_check *c, size_t n, int64_t now, size_t *refused) {
    return check_all(c, &(check_opts){0}, n, now, refused);
}

int sl__table_check_all_with(sl_check *c, const sl__plan *const *plans, size_t n, int64_t now,
                             size_t *refused) {
    return check_all(c, &(check_opts){.plans = plans}, n, now, refused);
}

int sl__table_check_group(sl_check *c, const sl__plan *const *plans, const int64_t *nows, size_t n,
                          size_t *refused) {
    return check_all(c, &(check_opts){.plans = plans, .nows = nows, .contract = true}, n,
                     nows && n ? nows[0] : 0, refused);
}

/* ---- maintenance ---------------------------------------------------------- */

size_t sl_table_sweep(sl_table *t, int64_t now, size_t max_visits) {
    size_t per = max_visits / t->nshards, extra = max_visits % t->nshards;
    /* With fewer visits than shards, start where the last small sweep left off. */
    unsigned start =
        per ? 0
            : atomic_fetch_add_explicit(&t->sweep_cursor, (unsigned)extra, memory_order_relaxed);
    size_t dropped = 0;
    for (unsigned k = 0; k < t->nshards; k++) {
        size_t visits = per + (k < extra ? 1 : 0);
        if (visits == 0) break;
        shard *s = &t->shards[(start + k) & (t->nshards - 1)];
        shard_lock(s);
        dropped += sweep_idle(t, s, now, visits);
        shard_unlock(s);
    }
    return dropped;
}

void sl_table_stats_get(sl_table *t, sl_table_stats *out) {
    memset(out, 0, sizeof *out);
    out->max_bytes = t->max_memory;
    out->entry_bytes = t->entry_size;
    for (unsigned i = 0; i < t->nshards; i++) {
        shard *s = &t->shards[i];
        shard_lock(s);
        out->keys += s->count;
        out->bytes += s->bytes;
        out->evicted_idle += s->evicted_idle;
        out->evicted_live += s->evicted_live;
        shard_unlock(s);
    }
}
