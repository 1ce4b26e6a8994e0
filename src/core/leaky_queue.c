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

void sl__leaky_queue_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                          sl__mode mode, sl__outcome *o) {
    const sl__gcra_state *s = state;
    /* the wait before this request, exactly, as a pair (before the step) */
    int64_t ww = s->tat - now, wf = s->frac;
    sl__gcra_plain_step(plan, state, cost, now, mode, o); /* never any-rate */
    o->f = ww;
    o->g = wf;
}

void sl__leaky_queue_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
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

void sl__leaky_queue_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                            sl__mode mode, sl_decision *d) {
    sl__outcome o;
    sl__leaky_queue_step(plan, state, cost, now, mode, &o);
    sl__leaky_queue_answer(plan, &o, d);
}

bool sl__leaky_queue_fresh(const sl__plan *plan, const void *state, int64_t now) {
    return sl__gcra_fresh(plan, state, now);
}
