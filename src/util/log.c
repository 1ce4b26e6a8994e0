/* log.c: leveled logging to stderr (see log.h). One write(2) per line so
 * lines from several threads never interleave. The budget of
 * sl__log_limited is one 64-bit word: the second (of the caller's clock) in
 * its high bits, the lines written in it in its low byte, moved by CAS. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

static atomic_int log_level = SL__LOG_INFO;
static const char *const names[] = {"error", "warn", "info", "debug"};

void sl__log_set_level(sl__log_level level) {
    atomic_store(&log_level, (int)level);
}

int sl__log_parse_level(const char *name) {
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

static atomic_uint_fast64_t limited_state, limited_dropped;
static atomic_uint_fast64_t limited_dropped_total; /* never reset: for /metrics */

__attribute__((format(printf, 3, 0))) static void vlog(sl__log_level level, const char *suffix,
                                                       const char *fmt, va_list ap) {
    char line[1024];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, names[level]);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2) len = sizeof line - 2;
    for (const char *s = suffix; s && *s && len < sizeof line - 2; s++) line[len++] = *s;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void sl__log(sl__log_level level, const char *fmt, ...) {
    if ((int)level > atomic_load_explicit(&log_level, memory_order_relaxed)) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, NULL, fmt, ap);
    va_end(ap);
}

void sl__log_limited(int64_t now, sl__log_level level, const char *fmt, ...) {
    if ((int)level > atomic_load_explicit(&log_level, memory_order_relaxed)) return;
    uint64_t sec = now > 0 ? (uint64_t)(now / 1000000000) : 0;
    uint_fast64_t cur = atomic_load_explicit(&limited_state, memory_order_relaxed), next;
    do {
        if (sec > cur >> 8)
            next = sec << 8 | 1;
        else if ((cur & 0xff) < SL__LOG_LIMITED_PER_SEC)
            next = cur + 1;
        else {
            atomic_fetch_add_explicit(&limited_dropped, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&limited_dropped_total, 1, memory_order_relaxed);
            return;
        }
    } while (!atomic_compare_exchange_weak_explicit(&limited_state, &cur, next,
                                                    memory_order_relaxed, memory_order_relaxed));
    uint64_t dropped = atomic_exchange_explicit(&limited_dropped, 0, memory_order_relaxed);
    char suffix[96] = "";
    if (dropped)
        snprintf(suffix, sizeof suffix, " (%llu similar lines before this one not logged)",
                 (unsigned long long)dropped);
    va_list ap;
    va_start(ap, fmt);
    vlog(level, suffix, fmt, ap);
    va_end(ap);
}

uint64_t sl__log_limited_dropped(void) {
    return atomic_load_explicit(&limited_dropped_total, memory_order_relaxed);
}
