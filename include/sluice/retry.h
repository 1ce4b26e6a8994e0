/* sluice/retry.h: a retry budget. "Your own services retrying a struggling
 * dependency are clients as well. A retry budget is a rate limit on
 * retries" (the seed): per key, requests marked as retries are admitted
 * only while they stay under a fraction of that key's first attempts over
 * a sliding window, plus a small allowance for keys with little traffic.
 *
 * The maths. The window W is cut into SL_RETRY_SLOTS slots of w = W / 10
 * ns; the slot of a time t is floor(t / w), and at time t the window is
 * the slots floor(t / w) - 9 .. floor(t / w). Per key, F counts the first
 * attempts and R the admitted retries whose slots are in the window. A
 * first attempt is always admitted and counted in F. A retry is admitted
 * (and counted in R) iff
 *
 *     R + 1 <= min_retries + floor(F x ratio_ppm / 1 000 000)
 *
 * and otherwise refused, counting nothing. Exact integers (128-bit
 * products): no rounding but the floor, no floating point.
 *
 * A clock that goes backwards counts in the latest slot seen (a key's
 * window never moves back). A refused retry's retry_after is the exact time
 * until slots leaving the window make it pass, as far as old slots alone
 * can tell (first attempts that arrive meanwhile only make it sooner): the
 * end of the first slot whose departure leaves R + 1 <= min_retries +
 * floor(F' x ratio); -1 when only new first attempts can (min_retries 0).
 *
 * Memory is bounded (max_memory): a key costs its state (about 170 bytes)
 * plus its bytes. A key whose slots all left the window is dropped when
 * room is needed; at the cap the least recently used key is evicted
 * (counted): it comes back with an empty window, which admits only
 * min_retries retries until it counts first attempts again. So eviction
 * never admits more retries than a fresh key would.
 *
 * Thread-safe: keys are split over shards, one lock each, held for one
 * key's arithmetic. */
#ifndef SLUICE_RETRY_H
#define SLUICE_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_RETRY_SLOTS       10
#define SL_RETRY_PPM         INT64_C(1000000)              /* ratio_ppm of 100 % */
#define SL_RETRY_MIN_MAX     INT64_C(1000000000)           /* most min_retries */
#define SL_RETRY_WINDOW_MAX  (INT64_C(86400) * 1000000000) /* a window is at most 1 day */
#define SL_RETRY_WINDOW_MIN  (INT64_C(10) * 1000000)       /* and at least 10 ms */
#define SL_RETRY_DEFAULT_PPM INT64_C(100000)               /* 10 % */

typedef struct sl_retry sl_retry;

typedef struct sl_retry_options {
    int64_t ratio_ppm;   /* retries per first attempt, in millionths: 0..SL_RETRY_PPM */
    int64_t min_retries; /* retries always allowed per window: 0..SL_RETRY_MIN_MAX */
    int64_t window;      /* ns, a multiple of SL_RETRY_SLOTS, SL_RETRY_WINDOW_MIN..MAX */
    size_t max_memory;   /* hard cap in bytes for keys and index; 0 = 64 MiB */
    uint64_t seed;       /* hash seed; 0 = random */
} sl_retry_options;

/* What sl_retry_note says. */
typedef struct sl_retry_decision {
    bool allowed;        /* a first attempt always is */
    int64_t firsts;      /* F in the window after this call */
    int64_t retries;     /* R in the window after this call */
    int64_t budget;      /* min_retries + floor(F x ratio): the most R may reach */
    int64_t retry_after; /* refused: ns until old slots leaving make it pass, -1: never by
                            themselves; else 0 */
} sl_retry_decision;

/* Checks options. Returns 0 or SL_EINVAL. */
SL_API int sl_retry_validate(const sl_retry_options *o);

/* Creates a budget. Returns 0 and *out (free with sl_retry_destroy), or
 * SL_EINVAL (sl_retry_validate, or max_memory too small for one key),
 * SL_ENOMEM. */
SL_API int sl_retry_create(const sl_retry_options *o, sl_retry **out);
SL_API void sl_retry_destroy(sl_retry *b);

/* Counts a first attempt (retry false) or decides a retry (retry true) of
 * `key` at `now`. The key bytes are copied. Returns 0 with *out, SL_EKEY
 * (keylen 0 or above SL_KEY_MAX), SL_EINVAL (now outside 0..SL_TIME_MAX),
 * SL_ENOMEM (no state could be made: *out is a fresh key's answer, a retry
 * admitted iff min_retries >= 1, nothing counted). */
SL_API int sl_retry_note(sl_retry *b, const void *key, size_t keylen, bool retry, int64_t now,
                         sl_retry_decision *out);

/* The rule on numbers alone (what sl_retry_note and the Redis script
 * apply): whether a retry passes with F first attempts and R retries in the
 * window. */
SL_API bool sl_retry_passes(int64_t firsts, int64_t retries, int64_t ratio_ppm,
                            int64_t min_retries);

typedef struct sl_retry_stats {
    size_t keys;
    size_t bytes;
    uint64_t evicted; /* live keys evicted at the cap */
} sl_retry_stats;

SL_API void sl_retry_stats_get(sl_retry *b, sl_retry_stats *out);

#ifdef __cplusplus
}
#endif
#endif
