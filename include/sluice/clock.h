/* sluice/clock.h: clocks. Library calls take `now` as an argument; these
 * helpers read the system clocks, and sl_clock lets sl_limiter_wait (the
 * only call that sleeps) run on a fake clock in tests. */
#ifndef SLUICE_CLOCK_H
#define SLUICE_CLOCK_H

#include <stdint.h>

#include "sluice/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_NO_DEADLINE INT64_MAX

/* Nanoseconds since the Unix epoch (CLOCK_REALTIME): windows align to it. */
SL_API int64_t sl_now(void);

/* Nanoseconds of CLOCK_MONOTONIC: never jumps, for buckets and waiting. */
SL_API int64_t sl_now_monotonic(void);

/* An injectable clock. now() returns the time; sleep_until() returns once
 * now() >= t (a fake clock simply advances to t). ctx is passed through. */
typedef struct sl_clock {
    int64_t (*now)(void *ctx);
    void (*sleep_until)(void *ctx, int64_t t);
    void *ctx;
} sl_clock;

/* The monotonic system clock as an sl_clock (a static object). */
SL_API const sl_clock *sl_clock_monotonic(void);

#ifdef __cplusplus
}
#endif
#endif
