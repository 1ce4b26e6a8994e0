/* table_slots.c: the keyed table's index (table_slots.h has the layout):
 * where a new key goes, removal, growth.
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
 * Pages: an array asks the kernel for 2 MiB pages (madvise(MADV_HUGEPAGE) on
 * its 2 MiB-aligned interior): in arrays of many MiB, every decision's slot
 * line also missed in the TLB on 4 KiB pages, and the page walk's own miss
 * came before the line's (docs/BENCHMARKS.md, session 17). An array under
 * 2 MiB has no such page: with 64 shards, tables under about 128 MiB (a
 * million token-bucket keys) stay on 4 KiB pages (session 18). It costs no
 * memory (the array is zeroed, so every page of it is resident either way);
 * where the kernel's transparent huge pages are "never" it does nothing. */
#include "core/table_slots.h"

#include <stdint.h>
#include <sys/mman.h>

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

uint64_t sl__table_hash_of_slot(const sl_table *t, const uint8_t *e) {
    return hash_of_slot(t, e);
}

/* find() past the group after home: the groups its overflow count says to try. */
uint8_t *sl__table_find_more(const sl_table *t, const shard *s, const probe *p, uint32_t g) {
    for (uint32_t step = 1; step < s->ngroups; step++) {
        if (++g == s->ngroups) g = 0;
        uint8_t *e = find_in_group(t, s->slots + (size_t)g * t->group_bytes, p);
        if (e) return e;
        if (s->over[g] == 0) return NULL;
    }
    return NULL;
}

/* A free slot on h's probe path in (slots, over, ngroups); counts the
 * groups it passes. The array has a free slot (count < nslots). */
uint8_t *sl__table_place(const sl_table *t, uint8_t *slots, uint8_t *over, uint32_t ngroups,
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

/* Groups from a forward to b around the array of n (a, b < n). */
static inline uint32_t ring_distance(uint32_t a, uint32_t b, uint32_t n) {
    return b >= a ? b - a : b + n - a;
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
        uint32_t gd = group_of_slot(t, hole);
        if (s->over[gd] == 0 || s->over[gd] == OVER_MAX) return;
        uint32_t g = gd, from = UINT32_MAX;
        for (uint32_t step = 1; step < s->ngroups && from == UINT32_MAX; step++) {
            g = next_group(s, g);
            for (uint32_t j = 0; j < t->group_slots; j++) {
                uint32_t i = g * t->group_slots + j;
                uint8_t *e = slot(t, s, i);
                if (!(meta_of(e) & META_USED)) continue;
                uint32_t home = home_of(hash_of_slot(t, e), s->ngroups);
                /* passed gd: gd lies on its path from home to g (distances
                 * around the ring; both below ngroups, so no division) */
                if (ring_distance(home, g, s->ngroups) >= ring_distance(gd, g, s->ngroups)) {
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
void sl__table_remove_slot(const sl_table *t, shard *s, uint32_t i) {
    uint8_t *e = slot(t, s, i);
    uint32_t g = home_of(hash_of_slot(t, e), s->ngroups), at = group_of_slot(t, i);
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

/* Asks for huge pages over the 2 MiB pages inside [p, p + n); failure is
 * harmless (4 KiB pages). */
static void advise_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~(huge - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

/* Allocates an empty array of ngroups groups. */
int sl__table_alloc_array(const sl_table *t, uint32_t ngroups, uint8_t **slots, uint8_t **over,
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
    advise_huge(*slots, n);
    memset(*slots, 0, n);
    return SL_OK;
}

/* Grows the array by about a quarter if the cap allows (the array and the
 * long keys within 7/8 of it). Moves every entry. false if it cannot. */
bool sl__table_grow(const sl_table *t, shard *s) {
    uint32_t ng = s->ngroups, want = ng + (ng / 4 ? ng / 4 : 1);
    size_t room = s->cap - s->cap / 8, fixed = s->bytes - array_bytes(t, ng);
    if (want > UINT32_MAX / t->group_slots) return false;
    /* At the cap not even one group more fits (grow_limit_of, the same test
     * an insert makes before calling), so not the halving below. */
    if (s->bytes > s->grow_limit) return false;
    while (want > ng && fixed + array_bytes(t, want) > room) want -= (want - ng + 1) / 2;
    if (want <= ng) return false;
    uint8_t *slots, *over;
    uint32_t *rhand;
    if (sl__table_alloc_array(t, want, &slots, &over, &rhand)) return false;
    for (uint32_t i = 0; i < s->nslots; i++) {
        uint8_t *e = slot(t, s, i);
        if (!(meta_of(e) & META_USED)) continue;
        memcpy(sl__table_place(t, slots, over, want, hash_of_slot(t, e)), e, t->slot_size);
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
    s->grow_limit = grow_limit_of(t, s->cap, want);
    s->hand = s->idle_hand = 0;
    return true;
}
