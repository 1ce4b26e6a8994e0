/* table_evict.c: the keyed table's memory cap: a new key's insert, idle
 * sweeps and CLOCK eviction (table_slots.h has the layout).
 *
 * Eviction, only when a shard is at its memory cap and needs a slot. First
 * in the new key's own window (its home group and the next, the lines its
 * lookup read): a fresh state there (lossless, counted as idle), else one
 * not used since its region's hand last passed (counted as live), and the
 * new key takes its slot. Else a CLOCK hand (approximate LRU, one
 * "referenced" bit per entry; one hand per region of 64 slots, the region of
 * the new key's home, so that freed slots lie where new keys land; the
 * whole shard for a long key's bytes) drops fresh states first and
 * otherwise the first live state not used since the hand last passed; a new
 * key placed less than half a turn ahead of its region's hand starts
 * referenced. Every insert also walks two slots of its region under that
 * hand, dropping only fresh states, and sl_table_sweep() walks the whole
 * shard on demand with a hand of its own (the idle hand), so idle keys
 * vanish without timers. */
#include "core/table_slots.h"

#define IDLE_VISITS_PER_INSERT 2
#define SWEEP_BACKOFF_MAX      4 /* at most 15 inserts without idle visits */

/* True if forgetting the state cannot change a decision at any time from
 * now - tolerance on. */
static inline bool forgettable(const sl_table *t, uint8_t *e, int64_t now) {
    int64_t past = now - t->tolerance;
    return sl__state_forgettable(&t->plan, t->fresh, state_of(t, e), past > 0 ? past : 0);
}

/* Drops fresh states over slots [lo, hi) under *hand; visits at most
 * `visits` slots. Returns how many it dropped. With look false the hand
 * moves the same way but no slot is read (nothing dropped). */
static size_t sweep_in(const sl_table *t, shard *s, int64_t now, uint32_t lo, uint32_t hi,
                       uint32_t *hand, size_t visits, bool look) {
    size_t dropped = 0;
    for (size_t v = 0; v < visits && s->count; v++) {
        if (*hand >= hi || *hand < lo) *hand = lo;
        uint32_t i = (*hand)++;
        if (!look) continue;
        uint8_t *e = slot(t, s, i);
        if ((meta_of(e) & (META_USED | META_PIN)) == META_USED && forgettable(t, e, now)) {
            sl__table_remove_slot(t, s, i);
            s->evicted_idle++;
            dropped++;
        }
    }
    return dropped;
}

/* Drops fresh states under the idle hand; visits at most `visits` slots. */
size_t sl__table_sweep_idle(const sl_table *t, shard *s, int64_t now, size_t visits) {
    return sweep_in(t, s, now, 0, s->nslots, &s->idle_hand, visits, true);
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
            sl__table_remove_slot(t, s, i);
            s->evicted_idle++;
            return true;
        }
        if (m & META_REF) {
            meta_clear(e, META_REF);
            continue;
        }
        sl__table_remove_slot(t, s, i);
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
    uint32_t r, lo, hi;
    region_of(t, s, h, &r, &lo, &hi);
    return evict_in(t, s, now, false, lo, hi, &s->rhand[r]) || evict_one(t, s, now, false);
}

/* Drops fresh states in the region of h's home, under that region's hand
 * (which passes them on, as a CLOCK pass would, but clears no reference
 * bit); visits at most `visits` slots. Where the new key lands, for the
 * reason evict_near says: a sequential hand over the whole shard emptied
 * the stretch it had passed while new keys landed anywhere, so at the cap,
 * with most states idle, the rest of the array filled up and keys probed
 * hundreds of groups past their home (docs/BENCHMARKS.md, session 10).
 *
 * The visits back off while they find nothing: after k sweeps in a row that
 * dropped nothing, the next 2^k - 1 inserts (k <= SWEEP_BACKOFF_MAX) move
 * the hand as a sweep would but read no slot; a sweep that drops something
 * sweeps again on every insert. Where the states are live (a cap full of
 * keys in use) a sweep costs a line and about 70 instructions per insert
 * for nothing; where they are idle, every insert sweeps as before. The hand
 * moves either way, so that which keys it spares (the reference bit a new
 * key gets, just_passed) does not depend on whether states were idle. */
static void sweep_near(const sl_table *t, shard *s, int64_t now, uint64_t h, size_t visits) {
    uint32_t r, lo, hi;
    region_of(t, s, h, &r, &lo, &hi);
    bool look = s->sweep_wait == 0;
    size_t dropped = sweep_in(t, s, now, lo, hi, &s->rhand[r], visits, look);
    if (!look) {
        s->sweep_wait--;
    } else if (dropped) {
        s->sweep_misses = 0;
    } else {
        if (s->sweep_misses < SWEEP_BACKOFF_MAX) s->sweep_misses++;
        s->sweep_wait = (uint8_t)((1u << s->sweep_misses) - 1);
    }
}

/* True if slot e's region hand passed it less than a quarter turn ago: its
 * reference bit may have been cleared just then, and it keeps a chance to
 * be used again before a new key takes its place (cap_quality: a hot key
 * under a scan of one-use keys lost its state 147 times in 800,800 uses
 * without this test, 60 with it, 42 under the hand alone; half a turn kept
 * 8 but left most windows without a candidate). */
