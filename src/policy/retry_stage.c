/* retry_stage.c: the retry budget in front of a decision, through the
 * decider's store (retry_stage.h). */
#include "policy/retry_stage.h"

static void stage_done(sl__retry_call *rc) {
    sl__retry_stage *st = rc->arg;
    if (st->ran) *st->ran = true;
    sl__retry_count(rc);
    if (rc->d.allowed)
        sl__engine_decide(st->decider, st->decide, st->now);
    else
        st->refused(st); /* frees the call, and st with it */
}

void sl__engine_decide_retry(sl__retry_stage *st, sl__retry_limit *limit, const char *key,
                             size_t keylen, bool retry, sl__decide_call *decide,
                             sl__decider *decider, int64_t now,
                             void (*refused)(sl__retry_stage *st), void *arg) {
    if (!limit) {
        sl__engine_decide(decider, decide, now);
        return;
    }
    bool ran = false;
    *st = (sl__retry_stage){.call = {.limit = limit,
                                     .key = key,
                                     .keylen = keylen,
                                     .retry = retry,
                                     .now = now,
                                     .done = stage_done},
                            .decide = decide,
                            .decider = decider,
                            .now = now,
                            .ran = &ran,
                            .refused = refused,
                            .arg = arg};
    st->call.arg = st;
    sl__store_retry(sl__decider_store(decider), &st->call);
    if (ran) return; /* st may be gone */
    st->ran = NULL;
    sl__decide_call_detach(decide); /* the budget answers later */
}

sl__retry_counts sl__retry_limit_counts(const sl__retry_limit *limit) {
    const sl__retry_limit *l = limit;
    sl__retry_counts c = {.firsts = atomic_load_explicit(&l->firsts, memory_order_relaxed),
                          .allowed = atomic_load_explicit(&l->allowed, memory_order_relaxed),
                          .refused = atomic_load_explicit(&l->refused, memory_order_relaxed)};
    for (int k = 0; k < SL__FROM_COUNT; k++)
        c.from[k] = atomic_load_explicit(&l->from[k], memory_order_relaxed);
    return c;
}
