/* table.c: the keyed table (see sluice/table.h for the promises).
 *
 * Layout: one memory miss per decision. The table is split into shards by
 * key hash; each shard has its own lock and one open-addressed array of
 * fixed-size slots, each slot holding the key (inline up to `key_inline`
 * bytes) and the algorithm's state side by side:
 *
 *   byte 0      meta: key length 0..30 or LONG (31), USED, REF, PIN
 *   bytes 1..   the key, zero-padded; a LONG key is {len16, 40-bit tag,
 *               pointer} and its bytes live out of line
 *   last S      the state (S = plan.state_size)
 *
 * A slot is 32 bytes when the state has 16 (token bucket, GCRA, leaky queue,
 * fixed window: keys of up to 15 bytes inline, two slots per cache line),
 * else a multiple of 64 (sliding window and any-rate GCRA 64, keys up to 30
 * bytes; sliding log, state + 16 rounded up). Slots never straddle a cache
 * line. A key's hash picks its home group (the slots of one 64-byte line,
 * or one big slot) by multiply-shift, so the array may have any number of
 * groups. A lookup compares the first 8 bytes of each slot of the group
 * (meta, and the key's first 7 bytes or the long key's length and tag) with
 * a word prepared once per call: other keys are rejected without leaving
 * the line, and a hit in the home group costs exactly one miss. A key whose
 * home group was full lives in a following group (linear probing); each
 * group counts the keys that probed past it (F14's overflow count, 1 byte
 * per group in a side array, saturating at 255), so a lookup stops at the
 * first group with count 0 and deleting never needs tombstones nor moves.
 *
 * The trade (docs/BENCHMARKS.md, "The layout chosen, and the one not
 * taken"): the other candidate, tags next to the slot numbers in one index
 * line per bucket in front of the old 48-byte entries, rejects other keys as
 * well but reads two lines per hit (the index line, then the entry), and its
 * index (8-10 bytes per key) does not stay in cache at a million keys: its
 * prototype (bench/layout_proto.c) measured 2.4x one memory access per
 * serialized decision, this layout 1.2x. Inline slots take 32 / load bytes
 * per key (43-53 for the token bucket, under 64), but keys of 16-30 bytes
 * (31+ in 64-byte slots) go out of line, and the 24-byte states take a
 * 64-byte slot.
 *
 * Churn: a removal moves back the nearest key that probed past the hole
 * (found through the overflow counts: a backward shift), so probe paths stay
 * as short as after a fresh build however many keys come and go.
 *
 * Growth: a shard holds at most 3/4 of its slots; past that it grows by a
 * quarter (rehashing every key into a new array), as long as the array and
 * the long keys stay within 7/8 of the shard's cap (the rest is headroom
 * for long keys). Entries move then and on removals (above): a multi-key
 * check finds its entries again once all of them are pinned.
 *
 * Eviction. A CLOCK hand (approximate LRU, one "referenced" bit per entry;
 * one hand per region of 64 slots, the region of the new key's home, so that
 * freed slots lie where new keys land) runs only when a shard is at its
 * memory cap and needs a slot (the whole shard for a long key's bytes); it
 * drops fresh states first (lossless, counted as idle) and otherwise the
 * first live state not used since the hand last passed (counted as live);
 * a new key placed less than half a turn ahead of its region's hand starts
 * referenced. A second hand walks two slots per insert, and
 * sl_table_sweep() walks on demand, dropping only fresh states, so idle keys
 * vanish without timers.
 *
 * Locking. A shard lock (core/shard_lock.h) is a spin lock whose waiters
 * look at it seldom, so that on a hot key its holder runs a stretch of
 * decisions with the lock's and the state's lines in its own cache instead
 * of handing both over at every decision; a waiter that has waited its
 * patience queues by ticket and closes the fast path, so none starves. The
 * critical section is a lookup and a few integer operations (the answer's
 * divisions come after it), far shorter than a futex round trip.
 * Multi-key checks lock their shards in address order (no deadlock) and pin
 * their entries so that inserting one key cannot evict another of the same
 * request. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/algorithm.h"
#include "core/hash.h"
#include "core/shard_lock.h"
#include "core/table_any.h"
#include "sluice/error.h"
#include "sluice/table.h"

#define LINE           64
#define KEY_INLINE_MAX 30 /* the meta byte's length field: 0..30, 31 = LONG */

