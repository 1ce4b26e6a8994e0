/* retry_stage.c: the retry budget in front of a decision (retry_stage.h). */
#include "server/retry_stage.h"

static void stage_done(sl__retry_call *rc) {
    sl__retry_stage *st = rc->arg;
    if (st->ran) *st->ran = true;
    sl__retry_count(rc);
    if (rc->d.allowed)
        sl__engine_decide(st->decider, st->decide, st->now);
    else
        st->refused(st); /* frees the call, and st with it */
}

void sl__retry_stage_start(sl__retry_stage *st, sl__retry_limit *limit, const char *key,
                           size_t keylen, bool retry, sl__decide_call *decide, sl__decider *decider,
                           int64_t now, void (*refused)(sl__retry_stage *st), void *arg) {
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
