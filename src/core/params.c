/* params.c: validating sl_params and compiling them into an sl__plan (the
 * reduced fraction, the scaled sizes, the state size). Also the algorithm
 * names, which are part of the product surface (config files, CLI). */
#include <stdlib.h>
#include <string.h>

#include "core/algorithm.h"
#include "core/sliding_window.h"
#include "sluice/error.h"

/* 100 years: long enough for any quota, short enough that now + period and
 * burst * interval stay far from int64 overflow. */
#define SL__MAX_PERIOD (INT64_C(100) * 366 * 86400 * SL_NS_PER_SEC)
#define SL__MAX_COUNT  (INT64_C(1) << 61)
#define SL__MAX_SCALED (INT64_C(1) << 61)

static const char *const algorithm_names[] = {
    [SL_FIXED_WINDOW] = "fixed_window",
    [SL_SLIDING_LOG] = "sliding_log",
    [SL_SLIDING_WINDOW] = "sliding_window",
    [SL_TOKEN_BUCKET] = "token_bucket",
    [SL_GCRA] = "gcra",
    [SL_LEAKY_QUEUE] = "leaky_queue",
};

const char *sl_algorithm_name(sl_algorithm a) {
    if (a < SL_FIXED_WINDOW || a > SL_LEAKY_QUEUE) return NULL;
    return algorithm_names[a];
}

int sl_algorithm_parse(const char *name, sl_algorithm *out) {
    if (!name) return SL_EALGORITHM;
    for (int a = SL_FIXED_WINDOW; a <= SL_LEAKY_QUEUE; a++) {
        if (strcmp(name, algorithm_names[a]) == 0) {
            *out = (sl_algorithm)a;
            return SL_OK;
        }
    }
    return SL_EALGORITHM;
}

bool sl_algorithm_is_bucket(sl_algorithm a) {
    return a == SL_TOKEN_BUCKET || a == SL_GCRA || a == SL_LEAKY_QUEUE;
}

int64_t sl_params_limit(const sl_params *p) {
    return sl_algorithm_is_bucket(p->algorithm) ? p->burst : p->rate.limit;
}

int sl__plan_init(sl__plan *plan, const sl_params *params) {
    if (!params || !plan) return SL_EINVAL;
    const sl_params *p = params;
    if (!sl_algorithm_name(p->algorithm)) return SL_EALGORITHM;
    if (p->rate.limit <= 0 || p->rate.period <= 0) return SL_ERATE;
    if (p->rate.period > SL__MAX_PERIOD || p->rate.limit > SL__MAX_COUNT) return SL_EOVERFLOW;
    if (p->flags & ~(SL_START_EMPTY | SL_COUNT_REJECTED | SL_STEP_REFILL)) return SL_EINVAL;
    if ((p->flags & SL_STEP_REFILL) && p->algorithm != SL_TOKEN_BUCKET) return SL_EINVAL;
    if (p->origin > SL_TIME_MAX || p->origin < 0) return SL_EINVAL;
    if (p->delay_after != 0 &&
        (p->algorithm != SL_LEAKY_QUEUE || p->delay_after < 0 || p->delay_after >= p->burst))
        return SL_EINVAL;

    memset(plan, 0, sizeof *plan);
    plan->params = *p;
    plan->limit = p->rate.limit;
    plan->period = p->rate.period;
    int64_t g = sl__gcd64(p->rate.limit, p->rate.period);
    plan->n = p->rate.limit / g;
    plan->p = p->rate.period / g;
    plan->start_empty = (p->flags & SL_START_EMPTY) != 0;
    plan->count_rejected = (p->flags & SL_COUNT_REJECTED) != 0;

    if (sl_algorithm_is_bucket(p->algorithm)) {
        if (p->burst <= 0) return SL_EBURST;
        if (p->burst > SL__MAX_SCALED / plan->p) return SL_EOVERFLOW;
        plan->burst = p->burst;
        plan->full = p->burst * plan->p;
        plan->t_whole = plan->p / plan->n;
        plan->t_frac = plan->p % plan->n;
        plan->f_whole = plan->full / plan->n;
        plan->f_frac = plan->full % plan->n;
        plan->r_whole = (plan->full - plan->p) / plan->n;
        plan->r_frac = (plan->full - plan->p) % plan->n;
        int64_t q = p->delay_after * plan->p; /* < burst * p */
        plan->q_whole = q / plan->n;
        plan->q_frac = q % plan->n;
        plan->p_inv = sl__recip(plan->p);
        plan->n_inv = sl__recip(plan->n);
        plan->max_cost = p->burst;
        plan->state_size = 16;
    } else {
        plan->burst = 0;
        plan->max_cost = p->rate.limit;
        switch (p->algorithm) {
        case SL_FIXED_WINDOW:
            plan->state_size = 16;
            break;
        case SL_SLIDING_WINDOW: /* the layouts: core/sliding_window.h */
            plan->state_size = p->rate.limit <= SL__SW_SMALL_MAX ? 16 : 24;
            plan->period_inv = sl__recip(plan->period);
            plan->w_full1 =
                plan->period - (int64_t)((sl__i128)(plan->limit - 1) * plan->period / plan->limit);
            break;
        default: /* SL_SLIDING_LOG */
            if (p->rate.limit > SL_SLIDING_LOG_MAX) return SL_EINVAL;
            plan->state_size = 16 + 8 * (size_t)p->rate.limit;
            break;
        }
    }

    if (plan->start_empty) {
        /* The moment from which a brand-new (exhausted-at-origin) state has
         * decayed back to fresh: before it, idle states must be kept. */
        _Alignas(16) unsigned char small[32];
        void *st = small;
        unsigned char *big = NULL;
        if (plan->state_size > sizeof small) {
            big = malloc(plan->state_size);
            if (!big) return SL_ENOMEM;
            st = big;
        }
        sl__state_init(plan, st, p->origin);
        sl_decision d;
        sl__decide(plan, st, 0, p->origin, SL__PEEK, &d);
        /* saturating: origin + two periods may pass INT64_MAX (never a real time) */
        plan->empty_until =
            d.reset_after > INT64_MAX - p->origin ? INT64_MAX : p->origin + d.reset_after;
        free(big);
    }
    return SL_OK;
}

int sl__plan_any_rate(sl__plan *plan, const sl_params *params) {
    if (!params || params->algorithm != SL_GCRA || params->flags) return SL_EINVAL;
    int rc = sl__plan_init(plan, params);
    if (rc) return rc;
    plan->any_rate = true;
    plan->state_size = 24; /* tat, frac, and the n frac is counted in */
    return SL_OK;
}

int sl_params_validate(const sl_params *p) {
    sl__plan plan;
    return sl__plan_init(&plan, p);
}
