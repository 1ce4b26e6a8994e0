/* log.c: leveled logging to stderr (see log.h). One write(2) per line so
 * lines from several threads never interleave. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

static atomic_int log_level = SL_LOG_INFO;
static const char *const names[] = {"error", "warn", "info", "debug"};

void sl__log_set_level(sl_log_level level) {
    atomic_store(&log_level, (int)level);
}

int sl__log_parse_level(const char *name) {
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

void sl__log(sl_log_level level, const char *fmt, ...) {
    if ((int)level > atomic_load_explicit(&log_level, memory_order_relaxed)) return;
    char line[1024];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2) len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