static inline bool just_passed(const shard *s, uint32_t i) {
    uint32_t behind = (s->rhand[i / REGION_SLOTS] - i) % REGION_SLOTS;
    return behind != 0 && behind <= REGION_SLOTS / 4;
}

/* At the cap, an inline key's slot taken from a key on its own probe
 * window: the home group and the next one, whose lines the lookup has just
 * read (find_home asks for the next one). The first fresh state there goes
 * (lossless, counted as idle), else the first not used since its region's
 * hand last passed (counted as live) and not just passed by it; pinned
 * slots and long keys stay. The
 * new key takes the victim's slot in place (the overflow counts on both
 * keys' paths adjusted, nothing moves), unless the victim is in the next
 * group while the home group has a free slot: then the victim goes as any
 * removal does and the key lands in its home group. No
 * candidate (every slot of the window referenced or pinned): NULL, and the
 * region's CLOCK hand (evict_near) decides. The new key starts
 * unreferenced, so that a key used once is the next one to go from that
 * window. Why: the hand's victim lies anywhere in its region, so its
 * removal pulls keys back from lines the lookup never read; this one costs
 * no line beyond the lookup's two (docs/BENCHMARKS.md, session 16). */
static uint8_t *replace_near(const sl_table *t, shard *s, const probe *p, int64_t now) {
    uint32_t hn = home_of(p->h, s->ngroups), gv = 0, vi = 0, n = t->group_slots;
    uint8_t *victim = NULL, *free_home = NULL;
    bool idle = false;
    for (uint32_t k = 0, g = hn; k < 2; k++, g = next_group(s, g)) {
        uint8_t *e = s->slots + (size_t)g * t->group_bytes;
        for (uint32_t j = 0, i = g * n; j < n; j++, i++, e += t->slot_size) {
            uint32_t m = meta_of(e);
            if (!(m & META_USED)) {
                if (k == 0 && !free_home) free_home = e;
                continue;
            }
            if ((m & META_PIN) || (m & META_LEN) == META_LONG) continue;
            if (forgettable(t, e, now)) {
                victim = e, gv = g, vi = i, idle = true;
                goto chosen;
            }
            if (!(m & META_REF) && !victim && !just_passed(s, i)) victim = e, gv = g, vi = i;
        }
    }
    if (!victim) return NULL;
chosen:
    if (idle)
        s->evicted_idle++;
    else
        s->evicted_live++;
    if (free_home && gv != hn) { /* the victim goes, the key lands in its home group */
        sl__table_remove_slot(t, s, vi);
        return sl__table_place(t, s->slots, s->over, s->ngroups, p->h);
    }
    /* in place: the victim's path loses a key, the new key's gains one */
    for (uint32_t g = home_of(sl__table_hash_of_slot(t, victim), s->ngroups); g != gv;
         g = next_group(s, g))
        if (s->over[g] != OVER_MAX) s->over[g]--;
    for (uint32_t g = hn; g != gv; g = next_group(s, g))
        if (s->over[g] != OVER_MAX) s->over[g]++;
    store64(victim, 0);
    s->count--;
    return victim;
}

/* Creates the state for a new key (not in the shard); *out is its slot. */
int sl__table_insert(const sl_table *t, shard *s, const probe *p, int64_t now, uint8_t **out) {
    sweep_near(t, s, now, p->h, IDLE_VISITS_PER_INSERT);
    size_t len = p->len;
    /* Only evicting other long keys frees the memory a long key needs (the
     * array stays allocated): give up before evicting anything if even
     * that cannot make room. */
    if (!p->inl && s->bytes - s->long_bytes + len > s->cap) return SL_ENOMEM;
    uint8_t *e = NULL;
    if (s->count >= s->max_count && (s->bytes > s->grow_limit || !sl__table_grow(t, s))) {
        e = p->inl ? replace_near(t, s, p, now) : NULL;
        if (!e && !evict_near(t, s, now, p->h)) return SL_ENOMEM;
    }
    while (!p->inl && s->bytes + len > s->cap)
        if (!evict_one(t, s, now, true)) return SL_ENOMEM; /* the rest are pinned */
    uint8_t *k = NULL;
    if (!p->inl) {
        k = malloc(len);
        if (!k) return SL_ENOMEM;
        memcpy(k, p->key, len);
    }
    bool replaced = e != NULL;
    if (!e) e = sl__table_place(t, s->slots, s->over, s->ngroups, p->h);
    memset(e + 8, 0, t->state_off - 8);
    /* Referenced only once used again, unless its region's hand is about to
     * reach it: a new key gets at least half a turn of that hand (a key
     * placed just ahead of it would otherwise go before its second use).
     * One that replaced a key of its window starts unreferenced (above). */
    uint32_t i = slot_index(t, s, e);
    uint32_t ahead = (i - s->rhand[i / REGION_SLOTS]) % REGION_SLOTS;
    store64(e, p->w0 | (!replaced && ahead < REGION_SLOTS / 2 ? META_REF : 0));
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
