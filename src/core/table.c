/* table.c: the keyed table (see sluice/table.h for the promises): create,
 * destroy, one-key checks, forget, sweeps and stats. The slot array and its
 * lookup are core/table_slots.h, placing and growth table_slots.c, the
 * memory cap table_evict.c, multi-key checks table_multi.c.
 *
 * Locking. A shard lock (core/shard_lock.h) is a spin lock whose waiters
 * look at it seldom, so that on a hot key its holder runs a stretch of
 * decisions with the lock's and the state's lines in its own cache instead
 * of handing both over at every decision; a waiter that has waited its
 * patience queues by ticket and closes the fast path, so none starves. The
 * critical section is a lookup and a few integer operations (the answer's
 * divisions come after it), far shorter than a futex round trip. */
#include "core/fixed_window.h"
#include "core/leaky_queue.h"
#include "core/sliding_log.h"
#include "core/sliding_window.h"
#include "core/table_any.h"
#include "core/table_slots.h"
#include "core/token_bucket.h"

#define DEFAULT_MAX_MEMORY      ((size_t)64 << 20)
#define DEFAULT_SHARDS          64
#define MAX_SHARDS              1024
#define INITIAL_GROUPS          8
#define DEFAULT_CLOCK_TOLERANCE SL_NS_PER_SEC

/* ---- public API --------------------------------------------------------- */

static check_fn check_fixed_window, check_sliding_log, check_sliding_window,
    check_sliding_window_wide, check_token_bucket, check_gcra, check_leaky_queue, check_slow;

/* What sl__decide calls for the algorithm, in two halves where it has them
 * (core/algorithm.h), and the one-key check made for it: the halves inline
 * (no call under the lock; the sliding log's one decide called directly),
 * or, for the step refill and any-rate GCRA, through the pointers. */
static void functions_of(sl_table *t, sl_algorithm a) {
    t->check = check_slow;
    t->fresh = sl__fresh_of(a);
    switch (a) {
    case SL_FIXED_WINDOW:
        t->step = sl__fixed_window_step;
        t->answer = sl__fixed_window_answer;
        t->check = check_fixed_window;
        break;
    case SL_SLIDING_LOG:
        t->decide = sl__sliding_log_decide;
        t->check = check_sliding_log;
        break;
    case SL_SLIDING_WINDOW:
        t->step = sl__sliding_window_step;
        t->answer = sl__sliding_window_answer;
        t->check = sl__sw_small_layout(&t->plan) ? check_sliding_window : check_sliding_window_wide;
        break;
    case SL_TOKEN_BUCKET:
        t->step = sl__token_bucket_step;
        t->answer = sl__token_bucket_answer;
        t->check = check_token_bucket;
        if (t->plan.params.flags & SL_STEP_REFILL) {
            t->step = sl__token_bucket_steps_step;
            t->answer = sl__token_bucket_steps_answer;
            t->check = check_slow;
        }
        break;
    case SL_GCRA:
        t->step = sl__gcra_step;
        t->answer = sl__gcra_answer;
        if (!t->plan.any_rate) t->check = check_gcra;
        break;
    case SL_LEAKY_QUEUE:
        t->step = sl__leaky_queue_step;
        t->answer = sl__leaky_queue_answer;
        t->check = check_leaky_queue;
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
    t->slot_shift = (slot_size & (slot_size - 1)) ? 0 : (unsigned)__builtin_ctzll(slot_size);
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
        if (sl__table_alloc_array(t, ng, &s->slots, &s->over, &s->rhand)) {
            sl_table_destroy(t);
            return SL_ENOMEM;
        }
        s->ngroups = ng;
        s->nslots = ng * t->group_slots;
        s->max_count = max_count_of(s->nslots);
        s->bytes = array_bytes(t, ng);
        s->grow_limit = grow_limit_of(t, cap, ng);
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
        /* each shard frees its own arrays once */
        // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
        free(s->slots);
        /* each shard frees its own arrays once */
        // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
        free(s->over);
        free(s->rhand);
    }
    free(t->shards);
    free(t);
}