/* meta: the low byte of a slot's first 64-bit word */
#define META_LEN   0x1fu /* inline key length 0..30, or META_LONG */
#define META_LONG  0x1fu
#define META_REF   0x20u /* used since the clock hand last passed */
#define META_USED  0x40u /* slot holds a key */
#define META_PIN   0x80u /* part of a running multi-key check: not evictable */
#define META_FLAGS ((uint64_t)(META_REF | META_PIN))

#define OVER_MAX     ((uint8_t)255) /* a saturated overflow count is never decremented */
#define REGION_SLOTS 64             /* slots per CLOCK hand of eviction at the cap */

#define DEFAULT_MAX_MEMORY      ((size_t)64 << 20)
#define DEFAULT_SHARDS          64
#define MAX_SHARDS              1024
#define INITIAL_GROUPS          8
#define IDLE_VISITS_PER_INSERT  2
#define DEFAULT_CLOCK_TOLERANCE SL_NS_PER_SEC

typedef struct shard {
    sl__shard_lock lock; /* two lines of its own (core/shard_lock.h) */
    /* read on every lookup, written only when a key comes or goes */
    _Alignas(64) uint8_t *slots; /* ngroups * group_bytes, 64-byte aligned */
    uint8_t *over;               /* per group: keys that probed past it */
    uint32_t *rhand;             /* per region of REGION_SLOTS slots: its CLOCK hand */
    uint32_t ngroups;
    uint32_t nslots;
    uint32_t max_count; /* keys the array may hold (3/4 of nslots) */
    uint32_t count;     /* keys held */
    uint32_t hand;      /* CLOCK hand (eviction at the cap) */
    uint32_t idle_hand; /* idle sweeper */
    size_t bytes, cap;
    size_t long_bytes; /* of bytes: keys stored out of line */
    uint64_t evicted_idle, evicted_live;
} shard;

typedef void decide_fn(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                       sl_decision *d);
typedef void step_fn(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                     sl__outcome *o);
typedef void answer_fn(const sl__plan *plan, const sl__outcome *o, sl_decision *d);

struct sl_table {
    sl__plan plan;
    /* the algorithm's own functions (sl__decide without its switch): its two
     * halves, or (sliding log) one decide under the lock */
    step_fn *step;
    answer_fn *answer;
    decide_fn *decide;
    uint64_t seed;
    size_t slot_size;   /* bytes of one slot: 32, or a multiple of 64 */
    size_t state_off;   /* where the state starts in a slot */
    size_t key_inline;  /* longest key kept inside the slot */
    size_t group_bytes; /* one cache line, or one big slot */
    uint32_t group_slots;
    unsigned nshards;
    size_t max_memory;
    int64_t tolerance; /* see sl_table_options.clock_tolerance */
    atomic_uint sweep_cursor;
    shard *shards;
};

/* ---- locking -------------------------------------------------------------- */

static inline void shard_lock(shard *s) {
    sl__shard_lock_take(&s->lock);
}

static inline void shard_unlock(shard *s) {
    sl__shard_lock_give(&s->lock);
}

/* ---- slots ---------------------------------------------------------------- */

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline void store64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
}

static inline uint32_t load32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* n <= 8 bytes at p as a little-endian integer (byte 0 lowest), reading
 * only those n bytes. */
static inline uint64_t load_le(const uint8_t *p, size_t n) {
    uint64_t v;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n >= 8) return load64(p);
    if (n >= 4) {
        uint64_t lo = load32(p), hi = load32(p + n - 4);
        v = lo | (hi << ((n - 4) * 8)); /* overlapping bytes are equal */
        return n == 8 ? v : v & ((UINT64_C(1) << (n * 8)) - 1);
    }
    if (n == 0) return 0;
    return (uint64_t)p[0] | ((uint64_t)p[n >> 1] << ((n >> 1) * 8)) |
           ((uint64_t)p[n - 1] << ((n - 1) * 8));
#else
    v = 0;
    for (size_t i = n > 8 ? 8 : n; i-- > 0;) v = (v << 8) | p[i];
    return v;
#endif
}

/* The n <= 7 bytes of a little-endian integer, written to p. */
static inline void store_le(uint8_t *p, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint8_t *slot(const sl_table *t, const shard *s, uint32_t i) {
    return s->slots + (size_t)i * t->slot_size;
}

static inline void *state_of(const sl_table *t, uint8_t *e) {
    return e + t->state_off;
}

static inline uint32_t meta_of(const uint8_t *e) {
    return (uint32_t)(load64(e) & 0xff);
}

static inline void meta_set(uint8_t *e, uint32_t bits) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    e[0] |= (uint8_t)bits; /* the word's low byte */
#else
    store64(e, load64(e) | bits);
#endif
}

