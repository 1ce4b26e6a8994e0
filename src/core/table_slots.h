/* table_slots.h (internal): the keyed table's slot array and its lookup,
 * shared by the table's files: table.c (the public operations), table_slots.c
 * (placing, removing, growing), table_evict.c (the memory cap: inserts and
 * eviction), table_multi.c (multi-key checks). sluice/table.h has the
 * promises.
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
 * fixed window, sliding window below 2^32 per period: keys of up to 15 bytes
 * inline, two slots per cache line), else a multiple of 64 (a sliding window
 * of a larger limit and any-rate GCRA 64, keys up to 30
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
 * 64-byte slot. */
#ifndef SLUICE_CORE_TABLE_SLOTS_H
#define SLUICE_CORE_TABLE_SLOTS_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/algorithm.h"
#include "core/hash.h"
#include "core/shard_lock.h"
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

typedef struct shard {
    sl__shard_lock lock; /* two lines of its own (core/shard_lock.h) */
    /* read on every lookup, written only when a key comes or goes */
    _Alignas(64) uint8_t *slots; /* ngroups * group_bytes, 64-byte aligned */
    uint8_t *over;               /* per group: keys that probed past it */
    uint32_t *rhand;             /* per region of REGION_SLOTS slots: its CLOCK hand */
    uint32_t ngroups;
    uint32_t nslots;
    uint32_t max_count;               /* keys the array may hold (3/4 of nslots) */
    uint32_t count;                   /* keys held */
    uint32_t hand;                    /* CLOCK hand (eviction at the cap) */
    uint32_t idle_hand;               /* idle sweeper */
    uint8_t sweep_misses, sweep_wait; /* idle visits on insert (table_evict.c) */
    size_t bytes, cap;
    size_t long_bytes; /* of bytes: keys stored out of line */
    size_t grow_limit; /* most bytes at which the array can still grow (grow_limit_of) */
    uint64_t evicted_idle, evicted_live;
} shard;

typedef void decide_fn(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                       sl_decision *d);
typedef void step_fn(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                     sl__outcome *o);
typedef void answer_fn(const sl__plan *plan, const sl__outcome *o, sl_decision *d);
typedef int check_fn(sl_table *t, const void *key, size_t keylen, int64_t cost, int64_t now,
                     sl_decision *out);

struct sl_table {
    sl__plan plan;
    /* the algorithm's own functions (sl__decide without its switch): its two
     * halves, or (sliding log) one decide under the lock */
    step_fn *step;
    answer_fn *answer;
    decide_fn *decide;
    sl__fresh_fn *fresh; /* the algorithm's fresh test (eviction, table_evict.c) */
    check_fn *check;     /* sl_table_check for this table (table.c) */
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
    unsigned slot_shift; /* log2 of slot_size if a power of two, else 0 (slot_index) */
    shard *shards;
};

/* ---- locking -------------------------------------------------------------- */

static inline void shard_lock(shard *s) {
    sl__shard_lock_take(&s->lock);
}

static inline bool shard_try_lock(shard *s) {
    return sl__shard_lock_try(&s->lock);
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
    /* each shard frees its own arrays once */
    // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
    return s->slots + (size_t)i * t->slot_size;
}

/* The index of slot e in s's array, without a division where slots are a
 * power of two bytes (all but some sliding logs): an insert at the cap
 * needs it three times, and a 64-bit division costs 10-20 cycles. */
static inline uint32_t slot_index(const sl_table *t, const shard *s, const uint8_t *e) {
    size_t off = (size_t)(e - s->slots);
    return (uint32_t)(t->slot_shift ? off >> t->slot_shift : off / t->slot_size);
}

/* The group of slot i: group_slots is 1 or 2 (a 64-byte line of 32-byte
 * slots, or one slot of whole lines). */
static inline uint32_t group_of_slot(const sl_table *t, uint32_t i) {
    return i >> (t->group_slots >> 1);
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
    if (n == 0) return true;
    /* 1..3 bytes: the first, the middle and the last cover them, no loop */
    return ((a[0] ^ b[0]) | (a[n >> 1] ^ b[n >> 1]) | (a[n - 1] ^ b[n - 1])) == 0;
}

/* What a lookup compares each slot with, prepared once per call. */
typedef struct probe {
    const uint8_t *key;
    size_t len;
    uint64_t w0; /* the slot's first word as it is for this key, flags clear */
    uint64_t h;
    bool inl; /* kept inside the slot */
} probe;

/* The key's first min(len, 7) bytes as a little-endian integer. A key of 8
 * bytes or more takes one load, its 8th byte masked off (the load the hash
 * made): 16 instructions fewer per decision on 11-byte keys, enough for
 * successive decisions' misses to overlap on a Zen 3 (docs/BENCHMARKS.md,
 * session 21). */
static inline uint64_t key_head(const void *key, size_t len) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (len >= 8) return load64(key) & (UINT64_MAX >> 8);
#endif
    return load_le(key, len < 7 ? len : 7);
}

