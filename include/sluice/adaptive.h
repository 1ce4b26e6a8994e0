/* sluice/adaptive.h: an adaptive concurrency limit (issue 16 item 2): a
 * limit that follows the latencies reported when requests finish, instead
 * of a number picked in advance. The gradient style of Netflix's
 * concurrency-limits (Gradient2) and Envoy's adaptive concurrency filter:
 * the limit grows while latency stays near the lowest latency seen, and
 * shrinks when latency rises above it. Use it to drive the limit of an
 * sl_concurrency (sl_concurrency_set_limit) or any other pool.
 *
 * The maths, per window (every `window` ns with at least one sample; a
 * window without samples changes nothing):
 *   avg      = floor(sum of the window's latencies / their count)
 *   min_rtt  = the lowest latency of the windows since the last reset; it
 *              is reset to the current window's lowest every
 *              `min_rtt_window` ns, so a backend that became slower for
 *              good is measured afresh rather than judged against its past
 *   gradient = clamp(min_rtt * tolerance / avg, 1/2, 1), tolerance =
 *              tolerance_pct / 100 (latency up to tolerance x min_rtt counts
 *              as "no queueing")
 *   target   = floor(limit * gradient) + floor(sqrt(limit))   (headroom: a
 *              queue of sqrt(limit) lets the limit probe upwards)
 *   limit    = clamp(ceil((limit + target) / 2), min_limit, max_limit)
 * (the average of the old limit and the target smooths one noisy window;
 * rounded up so that a limit of 1 can grow).
 * All integer: the gradient is kept as the fraction (min_rtt *
 * tolerance_pct) / (avg * 100) with 128-bit products, never rounded before
 * the final floor. So near min_rtt the limit grows by about sqrt(limit)/2
 * a window (10, 12, 14, 16, 18, 20, ...); at twice the tolerated latency
 * or more it falls by about a fifth a window (100, 80, 64, ...), down to
 * min_limit or to where the headroom balances the halving (6: 3 + 2,
 * ceil(11 / 2) = 6).
 *
 * Thread-safe: every call takes the object's lock. Time is injected (`now`,
 * ns); a `now` older than the current window's start is counted in the
 * current window (a clock going back ends no window). */
#ifndef SLUICE_ADAPTIVE_H
#define SLUICE_ADAPTIVE_H

#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_adaptive sl_adaptive;

typedef struct sl_adaptive_options {
    int64_t min_limit;      /* 1 <= min_limit <= max_limit */
    int64_t max_limit;      /* <= SL_CONCURRENCY_MAX (sluice/concurrency.h) */
    int64_t initial_limit;  /* 0 = min_limit; else within [min_limit, max_limit] */
    int64_t window;         /* ns per window: 1 ms .. 1 h; 0 = 1 s */
    int64_t min_rtt_window; /* ns between resets of min_rtt, >= window; 0 = 60 s */
    unsigned tolerance_pct; /* 100 .. 1000; 0 = 150 */
} sl_adaptive_options;

/* Creates the object with its first window starting at now. Returns 0 and
 * *out (free with sl_adaptive_destroy), or SL_EINVAL (an option out of
 * range, now outside 0..SL_TIME_MAX), SL_ENOMEM. */
SL_API int sl_adaptive_create(const sl_adaptive_options *opts, int64_t now, sl_adaptive **out);
SL_API void sl_adaptive_destroy(sl_adaptive *a);

/* Reports one finished request that took `latency` ns (> 0), at now. Ends
 * the current window first if now is past it (recomputing the limit from
 * that window's samples); the sample then belongs to the window that holds
 * now. Returns the limit after the call, or SL_EINVAL (latency <= 0, now
 * out of range), leaving everything unchanged. */
SL_API int64_t sl_adaptive_sample(sl_adaptive *a, int64_t latency, int64_t now);

/* The limit as of the latest sample (a window's samples take effect at
 * the first sample after it ends; a window without samples changes
 * nothing). */
SL_API int64_t sl_adaptive_limit(sl_adaptive *a);

/* The lowest latency of the current min_rtt period (0 before any window
 * ended). */
SL_API int64_t sl_adaptive_min_rtt(sl_adaptive *a);

#ifdef __cplusplus
}
#endif
#endif