static inline void meta_clear(uint8_t *e, uint32_t bits) {
    store64(e, load64(e) & ~(uint64_t)bits);
}

static inline bool is_long(const uint8_t *e) {
    return (meta_of(e) & META_LEN) == META_LONG;
}

static inline size_t long_len(const uint8_t *e) {
    return (size_t)((load64(e) >> 8) & 0xffff);
}

static inline uint8_t *long_ptr(const uint8_t *e) {
    uint8_t *p;
    memcpy(&p, e + 8, sizeof p);
    return p;
}

/* n bytes equal, n < KEY_INLINE_MAX, without a call into libc and without
 * reading past either end. */
static inline bool bytes_eq(const uint8_t *a, const uint8_t *b, size_t n) {
    if (n >= 8) {
        for (; n > 8; a += 8, b += 8, n -= 8)
            if (load64(a) != load64(b)) return false;
        return load64(a + n - 8) == load64(b + n - 8);
    }
    if (n >= 4) return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
    while (n--)
        if (*a++ != *b++) return false;
    return true;
}

/* What a lookup compares each slot with, prepared once per call. */
typedef struct probe {
    const uint8_t *key;
    size_t len;
    uint64_t w0; /* the slot's first word as it is for this key, flags clear */
    uint64_t h;
    bool inl; /* kept inside the slot */
} probe;

static inline void make_probe(const sl_table *t, const void *key, size_t len, uint64_t h,
                              probe *p) {
    p->key = key;
    p->len = len;
    p->h = h;
    p->inl = len <= t->key_inline;
    if (p->inl)
        p->w0 = META_USED | len | (load_le(key, len < 7 ? len : 7) << 8);
    else
        p->w0 = META_USED | META_LONG | ((uint64_t)len << 8) | ((h >> 24) << 24);
}

static inline bool slot_is(const uint8_t *e, const probe *p) {
    if ((load64(e) & ~META_FLAGS) != p->w0) return false;
    if (p->len <= 7) return true; /* the whole key was in the word */
    if (p->inl) return bytes_eq(e + 8, p->key + 7, p->len - 7);
    return memcmp(long_ptr(e), p->key, p->len) == 0;
}

/* The key of a used slot, for rehashing: inline keys are copied to buf
 * (KEY_INLINE_MAX bytes). */
static const uint8_t *key_of(const uint8_t *e, uint8_t *buf, size_t *len) {
    uint64_t w = load64(e);
    if ((w & META_LEN) == META_LONG) {
        *len = long_len(e);
        return long_ptr(e);
    }
    size_t n = w & META_LEN;
    store_le(buf, w >> 8, n < 7 ? n : 7);
    if (n > 7) memcpy(buf + 7, e + 8, n - 7);
    *len = n;
    return buf;
}

static inline uint64_t hash_of_slot(const sl_table *t, const uint8_t *e) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (!is_long(e)) return sl__hash(e + 1, meta_of(e) & META_LEN, t->seed); /* bytes 1.. */
#endif
    uint8_t buf[KEY_INLINE_MAX];
    size_t len;
    const uint8_t *k = key_of(e, buf, &len);
    return sl__hash(k, len, t->seed);
}

static inline shard *shard_for(const sl_table *t, uint64_t h) {
    return &t->shards[(h >> 32) & (t->nshards - 1)];
}

/* Home group: multiply-shift of the hash's low 32 bits (any group count). */
static inline uint32_t home_of(uint64_t h, uint32_t ngroups) {
    return (uint32_t)(((uint64_t)(uint32_t)h * ngroups) >> 32);
}

/* find() past the home group: the groups its overflow count says to try. */
static __attribute__((noinline)) uint8_t *find_more(const sl_table *t, const shard *s,
                                                    const probe *p, uint32_t g) {
    for (uint32_t step = 1; step < s->ngroups; step++) {
        if (++g == s->ngroups) g = 0;
        uint8_t *e = s->slots + (size_t)g * t->group_bytes;
        for (uint32_t j = 0; j < t->group_slots; j++, e += t->slot_size)
            if (slot_is(e, p)) return e;
        if (s->over[g] == 0) return NULL;
    }
    return NULL;
}

/* The slot holding p's key, or NULL. The home group (one cache line) first:
 * its one or two slots, and its overflow count only if the key is not there. */