static inline void make_probe(const sl_table *t, const void *key, size_t len, uint64_t h,
                              probe *p) {
    p->key = key;
    p->len = len;
    p->h = h;
    p->inl = len <= t->key_inline;
    if (p->inl)
        p->w0 = META_USED | len | (key_head(key, len) << 8);
    else
        p->w0 = META_USED | META_LONG | ((uint64_t)len << 8) | ((h >> 24) << 24);
}

static inline bool slot_is(const uint8_t *e, const probe *p) {
    if ((load64(e) & ~META_FLAGS) != p->w0) return false;
    if (p->len <= 7) return true; /* the whole key was in the word */
    if (p->inl) return bytes_eq(e + 8, p->key + 7, p->len - 7);
    return memcmp(long_ptr(e), p->key, p->len) == 0;
}

static inline shard *shard_for(const sl_table *t, uint64_t h) {
    return &t->shards[(h >> 32) & (t->nshards - 1)];
}

/* The group after g, around the array. */
static inline uint32_t next_group(const shard *s, uint32_t g) {
    return g + 1 == s->ngroups ? 0 : g + 1;
}

/* Home group: multiply-shift of the hash's low 32 bits (any group count). */
static inline uint32_t home_of(uint64_t h, uint32_t ngroups) {
    return (uint32_t)(((uint64_t)(uint32_t)h * ngroups) >> 32);
}

/* The hash of the key in used slot e (table_slots.c). */
uint64_t sl__table_hash_of_slot(const sl_table *t, const uint8_t *e);

/* find() past the group after home g: the groups its overflow count says
 * to try (table_slots.c). */
__attribute__((noinline)) uint8_t *sl__table_find_more(const sl_table *t, const shard *s,
                                                       const probe *p, uint32_t g);

/* The slot of group e (one or two slots) holding p's key, or NULL. */
static inline uint8_t *find_in_group(const sl_table *t, uint8_t *e, const probe *p) {
    if (slot_is(e, p)) return e;
    if (t->group_slots > 1 && slot_is(e + t->slot_size, p)) return e + t->slot_size;
    return NULL;
}

/* The slot holding p's key if it is in its home group (one cache line: its
 * one or two slots), else NULL. Also asks for the next group and the home's
 * overflow count, in parallel: a key not in its home group (a fifth to a
 * third of them between 0.7 and 7/8 load) then costs no second dependent
 * miss in find(). */
static inline uint8_t *find_home(const sl_table *t, const shard *s, const probe *p, uint32_t *gp) {
    uint32_t g = home_of(p->h, s->ngroups);
    uint8_t *e = s->slots + (size_t)g * t->group_bytes;
    __builtin_prefetch(e + t->group_bytes);
    __builtin_prefetch(&s->over[g]);
    *gp = g;
    return find_in_group(t, e, p);
}

/* Asks for the line of h's home group, ahead of find(): a multi-key check
 * asks for every key's line before it looks up the first (table_multi.c),
 * so that the keys' misses overlap instead of coming one after another.
 * Only a prefetch. The caller holds s's lock (s->slots, s->ngroups). */
static inline void prefetch_home(const sl_table *t, const shard *s, uint64_t h) {
    __builtin_prefetch(s->slots + (size_t)home_of(h, s->ngroups) * t->group_bytes);
}

/* The region of h's home (one CLOCK hand at the cap, table_evict.c): its
 * index and its slots [lo, hi). */
static inline void region_of(const sl_table *t, const shard *s, uint64_t h, uint32_t *r,
                             uint32_t *lo, uint32_t *hi) {
    *r = home_of(h, s->ngroups) * t->group_slots / REGION_SLOTS;
    *lo = *r * REGION_SLOTS;
    *hi = *lo + REGION_SLOTS < s->nslots ? *lo + REGION_SLOTS : s->nslots;
}

/* At the cap, a new key's insert reads the slots at its region's CLOCK hand
 * (table_evict.c: the idle visits, then eviction; a hand outside its region
 * starts at lo): asked for here, before the lookup's own miss, so that both
 * misses overlap when the key turns out to be new. Only a prefetch: a key
 * that is found pays nothing but the bandwidth. */
static inline void sl__table_prefetch_eviction(const sl_table *t, const shard *s, uint64_t h) {
    uint32_t r, lo, hi;
    region_of(t, s, h, &r, &lo, &hi);
    uint32_t hand = s->rhand[r] >= lo && s->rhand[r] < hi ? s->rhand[r] : lo;
    const uint8_t *at = s->slots + (size_t)hand * t->slot_size;
    const uint8_t *end = s->slots + (size_t)s->ngroups * t->group_bytes;
    for (int k = 0; k < 2 && at < end; k++, at += LINE) __builtin_prefetch(at);
}

/* The lookup past the home group g, where p's key was not: the overflow
 * count says whether to go on. The next group (where find_home asked for
 * its line, and where most keys not at home are) is looked at here, inline;
 * the groups after it in sl__table_find_more. */
