/* log.h: leveled logging to stderr, one line per message:
 * "2026-11-30T10:00:00.123Z level message". The level is process-wide, and
 * so is the budget of sl__log_limited (lines that clients can cause). */
#ifndef SLUICE_UTIL_LOG_H
#define SLUICE_UTIL_LOG_H

#include <stdint.h>

typedef enum sl__log_level {
    SL__LOG_ERROR,
    SL__LOG_WARN,
    SL__LOG_INFO,
    SL__LOG_DEBUG
} sl__log_level;

void sl__log_set_level(sl__log_level level);
/* Parses "error" | "warn" | "info" | "debug"; returns -1 if unknown. */
int sl__log_parse_level(const char *name);
void sl__log(sl__log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For lines that a client can cause at will (shadow mode's would-be
 * refusals): written like sl__log, but at most SL__LOG_LIMITED_PER_SEC of
 * them in one second of `now` (ns, the caller's clock), in the whole
 * process, so that a flood cannot fill the disk. The first line written
 * after some were dropped says how many. A clock that goes back opens no new
 * second. Thread-safe, lock-free. */
#define SL__LOG_LIMITED_PER_SEC 10
void sl__log_limited(int64_t now, sl__log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Lines sl__log_limited dropped since the process started (the budget was
 * spent): with the lines it wrote, every line it was asked for. */
uint64_t sl__log_limited_dropped(void);

#define sl__log_error(...) sl__log(SL__LOG_ERROR, __VA_ARGS__)
#define sl__log_warn(...)  sl__log(SL__LOG_WARN, __VA_ARGS__)
#define sl__log_info(...)  sl__log(SL__LOG_INFO, __VA_ARGS__)
#define sl__log_debug(...) sl__log(SL__LOG_DEBUG, __VA_ARGS__)

#endif
