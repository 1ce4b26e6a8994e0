/* frozen_clock.c: an LD_PRELOAD library for the redis-server of
 * test_differential: the wall clock (gettimeofday, time, clock_gettime of
 * CLOCK_REALTIME) stands still at the moment it is first read, so that keys
 * never expire on Redis's real clock while the test runs the decisions on
 * a fake one (the script gets its time from the call: script_now). The
 * monotonic clock, which drives Redis's event loop and timers, runs on.
 * Built without sanitizers (redis-server is not instrumented). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/time.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default"))) /* the project hides symbols */

static struct timespec frozen;
static int have;

static int real_clock(clockid_t id, struct timespec *ts) {
    static int (*fn)(clockid_t, struct timespec *);
    if (!fn) fn = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    return fn(id, ts);
}

static void freeze(void) {
    if (!have) {
        real_clock(CLOCK_REALTIME, &frozen);
        have = 1;
    }
}

EXPORT int clock_gettime(clockid_t id, struct timespec *ts) {
    if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE) return real_clock(id, ts);
    freeze();
    *ts = frozen;
    return 0;
}

EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    freeze();
    if (tv) {
        tv->tv_sec = frozen.tv_sec;
        tv->tv_usec = frozen.tv_nsec / 1000;
    }
    return 0;
}

EXPORT time_t time(time_t *t) {
    freeze();
    if (t) *t = frozen.tv_sec;
    return frozen.tv_sec;
}
