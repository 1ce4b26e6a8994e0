/* algorithm.c: dispatch from a plan to the algorithm module it names. */
#include "core/algorithm.h"

void sl__state_init(const sl__plan *plan, void *state, int64_t now) {
    switch (plan->params.algorithm) {
    case SL_FIXED_WINDOW:
        sl__fixed_window_init(plan, state, now);
        break;
    case SL_SLIDING_LOG:
        sl__sliding_log_init(plan, state, now);
        break;
    case SL_SLIDING_WINDOW:
        sl__sliding_window_init(plan, state, now);
        break;
    case SL_TOKEN_BUCKET:
        sl__token_bucket_init(plan, state, now);
        break;
    case SL_GCRA:
        sl__gcra_init(plan, state, now);
        break;
    case SL_LEAKY_QUEUE:
        sl__leaky_queue_init(plan, state, now);
        break;
    }
}

void sl__decide(const sl__plan *plan, void *state, int64_t cost, int64_t now, sl__mode mode,
                sl_decision *d) {
    if (cost == 0) {
        /* A peek: always allowed, nothing recorded (even when the state is
         * "over full", which a start-empty key sees before its origin). */
        mode = SL__PEEK;
    }
    switch (plan->params.algorithm) {
    case SL_FIXED_WINDOW:
        sl__fixed_window_decide(plan, state, cost, now, mode, d);
        break;
    case SL_SLIDING_LOG:
        sl__sliding_log_decide(plan, state, cost, now, mode, d);
        break;
    case SL_SLIDING_WINDOW:
        sl__sliding_window_decide(plan, state, cost, now, mode, d);
        break;
    case SL_TOKEN_BUCKET:
        sl__token_bucket_decide(plan, state, cost, now, mode, d);
        break;
    case SL_GCRA:
        sl__gcra_decide(plan, state, cost, now, mode, d);
        break;
    case SL_LEAKY_QUEUE:
        sl__leaky_queue_decide(plan, state, cost, now, mode, d);
        break;
    }
    if (cost == 0) {
        d->allowed = true;
        d->retry_after = 0;
    }
}

sl__fresh_fn *sl__fresh_of(sl_algorithm a) {
    switch (a) {
    case SL_FIXED_WINDOW:
        return sl__fixed_window_fresh;
    case SL_SLIDING_LOG:
        return sl__sliding_log_fresh;
    case SL_SLIDING_WINDOW:
        return sl__sliding_window_fresh;
    case SL_TOKEN_BUCKET:
        return sl__token_bucket_fresh;
    case SL_GCRA:
        return sl__gcra_fresh;
    case SL_LEAKY_QUEUE:
        return sl__leaky_queue_fresh;
    }
    return NULL;
}
