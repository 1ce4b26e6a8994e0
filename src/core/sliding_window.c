/* sliding_window.c: the sliding window counter. Two counts per key, the
 * previous fixed window's and the current one's; the last P is estimated as
 * prev * (P - elapsed) / P + curr. The comparison estimate + c <= N is done
 * exactly by cross-multiplying (128-bit), never by rounding the estimate.
 * If the clock steps back into an earlier window, the stored window is used
 * with elapsed = 0 (the previous window weighs fully): never a credit. */
#include "core/algorithm.h"

typedef struct sw_state {
    int64_t window;
    int64_t prev;
    int64_t curr;
} sw_state;

void sl__sliding_window_init(const sl__plan *plan, void *state, int64_t now) {
    sw_state *s = state;
    s->prev = 0;
    if (plan->start_empty) {
        s->window = sl__floor_div(plan->params.origin, plan->period);
        s->curr = plan->limit;
    } else {
        s->window = sl__floor_div(now, plan->period);
        s->curr = 0;
    }
}

/* The counts as seen from window w (w >= s->window). */
static void roll(const sw_state *s, int64_t w, int64_t *prev, int64_t *curr) {
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

void sl__sliding_window_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                             sl__mode mode, sl__outcome *o) {
    sw_state *s = state;
    const int64_t N = plan->limit, P = plan->period;
    int64_t w = sl__floor_div(now, P);
    int64_t elapsed = now - w * P;
    if (w < s->window) { /* clock went back */
        w = s->window;
        elapsed = 0;
    }
    int64_t prev, curr;
    roll(s, w, &prev, &curr);

    /* estimate * P, exactly */
    sl__i128 weighted = (sl__i128)prev * (P - elapsed);
    bool allowed = weighted + (sl__i128)(curr + cost) * P <= (sl__i128)N * P;
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t after = charge ? sl__min64(curr + cost, N) : curr; /* never overfills */
    if (mode != SL__PEEK) {
        s->window = w;
        s->prev = prev;
        s->curr = after;
    }
    o->allowed = allowed;
    o->cost = cost;
    o->now = now;
    o->a = w;
    o->b = after;
    o->c = prev;
    o->x = weighted;
}

void sl__sliding_window_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    const int64_t N = plan->limit, P = plan->period;
    int64_t w = o->a, after = o->b, prev = o->c, cost = o->cost, now = o->now;
    sl__i128 weighted = o->x;
    int64_t to_end = (w + 1) * P - now; /* in (0, P], or more if the clock went back */
    sl__i128 room = (sl__i128)N * P - weighted - (sl__i128)after * P;
    d->allowed = o->allowed;
    d->limit = N;
    d->remaining = room > 0 ? sl__div128(room, P) : 0;
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
        int64_t e = P - sl__div128((sl__i128)(N - after - cost) * P, prev);
        d->retry_after = (e < P ? w * P + e : (w + 1) * P) - now;
    } else {
        /* Not in this window. In the next one prev' = after, curr' = 0:
         * passes once after * (P - e) <= (N - cost) * P. */
        int64_t e = sl__max64(0, P - sl__div128((sl__i128)(N - cost) * P, after));
        d->retry_after = to_end > INT64_MAX - e ? INT64_MAX : to_end + e; /* as to_next */
    }
}

void sl__sliding_window_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                               sl__mode mode, sl_decision *d) {
    sl__outcome o;
    sl__sliding_window_step(plan, state, cost, now, mode, &o);
    sl__sliding_window_answer(plan, &o, d);
}

bool sl__sliding_window_fresh(const sl__plan *plan, const void *state, int64_t now) {
    const sw_state *s = state;
    int64_t w = sl__floor_div(now, plan->period);
    if (w < s->window) w = s->window;
    int64_t prev, curr;
    roll(s, w, &prev, &curr);
    return prev == 0 && curr == 0;
}