static inline uint8_t *find(const sl_table *t, const shard *s, const probe *p) {
    uint32_t g = home_of(p->h, s->ngroups);
    uint8_t *e = s->slots + (size_t)g * t->group_bytes;
    /* the next group and the overflow count too, in parallel: a key not in
     * its home group (a fifth to a third of them between 0.7 and 7/8 load)
     * then costs no second dependent miss */
    __builtin_prefetch(e + t->group_bytes);
    __builtin_prefetch(&s->over[g]);
    if (slot_is(e, p)) return e;
    if (t->group_slots > 1 && slot_is(e + t->slot_size, p)) return e + t->slot_size;
    if (s->over[g] == 0) return NULL;
    return find_more(t, s, p, g);
}

/* A free slot on h's probe path in (slots, over, ngroups); counts the
 * groups it passes. The array has a free slot (count < nslots). */
static uint8_t *place(const sl_table *t, uint8_t *slots, uint8_t *over, uint32_t ngroups,
                      uint64_t h) {
    uint32_t g = home_of(h, ngroups);
    for (;;) {
        uint8_t *e = slots + (size_t)g * t->group_bytes;
        for (uint32_t j = 0; j < t->group_slots; j++, e += t->slot_size)
            if (!(meta_of(e) & META_USED)) return e;
        if (over[g] != OVER_MAX) over[g]++;
        if (++g == ngroups) g = 0;
    }
}

static uint32_t regions_of(const sl_table *t, uint32_t ngroups) {
    return (uint32_t)(((size_t)ngroups * t->group_slots + REGION_SLOTS - 1) / REGION_SLOTS);
}

static size_t array_bytes(const sl_table *t, uint32_t ngroups) {
    return (size_t)ngroups * (t->group_bytes + 1) + regions_of(t, ngroups) * sizeof(uint32_t);
}

static uint32_t max_count_of(uint32_t nslots) {
    return nslots - (nslots + 3) / 4;
}

static inline uint32_t next_group(const shard *s, uint32_t g) {
    return g + 1 == s->ngroups ? 0 : g + 1;
}

/* After slot `hole` was emptied: while a key that probed past the hole's
 * group lives further on (its overflow count says so), move the nearest such
 * key into the hole, and go on with the slot it leaves (a backward shift).
 * Keys stay as near their home as they can, so probe paths do not grow with
 * churn (idle sweeps, eviction at the cap): without this, at 7/8 load a
 * lookup of a new key visited hundreds of groups after a while. Moves
 * entries: callers holding entry pointers find them again (check_all). */
static void pull_back(const sl_table *t, shard *s, uint32_t hole) {
    for (;;) {
        uint32_t gd = hole / t->group_slots;
        if (s->over[gd] == 0 || s->over[gd] == OVER_MAX) return;
        uint32_t g = gd, from = UINT32_MAX;
        for (uint32_t step = 1; step < s->ngroups && from == UINT32_MAX; step++) {
            g = next_group(s, g);
            for (uint32_t j = 0; j < t->group_slots; j++) {
                uint32_t i = g * t->group_slots + j;
                uint8_t *e = slot(t, s, i);
                if (!(meta_of(e) & META_USED)) continue;
                uint32_t home = home_of(hash_of_slot(t, e), s->ngroups);
                /* passed gd: gd lies on its path from home to g */
                uint32_t d_home = (g + s->ngroups - home) % s->ngroups;
                uint32_t d_gd = (g + s->ngroups - gd) % s->ngroups;
                if (d_home >= d_gd) {
                    from = i;
                    break;
                }
            }
        }
        if (from == UINT32_MAX) return;
        uint8_t *src = slot(t, s, from), *dst = slot(t, s, hole);
        memcpy(dst, src, t->slot_size);
        store64(src, 0);
        for (uint32_t x = gd; x != g; x = next_group(s, x))
            if (s->over[x] != OVER_MAX) s->over[x]--;
        hole = from;
    }
}

/* Empties slot i: the overflow counts on its key's probe path go down, a
 * long key's bytes are freed, and keys beyond it move back. */
static void remove_slot(const sl_table *t, shard *s, uint32_t i) {
    uint8_t *e = slot(t, s, i);
    uint32_t g = home_of(hash_of_slot(t, e), s->ngroups), at = i / t->group_slots;
    for (; g != at; g = g + 1 == s->ngroups ? 0 : g + 1)
        if (s->over[g] != OVER_MAX) s->over[g]--;
    if (is_long(e)) {
        size_t len = long_len(e);
        s->bytes -= len;
        s->long_bytes -= len;
        free(long_ptr(e));
    }
    store64(e, 0);
    s->count--;
    pull_back(t, s, i);
}

/* True if forgetting the state cannot change a decision at any time from
 * now - tolerance on. */