const sl_params *sl_table_params(const sl_table *t) {
    return &t->plan.params;
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

/* A decision in progress: what the step under the lock leaves for the
 * answer after it. */
typedef struct pending {
    sl__outcome o;
    bool done; /* no split (sliding log): *out is already filled */
} pending;

/* The halves a check runs: compile-time constants in each check_X below
 * (inlined), the table's pointers in check_slow. step NULL: one
 * decide under the lock (the sliding log). */
typedef struct halves {
    step_fn *step;
    answer_fn *answer;
    decide_fn *decide;
} halves;

/* sl__decide(plan, st, cost, now, SL__APPLY, d)'s state half, without its
 * dispatch: the caller holds st's shard lock. */
static inline __attribute__((always_inline)) void decide_step(halves h, const sl__plan *plan,
                                                              void *st, int64_t cost, int64_t now,
                                                              pending *p, sl_decision *out) {
    sl__mode mode = cost ? SL__APPLY : SL__PEEK;
    p->done = !h.step;
    if (p->done)
        h.decide(plan, st, cost, now, mode, out);
    else
        h.step(plan, st, cost, now, mode, &p->o);
}

/* Its answer half, after the lock is released. */
static inline __attribute__((always_inline)) void
decide_answer(halves h, const sl__plan *plan, const pending *p, int64_t cost, sl_decision *out) {
    if (!p->done) h.answer(plan, &p->o, out);
    if (cost == 0) { /* a peek is always allowed (as in sl__decide) */
        out->allowed = true;
        out->retry_after = 0;
    }
}

/* The check once s is locked and the lookup has given e (NULL: p's key is
 * not in the shard): the decision, or the insert of a new key and its
 * decision. Unlocks s. */
static inline __attribute__((always_inline)) int check_locked(sl_table *t, const sl__plan *plan,
                                                              halves h, shard *s, const probe *p,
                                                              uint8_t *e, int64_t cost, int64_t now,
                                                              sl_decision *out) {
    pending d;
    if (!e) {
        if (cost == 0) { /* a peek at an unknown key: answer from a fresh state, store nothing */
            shard_unlock(s);
            return peek_fresh(plan, now, out);
        }
        int rc = sl__table_insert(t, s, p, now, &e);
        if (rc) {
            shard_unlock(s);
            deny(out, plan);
            return rc;
        }
    } else {
        meta_set(e, META_REF);
    }
    decide_step(h, plan, state_of(t, e), cost, now, &d, out);
    shard_unlock(s);
    decide_answer(h, plan, &d, cost, out);
    return SL_OK;
}

/* The whole check: any key, any plan, inserts, contention. Inline in its
 * callers (check_slow, sl__table_check_with). */
static inline __attribute__((always_inline)) int check_full(sl_table *t, const sl__plan *plan,
                                                            halves h, const void *key,
                                                            size_t keylen, int64_t cost,
                                                            int64_t now, sl_decision *out) {
    int rc = check_args(plan, keylen, cost, now);
    if (rc) {
        deny(out, plan);
        return rc;
    }
    probe p;
    make_probe(t, key, keylen, sl__hash(key, keylen, t->seed), &p);
    shard *s = shard_for(t, p.h);
    shard_lock(s);
    return check_locked(t, plan, h, s, &p, find(t, s, &p), cost, now, out);
}

static inline void gcra_plain_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                                   sl__mode mode, sl__outcome *o) {
    sl__gcra_plain_step(plan, state, cost, now, mode, o);
}

/* Everything check_fast leaves, and the whole check of a table that has no
 * check_X (step refill, any-rate GCRA): check_full with its pointers. */
static __attribute__((noinline)) int check_slow(sl_table *t, const void *key, size_t keylen,
                                                int64_t cost, int64_t now, sl_decision *out) {
    halves h = {t->step, t->answer, t->decide};
    return check_full(t, &t->plan, h, key, keylen, cost, now, out);
}

/* check_fast's key, not in its home group, with its shard locked (the
 * arguments valid, the key inline, cost != 0): the rest of the lookup and
 * of the check, with the table's halves by pointer, without giving the
 * lock back and taking it again (a new key at the cap, or a key that probed
 * past its home: a fifth to a third of them at high load). The arguments
 * are check_fast's own, so that its call is a jump (the hot path saves no
 * register for it); the probe is made again, from a key in L1. */
static __attribute__((noinline)) int check_past_home(sl_table *t, const void *key, size_t keylen,
                                                     int64_t cost, int64_t now, sl_decision *out) {
    probe p;
    make_probe(t, key, keylen, sl__hash(key, keylen, t->seed), &p);
    shard *s = shard_for(t, p.h);
    uint8_t *e = find_past_home(t, s, &p, home_of(p.h, s->ngroups));
    halves h = {t->step, t->answer, t->decide};
    return check_locked(t, &t->plan, h, s, &p, e, cost, now, out);
}

/* The common case alone, with no call but the last (a jump): valid
 * arguments, a key kept inside its slot and found in its home group, the
 * lock free. A key past its home group (or a new one) goes on in
 * check_past_home with the lock held; anything else gives back what it took
 * and goes to check_slow, which starts again. With
 * no call on its way, the function saves fewer registers and keeps the
 * probe out of memory: 20-28 instructions fewer per hot decision (callgrind,
 * docs/BENCHMARKS.md). */
