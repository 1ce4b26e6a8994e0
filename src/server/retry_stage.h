/* retry_stage.h: a policy's retry budget in front of a decision
 * (store/retry.h, docs/protection.md "Retry budget"), the same for
 * /v1/check, /v1/auth and SL.CHECK: the store's retry operation counts a
 * first attempt or decides a retry of (policy, key); when it allows, the
 * engine decides the call; when it refuses, the protocol's `refused` writes
 * its answer (and frees the call). If the budget answers after the
 * handler's frame is gone (the Redis store), the call is detached first
 * (decide.h: its labels made, its policy set held, so the budget's policy
 * lives too). Embedded in the call's user bytes. */
#ifndef SLUICE_SERVER_RETRY_STAGE_H
#define SLUICE_SERVER_RETRY_STAGE_H

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
    bool *ran; /* the starter's flag while sl__retry_stage_start runs */
    /* writes the refusal of a retry (st->call.d) and frees st->decide */
    void (*refused)(sl__retry_stage *st);
    void *arg; /* the protocol's */
};

/* Starts the budget of `limit` for key (the call's copy: lives as long as
 * decide) on decider's store; then the decision or `refused`, each exactly
 * once, maybe before this returns. */
void sl__retry_stage_start(sl__retry_stage *st, sl__retry_limit *limit, const char *key,
                           size_t keylen, bool retry, sl__decide_call *decide, sl__decider *decider,
                           int64_t now, void (*refused)(sl__retry_stage *st), void *arg);

#endif
