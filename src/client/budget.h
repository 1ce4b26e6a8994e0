/* budget.h: the retry budget ("Retries count too", seed section 11): retries
 * may add at most a share of the requests, so a struggling server is not
 * hit by a multiple of its normal traffic.
 *
 * It is a libsluice token bucket (sl_limiter) whose clock counts requests
 * instead of nanoseconds: each request sent advances the clock by one and so
 * earns ppm/10^6 of a retry, exactly; each retry takes one token; the bucket
 * holds at most `reserve` tokens and starts full. Over any stretch, retries
 * <= reserve + share * requests: the token bucket's b + r*t with t counted in
 * requests. */
#ifndef SLUICE_CLIENT_BUDGET_H
#define SLUICE_CLIENT_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/limiter.h"

typedef struct sl__budget {
    sl_limiter *bucket; /* NULL when the budget is off */
    int64_t requests;   /* the bucket's clock */
    bool earns;         /* false when ppm == 0: the reserve never refills */
} sl__budget;

/* ppm in 0..10^6, reserve in 1..10^9. off: every retry is allowed.
 * Returns 0, SL_EINVAL or SL_ENOMEM. */
int sl__budget_init(sl__budget *b, int64_t ppm, int64_t reserve, bool off);
void sl__budget_free(sl__budget *b);

/* One request was sent: earns its share of a retry. */
void sl__budget_request(sl__budget *b);

/* Takes one retry if the budget has one. */
bool sl__budget_take(sl__budget *b);

/* Whole retries available now (INT64_MAX when off). */
int64_t sl__budget_available(sl__budget *b);

#endif
