/* sliding_window.h (internal): the sliding window counter's state and its
 * two halves (core/algorithm.h, sl__outcome), inline so that the keyed
 * table's check for this algorithm is one function without calls
 * (core/table.c); sliding_window.c has the rest and the maths in its header
 * comment. */
#ifndef SLUICE_CORE_SLIDING_WINDOW_H
#define SLUICE_CORE_SLIDING_WINDOW_H

#include "core/algorithm.h"

/* The state: the current window's index and the counts of the window
 * before it and of it. Held in memory in one of two layouts, by the plan's
 * state_size (params.c): with a limit below 2^32 (counts never pass the
 * limit) the counts are 32 bits, 16 bytes in all, so a key takes a 32-byte
 * slot of the keyed table, two per cache line, as the bucket algorithms do;
 * else 64 bits, 24 bytes (a 64-byte slot). Code works on the wide form,
 * read and written with sl__sw_load / sl__sw_save. */
typedef struct sl__sw_state {
    int64_t window;
    int64_t prev;
    int64_t curr;
} sl__sw_state;

typedef struct sl__sw_small {
    int64_t window;
    uint32_t prev, curr; /* <= limit < 2^32 */
} sl__sw_small;

#define SL__SW_SMALL_MAX UINT32_MAX /* the largest limit of the 16-byte layout */

/* The layout, as a constant where the caller knows it (core/table.c makes
 * one check per layout, so the hot path tests nothing). */
static inline __attribute__((always_inline)) void sl__sw_load_as(bool small, const void *state,
                                                                 sl__sw_state *v) {
    if (small) {
        const sl__sw_small *s = state;
        *v = (sl__sw_state){s->window, s->prev, s->curr};
    } else {
        *v = *(const sl__sw_state *)state;
    }
}

static inline __attribute__((always_inline)) void sl__sw_save_as(bool small, void *state,
                                                                 const sl__sw_state *v) {
    if (small) {
        sl__sw_small *s = state;
        *s = (sl__sw_small){v->window, (uint32_t)v->prev, (uint32_t)v->curr};
    } else {
        *(sl__sw_state *)state = *v;
    }
}

static inline bool sl__sw_small_layout(const sl__plan *plan) {
    return plan->state_size == sizeof(sl__sw_small);
}

static inline void sl__sw_load(const sl__plan *plan, const void *state, sl__sw_state *v) {
    sl__sw_load_as(sl__sw_small_layout(plan), state, v);
}

static inline void sl__sw_save(const sl__plan *plan, void *state, const sl__sw_state *v) {
    sl__sw_save_as(sl__sw_small_layout(plan), state, v);
}

/* The counts as seen from window w (w >= s->window). */
static inline void sl__sw_roll(const sl__sw_state *s, int64_t w, int64_t *prev, int64_t *curr) {
    if (w == s->window) {
        *prev = s->prev;
        *curr = s->curr;
    } else if (w == s->window + 1) {
        *prev = s->curr;
        *curr = 0;
    } else {
        *prev = 0;
        *curr = 0;
    }
}

/* prev * (P - elapsed) <= k * P, exactly (all >= 0): 64-bit products when
 * they fit, 128-bit otherwise. */
static inline bool sl__sw_weighted_fits(int64_t prev, int64_t rest, int64_t k, int64_t P) {
    int64_t l, r;
    if (sl__mul64(prev, rest, &l) && sl__mul64(k, P, &r)) return l <= r;
    return (sl__i128)prev * rest <= (sl__i128)k * P;
}

