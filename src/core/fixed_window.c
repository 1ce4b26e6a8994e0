/* fixed_window.c: at most N per window; windows are [k*P, (k+1)*P) of the
 * caller's clock (the Unix epoch with sl_now()). State: window index and
 * count. A clock that steps back into an earlier window keeps counting in
 * the stored (later) window, so it never resets a count early. The window
 * of now is found from the stored one by comparison (sl__window_at). */
#include "core/fixed_window.h"

void sl__fixed_window_init(const sl__plan *plan, void *state, int64_t now) {
    sl__fw_state *s = state;
    if (plan->start_empty) {
        s->window = sl__floor_div(plan->params.origin, plan->period);
        s->count = plan->limit;
    } else {
        s->window = sl__floor_div(now, plan->period);
        s->count = 0;
    }
}

void sl__fixed_window_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                           sl__mode mode, sl__outcome *o) {
    sl__fixed_window_step_inline(plan, state, cost, now, mode, o);
}

void sl__fixed_window_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    sl__fixed_window_answer_inline(plan, o, d);
}

void sl__fixed_window_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                             sl__mode mode, sl_decision *d) {
    sl__outcome o;
    sl__fixed_window_step(plan, state, cost, now, mode, &o);
    sl__fixed_window_answer(plan, &o, d);
}

bool sl__fixed_window_fresh(const sl__plan *plan, const void *state, int64_t now) {
    const sl__fw_state *s = state;
    return s->count == 0 || s->window < sl__floor_div(now, plan->period);
}
