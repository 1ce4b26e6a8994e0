/* retry_stage.h: the engine's entry point for a decision with a policy's
 * retry budget in front (docs/protection.md "Retry budget"), the same for
 * /v1/check, /v1/auth and SL.CHECK, and what the protocols read of a
 * budget: its answer (sl__retry_stage.call: d, from), its counters
 * (sl__retry_limit_counts) and types (sl__retry_limit, sl__retry_call:
 * store/retry.h, which only the policy layer includes; docs/ARCHITECTURE.md).
 *
 * The decider's store counts a first attempt or decides a retry of
 * (policy, key) (its `retry` operation); when it allows, the engine decides
 * the call (sl__engine_decide); when it refuses, the protocol's `refused`
 * writes its answer (and frees the call). If the budget answers after the
 * handler's frame is gone (the Redis store), the call is detached first
 * (decide.h: its labels made, its policy set held, so the budget's policy
 * lives too). A stage is embedded in the call's user bytes. */
#ifndef SLUICE_POLICY_RETRY_STAGE_H
#define SLUICE_POLICY_RETRY_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/decide.h"
#include "store/retry.h"

typedef struct sl__retry_stage sl__retry_stage;

struct sl__retry_stage {
    sl__retry_call call; /* out: the budget's answer (d, from) */
    sl__decide_call *decide;
    sl__decider *decider; /* the worker's: outlives its calls */
    int64_t now;
    bool *ran; /* the starter's flag while sl__engine_decide_retry runs */
    /* writes the refusal of a retry (st->call.d) and frees st->decide */
    void (*refused)(sl__retry_stage *st);
    void *arg; /* the protocol's */
};

/* Decides `decide` on decider at now with the budget of `limit` in front
 * for key (the call's copy: lives as long as decide; retry: the request is
 * marked a retry): the decision (decide's done) or `refused`, each exactly
 * once, maybe before this returns. limit NULL: sl__engine_decide alone (st,
 * refused and arg unused). */
void sl__engine_decide_retry(sl__retry_stage *st, sl__retry_limit *limit, const char *key,
                             size_t keylen, bool retry, sl__decide_call *decide,
                             sl__decider *decider, int64_t now,
                             void (*refused)(sl__retry_stage *st), void *arg);

/* What a budget counted (/metrics, /v1/stats): first attempts, retries
 * allowed and refused, and the retries each fail mode decided (by
 * sl__store_from). A snapshot of relaxed atomic loads. */
typedef struct sl__retry_counts {
    uint64_t firsts, allowed, refused;
    uint64_t from[SL__FROM_COUNT];
} sl__retry_counts;

sl__retry_counts sl__retry_limit_counts(const sl__retry_limit *limit);

#endif