static inline bool forgettable(const sl_table *t, uint8_t *e, int64_t now) {
    int64_t past = now - t->tolerance;
    return sl__state_forgettable(&t->plan, state_of(t, e), past > 0 ? past : 0);
}

/* Drops fresh states under the idle hand; visits at most `visits` slots. */
static size_t sweep_idle(const sl_table *t, shard *s, int64_t now, size_t visits) {
    size_t dropped = 0;
    for (size_t v = 0; v < visits && s->count; v++) {
        if (s->idle_hand >= s->nslots) s->idle_hand = 0;
        uint32_t i = s->idle_hand++;
        uint8_t *e = slot(t, s, i);
        if ((meta_of(e) & (META_USED | META_PIN)) == META_USED && forgettable(t, e, now)) {
            remove_slot(t, s, i);
            s->evicted_idle++;
            dropped++;
        }
    }
    return dropped;
}

/* CLOCK over slots [lo, hi) with *hand: frees one slot, preferring fresh
 * states; with long_only, only a state whose key is stored out of line.
 * false if none can be evicted. */
static bool evict_in(const sl_table *t, shard *s, int64_t now, bool long_only, uint32_t lo,
                     uint32_t hi, uint32_t *hand) {
    if (s->count == 0) return false;
    for (uint64_t step = 0; step < 2 * (uint64_t)(hi - lo) + 2; step++) {
        if (*hand >= hi || *hand < lo) *hand = lo;
        uint32_t i = (*hand)++;
        uint8_t *e = slot(t, s, i);
        uint32_t m = meta_of(e);
        if (!(m & META_USED) || (m & META_PIN)) continue;
        if (long_only && (m & META_LEN) != META_LONG) continue;
        if (forgettable(t, e, now)) {
            remove_slot(t, s, i);
            s->evicted_idle++;
            return true;
        }
        if (m & META_REF) {
            meta_clear(e, META_REF);
            continue;
        }
        remove_slot(t, s, i);
        s->evicted_live++;
        return true;
    }
    return false;
}

/* Over the whole shard (long keys: their bytes are what is short). */
static bool evict_one(const sl_table *t, shard *s, int64_t now, bool long_only) {
    return evict_in(t, s, now, long_only, 0, s->nslots, &s->hand);
}

/* In the region of h's home, with its own hand, so that the slots eviction
 * frees lie where new keys land: one hand for the whole shard frees slots
 * only behind it while new keys land anywhere, and the rest of the array
 * fills up (a lookup of a new key then crossed a large part of the shard). */
static bool evict_near(const sl_table *t, shard *s, int64_t now, uint64_t h) {
    uint32_t r = home_of(h, s->ngroups) * t->group_slots / REGION_SLOTS, lo = r * REGION_SLOTS;
    uint32_t hi = lo + REGION_SLOTS < s->nslots ? lo + REGION_SLOTS : s->nslots;
    return evict_in(t, s, now, false, lo, hi, &s->rhand[r]) || evict_one(t, s, now, false);
}

/* Allocates an empty array of ngroups groups. */
static int alloc_array(const sl_table *t, uint32_t ngroups, uint8_t **slots, uint8_t **over,
                       uint32_t **rhand) {
    size_t n = (size_t)ngroups * t->group_bytes;
    *slots = aligned_alloc(LINE, n);
    *over = calloc(ngroups, 1);
    *rhand = calloc(regions_of(t, ngroups), sizeof **rhand);
    if (!*slots || !*over || !*rhand) {
        free(*slots);
        free(*over);
        free(*rhand);
        return SL_ENOMEM;
    }
    memset(*slots, 0, n);
    return SL_OK;
}

/* Grows the array by about a quarter if the cap allows (the array and the
 * long keys within 7/8 of it). Moves every entry. false if it cannot. */
static bool grow(const sl_table *t, shard *s) {
    uint32_t ng = s->ngroups, want = ng + (ng / 4 ? ng / 4 : 1);
    size_t room = s->cap - s->cap / 8, fixed = s->bytes - array_bytes(t, ng);
    if (want > UINT32_MAX / t->group_slots) return false;
    while (want > ng && fixed + array_bytes(t, want) > room) want -= (want - ng + 1) / 2;
    if (want <= ng) return false;
    uint8_t *slots, *over;
    uint32_t *rhand;
    if (alloc_array(t, want, &slots, &over, &rhand)) return false;
    for (uint32_t i = 0; i < s->nslots; i++) {
        uint8_t *e = slot(t, s, i);
        if (!(meta_of(e) & META_USED)) continue;
        memcpy(place(t, slots, over, want, hash_of_slot(t, e)), e, t->slot_size);
    }
    free(s->slots);
    free(s->over);
    free(s->rhand);
    s->slots = slots;
    s->over = over;
    s->rhand = rhand;
    s->ngroups = want;
    s->nslots = want * t->group_slots;
    s->max_count = max_count_of(s->nslots);
    s->bytes = fixed + array_bytes(t, want);
    s->hand = s->idle_hand = 0;
    return true;
}

