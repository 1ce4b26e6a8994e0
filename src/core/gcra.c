/* gcra.c: the leaky bucket as a meter (GCRA). One "theoretical arrival time"
 * per key; emission interval T = P/N = p/n ns, which is usually not a whole
 * number of ns, so tat is kept exactly as tat + frac/n with 0 <= frac < n.
 *   new = max(tat, now) + c*T;  allowed iff new - now <= B*T;  then tat = new.
 * Every time is a pair (whole ns, frac/n ns), 0 <= frac < n, and pairs are
 * compared lexicographically (the order of w*n + f): new - now <= B*T is
 * (nt - now, nf) <= (f_whole, f_frac), with B*T's pair precomputed in the
 * plan. No rounding at all, no 128-bit product, and for a cost of 1 (c*T is
 * the plan's t_whole, t_frac) no division.
 * Same decisions as the token bucket with the same rate and burst.
 *
 * Any-rate plans (CL.THROTTLE: a key is judged with the parameters of each
 * call) keep the n that frac is counted in. A call with another n first
 * moves frac to its own n, rounded up (at most 1/n ns later: never a
 * credit); with the same n from call to call nothing is rounded. Whether a
 * state is fresh (tat + frac/n <= now) does not depend on n. */
#include "core/gcra.h"
#include "core/algorithm.h"

void sl__gcra_init(const sl__plan *plan, void *state, int64_t now) {
    sl__gcra_state *s = state;
    if (plan->any_rate) ((sl__gcra_any_state *)state)->n = plan->n;
    if (plan->start_empty) { /* exhausted at origin: tat = origin + B*T */
        s->tat = plan->params.origin + plan->f_whole;
        s->frac = plan->f_frac;
    } else {
        s->tat = now;
        s->frac = 0;
    }
}

/* An any-rate state moved to plan->n: the same time, rounded up to 1/n ns. */
static sl__gcra_state rebase(const sl__plan *plan, const sl__gcra_any_state *s) {
    sl__gcra_state g = s->g;
    if (s->n != plan->n && g.frac > 0) {
        /* ceil(frac * n' / n) <= n' because frac < n */
        g.frac = sl__ceil_div128((sl__i128)g.frac * plan->n, s->n);
        if (g.frac >= plan->n) {
            g.frac -= plan->n;
            g.tat++;
        }
    }
    return g;
}

/* Out of line, so that the plain step stays a leaf without saved registers. */
static __attribute__((noinline)) void any_rate_step(const sl__plan *plan, sl__gcra_any_state *s,
                                                    int64_t cost, int64_t now, sl__mode mode,
                                                    sl__outcome *o) {
    sl__gcra_state g = rebase(plan, s);
    sl__gcra_plain_step(plan, &g, cost, now, mode, o);
    if (mode != SL__PEEK) {
        s->g = g;
        s->n = plan->n;
    }
}

void sl__gcra_step(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                   sl__outcome *o) {
    if (plan->any_rate)
        any_rate_step(plan, state, cost, now, mode, o);
    else
        sl__gcra_plain_step(plan, state, cost, now, mode, o);
}

void sl__gcra_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    sl__gcra_plain_answer(plan, o, d);
}

void sl__gcra_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                     sl_decision *d) {
    sl__outcome o;
    sl__gcra_step(plan, state, cost, now, mode, &o);
    sl__gcra_answer(plan, &o, d);
}

bool sl__gcra_fresh(const sl__plan *plan, const void *state, int64_t now) {
    (void)plan; /* tat + frac/n <= now, whatever n the frac is counted in */
    const sl__gcra_state *s = state;
    return s->tat < now || (s->tat == now && s->frac == 0);
}
