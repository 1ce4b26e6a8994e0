/* leaky_queue.c: the leaky bucket as a queue. Acceptance is GCRA's; an
 * accepted request is released after max(tat, now) - now, so the output is
 * evenly spaced at the rate (5/s with room for 5: delays 0, 200, 400, 600,
 * 800 ms). Delays are rounded up to the next ns: never released early.
 * With delay_after D (nginx's delay=D) the delay is D emission intervals
 * shorter, at least 0: the first D waiting requests go at once. */
#include "core/leaky_queue.h"

void sl__leaky_queue_init(const sl__plan *plan, void *state, int64_t now) {
    sl__gcra_init(plan, state, now);
}

void sl__leaky_queue_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                          sl__mode mode, sl__outcome *o) {
    sl__leaky_queue_step_inline(plan, state, cost, now, mode, o);
}

void sl__leaky_queue_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    sl__leaky_queue_answer_inline(plan, o, d);
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
