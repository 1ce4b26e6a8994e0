/* clock.c: reading the system clocks, and the monotonic sl_clock. */
#include <errno.h>
#include <time.h>

#include "sluice/clock.h"

static int64_t read_clock(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t sl_now(void) {
    return read_clock(CLOCK_REALTIME);
}

int64_t sl_now_monotonic(void) {
    return read_clock(CLOCK_MONOTONIC);
}

static int64_t mono_now(void *ctx) {
    (void)ctx;
    return sl_now_monotonic();
}

static void mono_sleep_until(void *ctx, int64_t t) {
    (void)ctx;
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static const sl_clock monotonic_clock = {mono_now, mono_sleep_until, NULL};

const sl_clock *sl_clock_monotonic(void) {
    return &monotonic_clock;
}
