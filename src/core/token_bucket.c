/* token_bucket.c: rate r = n/p tokens per ns, size B, starts full. Tokens
 * are kept scaled by p (one token = p units), so refill is the exact integer
 * (now - last) * n and the full bucket is B * p <= 2^61. The clock going back
 * gives elapsed 0: nothing is credited twice.
 *
 * Step refill (SL_STEP_REFILL): N = n g tokens arrive at once at every
 * multiple of the period P = p g. With step(t) = t - t mod P, the elapsed
 * time credited is step(now) - step(last) (a whole number of periods, each
 * worth P n = N p units: N tokens), so the same integer formula holds. A
 * refused request of need units with `after` in the bucket waits for
 * k = ceil((need - after) / (P n)) steps: until step(t) + k P; the bucket is
 * full after ceil((full - after) / (P n)) steps. */
#include "core/token_bucket.h"

void sl__token_bucket_init(const sl__plan *plan, void *state, int64_t now) {
    sl__tb_state *s = state;
    if (plan->start_empty) {
        s->tokens = 0;
        s->last = plan->params.origin;
    } else {
        s->tokens = plan->full;
        s->last = now;
    }
}

static bool steps(const sl__plan *plan) {
    return (plan->params.flags & SL_STEP_REFILL) != 0;
}

/* The last step at or before t (t >= 0). */
static int64_t step_of(const sl__plan *plan, int64_t t) {
    return t - t % plan->period;
}

/* The same in steps: only whole periods between step(last) and step(now). */
static int64_t refill_steps(const sl__plan *plan, const sl__tb_state *s, int64_t now) {
    if (now <= s->last || s->tokens >= plan->full) return s->tokens;
    int64_t elapsed = step_of(plan, now) - step_of(plan, s->last);
    sl__i128 t = (sl__i128)s->tokens + (sl__i128)elapsed * plan->n;
    return t >= plan->full ? plan->full : (int64_t)t;
}

void sl__token_bucket_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                           sl__mode mode, sl__outcome *o) {
    sl__token_bucket_step_inline(plan, state, cost, now, mode, o);
}

void sl__token_bucket_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    sl__token_bucket_answer_inline(plan, o, d);
}

/* Time from t until `units` more scaled units have arrived in steps
 * (units > 0): k = ceil(units / (P n)) steps after step(t). */
static int64_t wait_steps(const sl__plan *plan, int64_t units, int64_t t) {
    sl__i128 per = (sl__i128)plan->period * plan->n; /* one step's units */
    int64_t k = per >= units ? 1 : sl__ceil_div128(units, (int64_t)per);
    return step_of(plan, t) + k * plan->period - t;
}

void sl__token_bucket_steps_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                                 sl__mode mode, sl__outcome *o) {
    sl__tb_state *s = state;
    sl__tb_take(plan, s, refill_steps(plan, s, now), cost, now, mode, o);
    o->x = now + o->c; /* the time the bucket is judged at: steps count from it */
}

void sl__token_bucket_steps_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    int64_t after = o->a, need = o->b, behind = o->c, at = (int64_t)o->x;
    d->allowed = o->allowed;
    d->limit = plan->burst;
    d->remaining = after / plan->p;
    d->retry_after = o->allowed ? 0 : behind + wait_steps(plan, need - after, at);
    d->reset_after = after >= plan->full ? 0 : behind + wait_steps(plan, plan->full - after, at);
    d->delay = 0;
}

void sl__token_bucket_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                             sl__mode mode, sl_decision *d) {
    sl__outcome o;
    if (steps(plan)) {
        sl__token_bucket_steps_step(plan, state, cost, now, mode, &o);
        sl__token_bucket_steps_answer(plan, &o, d);
        return;
    }
    sl__token_bucket_step(plan, state, cost, now, mode, &o);
    sl__token_bucket_answer(plan, &o, d);
}

bool sl__token_bucket_fresh(const sl__plan *plan, const void *state, int64_t now) {
    return (steps(plan) ? refill_steps(plan, state, now) : sl__tb_refill(plan, state, now)) >=
           plan->full;
}
