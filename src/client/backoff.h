/* backoff.h: how long a polite client waits before it tries again (seed
 * section 09): the server's Retry-After hint plus a uniform random extra of
 * up to the hint again, or, without a hint, exponential backoff with full
 * jitter. Pure integer arithmetic in nanoseconds; randomness comes from a
 * seedable PRNG so tests can replay every draw. */
#ifndef SLUICE_CLIENT_BACKOFF_H
#define SLUICE_CLIENT_BACKOFF_H

#include <stdint.h>

#include "client/prng.h"

typedef struct sl__backoff {
    int64_t base;         /* ns, > 0: the bound after the first attempt */
    int64_t factor_milli; /* >= 1000: growth per attempt, in thousandths */
    int64_t max_wait;     /* ns, > 0: cap of the bound and of every wait */
} sl__backoff;

/* The backoff bound after `attempt` (1-based) answers:
 * min(max_wait, base * (factor/1000)^(attempt-1)), each step rounded down,
 * without overflow. Defaults give 400 ms, 800 ms, 1.6 s, ... 10 s. */
int64_t sl__backoff_bound(const sl__backoff *b, int attempt);

/* The wait after `attempt` was answered 429/503. hint > 0 (a Retry-After
 * delay, <= max_wait): hint + U[0, hint), clamped to max_wait. Otherwise
 * full jitter: U[0, bound). */
int64_t sl__retry_wait(const sl__backoff *b, int attempt, int64_t hint, sl__prng *r);

#endif
