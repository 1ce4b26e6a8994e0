/* gcra.c: the leaky bucket as a meter (GCRA). One "theoretical arrival time"
 * per key; emission interval T = P/N = p/n ns, which is usually not a whole
 * number of ns, so tat is kept exactly as tat + frac/n with 0 <= frac < n.
 *   new = max(tat, now) + c*T;  allowed iff new - now <= B*T;  then tat = new.
 * Compared as (new - now) * n <= B * p in 128-bit: no rounding at all.
 * Same decisions as the token bucket with the same rate and burst. */
#include "core/gcra.h"
#include "core/algorithm.h"

void sl__gcra_init(const sl__plan *plan, void *state, int64_t now) {
    sl__gcra_state *s = state;
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

void sl__gcra_step(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                   sl_decision *d, int64_t *delay) {
    sl__gcra_state *s = state;
    const int64_t n = plan->n;
    /* base = max(tat, now) */
    int64_t bt = s->tat, bf = s->frac;
    if (ahead(plan, bt, bf, now) <= 0) {
        bt = now;
        bf = 0;
    }
    *delay = bt - now + (bf > 0); /* rounded up: never released early */
    /* new = base + cost * p / n; cost * p <= burst * p <= 2^61 fits 64 bits */
    int64_t step = cost * plan->p;
    int64_t nt = bt + step / n;
    int64_t nf = bf + step % n;
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
    sl__i128 used = ahead(plan, at, af, now); /* >= 0 */
    d->allowed = allowed;
    d->limit = plan->burst;
    d->remaining = used >= plan->full ? 0 : (plan->full - (int64_t)used) / plan->p;
    d->reset_after = sl__ceil_div128(used, n);
    if (allowed) {
        d->retry_after = 0;
    } else {
        /* passes once (at - t) * n + af + cost * p <= B * p */
        sl__i128 need = used + step - plan->full;
        d->retry_after = need > 0 ? sl__ceil_div128(need, n) : 0;
    }
    d->delay = 0;
}

void sl__gcra_decide(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                     sl_decision *d) {
    int64_t delay;
    sl__gcra_step(plan, state, cost, now, mode, d, &delay);
}

bool sl__gcra_fresh(const sl__plan *plan, const void *state, int64_t now) {
    const sl__gcra_state *s = state;
    return ahead(plan, s->tat, s->frac, now) <= 0;
}
