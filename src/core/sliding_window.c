/* sliding_window.c: the sliding window counter. Two counts per key, the
 * previous fixed window's and the current one's; the last P is estimated as
 * prev * (P - elapsed) / P + curr. The comparison estimate + c <= N is done
 * exactly by cross-multiplying, never by rounding the estimate: in 64 bits
 * when the products fit (any limit up to 2^61 / P), 128-bit otherwise.
 * If the clock steps back into an earlier window, the stored window is used
 * with elapsed = 0 (the previous window weighs fully): never a credit.
 * Memory: 16 bytes per key for limits below 2^32, else 24 (sliding_window.h). */
#include "core/sliding_window.h"

void sl__sliding_window_init(const sl__plan *plan, void *state, int64_t now) {
    sl__sw_state v = {0, 0, 0};
    if (plan->start_empty) {
        v.window = sl__floor_div(plan->params.origin, plan->period);
        v.curr = plan->limit;
    } else {
        v.window = sl__floor_div(now, plan->period);
    }
    sl__sw_save(plan, state, &v);
}

void sl__sliding_window_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                             sl__mode mode, sl__outcome *o) {
    sl__sliding_window_step_inline(plan, state, cost, now, mode, o);
}

void sl__sliding_window_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    sl__sliding_window_answer_inline(plan, o, d);
}

void sl__sliding_window_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                               sl__mode mode, sl_decision *d) {
    sl__outcome o;
    sl__sliding_window_step(plan, state, cost, now, mode, &o);
    sl__sliding_window_answer(plan, &o, d);
}

bool sl__sliding_window_fresh(const sl__plan *plan, const void *state, int64_t now) {
    sl__sw_state v;
    sl__sw_load(plan, state, &v);
    int64_t elapsed;
    int64_t w = sl__window_at(v.window, plan->period, now, &elapsed);
    int64_t prev, curr;
    sl__sw_roll(&v, w, &prev, &curr);
    return prev == 0 && curr == 0;
}
