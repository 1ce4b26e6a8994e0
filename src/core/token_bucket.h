/* token_bucket.h (internal): the token bucket's state and its two halves
 * (core/algorithm.h, sl__outcome) with continuous refill, inline so that
 * the keyed table's check for this algorithm is one function without calls
 * (core/table.c); token_bucket.c has the rest (step refill, init, decide)
 * and the maths in its header comment. */
#ifndef SLUICE_CORE_TOKEN_BUCKET_H
#define SLUICE_CORE_TOKEN_BUCKET_H

#include "core/algorithm.h"

typedef struct sl__tb_state {
    int64_t tokens; /* scaled by p */
    int64_t last;   /* time tokens was computed for */
} sl__tb_state;

/* Tokens at now (scaled), exact, capped at full: continuous refill. */
static inline int64_t sl__tb_refill(const sl__plan *plan, const sl__tb_state *s, int64_t now) {
    if (now <= s->last || s->tokens >= plan->full) return s->tokens;
    sl__i128 t = (sl__i128)s->tokens + (sl__i128)(now - s->last) * plan->n;
    return t >= plan->full ? plan->full : (int64_t)t;
}

/* Takes cost from the bucket holding `tokens` at now (mode as sl__decide). */
static inline void sl__tb_take(const sl__plan *plan, sl__tb_state *s, int64_t tokens, int64_t cost,
                               int64_t now, sl__mode mode, sl__outcome *o) {
    int64_t need = cost * plan->p; /* <= B * p <= 2^61 */
    bool allowed = tokens >= need;
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t after = charge ? sl__max64(0, tokens - need) : tokens; /* never into debt */
    if (mode != SL__PEEK) {
        s->tokens = after;
        s->last = sl__max64(s->last, now);
    }
    o->allowed = allowed;
    o->a = after;
    o->b = need;
    /* With the clock behind `last`, the bucket is judged as of `last`, so
     * durations count from there. */
    o->c = s->last > now ? s->last - now : 0;
}

static inline void sl__token_bucket_step_inline(const sl__plan *plan, void *state, int64_t cost,
                                                int64_t now, sl__mode mode, sl__outcome *o) {
    sl__tb_state *s = state;
    sl__tb_take(plan, s, sl__tb_refill(plan, s, now), cost, now, mode, o);
}

/* ceil(x / n) for x >= 0 (a difference of two scaled token counts). */
static inline int64_t sl__tb_ceil_div_n(const sl__plan *plan, int64_t x) {
    return plan->n == 1 ? x : sl__ceil_div_by(x, plan->n, plan->n_inv);
}

static inline void sl__token_bucket_answer_inline(const sl__plan *plan, const sl__outcome *o,
                                                  sl_decision *d) {
    int64_t after = o->a, need = o->b, behind = o->c;
    d->allowed = o->allowed;
    d->limit = plan->burst;
    /* no division: x / p and x / n are multiplications by the plan's
     * reciprocals, or nothing for an empty bucket and for n = 1 (a rate of
     * one token per p ns: most limits of N per second, minute or hour) */
    d->remaining = sl__div_p(plan, after);
    d->retry_after = o->allowed ? 0 : behind + sl__tb_ceil_div_n(plan, need - after);
    d->reset_after = after >= plan->full ? 0 : behind + sl__tb_ceil_div_n(plan, plan->full - after);
    d->delay = 0;
}

#endif