static inline __attribute__((always_inline)) int check_fast(sl_table *t, halves h, const void *key,
                                                            size_t keylen, int64_t cost,
                                                            int64_t now, sl_decision *out) {
    const sl__plan *plan = &t->plan;
    if (__builtin_expect(
            check_args(plan, keylen, cost, now) != SL_OK || cost == 0 || keylen > t->key_inline, 0))
        return check_slow(t, key, keylen, cost, now, out);
    probe p;
    make_probe(t, key, keylen, sl__hash(key, keylen, t->seed), &p);
    shard *s = shard_for(t, p.h);
    if (__builtin_expect(!shard_try_lock(s), 0)) return check_slow(t, key, keylen, cost, now, out);
    if (__builtin_expect(s->count >= s->max_count, 0)) sl__table_prefetch_eviction(t, s, p.h);
    uint32_t g;
    uint8_t *e = find_home(t, s, &p, &g);
    if (__builtin_expect(!e, 0)) return check_past_home(t, key, keylen, cost, now, out);
    meta_set(e, META_REF);
    pending d;
    decide_step(h, plan, state_of(t, e), cost, now, &d, out);
    shard_unlock(s);
    decide_answer(h, plan, &d, cost, out);
    return SL_OK;
}

/* The one-key check of each algorithm with its halves inline. */
#define CHECK_INLINE(fname, step, answer)                                                          \
    static SL__HOT int fname(sl_table *t, const void *key, size_t keylen, int64_t cost,            \
                             int64_t now, sl_decision *out) {                                      \
        return check_fast(t, (halves){step, answer, NULL}, key, keylen, cost, now, out);           \
    }
CHECK_INLINE(check_fixed_window, sl__fixed_window_step_inline, sl__fixed_window_answer_inline)
/* the sliding window's two layouts (core/sliding_window.h), one check each */
static inline void sw_small_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                                 sl__mode mode, sl__outcome *o) {
    sl__sliding_window_step_as(plan, state, cost, now, mode, o, true);
}
static inline void sw_wide_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                                sl__mode mode, sl__outcome *o) {
    sl__sliding_window_step_as(plan, state, cost, now, mode, o, false);
}
CHECK_INLINE(check_sliding_window, sw_small_step, sl__sliding_window_answer_inline)
CHECK_INLINE(check_sliding_window_wide, sw_wide_step, sl__sliding_window_answer_inline)
CHECK_INLINE(check_token_bucket, sl__token_bucket_step_inline, sl__token_bucket_answer_inline)
CHECK_INLINE(check_gcra, gcra_plain_step, sl__gcra_plain_answer)
CHECK_INLINE(check_leaky_queue, sl__leaky_queue_step_inline, sl__leaky_queue_answer_inline)

/* The sliding log has no halves (its answer reads the log): one decide
 * under the lock, its refusal inline (core/sliding_log.h) and its charged
 * path a call. */
static SL__HOT int check_sliding_log(sl_table *t, const void *key, size_t keylen, int64_t cost,
                                     int64_t now, sl_decision *out) {
    halves h = {NULL, NULL, sl__sliding_log_decide_inline};
    return check_fast(t, h, key, keylen, cost, now, out);
}

SL__HOT int sl_table_check(sl_table *t, const void *key, size_t keylen, int64_t cost, int64_t now,
                           sl_decision *out) {
    return t->check(t, key, keylen, cost, now, out);
}

int sl__table_check_with(sl_table *t, const sl__plan *plan, const void *key, size_t keylen,
                         int64_t cost, int64_t now, sl_decision *out) {
    if (!plan_fits(t, plan)) {
        deny(out, plan);
        return SL_EINVAL;
    }
    halves h = {t->step, t->answer, t->decide};
    return check_full(t, plan, h, key, keylen, cost, now, out);
}

/* ---- maintenance ---------------------------------------------------------- */

int sl_table_forget(sl_table *t, const void *key, size_t keylen) {
    if (keylen > SL_KEY_MAX) return SL_EKEY;
    probe p;
    make_probe(t, key, keylen, sl__hash(key, keylen, t->seed), &p);
    shard *s = shard_for(t, p.h);
    shard_lock(s);
    uint8_t *e = find(t, s, &p); /* never pinned here: pins live under this lock */
    if (e) sl__table_remove_slot(t, s, slot_index(t, s, e));
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
        dropped += sl__table_sweep_idle(t, s, now, visits);
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