static inline __attribute__((always_inline)) void
sl__sliding_window_step_as(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                           sl__mode mode, sl__outcome *o, bool small) {
    sl__sw_state v;
    sl__sw_load_as(small, state, &v);
    const int64_t N = plan->limit, P = plan->period;
    int64_t elapsed; /* 0 if the clock went back: the stored window, weighed fully */
    int64_t w = sl__window_at(v.window, P, now, &elapsed);
    int64_t prev, curr;
    sl__sw_roll(&v, w, &prev, &curr);

    /* estimate + cost <= N, times P: prev * (P - elapsed) <= (N - curr - cost) * P */
    int64_t k = N - curr - cost; /* >= -2^62 */
    bool allowed = k >= 0 && (prev == 0 || sl__sw_weighted_fits(prev, P - elapsed, k, P));
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t after = charge ? sl__min64(curr + cost, N) : curr; /* never overfills */
    if (mode != SL__PEEK) sl__sw_save_as(small, state, &(sl__sw_state){w, prev, after});
    o->allowed = allowed;
    o->cost = cost;
    o->now = now;
    o->a = w;
    o->b = after;
    o->c = prev;
    o->d = elapsed;
}

static inline void sl__sliding_window_step_inline(const sl__plan *plan, void *state, int64_t cost,
                                                  int64_t now, sl__mode mode, sl__outcome *o) {
    sl__sliding_window_step_as(plan, state, cost, now, mode, o, sl__sw_small_layout(plan));
}

/* floor(a * b / c) for a, b >= 0, c > 0: 64-bit when a * b fits. */
static inline int64_t sl__sw_muldiv(int64_t a, int64_t b, int64_t c) {
    int64_t ab;
    /* c is a period, validated >= 1 (sl_params_validate) */
    // NOLINTNEXTLINE(clang-analyzer-core.DivideZero)
    if (sl__mul64(a, b, &ab)) return ab / c;
    return sl__div128((sl__i128)a * b, c);
}

/* ceil(a * b / P) for the plan's period P: by its reciprocal when a * b
 * fits 64 bits. */
static inline int64_t sl__sw_ceil_muldiv_period(const sl__plan *plan, int64_t a, int64_t b) {
    int64_t ab;
    if (sl__mul64(a, b, &ab)) return sl__ceil_div_by(ab, plan->period, plan->period_inv);
    return sl__ceil_div128((sl__i128)a * b, plan->period);
}

static inline void sl__sliding_window_answer_inline(const sl__plan *plan, const sl__outcome *o,
                                                    sl_decision *d) {
    const int64_t N = plan->limit, P = plan->period;
    int64_t w = o->a, after = o->b, prev = o->c, cost = o->cost, now = o->now;
    int64_t rest = P - o->d;            /* P - elapsed, in (0, P] */
    int64_t to_end = (w + 1) * P - now; /* in (0, P], or more if the clock went back */
    d->allowed = o->allowed;
    d->limit = N;
    /* remaining = floor(((N - after) * P - prev * rest) / P)
     *           = N - after - ceil(prev * rest / P), at least 0 */
    int64_t rem = N - after; /* >= 0: never overfills */
    if (rem > 0 && prev > 0) {
        int64_t up = sl__sw_ceil_muldiv_period(plan, prev, rest);
        rem = rem > up ? rem - up : 0;
    }
    d->remaining = rem;
    d->delay = 0;
    /* saturating: after a clock that went far back, to_end + P may pass INT64_MAX
     * (found by fuzz_decide) */
    int64_t to_next = to_end > INT64_MAX - P ? INT64_MAX : to_end + P;
    d->reset_after = after > 0 ? to_next : (prev > 0 ? to_end : 0);
    if (o->allowed) {
        d->retry_after = 0;
    } else if (after + cost <= N) {
        /* Passes once prev * (P - e) <= (N - after - cost) * P within this
         * window, i.e. e >= P - floor((N - after - cost) * P / prev); at the
         * latest at the window's end, where prev becomes `after`. */
        int64_t e = P - sl__sw_muldiv(N - after - cost, P, prev);
        d->retry_after = (e < P ? w * P + e : (w + 1) * P) - now;
    } else {
        /* Not in this window. In the next one prev' = after, curr' = 0:
         * passes once after * (P - e) <= (N - cost) * P. */
        int64_t e = after == N && cost == 1 ? plan->w_full1 /* a full window, refused */
                                            : sl__max64(0, P - sl__sw_muldiv(N - cost, P, after));
        d->retry_after = to_end > INT64_MAX - e ? INT64_MAX : to_end + e; /* as to_next */
    }
}

#endif