static inline uint8_t *find_past_home(const sl_table *t, const shard *s, const probe *p,
                                      uint32_t g) {
    if (s->over[g] == 0) return NULL;
    uint32_t n = next_group(s, g);
    uint8_t *e = find_in_group(t, s->slots + (size_t)n * t->group_bytes, p);
    if (e) return e;
    return s->over[n] == 0 ? NULL : sl__table_find_more(t, s, p, n);
}

/* The slot holding p's key, or NULL: the home group first, the overflow
 * count only if the key is not there. */
static inline uint8_t *find(const sl_table *t, const shard *s, const probe *p) {
    uint32_t g;
    uint8_t *e = find_home(t, s, p, &g);
    return e ? e : find_past_home(t, s, p, g);
}

/* An array of ngroups groups: its regions (one CLOCK hand each), its bytes
 * (slots, overflow counts, hands), and the keys its nslots slots may hold. */
static inline uint32_t regions_of(const sl_table *t, uint32_t ngroups) {
    return (uint32_t)(((size_t)ngroups * t->group_slots + REGION_SLOTS - 1) / REGION_SLOTS);
}

static inline size_t array_bytes(const sl_table *t, uint32_t ngroups) {
    return (size_t)ngroups * (t->group_bytes + 1) + regions_of(t, ngroups) * sizeof(uint32_t);
}

static inline uint32_t max_count_of(uint32_t nslots) {
    return nslots - (nslots + 3) / 4;
}

/* The most bytes a shard of ngroups groups and this cap may hold and still
 * grow by one group (sl__table_grow's first test: the array and the long
 * keys within 7/8 of the cap), so that an insert into a full shard at its
 * cap knows without a call that it cannot grow: that test cost about 57
 * instructions per insert there (docs/BENCHMARKS.md, session 20). */
static inline size_t grow_limit_of(const sl_table *t, size_t cap, uint32_t ngroups) {
    return cap - cap / 8 - (array_bytes(t, ngroups + 1) - array_bytes(t, ngroups));
}

/* ---- shared by one-key (table.c) and multi-key checks (table_multi.c) ---- */

/* The answer of a call that fails: refused, never passing (retry_after -1). */
static inline void deny(sl_decision *d, const sl__plan *plan) {
    memset(d, 0, sizeof *d);
    d->allowed = false;
    d->limit = sl_params_limit(&plan->params);
    d->retry_after = -1;
}

static inline int check_args(const sl__plan *plan, size_t keylen, int64_t cost, int64_t now) {
    if (keylen > SL_KEY_MAX) return SL_EKEY;
    if (now > SL_TIME_MAX || now < 0) return SL_EINVAL;
    if (cost < 0 || cost > plan->max_cost) return SL_ECOST;
    return SL_OK;
}

/* A plan a call may decide table t's states with: t's own, or, for an
 * any-rate table, any any-rate plan (their states have one layout). */
static inline bool plan_fits(const sl_table *t, const sl__plan *plan) {
    return plan == &t->plan || (plan->any_rate && t->plan.any_rate);
}

/* ---- the index (table_slots.c) ------------------------------------------ */

/* A free slot on h's probe path in (slots, over, ngroups); counts the
 * groups it passes. The array has a free slot (count < nslots). */
uint8_t *sl__table_place(const sl_table *t, uint8_t *slots, uint8_t *over, uint32_t ngroups,
                         uint64_t h);

/* Empties slot i: the overflow counts on its key's probe path go down, a
 * long key's bytes are freed, and keys beyond it move back (entries move:
 * a caller holding entry pointers finds them again). */
void sl__table_remove_slot(const sl_table *t, shard *s, uint32_t i);

/* Allocates an empty array of ngroups groups, on 2 MiB pages where the
 * kernel gives them (table_slots.c): SL_OK, or SL_ENOMEM with nothing
 * allocated. */
int sl__table_alloc_array(const sl_table *t, uint32_t ngroups, uint8_t **slots, uint8_t **over,
                          uint32_t **rhand);

/* Grows the array by about a quarter if the cap allows (the array and the
 * long keys within 7/8 of it). Moves every entry. false if it cannot. */
bool sl__table_grow(const sl_table *t, shard *s);

/* ---- the memory cap (table_evict.c) --------------------------------------- */

/* Drops fresh states under the idle hand; visits at most `visits` slots.
 * Returns how many it dropped. The caller holds s's lock. */
size_t sl__table_sweep_idle(const sl_table *t, shard *s, int64_t now, size_t visits);

/* Creates the state for a new key (not in the shard), making room at the cap
 * by growing the array or evicting; *out is its slot. SL_OK, or SL_ENOMEM
 * when no room can be made (what was swept or evicted on the way stays
 * gone). Entries may move. The caller holds s's lock. */
int sl__table_insert(const sl_table *t, shard *s, const probe *p, int64_t now, uint8_t **out);

#endif
