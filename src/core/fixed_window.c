/* fixed_window.c: at most N per window; windows are [k*P, (k+1)*P) of the
 * caller's clock (the Unix epoch with sl_now()). State: window index and
 * count. A clock that steps back into an earlier window keeps counting in
 * the stored (later) window, so it never resets a count early. The window
 * of now is found from the stored one by comparison (sl__window_at). */
#include "core/algorithm.h"

typedef struct fw_state {
    int64_t window;
    int64_t count;
} fw_state;

void sl__fixed_window_init(const sl__plan *plan, void *state, int64_t now) {
    fw_state *s = state;
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
    fw_state *s = state;
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

void sl__fixed_window_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
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

void sl__fixed_window_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                             sl__mode mode, sl_decision *d) {
    sl__outcome o;
    sl__fixed_window_step(plan, state, cost, now, mode, &o);
    sl__fixed_window_answer(plan, &o, d);
}

bool sl__fixed_window_fresh(const sl__plan *plan, const void *state, int64_t now) {
    const fw_state *s = state;
    return s->count == 0 || s->window < sl__floor_div(now, plan->period);
}