/* Creates the state for a new key (not in the shard); *out is its slot. */
static int insert(const sl_table *t, shard *s, const probe *p, int64_t now, uint8_t **out) {
    sweep_idle(t, s, now, IDLE_VISITS_PER_INSERT);
    size_t len = p->len;
    /* Only evicting other long keys frees the memory a long key needs (the
     * array stays allocated): give up before evicting anything if even
     * that cannot make room. */
    if (!p->inl && s->bytes - s->long_bytes + len > s->cap) return SL_ENOMEM;
    if (s->count >= s->max_count && !grow(t, s) && !evict_near(t, s, now, p->h)) return SL_ENOMEM;
    while (!p->inl && s->bytes + len > s->cap)
        if (!evict_one(t, s, now, true)) return SL_ENOMEM; /* the rest are pinned */
    uint8_t *k = NULL;
    if (!p->inl) {
        k = malloc(len);
        if (!k) return SL_ENOMEM;
        memcpy(k, p->key, len);
    }
    uint8_t *e = place(t, s->slots, s->over, s->ngroups, p->h);
    memset(e + 8, 0, t->state_off - 8);
    /* Referenced only once used again, unless its region's hand is about to
     * reach it: a new key gets at least half a turn of that hand (a key
     * placed just ahead of it would otherwise go before its second use). */
    uint32_t i = (uint32_t)((size_t)(e - s->slots) / t->slot_size), r = i / REGION_SLOTS;
    uint32_t ahead = (i + REGION_SLOTS - s->rhand[r] % REGION_SLOTS) % REGION_SLOTS;
    store64(e, p->w0 | (ahead < REGION_SLOTS / 2 ? META_REF : 0));
    if (p->inl) {
        if (len > 7) memcpy(e + 8, p->key + 7, len - 7);
    } else {
        memcpy(e + 8, &k, sizeof k);
        s->bytes += len;
        s->long_bytes += len;
    }
    sl__state_init(&t->plan, state_of(t, e), now);
    s->count++;
    *out = e;
    return SL_OK;
}

/* ---- public API --------------------------------------------------------- */

/* What sl__decide calls for the algorithm, in two halves where it has them
 * (core/algorithm.h). */
static void functions_of(sl_table *t, sl_algorithm a) {
    switch (a) {
    case SL_FIXED_WINDOW:
        t->step = sl__fixed_window_step;
        t->answer = sl__fixed_window_answer;
        break;
    case SL_SLIDING_LOG:
        t->decide = sl__sliding_log_decide;
        break;
    case SL_SLIDING_WINDOW:
        t->step = sl__sliding_window_step;
        t->answer = sl__sliding_window_answer;
        break;
    case SL_TOKEN_BUCKET:
        t->step = sl__token_bucket_step;
        t->answer = sl__token_bucket_answer;
        if (t->plan.params.flags & SL_STEP_REFILL) {
            t->step = sl__token_bucket_steps_step;
            t->answer = sl__token_bucket_steps_answer;
        }
        break;
    case SL_GCRA:
        t->step = sl__gcra_step;
        t->answer = sl__gcra_answer;
        break;
    case SL_LEAKY_QUEUE:
        t->step = sl__leaky_queue_step;
        t->answer = sl__leaky_queue_answer;
        break;
    }
}

