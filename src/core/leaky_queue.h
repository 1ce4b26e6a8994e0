/* leaky_queue.h (internal): the leaky queue's two halves (core/algorithm.h,
 * sl__outcome) on GCRA's (core/gcra.h), inline so that the keyed table's
 * check for this algorithm is one function without calls (core/table.c);
 * leaky_queue.c has the rest and the semantics in its header comment. */
#ifndef SLUICE_CORE_LEAKY_QUEUE_H
#define SLUICE_CORE_LEAKY_QUEUE_H

#include "core/gcra.h"

static inline void sl__leaky_queue_step_inline(const sl__plan *plan, void *state, int64_t cost,
                                               int64_t now, sl__mode mode, sl__outcome *o) {
    const sl__gcra_state *s = state;
    /* the wait before this request, exactly, as a pair (before the step) */
    int64_t ww = s->tat - now, wf = s->frac;
    sl__gcra_plain_step(plan, state, cost, now, mode, o); /* never any-rate */
    o->f = ww;
    o->g = wf;
}

static inline void sl__leaky_queue_answer_inline(const sl__plan *plan, const sl__outcome *o,
                                                 sl_decision *d) {
    sl__gcra_plain_answer(plan, o, d);
    int64_t delay = o->b;
    int64_t after = plan->params.delay_after;
    if (after > 0) { /* the first `after` in the queue go at once: after * T less */
        int64_t w = o->f - plan->q_whole, f = o->g - plan->q_frac; /* f in (-n, n) */
        if (f < 0) {
            f += plan->n;
            w--;
        }
        delay = w < 0 ? 0 : w + (f > 0);
    }
    d->delay = (d->allowed || o->cost == 0) ? delay : 0; /* a peek reports the queue's wait */
}

#endif
