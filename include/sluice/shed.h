/* sluice/shed.h: load shedding by priority. One capacity for a whole
 * server (decisions per second with a burst), shared by every request
 * whatever its client, so that when it runs out the lowest priority is
 * refused first and a share stays reserved for the most important traffic:
 * a rate limit protects you from one client, a shedder protects the backend
 * from all of them together (Stripe's "load shedder" layer).
 *
 * The capacity is a token bucket of `burst` tokens refilling at `rate`. A
 * request of priority p and cost c is admitted iff, after taking c, at least
 * floor(p) tokens remain:
 *
 *     admitted  <=>  tokens(now) - c >= floor(p)
 *     floor(SL_PRIORITY_CRITICAL)  = 0
 *     floor(SL_PRIORITY_DEFAULT)   = reserve_critical
 *     floor(SL_PRIORITY_SHEDDABLE) = reserve_critical + reserve_default
 *
 * so sheddable traffic is refused once the bucket is down to the two
 * reserves, default traffic once it is down to the critical reserve, and
 * critical traffic only when the bucket is empty. A refused request takes
 * nothing; its retry_after is the exact time until it would pass (rounded
 * up to the ns): (floor(p) + c - tokens) / rate. Arithmetic as the token
 * bucket's (docs/semantics.md): tokens scaled by the reduced period, no
 * floating point, the clock going back credits nothing.
 *
 * sl_shed_refund gives tokens back (capped at the burst): a caller that
 * admits first and then finds the request refused by its own rate limit
 * returns the capacity it did not use.
 *
 * Thread-safe: one lock per shedder, held for a few arithmetic operations. */
#ifndef SLUICE_SHED_H
#define SLUICE_SHED_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/export.h"
#include "sluice/limit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_priority {
    SL_PRIORITY_CRITICAL = 0,
    SL_PRIORITY_DEFAULT = 1,
    SL_PRIORITY_SHEDDABLE = 2
} sl_priority;

#define SL_PRIORITIES 3

typedef struct sl_shed_options {
    sl_rate rate;             /* capacity refill, as a bucket's (1 <= limit, period: sl_params) */
    int64_t burst;            /* bucket size, >= 1 */
    int64_t reserve_critical; /* tokens only critical requests may take */
    int64_t reserve_default;  /* tokens only critical and default requests may take */
} sl_shed_options;

typedef struct sl_shed sl_shed;

/* Creates a shedder, full at `now`. The reserves must be >= 0 and leave at
 * least one token for sheddable traffic: reserve_critical + reserve_default
 * < burst. Returns 0 and *out (free with sl_shed_destroy), or SL_ERATE,
 * SL_EBURST, SL_EOVERFLOW (the bounds of a token bucket's sl_params),
 * SL_EINVAL (bad reserves, now outside 0..SL_TIME_MAX), SL_ENOMEM. */
SL_API int sl_shed_create(const sl_shed_options *o, int64_t now, sl_shed **out);
SL_API void sl_shed_destroy(sl_shed *s);

/* What sl_shed_admit says. */
typedef struct sl_shed_decision {
    bool admitted;
    int64_t available;   /* whole tokens left for this priority: tokens - floor(p), >= 0 */
    int64_t retry_after; /* 0 when admitted; ns until this request would pass; -1: never
                            (cost above burst - floor(p)) */
} sl_shed_decision;

/* Admits (and takes `cost` tokens) or refuses a request of priority p at
 * now. Returns 0, SL_EINVAL (p unknown, now outside 0..SL_TIME_MAX), SL_ECOST
 * (cost < 0, or above what priority p can ever take: out says refused,
 * retry_after -1). cost 0 is a peek. */
SL_API int sl_shed_admit(sl_shed *s, sl_priority p, int64_t cost, int64_t now,
                         sl_shed_decision *out);

/* Gives `cost` tokens back at now (an admitted request that did not go
 * ahead), never above the burst. cost <= 0 does nothing. */
SL_API void sl_shed_refund(sl_shed *s, int64_t cost, int64_t now);

/* Whole tokens in the bucket at now (not counting reserves). */
SL_API int64_t sl_shed_tokens(sl_shed *s, int64_t now);

/* "critical", "default", "sheddable", or NULL. */
SL_API const char *sl_priority_name(sl_priority p);
/* Parses a priority name (case-insensitive). Returns 0 or SL_EPARSE. */
SL_API int sl_priority_parse(const char *name, size_t len, sl_priority *out);

#ifdef __cplusplus
}
#endif
#endif
