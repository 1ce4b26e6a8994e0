/* ramp.c: ramp-up after recovery (sluice/ramp.h): the factor as a function
 * of the start and the time, the unit parameters a ramped limit keeps its
 * state under, and the charge and the reported decision at a factor. Pure
 * integer arithmetic, 128-bit where a product may not fit. */
#include "sluice/ramp.h"

#include "core/algorithm.h"
#include "sluice/error.h"

int sl_ramp_validate(const sl_ramp *r) {
    if (!r || r->duration < 1 || r->duration > SL_RAMP_DURATION_MAX || r->from < 1 ||
        r->from > SL_RAMP_ONE)
        return SL_EINVAL;
    return SL_OK;
}

int64_t sl_ramp_factor(const sl_ramp *r, int64_t start, int64_t now) {
    if (now < start) return r->from;
    if (now - start >= r->duration) return SL_RAMP_ONE;
    sl__i128 gained = (sl__i128)(SL_RAMP_ONE - r->from) * (now - start);
    return r->from + (int64_t)(gained / r->duration);
}

int sl_ramp_params(const sl_params *p, sl_params *out) {
    if (!p || !out) return SL_EINVAL;
    if (p->algorithm == SL_SLIDING_LOG) return SL_EALGORITHM;
    int rc = sl_params_validate(p);
    if (rc != SL_OK) return rc;
    sl_params u = *p;
    if (u.rate.limit > INT64_MAX / SL_RAMP_UNIT || u.burst > INT64_MAX / SL_RAMP_UNIT)
        return SL_EOVERFLOW;
    u.rate.limit *= SL_RAMP_UNIT;
    u.burst *= SL_RAMP_UNIT;
    u.delay_after *= SL_RAMP_UNIT; /* < burst, so it fits */
    rc = sl_params_validate(&u);
    if (rc != SL_OK) return rc;
    *out = u;
    return SL_OK;
}

int64_t sl_ramp_cost(const sl_params *unit, int64_t cost, int64_t factor, int64_t cap) {
    if (cost <= 0) return 0;
    if (factor < 1) factor = 1;
    if (factor > SL_RAMP_ONE) factor = SL_RAMP_ONE;
    if (cost > INT64_MAX / SL_RAMP_UNIT) return INT64_MAX;
    int64_t plain = cost * SL_RAMP_UNIT, size = sl_params_limit(unit);
    if (plain > size) return plain; /* never passes, ramp or not */
    /* floor: still at least plain (ONE / factor >= 1), and a factor of 0.55
       lets 55 of 100 through where ceil's 1819 units would let 54 */
    int64_t charge = sl__div128((sl__i128)plain * SL_RAMP_ONE, factor);
    if (cap > 0 && plain <= cap && cap < size) size = cap; /* still >= plain */
    return charge < size ? charge : size;
}

int64_t sl_ramp_limit(const sl_params *unit, int64_t factor) {
    int64_t one = sl_ramp_cost(unit, 1, factor, 0);
    int64_t n = sl_params_limit(unit) / (one > 0 ? one : 1);
    return n > 0 ? n : 1;
}

void sl_ramp_decision(const sl_params *unit, int64_t factor, int64_t cap, sl_decision *d) {
    int64_t one = sl_ramp_cost(unit, 1, factor, cap); /* >= SL_RAMP_UNIT */
    if (one < 1) one = 1;
    /* the table's own size (a local fallback's share), else the limit's: one
       division less than sl_ramp_limit */
    int64_t size = d->limit > 0 ? d->limit : sl_params_limit(unit);
    int64_t limit = size / one;
    if (limit < 1) limit = 1;
    int64_t remaining = d->remaining > 0 ? d->remaining / one : 0;
    d->limit = limit;
    d->remaining = remaining < limit ? remaining : limit;
}
