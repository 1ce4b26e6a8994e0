/* gcra.h (internal): the GCRA state and step, shared by gcra.c and
 * leaky_queue.c (the queue is GCRA acceptance plus a release delay). */
#ifndef SLUICE_CORE_GCRA_H
#define SLUICE_CORE_GCRA_H

#include "core/algorithm.h"

typedef struct sl__gcra_state {
    int64_t tat;  /* whole ns of the theoretical arrival time */
    int64_t frac; /* plus frac/n ns, 0 <= frac < n */
} sl__gcra_state;

/* The state of an any-rate plan (sl__plan.any_rate): frac is counted in
 * units of 1/n ns for the n of the plan that last wrote it. */
typedef struct sl__gcra_any_state {
    sl__gcra_state g;
    int64_t n;
} sl__gcra_any_state;

/* The GCRA's halves (core/algorithm.h, sl__outcome), inline here so that
 * the leaky queue's step and answer are one function each. The step leaves
 * in o->b max(tat, now) - now before this request, rounded up (the queue's
 * release delay for an accepted request); in (o->a, o->c) how far the state
 * is ahead of now after the call, as a pair; in (o->d, o->e) B*T - cost*T.
 * The maths: gcra.c's header comment. */

/* (aw, af) <= (bw, bf) for pairs with fractions in [0, n). */
static inline bool sl__pair_le(int64_t aw, int64_t af, int64_t bw, int64_t bf) {
    return aw < bw || (aw == bw && af <= bf);
}

/* The step of a plain state (any-rate states are rebased first; a leaky
 * queue's plan is never any-rate). */
static inline void sl__gcra_plain_step(const sl__plan *plan, sl__gcra_state *s, int64_t cost,
                                       int64_t now, sl__mode mode, sl__outcome *o) {
    const int64_t n = plan->n;
    /* base = max(tat, now): tat + frac/n <= now iff tat < now or (tat, frac) = (now, 0) */
    int64_t bt = s->tat, bf = s->frac;
    if (bt < now) {
        bt = now;
        bf = 0;
    }
    int64_t delay = bt - now + (bf > 0); /* rounded up: never released early */
    /* allowed iff (base - now) + c*T <= B*T, i.e. base - now <= B*T - c*T =
     * (rw, rf): no sum that could pass 2^63 (base - now may be 2^62 + B*T).
     * For a cost of 1 that room is the plan's (B-1)*T, without a division. */
    int64_t sw = plan->t_whole, sf = plan->t_frac, rw = plan->r_whole, rf = plan->r_frac;
    if (cost != 1) {
        int64_t units = cost * plan->p; /* c*T: cost * p <= burst * p <= 2^61 */
        sw = units / n;
        sf = units % n;
        rw = plan->f_whole - sw; /* >= 0: cost <= burst */
        rf = plan->f_frac - sf;
        if (rf < 0) {
            rf += n;
            rw--;
        }
    }
    bool allowed = sl__pair_le(bt - now, bf, rw, rf);
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t at = bt, af = bf; /* state after this call */
    if (charge) {
        if (allowed) { /* tat = base + c*T (<= now + B*T) */
            at = bt + sw;
            af = bf + sf;
            if (af >= n) {
                af -= n;
                at++;
            }
        } else if (sl__pair_le(bt - now, bf, plan->f_whole, plan->f_frac)) {
            /* a counted rejection empties the bucket, no debt: tat = now + B*T,
             * unless tat is already later (never a credit) */
            at = now + plan->f_whole;
            af = plan->f_frac;
        }
    }
    if (mode != SL__PEEK) {
        s->tat = at;
        s->frac = af;
    }
    o->allowed = allowed;
    o->cost = cost;
    o->now = now;
    o->a = at - now; /* how far ahead the state is after this call: (a, c) >= (0, 0) */
    o->c = af;
    o->b = delay;
    o->d = rw;
    o->e = rf;
}

static inline void sl__gcra_plain_answer(const sl__plan *plan, const sl__outcome *o,
                                         sl_decision *d) {
    const int64_t n = plan->n;
    const int64_t aw = o->a, af = o->c; /* used = aw * n + af, in 1/n ns */
    d->allowed = o->allowed;
    d->limit = plan->burst;
    /* remaining = floor((full - used) / p); full - used <= full fits 64 bits */
    d->remaining = 0;
    if (aw < plan->f_whole || (aw == plan->f_whole && af < plan->f_frac)) {
        int64_t left = (plan->f_whole - aw) * n + (plan->f_frac - af);
        d->remaining = sl__div_p(plan, left);
    }
    d->reset_after = aw + (af > 0); /* ceil(used / n) */
    d->retry_after = 0;
    if (!o->allowed) {
        /* passes once used - (B*T - c*T) <= 0: wait the ceiling of that, in ns */
        int64_t w = aw - o->d, f = af - o->e; /* f in (-n, n) */
        if (f < 0) {
            f += n;
            w--;
        }
        d->retry_after = w < 0 ? 0 : w + (f > 0);
    }
    d->delay = 0;
}

#endif