static int create(const sl_table_options *opts, const sl__plan *planp, sl_table **out) {
    const sl__plan plan = *planp;
    unsigned nshards = opts->shards ? opts->shards : DEFAULT_SHARDS;
    if (nshards > MAX_SHARDS || (nshards & (nshards - 1))) return SL_EINVAL;
    if (opts->clock_tolerance < 0 || opts->clock_tolerance > SL_TIME_MAX) return SL_EINVAL;
    size_t max_memory = opts->max_memory ? opts->max_memory : DEFAULT_MAX_MEMORY;
    /* 32 bytes when a 15-byte key fits next to the state, else whole lines */
    size_t slot_size =
        plan.state_size + 16 <= 32 ? 32 : (plan.state_size + 16 + LINE - 1) / LINE * LINE;
    size_t group_bytes = slot_size < LINE ? LINE : slot_size;

    /* Smallest useful shard: 64 slots. Fewer shards when the cap is tiny. */
    while (!opts->shards && nshards > 1 && max_memory / nshards < 64 * (slot_size + 1))
        nshards /= 2;
    size_t cap = max_memory / nshards;
    size_t room = cap - cap / 8;
    /* one group must fit in the part of the cap the array may use */
    if (room < group_bytes + 1) return SL_EINVAL;

    sl_table *t = calloc(1, sizeof *t);
    if (!t) return SL_ENOMEM;
    t->plan = plan;
    functions_of(t, plan.params.algorithm);
    atomic_init(&t->sweep_cursor, 0);
    t->seed = opts->seed ? opts->seed : sl__random_seed();
    t->slot_size = slot_size;
    t->state_off = slot_size - plan.state_size;
    t->key_inline = t->state_off - 1 < KEY_INLINE_MAX ? t->state_off - 1 : KEY_INLINE_MAX;
    t->group_bytes = group_bytes;
    t->group_slots = (uint32_t)(group_bytes / slot_size);
    t->nshards = nshards;
    t->max_memory = max_memory;
    t->tolerance = opts->clock_tolerance ? opts->clock_tolerance : DEFAULT_CLOCK_TOLERANCE;
    t->shards = aligned_alloc(64, nshards * sizeof(shard));
    if (!t->shards) {
        free(t);
        return SL_ENOMEM;
    }
    memset(t->shards, 0, nshards * sizeof(shard));
    uint32_t ng = INITIAL_GROUPS;
    while (ng > 1 && array_bytes(t, ng) > room) ng /= 2;
    for (unsigned i = 0; i < nshards; i++) {
        shard *s = &t->shards[i];
        sl__shard_lock_init(&s->lock);
        s->cap = cap;
        if (alloc_array(t, ng, &s->slots, &s->over, &s->rhand)) {
            sl_table_destroy(t);
            return SL_ENOMEM;
        }
        s->ngroups = ng;
        s->nslots = ng * t->group_slots;
        s->max_count = max_count_of(s->nslots);
        s->bytes = array_bytes(t, ng);
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
        for (uint32_t j = 0; s->slots && j < s->nslots; j++) {
            uint8_t *e = slot(t, s, j);
            if ((meta_of(e) & META_USED) && is_long(e)) free(long_ptr(e));
        }
        free(s->slots);
        free(s->over);
        free(s->rhand);
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

/* A decision in progress: what the step under the lock leaves for the
 * answer after it. */
typedef struct pending {
    sl__outcome o;
    bool done; /* no split (sliding log): *out is already filled */
} pending;

/* sl__decide(plan, st, cost, now, SL__APPLY, d)'s state half, without its
 * dispatch: the caller holds st's shard lock. */
static inline void decide_step(const sl_table *t, const sl__plan *plan, void *st, int64_t cost,
                               int64_t now, pending *p, sl_decision *out) {
    sl__mode mode = cost ? SL__APPLY : SL__PEEK;
    p->done = !t->step;
    if (p->done)
        t->decide(plan, st, cost, now, mode, out);
    else
        t->step(plan, st, cost, now, mode, &p->o);
}

/* Its answer half, after the lock is released. */
static inline void decide_answer(const sl_table *t, const sl__plan *plan, const pending *p,
                                 int64_t cost, sl_decision *out) {
    if (!p->done) t->answer(plan, &p->o, out);
    if (cost == 0) { /* a peek is always allowed (as in sl__decide) */
        out->allowed = true;
        out->retry_after = 0;
    }
}

/* Inline in both callers: sl_table_check's plan is then the table's own,
 * known at compile time (no plan pointer to carry, one call level less). */
static inline __attribute__((always_inline)) int check_plan(sl_table *t, const sl__plan *plan,
                                                            const void *key, size_t keylen,
                                                            int64_t cost, int64_t now,
                                                            sl_decision *out) {
    int rc = check_args(plan, keylen, cost, now);
    if (rc) {
        deny(out, plan);
        return rc;
    }
    probe p;
    make_probe(t, key, keylen, sl__hash(key, keylen, t->seed), &p);
    shard *s = shard_for(t, p.h);
    shard_lock(s);
    uint8_t *e = find(t, s, &p);
    pending d;
    if (e) {
        meta_set(e, META_REF);
        decide_step(t, plan, state_of(t, e), cost, now, &d, out);
        shard_unlock(s);
        decide_answer(t, plan, &d, cost, out);
        return SL_OK;
    }
    if (cost == 0) { /* a peek at an unknown key: answer from a fresh state, store nothing */
        shard_unlock(s);
        return peek_fresh(plan, now, out);
    }
    rc = insert(t, s, &p, now, &e);
    if (rc) {
        shard_unlock(s);
        deny(out, plan);
        return rc;
    }
    decide_step(t, plan, state_of(t, e), cost, now, &d, out);
    shard_unlock(s);
    decide_answer(t, plan, &d, cost, out);
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
    uint8_t *e;
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
    probe pr[SL_CHECK_MAX];
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
        make_probe(c[i].table, c[i].key, c[i].keylen,
                   sl__hash(c[i].key, c[i].keylen, c[i].table->seed), &pr[i]);
        h[i].t = c[i].table;
        h[i].s = order[i] = shard_for(c[i].table, pr[i].h);
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
    bool inserted = false;
    for (; pinned < n; pinned++) {
        size_t i = pinned;
        uint8_t *e = find(h[i].t, h[i].s, &pr[i]);
        uint32_t used = META_REF;
        if (!e) {
            rc = insert(h[i].t, h[i].s, &pr[i], at[i], &e);
            used = 0;
            inserted = true;
        }
        if (rc) {
            *refused = i;
            break;
        }
        meta_set(e, META_PIN | used);
        h[i].e = e;
    }
    /* an insert may have grown a shard and moved the entries found before */
    for (size_t i = 0; inserted && i < pinned; i++) h[i].e = find(h[i].t, h[i].s, &pr[i]);

    if (rc == SL_OK && never < n) {
        /* contract: a cost that can never pass refuses the group, nothing
           charged; every other check is looked at */
        for (size_t i = 0; i < n; i++) {
            if (bad[i])
                deny(&c[i].decision, pl[i]);
            else
                look(pl[i], state_of(h[i].t, h[i].e), &c[i], at[i]);
        }
        *refused = never;
        rc = SL_ECOST;
    } else if (rc == SL_OK) {
        size_t off = 0, first = n;
        size_t offs[SL_CHECK_MAX];
        for (size_t i = 0; i < n; i++) {
            const sl__plan *plan = pl[i];
            offs[i] = off;
            memcpy(saved + off, state_of(h[i].t, h[i].e), plan->state_size);
            off += plan->state_size;
            /* record only if allowed; rejections are charged below, once */
            sl__plan strict = *plan;
            strict.count_rejected = false;
            sl__decide(&strict, state_of(h[i].t, h[i].e), c[i].cost, at[i], SL__APPLY,
                       &c[i].decision);
            if (!c[i].decision.allowed) {
                first = i;
                break;
            }
        }
        if (first < n) {
            for (size_t i = first + 1; i-- > 0;)
                memcpy(state_of(h[i].t, h[i].e), saved + offs[i], pl[i]->state_size);
            for (size_t i = 0; i < n; i++) {
                if (i == first) continue;
                if (o->contract)
                    look(pl[i], state_of(h[i].t, h[i].e), &c[i], at[i]);
                else
                    sl__decide(pl[i], state_of(h[i].t, h[i].e), c[i].cost, at[i], SL__PEEK,
                               &c[i].decision);
            }
            for (size_t i = 0; i < n; i++) {
                if (!pl[i]->count_rejected) continue;
                sl_decision charged;
                sl__decide(pl[i], state_of(h[i].t, h[i].e), c[i].cost, at[i], SL__CHARGE, &charged);
                if (o->contract) c[i].decision = charged; /* the state it is left in */
            }
            *refused = first;
        }
    } else {
        for (size_t j = 0; j < n; j++) deny(&c[j].decision, pl[j]);
    }

    for (size_t i = 0; i < pinned; i++) meta_clear(h[i].e, META_PIN);
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

int sl_table_forget(sl_table *t, const void *key, size_t keylen) {
    if (keylen > SL_KEY_MAX) return SL_EKEY;
    probe p;
    make_probe(t, key, keylen, sl__hash(key, keylen, t->seed), &p);
    shard *s = shard_for(t, p.h);
    shard_lock(s);
    uint8_t *e = find(t, s, &p); /* never pinned here: pins live under this lock */
    if (e) remove_slot(t, s, (uint32_t)((size_t)(e - s->slots) / t->slot_size));
    shard_unlock(s);
    return e ? 1 : 0;
}

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
    out->entry_bytes = t->slot_size;
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
