/* gcra.c: the leaky bucket as a meter (GCRA). One "theoretical arrival time"
 * per key; emission interval T = P/N = p/n ns, which is usually not a whole
 * number of ns, so tat is kept exactly as tat + frac/n with 0 <= frac < n.
 *   new = max(tat, now) + c*T;  allowed iff new - now <= B*T;  then tat = new.
 * Compared as (new - now) * n <= B * p in 128-bit: no rounding at all.
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
        s->tat = plan->params.origin + plan->full / plan->n;
        s->frac = plan->full % plan->n;
    } else {
        s->tat = now;
        s->frac = 0;
    }
}

/* (tat - now) * n + frac: how far ahead of schedule, in units of 1/n ns. */
static sl__i128 ahead(const sl__plan *plan, int64_t tat, int64_t frac, int64_t now) {
    return (sl__i128)(tat - now) * plan->n + frac;
}

/* The step of a plain state (any-rate states are rebased first). */
static void step(const sl__plan *plan, sl__gcra_state *s, int64_t cost, int64_t now, sl__mode mode,
                 sl__outcome *o) {
    const int64_t n = plan->n;
    /* base = max(tat, now) */
    int64_t bt = s->tat, bf = s->frac;
    if (ahead(plan, bt, bf, now) <= 0) {
        bt = now;
        bf = 0;
    }
    int64_t delay = bt - now + (bf > 0); /* rounded up: never released early */
    /* new = base + cost * p / n; cost * p <= burst * p <= 2^61 fits 64 bits */
    int64_t step = cost * plan->p;
    int64_t nt = bt + (cost == 1 ? plan->t_whole : step / n);
    int64_t nf = bf + (cost == 1 ? plan->t_frac : step % n);
    if (nf >= n) {
        nf -= n;
        nt++;
    }
    bool allowed = ahead(plan, nt, nf, now) <= plan->full;
    bool charge = allowed || plan->count_rejected || mode == SL__CHARGE;
    int64_t at = bt, af = bf; /* state after this call */
    if (charge) {
        if (allowed) {
            at = nt;
            af = nf;
        } else { /* a counted rejection empties the bucket, no debt: tat = now + B*T */
            at = now + plan->full / n;
            af = plan->full % n;
            if (ahead(plan, at, af, now) < ahead(plan, bt, bf, now)) { /* never a credit */
                at = bt;
                af = bf;
            }
        }
    }
    if (mode != SL__PEEK) {
        s->tat = at;
        s->frac = af;
    }
    o->allowed = allowed;
    o->cost = cost;
    o->now = now;
    o->a = step;
    o->b = delay;
    o->x = ahead(plan, at, af, now); /* >= 0 */
}

void sl__gcra_answer(const sl__plan *plan, const sl__outcome *o, sl_decision *d) {
    const int64_t n = plan->n;
    sl__i128 used = o->x;
    d->allowed = o->allowed;
    d->limit = plan->burst;
    d->remaining = used >= plan->full ? 0 : (plan->full - (int64_t)used) / plan->p;
    d->reset_after = sl__ceil_div128(used, n);
    if (o->allowed) {
        d->retry_after = 0;
    } else {
        /* passes once (at - t) * n + af + cost * p <= B * p */
        sl__i128 need = used + o->a - plan->full;
        d->retry_after = need > 0 ? sl__ceil_div128(need, n) : 0;
    }
    d->delay = 0;
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

void sl__gcra_step(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                   sl__outcome *o) {
    if (!plan->any_rate) {
        step(plan, state, cost, now, mode, o);
        return;
    }
    sl__gcra_any_state *s = state;
    sl__gcra_state g = rebase(plan, s);
    step(plan, &g, cost, now, mode, o);
    if (mode != SL__PEEK) {
        s->g = g;
        s->n = plan->n;
    }
}

void sl__gcra_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                     sl_decision *d) {
    sl__outcome o;
    sl__gcra_step(plan, state, cost, now, mode, &o);
    sl__gcra_answer(plan, &o, d);
}

bool sl__gcra_fresh(const sl__plan *plan, const void *state, int64_t now) {
    const sl__gcra_state *s = state;
    if (plan->any_rate) return s->tat < now || (s->tat == now && s->frac == 0);
    return ahead(plan, s->tat, s->frac, now) <= 0;
}
