/* log.h: leveled logging to stderr, one line per message:
 * "2026-11-30T10:00:00.123Z level message". The level is process-wide. */
#ifndef SLUICE_UTIL_LOG_H
#define SLUICE_UTIL_LOG_H

typedef enum sl_log_level { SL_LOG_ERROR, SL_LOG_WARN, SL_LOG_INFO, SL_LOG_DEBUG } sl_log_level;

void sl__log_set_level(sl_log_level level);
/* Parses "error" | "warn" | "info" | "debug"; returns -1 if unknown. */
int sl__log_parse_level(const char *name);
void sl__log(sl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sl__log_error(...) sl__log(SL_LOG_ERROR, __VA_ARGS__)
#define sl__log_warn(...)  sl__log(SL_LOG_WARN, __VA_ARGS__)
#define sl__log_info(...)  sl__log(SL_LOG_INFO, __VA_ARGS__)
#define sl__log_debug(...) sl__log(SL_LOG_DEBUG, __VA_ARGS__)

#endif
