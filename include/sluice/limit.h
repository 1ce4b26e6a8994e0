/* sluice/limit.h: what a limit is (algorithm, rate, burst, options) and what
 * a decision says. Value types only; see table.h and limiter.h for the
 * objects that hold state.
 *
 * Time is int64_t nanoseconds. Window algorithms align windows to time 0 of
 * the clock the caller passes (the Unix epoch with sl_now()). No floating
 * point is used in any decision: rates are kept as the exact fraction
 * limit/period, and every rounding is explicit (see docs/semantics.md). */
#ifndef SLUICE_LIMIT_H
#define SLUICE_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_NS_PER_MS  INT64_C(1000000)
#define SL_NS_PER_SEC INT64_C(1000000000)

/* Times passed to libsluice lie in [0, SL_TIME_MAX] (2^62 ns from the clock's
 * 0: the year 2116 for Unix time); others are refused with SL_EINVAL, so that
 * no sum or difference of times and periods can overflow. */
#define SL_TIME_MAX (INT64_C(1) << 62)

/* The six algorithms of DESIGN.md section 3. Numbering is part of the ABI. */
typedef enum sl_algorithm {
    SL_FIXED_WINDOW = 1,
    SL_SLIDING_LOG = 2,
    SL_SLIDING_WINDOW = 3, /* sliding window counter */
    SL_TOKEN_BUCKET = 4,
    SL_GCRA = 5,       /* leaky bucket as a meter */
    SL_LEAKY_QUEUE = 6 /* leaky bucket as a queue: GCRA acceptance plus a delay */
} sl_algorithm;

/* A rate: `limit` events per `period` nanoseconds, kept as an exact fraction. */
typedef struct sl_rate {
    int64_t limit;
    int64_t period;
} sl_rate;

/* Options (sl_params.flags). */
#define SL_START_EMPTY    0x1u /* keys start exhausted at sl_params.origin, see below */
#define SL_COUNT_REJECTED 0x2u /* a rejected request is charged too (never beyond empty) */
#define SL_STEP_REFILL    0x4u /* token_bucket only: refills in steps, see below */

/* Parameters of one limit.
 *
 * - windows (fixed_window, sliding_log, sliding_window): at most rate.limit
 *   per rate.period; `burst` is ignored (may be 0).
 * - buckets (token_bucket, gcra, leaky_queue): refill rate.limit/rate.period,
 *   size `burst`.
 *
 * SL_START_EMPTY: every key behaves as if it had used its whole allowance at
 * time `origin` (usually the moment the limiter or table was created), and
 * refills normally from there. Keys first seen long after `origin` are
 * therefore full. This is what "start empty after a restart" needs, and it
 * keeps idle eviction lossless. Without the flag `origin` is ignored.
 *
 * Bounds (else an error): 1 <= limit <= 2^61, 1 ns <= period <= 100 years
 * (36,600 days),
 * burst >= 1 for buckets, sliding_log limit <= SL_SLIDING_LOG_MAX,
 * burst * period / gcd(limit, period) <= 2^61 for buckets (exact arithmetic;
 * so a bucket's period is at most 2^61 ns, 26,687 days, even at burst 1),
 * 0 <= origin <= SL_TIME_MAX.
 *
 * SL_STEP_REFILL (token_bucket only, else SL_EINVAL): the bucket gains
 * rate.limit tokens at once at every multiple of rate.period (from the
 * clock's 0, as windows are aligned), capped at burst, instead of
 * continuously: Envoy's local rate limit (`tokens_per_fill` every
 * `fill_interval`, `max_tokens`) is token_bucket rate
 * tokens_per_fill/fill_interval, burst max_tokens, with this flag.
 *
 * delay_after (leaky_queue only, else 0): the first delay_after requests
 * waiting in the queue are released at once, later ones are delayed as
 * usual, by delay_after emission intervals less: nginx's two-stage
 * `limit_req burst=B delay=D` is leaky_queue burst B+1, delay_after D.
 * 0 <= delay_after < burst (burst - 1 delays nothing: GCRA's decisions). */
typedef struct sl_params {
    sl_algorithm algorithm;
    sl_rate rate;
    int64_t burst;
    unsigned flags;
    int64_t origin;
    int64_t delay_after;
} sl_params;

#define SL_SLIDING_LOG_MAX 100000

/* The answer to one check. All durations in nanoseconds, never negative.
 *
 * limit:       windows: rate.limit; buckets: burst.
 * remaining:   how many more requests of cost 1 would pass right now
 *              (after this one was counted), rounded down.
 * retry_after: 0 when allowed; otherwise the exact time until a request of
 *              the same cost would pass, rounded up to the next nanosecond.
 * reset_after: time until the key's state is back to fresh (full bucket,
 *              empty window), rounded up.
 * delay:       leaky_queue only: how long an accepted request must wait
 *              before it proceeds (rounded up; less delay_after emission
 *              intervals, at least 0); 0 otherwise. */
typedef struct sl_decision {
    bool allowed;
    int64_t limit;
    int64_t remaining;
    int64_t retry_after;
    int64_t reset_after;
    int64_t delay;
} sl_decision;

/* Checks `p` against the bounds above. Returns 0 or SL_ERATE, SL_EBURST,
 * SL_EALGORITHM, SL_EINVAL, SL_EOVERFLOW. */
SL_API int sl_params_validate(const sl_params *p);

/* Whether `a` is a bucket (token_bucket, gcra, leaky_queue: sized by
 * sl_params.burst) rather than a window (fixed_window, sliding_log,
 * sliding_window: sized by rate.limit). False for an unknown algorithm. */
SL_API bool sl_algorithm_is_bucket(sl_algorithm a);

/* The size of the limit `p` describes, as sl_decision.limit reports it:
 * burst for a bucket, rate.limit for a window (and for an unknown
 * algorithm). p must not be NULL; p is not validated. */
SL_API int64_t sl_params_limit(const sl_params *p);

/* The canonical lower-case name ("token_bucket", ...), or NULL if unknown. */
SL_API const char *sl_algorithm_name(sl_algorithm a);

/* Parses a canonical name. Returns 0 or SL_EALGORITHM. */
SL_API int sl_algorithm_parse(const char *name, sl_algorithm *out);

/* Parses "N/<unit>" or "N/<duration>": units ns, us, ms, s, m, h, d ("5/s",
 * "1000/h", "7/us"), durations such as "100/10s", "3/500ms". N is a positive
 * integer. Returns 0, SL_EPARSE, SL_ERATE (zero), SL_EOVERFLOW (a number
 * beyond int64). */
SL_API int sl_rate_parse(const char *text, sl_rate *out);

/* Parses a duration: an integer followed by ns, us, ms, s, m, h or d
 * ("5ms", "10s", "1h"). Returns 0 or SL_EPARSE / SL_EOVERFLOW. */
SL_API int sl_duration_parse(const char *text, int64_t *out_ns);

/* Formats `r` in the shortest exact way ("5/s", "100/10s", "3/500ms") into
 * buf (NUL-terminated, truncated to size). Returns the length it needed. */
SL_API int sl_rate_format(sl_rate r, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
