/* fixed_window.h (internal): the fixed window's state and its two halves
 * (core/algorithm.h, sl__outcome), inline so that the keyed table's check
 * for this algorithm is one function without calls (core/table.c);
 * fixed_window.c has the rest and the semantics in its header comment. */
#ifndef SLUICE_CORE_FIXED_WINDOW_H
#define SLUICE_CORE_FIXED_WINDOW_H

#include "core/algorithm.h"

typedef struct sl__fw_state {
    int64_t window;
    int64_t count;
} sl__fw_state;

static inline void sl__fixed_window_step_inline(const sl__plan *plan, void *state, int64_t cost,
                                                int64_t now, sl__mode mode, sl__outcome *o) {
    sl__fw_state *s = state;
    const int64_t N = plan->limit, P = plan->period;
    int64_t elapsed; /* clock went back: stay in the later window */
    int64_t w = sl__window_at(s->window, P, now, &elapsed);
    int64_t count = (w == s->window) ? s->count : 0;

    bool allowed = count + cost <= N;
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t after = charge ? sl__min64(count + cost, N) : count; /* never overfills */
    if (charge && mode != SL__PEEK) {
        s->window = w;
        s->count = after;
    }
    o->allowed = allowed;
    o->now = now;
    o->a = w;
    o->b = after;
}

static inline void sl__fixed_window_answer_inline(const sl__plan *plan, const sl__outcome *o,
                                                  sl_decision *d) {
    const int64_t N = plan->limit, P = plan->period;
    int64_t w = o->a, after = o->b, now = o->now;
    int64_t end = (w + 1) * P; /* fits: |w*P| <= |now| + P */
    d->allowed = o->allowed;
    d->limit = N;
    d->remaining = N - after;
    d->retry_after = o->allowed ? 0 : end - now;
    d->reset_after = after > 0 ? end - now : 0;
    d->delay = 0;
}

#endif
