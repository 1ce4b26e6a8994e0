/* token_bucket.c: rate r = n/p tokens per ns, size B, starts full. Tokens
 * are kept scaled by p (one token = p units), so refill is the exact integer
 * (now - last) * n and the full bucket is B * p <= 2^61. The clock going back
 * gives elapsed 0: nothing is credited twice. */
#include "core/algorithm.h"

typedef struct tb_state {
    int64_t tokens; /* scaled by p */
    int64_t last;   /* time tokens was computed for */
} tb_state;

void sl__token_bucket_init(const sl__plan *plan, void *state, int64_t now) {
    tb_state *s = state;
    if (plan->start_empty) {
        s->tokens = 0;
        s->last = plan->params.origin;
    } else {
        s->tokens = plan->full;
        s->last = now;
    }
}

/* Tokens at now (scaled), exact, capped at full. */
static int64_t refill(const sl__plan *plan, const tb_state *s, int64_t now) {
    if (now <= s->last || s->tokens >= plan->full) return s->tokens;
    sl__i128 t = (sl__i128)s->tokens + (sl__i128)(now - s->last) * plan->n;
    return t >= plan->full ? plan->full : (int64_t)t;
}

void sl__token_bucket_step(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                           sl__mode mode, sl__outcome *o) {
    tb_state *s = state;
    int64_t tokens = refill(plan, s, now);
    int64_t need = cost * plan->p; /* <= B * p <= 2^61 */
    bool allowed = tokens >= need;
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t after = charge ? sl__max64(0, tokens - need) : tokens; /* never into debt */
    if (mode != SL__PEEK) {
        s->tokens = after;
        s->last = sl__max64(s->last, now);
    }
    o->allowed = allowed;
    o->a = after;
    o->b = need;
    /* With the clock behind `last`, the bucket is judged as of `last`, so
     * durations count from there. */
    o->c = s->last > now ? s->last - now : 0;
}

void sl__token_bucket_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    int64_t after = o->a, need = o->b, behind = o->c;
    d->allowed = o->allowed;
    d->limit = plan->burst;
    d->remaining = after / plan->p;
    d->retry_after = o->allowed ? 0 : behind + sl__ceil_div128(need - after, plan->n);
    d->reset_after =
        after >= plan->full ? 0 : behind + sl__ceil_div128(plan->full - after, plan->n);
    d->delay = 0;
}

void sl__token_bucket_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now,
                             sl__mode mode, sl_decision *d) {
    sl__outcome o;
    sl__token_bucket_step(plan, state, cost, now, mode, &o);
    sl__token_bucket_answer(plan, &o, d);
}

bool sl__token_bucket_fresh(const sl__plan *plan, const void *state, int64_t now) {
    return refill(plan, state, now) >= plan->full;
}
