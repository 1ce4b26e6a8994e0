/* leaky_queue.c: the leaky bucket as a queue. Acceptance is GCRA's; an
 * accepted request is released after max(tat, now) - now, so the output is
 * evenly spaced at the rate (5/s with room for 5: delays 0, 200, 400, 600,
 * 800 ms). Delays are rounded up to the next ns: never released early.
 * With delay_after D (nginx's delay=D) the delay is D emission intervals
 * shorter, at least 0: the first D waiting requests go at once. */
#include "core/gcra.h"

void sl__leaky_queue_init(const sl__plan *plan, void *state, int64_t now) {
    sl__gcra_init(plan, state, now);
}

void sl__leaky_queue_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                            sl__mode mode, sl_decision *d) {
    const sl__gcra_state *s = state;
    /* the wait before this request, exactly, in 1/n ns (before the step) */
    sl__i128 ahead = (sl__i128)(s->tat - now) * plan->n + s->frac;
    int64_t delay;
    sl__gcra_step(plan, state, cost, now, mode, d, &delay);
    int64_t after = plan->params.delay_after;
    if (after > 0) { /* the first `after` in the queue go at once: after * T less */
        sl__i128 w = ahead - (sl__i128)after * plan->p;
        delay = w > 0 ? sl__ceil_div128(w, plan->n) : 0;
    }
    d->delay = (d->allowed || cost == 0) ? delay : 0; /* a peek reports the queue's wait */
}

bool sl__leaky_queue_fresh(const sl__plan *plan, const void *state, int64_t now) {
    return sl__gcra_fresh(plan, state, now);
}
